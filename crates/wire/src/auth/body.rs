//! A tag over a frame's payload, for the frames whose payload is a message rather than fill.
//!
//! The frame tag ([`SessionKey::seal`]) covers only the 48-byte header: an echo's payload is
//! fill, and leaving it out keeps the echo path cheap. A hop agent's request names a target
//! and its reply carries measurements, so their payloads must be authenticated too: the last
//! [`BODY_TAG_LEN`] bytes of such a payload are
//! `HMAC-SHA256(session key, 'B' | direction | header bytes 0..40 | payload before the tag)`,
//! truncated. The header bytes bind the payload to its frame (kind, length, sequence number);
//! the leading `'B'` keeps a body tag from ever equalling a header tag (those start with the
//! direction byte, `'C'` or `'S'`).

use hmac::Mac;

use super::{AuthError, Dir, SessionKey, TAGGED};
use crate::frame::HEADER_LEN;
use crate::WireError;

/// Bytes of the truncated HMAC at the end of an authenticated payload.
pub const BODY_TAG_LEN: usize = 16;

impl SessionKey {
    fn body_mac(&self, dir: Dir, hdr: &[u8; HEADER_LEN], body: &[u8]) -> super::HmacSha256 {
        let mut m = self.mac.clone();
        m.update(b"B");
        m.update(&[dir as u8]);
        m.update(&hdr[..TAGGED]);
        m.update(body);
        m
    }

    /// Writes the tag into the last [`BODY_TAG_LEN`] bytes of `body` (the payload of the frame
    /// whose encoded header is `hdr`, as it is sent: seal the header first).
    pub fn seal_body(&self, dir: Dir, hdr: &[u8], body: &mut [u8]) -> Result<(), WireError> {
        let hdr = header(hdr)?;
        let have = body.len();
        let split = have.checked_sub(BODY_TAG_LEN).ok_or(WireError::Truncated {
            need: BODY_TAG_LEN,
            have,
        })?;
        let (msg, tag) = body.split_at_mut(split);
        let t = self.body_mac(dir, hdr, msg).finalize().into_bytes();
        // The 32-byte HMAC-SHA256 covers all BODY_TAG_LEN bytes of the tag.
        tag.iter_mut().zip(t.iter()).for_each(|(d, s)| *d = *s);
        Ok(())
    }

    /// Checks the tag at the end of `body` (constant-time compare).
    pub fn open_body(&self, dir: Dir, hdr: &[u8], body: &[u8]) -> Result<(), AuthError> {
        let hdr = header(hdr).map_err(|_| AuthError::NotAuthenticated)?;
        let split = body
            .len()
            .checked_sub(BODY_TAG_LEN)
            .ok_or(AuthError::BadMac)?;
        let (msg, tag) = body.split_at(split);
        self.body_mac(dir, hdr, msg)
            .verify_truncated_left(tag)
            .map_err(|_| AuthError::BadMac)
    }
}

fn header(hdr: &[u8]) -> Result<&[u8; HEADER_LEN], WireError> {
    hdr.first_chunk().ok_or(WireError::Truncated {
        need: HEADER_LEN,
        have: hdr.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> SessionKey {
        SessionKey::from_bytes(&[b; 32])
    }

    #[test]
    fn a_sealed_body_opens_and_any_change_fails() {
        let hdr = [7u8; HEADER_LEN];
        let mut body = vec![1u8; 40];
        key(1).seal_body(Dir::ToServer, &hdr, &mut body).unwrap();
        assert_eq!(key(1).open_body(Dir::ToServer, &hdr, &body), Ok(()));
        assert_eq!(
            key(2).open_body(Dir::ToServer, &hdr, &body),
            Err(AuthError::BadMac),
            "another session's key"
        );
        assert_eq!(
            key(1).open_body(Dir::ToClient, &hdr, &body),
            Err(AuthError::BadMac),
            "reflected in the other direction"
        );
        for i in 0..body.len() {
            let mut b = body.clone();
            b[i] ^= 0x20;
            assert_eq!(
                key(1).open_body(Dir::ToServer, &hdr, &b),
                Err(AuthError::BadMac)
            );
        }
        for i in 0..TAGGED {
            let mut h = hdr;
            h[i] ^= 1;
            assert_eq!(
                key(1).open_body(Dir::ToServer, &h, &body),
                Err(AuthError::BadMac),
                "header byte {i} is bound"
            );
        }
        let mut h = hdr;
        h[HEADER_LEN - 1] ^= 1;
        assert_eq!(
            key(1).open_body(Dir::ToServer, &h, &body),
            Ok(()),
            "the header's own tag bytes are not (they are the header tag's)"
        );
    }

    #[test]
    fn short_bodies_are_errors_not_panics() {
        let hdr = [0u8; HEADER_LEN];
        for n in 0..BODY_TAG_LEN {
            let mut b = vec![0u8; n];
            assert!(key(1).seal_body(Dir::ToServer, &hdr, &mut b).is_err());
            assert_eq!(
                key(1).open_body(Dir::ToServer, &hdr, &b),
                Err(AuthError::BadMac)
            );
        }
        let mut b = vec![0u8; BODY_TAG_LEN];
        key(1).seal_body(Dir::ToServer, &hdr, &mut b).unwrap();
        assert_eq!(
            key(1).open_body(Dir::ToServer, &hdr, &b),
            Ok(()),
            "empty message"
        );
        assert!(key(1).seal_body(Dir::ToServer, &hdr[..47], &mut b).is_err());
    }
}
