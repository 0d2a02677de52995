//! Authenticated sessions for `--token`: a keyed handshake (like irtt's) and a MAC on every
//! frame header, so a captured packet is useless from any other socket and nothing on the wire
//! can be reused without the secret.
//!
//! **Handshake.** Four fixed-size messages of [`HS_LEN`] bytes (a reply is never larger than
//! the message that caused it, so the handshake cannot amplify a spoofed source):
//!
//! ```text
//! client                                    server
//!   Hello     { client nonce }          -->       (no state kept)
//!             <--  Challenge { client nonce, cookie }
//!   Auth      { client nonce, cookie,
//!               proof = HMAC(secret, "client" | nonce | cookie) } -->  session keyed to the
//!             <--  Accept { server proof }                             source address
//! ```
//!
//! The cookie is the server-issued nonce: the issue time and a tag over (source address, client
//! nonce, issue time) under a random per-process key, so the server keeps no state for a Hello,
//! an Auth from another address or older than [`COOKIE_TTL_NS`] fails, and only a source that
//! received the Challenge can answer it (return routability). Both sides then derive the
//! session key `HMAC(secret, "session" | nonce | cookie)`: fresh for every handshake.
//!
//! Handshake message, integers big-endian:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |              magic: 0x1E 'N' 'P' 'H'                          |  0
//! +---------------+---------------+-------------------------------+
//! |    version    |  type 1..=4   |          reserved (0)         |  4
//! +---------------+---------------+-------------------------------+
//! |              client nonce (16 bytes, from the OS RNG)         |  8
//! +---------------------------------------------------------------+
//! |              cookie: issue time, ns of the server's clock     | 24
//! |              (8 bytes) + tag (16 bytes); 0 in a Hello         |
//! +---------------------------------------------------------------+
//! |              proof: HMAC-SHA256, 32 bytes (Auth, Accept)      | 48
//! +---------------------------------------------------------------+
//! |              zero padding to 96 bytes                         | 80
//! +---------------------------------------------------------------+
//! ```
//!
//! **Frames.** After the handshake every frame in both directions is the ordinary 48-byte
//! header ([`crate::frame`]) with [`AUTH_FLAG`] set in `flags` and the `token` field (bytes
//! 40..48) replaced by a tag: the first [`TAG_LEN`] bytes of
//! `HMAC-SHA256(session key, direction | header bytes 0..40)`. The tag covers kind, flags,
//! lengths, flow, status, sequence and timestamp; the payload is fill and is not covered.
//! 64 bits is enough because a tag can only be attacked online: each guess costs a packet,
//! and at a million guesses a second one forgery is expected after ~290,000 years; each
//! session has its own key, so nothing learnt in one session applies to another. The
//! server remembers the session per source address and the sequence numbers it has seen
//! ([`ReplayWindow`]), so a captured frame replayed from another socket finds no session (or
//! the wrong key), and replayed from the same address is a replay.
//!
//! Limits: an observer who records a handshake can still test guesses of a *weak* secret
//! offline against its proof (as with irtt; only a PAKE avoids that): use a long random secret.
//! Payloads are not encrypted.

mod body;
pub mod handshake;
mod sessions;
#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests;

use std::net::SocketAddr;

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub use body::BODY_TAG_LEN;
pub use handshake::{
    stream_no_accept, stream_read_error, stream_step, ClientHandshake, ServerAuth, COOKIE_TTL_NS,
    HS_RETRY_NS,
};
pub use sessions::{ReplayWindow, Sessions, REPLAY_WINDOW};

use crate::frame::HEADER_LEN;

pub(crate) type HmacSha256 = Hmac<Sha256>;

/// The four bytes every handshake message starts with.
pub const HS_MAGIC: [u8; 4] = [0x1E, b'N', b'P', b'H'];
/// The handshake version this build speaks.
pub const HS_VERSION: u8 = 1;
/// Every handshake message is exactly this long.
pub const HS_LEN: usize = 96;
pub const NONCE_LEN: usize = 16;
pub const COOKIE_LEN: usize = 24;
pub const PROOF_LEN: usize = 32;
/// The bit in a frame's `flags` that says its `token` field is a session tag.
pub const AUTH_FLAG: u16 = 0x8000;
/// Bytes of the truncated HMAC carried in each frame (the `token` field).
pub const TAG_LEN: usize = 8;
/// Header bytes covered by the frame tag (everything before the tag).
const TAGGED: usize = HEADER_LEN - TAG_LEN;

/// Why a handshake message or an authenticated frame was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("truncated handshake message: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    #[error("not an npt handshake message")]
    BadMagic,
    #[error("unsupported handshake version {0}")]
    BadVersion(u8),
    #[error("unknown handshake message type {0}")]
    BadType(u8),
    #[error("handshake message out of turn")]
    OutOfTurn,
    #[error("cookie not issued to this address")]
    BadCookie,
    #[error("cookie expired")]
    Expired,
    #[error("wrong secret (the proof does not verify)")]
    BadProof,
    #[error("frame without a session tag")]
    NotAuthenticated,
    #[error("no session for this source")]
    UnknownSession,
    #[error("bad frame tag")]
    BadMac,
    #[error("replayed frame")]
    Replay,
    #[error("session table full")]
    SessionsFull,
    #[error("no answer to the handshake")]
    TimedOut,
}

/// Handshake message types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MsgType {
    Hello = 1,
    Challenge = 2,
    Auth = 3,
    Accept = 4,
}

/// A decoded handshake message (fields a type does not use are zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msg {
    pub typ: MsgType,
    pub nonce: [u8; NONCE_LEN],
    pub cookie: [u8; COOKIE_LEN],
    pub proof: [u8; PROOF_LEN],
}

