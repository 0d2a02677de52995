//! The framed header npt puts at the front of every probe packet and request.
//!
//! Every frame (a UDP datagram, or one message in a TCP stream) starts with this fixed
//! 48-byte header, all integers big-endian:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |              magic: 0x1E 'N' 'P' 'T'                          |  0
//! +---------------+---------------+-------------------------------+
//! |    version    |     kind      |             flags             |  4
//! +---------------+---------------+-------------------------------+
//! |           frame length: header + payload, bytes               |  8
//! +---------------------------------------------------------------+
//! |           reply length asked for (0 = same as this frame)     | 12
//! +---------------------------------------------------------------+
//! |           flow id (one per client socket / connection)        | 16
//! +---------------------------------------------------------------+
//! |           status (set by the responder, 0 = ok; see marking)  | 20
//! +---------------------------------------------------------------+
//! |           sequence number                                     | 24
//! |                                                               |
//! +---------------------------------------------------------------+
//! |           send timestamp, ns of the sender's monotonic clock  | 32
//! |                                                               |
//! +---------------------------------------------------------------+
//! |           access token (0 = none)                             | 40
//! |                                                               |
//! +---------------------------------------------------------------+
//! |           payload: frame length - 48 bytes                    | 48
//! ```
//!
//! The first byte, 0x1E, has the 0x40 bit clear, so a frame can never be mistaken for a QUIC
//! v1 packet (whose "fixed bit" 0x40 is always set): one UDP port can later carry both.
//! A request with [`crate::marking::MARK`] carries the marking it asks its reply to have in the
//! top byte of `status`, and the reply the two TOS bytes ([`crate::marking`]).
//! The responder only flips `kind` (and may set `status`) in place, so an echo costs no copy and
//! the sender's timestamp comes back untouched: RTT needs no per-packet state at the sender.

use crate::WireError;

/// The four bytes every framed packet starts with.
pub const MAGIC: [u8; 4] = [0x1E, b'N', b'P', b'T'];
/// The only version this build speaks.
pub const VERSION: u8 = 1;
/// Length of the fixed header; the smallest legal frame.
pub const HEADER_LEN: usize = 48;
/// The largest frame a responder accepts (a TCP peer announcing more is misbehaving).
pub const MAX_FRAME_LEN: u32 = 64 << 20;

/// What a frame asks for, or answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Echo me back unchanged (the responder sets kind to `EchoReply`).
    Echo = 1,
    /// The echo of an `Echo` frame.
    EchoReply = 2,
    /// Answer with a `Response` frame of `reply_len` bytes (TCP; over UDP never larger than
    /// the request, see the server's amplification rule).
    Request = 3,
    /// The answer to a `Request`.
    Response = 4,
    /// Ask a hop agent to measure an RTT from where it runs (payload: [`crate::hop`]); only
    /// on an authenticated stream of `npt serve --hop-agent`.
    HopRequest = 5,
    /// The answer to a `HopRequest`: the samples, or a refusal in `status`.
    HopReply = 6,
    /// Start a bulk transfer ([`crate::bulk`]): the payload is a [`crate::bulk::BulkSpec`]. Over
    /// UDP also the ask for a [`crate::bulk::BulkReport`] (then padded to hold one).
    Bulk = 7,
    /// The responder's answer to `Bulk`: accepted (`status`), with a report as payload.
    BulkReply = 8,
    /// One datagram of a UDP bulk transfer (sequence number and send stamp in the header).
    BulkData = 9,
    /// Ask what the responder counted of this flow ([`crate::reflect`]); padded to hold the
    /// report.
    FlowQuery = 10,
    /// The answer to a `FlowQuery`: a [`crate::reflect::FlowReport`], same length.
    FlowReport = 11,
    /// Keep this flow idle for a gap, then call me back ([`crate::idle`]): how long a path
    /// keeps an idle UDP mapping.
    Idle = 12,
    /// The immediate answer to an `Idle` frame: the source address the responder saw.
    IdleAck = 13,
    /// The responder's datagram after the gap, sent first: through a path that forgot the
    /// mapping it never arrives.
    IdleCallback = 14,
    /// A path MTU probe ([`crate::mtu`]): up, padded to the size tried; or the ask for a
    /// down probe of a size.
    Mtu = 15,
    /// The answer to `Mtu`: what arrived (up), or the down probe itself.
    MtuReply = 16,
}

