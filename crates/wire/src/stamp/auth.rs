//! STAMP's authenticated mode (RFC 8762 §4.4): HMAC-SHA-256 over the first 96 bytes of a test
//! packet, truncated to 128 bits and written at byte 96. The key is shared out of band (RFC
//! 8762 leaves its distribution to configuration); npt takes it in hex, as other STAMP
//! implementations do, at least 16 bytes long.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::{AUTH_LEN, HMAC_AT, HMAC_LEN};
use crate::WireError;

type HmacSha256 = Hmac<Sha256>;

/// Shortest key accepted, in bytes (128 bits, the length of the truncated HMAC).
pub const MIN_KEY_LEN: usize = 16;

/// Why a key could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("not hexadecimal (two hex digits per byte)")]
    NotHex,
    #[error("{0} bytes: a STAMP key must be at least {MIN_KEY_LEN} bytes (32 hex digits)")]
    TooShort(usize),
}

/// The HMAC key of an authenticated STAMP session, keyed once (each packet clones the state).
#[derive(Clone)]
pub struct StampKey {
    keyed: HmacSha256,
}

impl std::fmt::Debug for StampKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StampKey(<redacted>)")
    }
}

impl StampKey {
    pub fn from_bytes(key: &[u8]) -> Result<StampKey, KeyError> {
        if key.len() < MIN_KEY_LEN {
            return Err(KeyError::TooShort(key.len()));
        }
        // HMAC takes keys of any length; this cannot fail.
        let keyed = HmacSha256::new_from_slice(key).map_err(|_| KeyError::TooShort(key.len()))?;
        Ok(StampKey { keyed })
    }

    /// A key written in hex (whitespace around it ignored).
    pub fn from_hex(text: &str) -> Result<StampKey, KeyError> {
        let pairs = text.trim().as_bytes().chunks_exact(2);
        if !pairs.remainder().is_empty() {
            return Err(KeyError::NotHex);
        }
        let digit = |c: u8| char::from(c).to_digit(16).ok_or(KeyError::NotHex);
        let mut key = Vec::with_capacity(pairs.len());
        for pair in pairs {
            if let [hi, lo] = pair {
                let b = digit(*hi)? * 16 + digit(*lo)?;
                key.push(u8::try_from(b).map_err(|_| KeyError::NotHex)?);
            }
        }
        StampKey::from_bytes(&key)
    }

    fn tag(&self, covered: &[u8]) -> HmacSha256 {
        let mut m = self.keyed.clone();
        m.update(covered);
        m
    }

    /// Writes the HMAC of bytes 0..96 into bytes 96..112.
    pub fn seal(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let have = buf.len();
        let b: &mut [u8; AUTH_LEN] = buf.first_chunk_mut().ok_or(WireError::Truncated {
            need: AUTH_LEN,
            have,
        })?;
        let (covered, hmac) = b.split_at_mut(HMAC_AT);
        let full = self.tag(covered).finalize().into_bytes();
        if let (Some(dst), Some(src)) = (hmac.get_mut(..HMAC_LEN), full.get(..HMAC_LEN)) {
            dst.copy_from_slice(src);
        }
        Ok(())
    }

    /// True when bytes 96..112 are the HMAC of bytes 0..96 (compared in constant time).
    pub fn verify(&self, buf: &[u8]) -> bool {
        let Some(b) = buf.first_chunk::<AUTH_LEN>() else {
            return false;
        };
        let (covered, hmac) = b.split_at(HMAC_AT);
        self.tag(covered).verify_truncated_left(hmac).is_ok()
    }
}