impl Msg {
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, AuthError> {
        let have = out.len();
        let out: &mut [u8; HS_LEN] = out
            .first_chunk_mut()
            .ok_or(AuthError::Truncated { need: HS_LEN, have })?;
        out.fill(0);
        out[0..4].copy_from_slice(&HS_MAGIC);
        out[4] = HS_VERSION;
        out[5] = self.typ as u8;
        out[8..24].copy_from_slice(&self.nonce);
        out[24..48].copy_from_slice(&self.cookie);
        out[48..80].copy_from_slice(&self.proof);
        Ok(HS_LEN)
    }

    /// Decodes exactly [`HS_LEN`] bytes (a UDP datagram of another length is not a message).
    pub fn decode(b: &[u8]) -> Result<Msg, AuthError> {
        let b: &[u8; HS_LEN] = b.first_chunk().ok_or(AuthError::Truncated {
            need: HS_LEN,
            have: b.len(),
        })?;
        if b[0..4] != HS_MAGIC {
            return Err(AuthError::BadMagic);
        }
        if b[4] != HS_VERSION {
            return Err(AuthError::BadVersion(b[4]));
        }
        let typ = match b[5] {
            1 => MsgType::Hello,
            2 => MsgType::Challenge,
            3 => MsgType::Auth,
            4 => MsgType::Accept,
            t => return Err(AuthError::BadType(t)),
        };
        let mut m = Msg {
            typ,
            nonce: [0; NONCE_LEN],
            cookie: [0; COOKIE_LEN],
            proof: [0; PROOF_LEN],
        };
        m.nonce.copy_from_slice(&b[8..24]);
        m.cookie.copy_from_slice(&b[24..48]);
        m.proof.copy_from_slice(&b[48..80]);
        Ok(m)
    }
}

/// True when `buf` starts with the handshake magic.
pub fn is_handshake(buf: &[u8]) -> bool {
    buf.starts_with(&HS_MAGIC)
}

/// Direction of a frame: each has its own tag, so a reply cannot be reflected as a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Dir {
    ToServer = b'C',
    ToClient = b'S',
}

/// A session's frame key: seals and opens frame headers.
#[derive(Clone)]
pub struct SessionKey {
    mac: HmacSha256,
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

impl SessionKey {
    /// A key from 32 bytes of key material (see the handshake for how they are derived).
    pub fn from_bytes(k: &[u8; 32]) -> SessionKey {
        SessionKey { mac: keyed(k) }
    }

    fn tag(&self, dir: Dir, hdr: &[u8; HEADER_LEN]) -> HmacSha256 {
        let mut m = self.mac.clone();
        m.update(&[dir as u8]);
        m.update(&hdr[..TAGGED]);
        m
    }

    /// Sets [`AUTH_FLAG`] and writes the tag into an encoded frame header (in place).
    pub fn seal(&self, dir: Dir, frame: &mut [u8]) -> Result<(), crate::WireError> {
        let have = frame.len();
        let frame: &mut [u8; HEADER_LEN] =
            frame.first_chunk_mut().ok_or(crate::WireError::Truncated {
                need: HEADER_LEN,
                have,
            })?;
        let flags = u16::from_be_bytes([frame[6], frame[7]]) | AUTH_FLAG;
        frame[6..8].copy_from_slice(&flags.to_be_bytes());
        let t = self.tag(dir, frame).finalize().into_bytes();
        // The 32-byte HMAC-SHA256 covers all TAG_LEN bytes of the tag field.
        frame[TAGGED..HEADER_LEN]
            .iter_mut()
            .zip(t.iter())
            .for_each(|(f, b)| *f = *b);
        Ok(())
    }

    /// Checks the flag and the tag of a frame header (constant-time compare).
    pub fn open(&self, dir: Dir, frame: &[u8]) -> Result<(), AuthError> {
        let Some(frame) = frame.first_chunk::<HEADER_LEN>() else {
            return Err(AuthError::NotAuthenticated);
        };
        if !is_sealed(frame) {
            return Err(AuthError::NotAuthenticated);
        }
        self.tag(dir, frame)
            .verify_truncated_left(&frame[TAGGED..HEADER_LEN])
            .map_err(|_| AuthError::BadMac)
    }
}

/// True when a frame header has [`AUTH_FLAG`] set.
pub fn is_sealed(frame: &[u8]) -> bool {
    matches!(frame, [_, _, _, _, _, _, a, b, ..] if u16::from_be_bytes([*a, *b]) & AUTH_FLAG != 0)
}

pub(crate) fn keyed(key: &[u8]) -> HmacSha256 {
    // HMAC takes keys of any length; this cannot fail.
    <HmacSha256 as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!("any key length"))
}

/// `HMAC(secret, label | nonce | cookie)`: proofs and the session key.
pub(crate) fn derive(
    secret: &HmacSha256,
    label: &[u8],
    nonce: &[u8; NONCE_LEN],
    cookie: &[u8; COOKIE_LEN],
) -> [u8; 32] {
    let mut m = secret.clone();
    m.update(b"npt-auth-v1 ");
    m.update(label);
    m.update(nonce);
    m.update(cookie);
    m.finalize().into_bytes().into()
}

/// An address as 18 bytes (IPv4 as v4-mapped IPv6, then the port), for the cookie tag.
pub(crate) fn addr_bytes(a: SocketAddr) -> [u8; 18] {
    let ip = match a {
        SocketAddr::V4(v) => v.ip().to_ipv6_mapped(),
        SocketAddr::V6(v) => *v.ip(),
    };
    let mut out = [0u8; 18];
    out[..16].copy_from_slice(&ip.octets());
    out[16..].copy_from_slice(&a.port().to_be_bytes());
    out
}