impl Kind {
    pub fn from_u8(v: u8) -> Result<Kind, WireError> {
        Ok(match v {
            1 => Kind::Echo,
            2 => Kind::EchoReply,
            3 => Kind::Request,
            4 => Kind::Response,
            5 => Kind::HopRequest,
            6 => Kind::HopReply,
            7 => Kind::Bulk,
            8 => Kind::BulkReply,
            9 => Kind::BulkData,
            10 => Kind::FlowQuery,
            11 => Kind::FlowReport,
            12 => Kind::Idle,
            13 => Kind::IdleAck,
            14 => Kind::IdleCallback,
            15 => Kind::Mtu,
            16 => Kind::MtuReply,
            other => return Err(WireError::BadKind(other)),
        })
    }
}

/// Responder status codes carried in `status`.
pub mod status {
    pub const OK: u32 = 0;
    /// The responder shortened the reply (it would have been larger than the request).
    pub const CLAMPED: u32 = 1;
    /// The responder will not do this for this peer (a bulk it does not allow unproven
    /// sources, a malformed bulk request).
    pub const REFUSED: u32 = 2;
    /// A refusal notice ([`crate::reflect`]): the responder's per-source budget refused it.
    pub const BUDGET: u32 = 3;
    /// A refusal notice: the responder takes only `--token` sessions, and this frame had none.
    pub const TOKEN_REQUIRED: u32 = 4;
    /// A refusal notice: the frame was sealed, and the responder has no `--token`.
    pub const NO_TOKEN: u32 = 5;
    /// A refusal notice: sealed for a session the responder does not know (it restarted, or
    /// forgot an idle session): a new handshake is needed.
    pub const UNKNOWN_SESSION: u32 = 6;
    /// A flow report: the responder keeps no record of this flow.
    pub const UNKNOWN_FLOW: u32 = 7;
    /// An idle ack ([`crate::idle`]): no callback, this address has as many pending as the
    /// responder keeps (or the responder has as many as it keeps in all).
    pub const IDLE_FULL: u32 = 8;
    /// An idle ack: no callback, the gap is longer than the responder's longest.
    pub const IDLE_GAP: u32 = 9;
    /// An idle ack: no callback, the request was shorter than its ack and callback together.
    pub const IDLE_SHORT: u32 = 10;
    /// An MTU answer ([`crate::mtu`]): the down probe was larger than the responder's own
    /// interface sends (its path MTU field says what it can).
    pub const MTU_TOO_BIG: u32 = 11;

    /// What a refusal notice's status means, for people.
    pub fn notice_text(status: u32) -> &'static str {
        match status {
            BUDGET => "over its per-source budget",
            TOKEN_REQUIRED => "it wants --token",
            NO_TOKEN => "it has no --token (leave it out)",
            UNKNOWN_SESSION => "a --token session it does not know (it restarted?)",
            _ => "refused",
        }
    }

    /// A refusal notice's status as the results name it (`refusals` by reason, the
    /// per-packet log's `reason`).
    pub fn notice_name(status: u32) -> &'static str {
        match status {
            BUDGET => "budget",
            TOKEN_REQUIRED => "token_required",
            NO_TOKEN => "no_token",
            UNKNOWN_SESSION => "unknown_session",
            _ => "other",
        }
    }
}

/// A decoded header. The payload stays in the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub flags: u16,
    pub frame_len: u32,
    pub reply_len: u32,
    pub flow: u32,
    pub status: u32,
    pub seq: u64,
    pub send_ts: u64,
    pub token: u64,
}

impl Header {
    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let have = buf.len();
        let buf: &mut [u8; HEADER_LEN] = buf.first_chunk_mut().ok_or(WireError::Truncated {
            need: HEADER_LEN,
            have,
        })?;
        buf[0..4].copy_from_slice(&MAGIC);
        buf[4] = VERSION;
        buf[5] = self.kind as u8;
        buf[6..8].copy_from_slice(&self.flags.to_be_bytes());
        buf[8..12].copy_from_slice(&self.frame_len.to_be_bytes());
        buf[12..16].copy_from_slice(&self.reply_len.to_be_bytes());
        buf[16..20].copy_from_slice(&self.flow.to_be_bytes());
        buf[20..24].copy_from_slice(&self.status.to_be_bytes());
        buf[24..32].copy_from_slice(&self.seq.to_be_bytes());
        buf[32..40].copy_from_slice(&self.send_ts.to_be_bytes());
        buf[40..48].copy_from_slice(&self.token.to_be_bytes());
        Ok(())
    }

    /// Reads a header from the front of `buf`. Checks magic, version, kind and that
    /// `frame_len` is at least the header; the caller checks it against what it received.
    pub fn decode(buf: &[u8]) -> Result<Header, WireError> {
        let buf: &[u8; HEADER_LEN] = buf.first_chunk().ok_or(WireError::Truncated {
            need: HEADER_LEN,
            have: buf.len(),
        })?;
        if buf[0..4] != MAGIC {
            return Err(WireError::BadMagic);
        }
        if buf[4] != VERSION {
            return Err(WireError::BadVersion(buf[4]));
        }
        let kind = Kind::from_u8(buf[5])?;
        let frame_len = be32(&buf[8..12]);
        if (frame_len as usize) < HEADER_LEN || frame_len > MAX_FRAME_LEN {
            return Err(WireError::BadLength(frame_len));
        }
        Ok(Header {
            kind,
            flags: u16::from_be_bytes([buf[6], buf[7]]),
            frame_len,
            reply_len: be32(&buf[12..16]),
            flow: be32(&buf[16..20]),
            status: be32(&buf[20..24]),
            seq: be64(&buf[24..32]),
            send_ts: be64(&buf[32..40]),
            token: be64(&buf[40..48]),
        })
    }
}

/// True when `buf` starts with the framed magic (cheap test for demultiplexing).
pub fn is_framed(buf: &[u8]) -> bool {
    buf.starts_with(&MAGIC)
}

/// Rewrites kind and status of an encoded frame in place (what an echo responder does).
pub fn set_kind_status(buf: &mut [u8], kind: Kind, status: u32) {
    if let Some(buf) = buf.first_chunk_mut::<HEADER_LEN>() {
        buf[5] = kind as u8;
        buf[20..24].copy_from_slice(&status.to_be_bytes());
    }
}

/// The access token carried on the wire for a shared secret (FNV-1a, 64 bit).
///
/// This is an access gate, not authentication: the token travels in clear and anyone who can
/// see the traffic can reuse it. Hashing only keeps the secret itself off the wire. Never 0.
pub fn token_from_secret(secret: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in secret.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h.max(1)
}

/// The big-endian `u32` at the front of `b`. Callers pass a constant 4-byte range of a
/// length-checked array; a shorter slice reads as 0 rather than panicking.
pub(crate) fn be32(b: &[u8]) -> u32 {
    b.first_chunk().map_or(0, |a| u32::from_be_bytes(*a))
}

/// The big-endian `u64` at the front of `b` (as [`be32`]).
pub(crate) fn be64(b: &[u8]) -> u64 {
    b.first_chunk().map_or(0, |a| u64::from_be_bytes(*a))
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests {
    use super::*;

    fn sample() -> Header {
        Header {
            kind: Kind::Echo,
            flags: 0x0102,
            frame_len: 64,
            reply_len: 0,
            flow: 7,
            status: 0,
            seq: 0x0102_0304_0506_0708,
            send_ts: 1_000_000_123,
            token: 0xdead_beef_cafe_f00d,
        }
    }

    /// Golden bytes: the layout in the module doc, byte for byte.
    const GOLDEN: [u8; 48] = [
        0x1E, b'N', b'P', b'T', // magic
        1, 1, 0x01, 0x02, // version, kind=Echo, flags
        0, 0, 0, 64, // frame_len
        0, 0, 0, 0, // reply_len
        0, 0, 0, 7, // flow
        0, 0, 0, 0, // status
        1, 2, 3, 4, 5, 6, 7, 8, // seq
        0, 0, 0, 0, 0x3B, 0x9A, 0xCA, 0x7B, // send_ts = 1_000_000_123
        0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xf0, 0x0d, // token
    ];

    #[test]
    fn encodes_golden_bytes() {
        let mut buf = [0u8; 48];
        sample().encode(&mut buf).unwrap();
        assert_eq!(buf, GOLDEN);
    }

    #[test]
    fn decodes_golden_bytes() {
        assert_eq!(Header::decode(&GOLDEN).unwrap(), sample());
    }

    #[test]
    fn every_truncation_is_one_error() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                Header::decode(&GOLDEN[..n]),
                Err(WireError::Truncated {
                    need: HEADER_LEN,
                    have: n
                })
            );
        }
    }

    #[test]
    fn rejects_foreign_bytes() {
        let mut b = GOLDEN;
        b[1] = b'X';
        assert_eq!(Header::decode(&b), Err(WireError::BadMagic));
        let mut b = GOLDEN;
        b[4] = 9;
        assert_eq!(Header::decode(&b), Err(WireError::BadVersion(9)));
        let mut b = GOLDEN;
        b[5] = 77;
        assert_eq!(Header::decode(&b), Err(WireError::BadKind(77)));
        b[5] = 17;
        assert_eq!(Header::decode(&b), Err(WireError::BadKind(17)));
        let mut b = GOLDEN;
        b[11] = 10; // frame_len 10 < header
        assert_eq!(Header::decode(&b), Err(WireError::BadLength(10)));
    }

    #[test]
    fn echo_flip_keeps_timestamp() {
        let mut buf = GOLDEN;
        set_kind_status(&mut buf, Kind::EchoReply, status::CLAMPED);
        let h = Header::decode(&buf).unwrap();
        assert_eq!(h.kind, Kind::EchoReply);
        assert_eq!(h.status, status::CLAMPED);
        assert_eq!(h.send_ts, sample().send_ts);
    }

    #[test]
    fn first_byte_never_looks_like_quic() {
        assert_eq!(MAGIC[0] & 0x40, 0);
    }

    /// The fuzz target's property on stable: random and mutated bytes never panic, and what
    /// decodes re-encodes to the same header.
    #[test]
    fn random_bytes_never_panic() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..200_000 {
            let mut b = GOLDEN.to_vec();
            b.truncate((next() % 60) as usize);
            for _ in 0..(i % 5) {
                if !b.is_empty() {
                    let k = (next() as usize) % b.len();
                    b[k] = next() as u8;
                }
            }
            if let Ok(h) = Header::decode(&b) {
                let mut out = [0u8; HEADER_LEN];
                h.encode(&mut out).unwrap();
                assert_eq!(Header::decode(&out).unwrap(), h);
            }
            let _ = crate::raw::RawStamp::decode(&b);
        }
    }

    #[test]
    fn token_is_stable_and_nonzero() {
        assert_eq!(token_from_secret("s3cret"), token_from_secret("s3cret"));
        assert_ne!(token_from_secret("a"), token_from_secret("b"));
        assert_ne!(token_from_secret(""), 0);
    }
}
