//! Markings each way: a client tells the responder which DSCP/ECN its reply should carry, and
//! the responder tells the client which DSCP/ECN the request arrived with — so each direction's
//! marking (sent, arrived as sent, rewritten, bleached to 0, CE-marked on the way) can be read
//! per packet, not only the way back.
//!
//! A client asks by setting [`MARK`] in an `Echo` or `Request` frame's `flags` and writing the
//! TOS byte it wants on the reply (DSCP << 2 | ECN) into the top byte of `status` (a request's
//! `status` is otherwise 0: it is the responder's field). The responder answers as before and
//! additionally sets [`MARKED`], sends the reply with the TOS byte it chose ([`honoured`]: the
//! one asked, except that it never claims congestion it did not see — CE asked is sent
//! Not-ECT), and writes into the reply's `status`:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------+---------------+-------------------------------+
//! |  request: TOS |  request: 0   |  request: 0                   |  20
//! |  asked for    |               |                               |
//! |  reply: TOS   |  reply: TOS   |  reply: status (frame::status)|
//! |  sent with    |  request came |                               |
//! |               |  with         |                               |
//! +---------------+---------------+-------------------------------+
//! ```
//!
//! Everything else of the frame is as without [`MARK`]: the reply is exactly as long as it
//! would have been (nothing is added, so no amplification), and under `--token` the header —
//! so both TOS bytes — is covered by the frame's tag. The TOS byte a request came with is the
//! one the responder's kernel reports (`IP_RECVTOS`, `IPV6_RECVTCLASS`): what the last hop
//! delivered.
//!
//! Older peers: a responder that predates this echoes `flags` untouched and writes its own
//! `status`, so the reply has no [`MARKED`] and the client says the far end's view is unknown;
//! a plain echo returns the request itself (kind still `Echo`, no [`MARKED`]): the same. A
//! client that never sets [`MARK`] never gets [`MARKED`], and its `status` reads as before.

use crate::frame::{Header, Kind, HEADER_LEN};

/// Request flag: mark your reply with the TOS byte in `status`'s top byte, and tell me what
/// this frame arrived with.
pub const MARK: u16 = 0x0040;
/// Reply flag: `status`'s top two bytes hold the TOS byte the reply was sent with and the one
/// the request arrived with; its low 16 bits are the status.
pub const MARKED: u16 = 0x0080;

/// ECN codepoint CE (RFC 3168).
pub const CE: u8 = 3;

/// What a marked reply says: the TOS byte the responder sent it with, and the one the request
/// arrived with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marks {
    pub sent: u8,
    pub seen: u8,
}

/// Client: the `status` of a request that asks for a reply marked `want`.
pub fn request_status(want: u8) -> u32 {
    u32::from(want) << 24
}

/// Responder: the TOS byte the request (header `h`) asks its reply to carry, when it asks
/// ([`MARK`] on an `Echo` or `Request`).
pub fn wanted(h: &Header) -> Option<u8> {
    (h.flags & MARK != 0 && matches!(h.kind, Kind::Echo | Kind::Request))
        .then(|| h.status.to_be_bytes()[0])
}

/// Responder: the TOS byte it sends a reply with when `want` was asked — the DSCP as asked,
/// ECN as asked unless it is CE (a responder does not report congestion it did not see; CE
/// becomes Not-ECT).
pub fn honoured(want: u8) -> u8 {
    if want & 3 == CE {
        want & !3
    } else {
        want
    }
}

/// Responder: makes the encoded reply in `reply` (its header already the reply's) a marked one:
/// sets [`MARKED`] and writes `m` over `status`'s top two bytes, keeping its low 16 bits.
/// False when `reply` is shorter than a header (nothing written).
pub fn write_reply(reply: &mut [u8], m: Marks) -> bool {
    let Some(b) = reply.first_chunk_mut::<HEADER_LEN>() else {
        return false;
    };
    let flags = u16::from_be_bytes([b[6], b[7]]) | MARKED;
    b[6..8].copy_from_slice(&flags.to_be_bytes());
    b[20] = m.sent;
    b[21] = m.seen;
    true
}

/// Client: what a reply (header `h`) says of the marking, when it is a marked one.
pub fn read_reply(h: &Header) -> Option<Marks> {
    if h.flags & MARKED == 0 || !matches!(h.kind, Kind::EchoReply | Kind::Response) {
        return None;
    }
    let [sent, seen, ..] = h.status.to_be_bytes();
    Some(Marks { sent, seen })
}

/// Client: a reply's status code — `status` without the marking bytes of a marked reply.
pub fn status_of(h: &Header) -> u32 {
    if h.flags & MARKED != 0 {
        h.status & 0xffff
    } else {
        h.status
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::status;

    fn request(want: u8) -> Header {
        Header {
            kind: Kind::Echo,
            flags: crate::reflect::REFLECT | MARK,
            frame_len: 64,
            reply_len: 0,
            flow: 7,
            status: request_status(want),
            seq: 1,
            send_ts: 2,
            token: 0,
        }
    }

    #[test]
    fn golden_request_and_reply() {
        // DSCP 46 + ECT(0) = 0xba asked.
        let mut buf = [0u8; 64];
        request(0xba).encode(&mut buf).unwrap();
        assert_eq!(
            &buf[4..8],
            &[1, 1, 0x00, 0x41],
            "version, Echo, REFLECT | MARK"
        );
        assert_eq!(&buf[20..24], &[0xba, 0, 0, 0]);
        let h = Header::decode(&buf).unwrap();
        assert_eq!(wanted(&h), Some(0xba));
        // The responder: an echo reply, sent with 0xba, the request arrived bleached to
        // DSCP 0 with ECN CE (0x03).
        crate::frame::set_kind_status(&mut buf, Kind::EchoReply, status::OK);
        assert!(write_reply(
            &mut buf,
            Marks {
                sent: honoured(0xba),
                seen: 0x03
            }
        ));
        assert_eq!(
            &buf[4..8],
            &[1, 2, 0x00, 0xc1],
            "EchoReply, REFLECT | MARK | MARKED"
        );
        assert_eq!(&buf[20..24], &[0xba, 0x03, 0, 0]);
        let r = Header::decode(&buf).unwrap();
        assert_eq!(
            read_reply(&r),
            Some(Marks {
                sent: 0xba,
                seen: 0x03
            })
        );
        assert_eq!(status_of(&r), status::OK);
    }

    #[test]
    fn a_clamped_response_keeps_its_status_and_ce_is_never_sent_on_request() {
        let mut h = request(0xbb);
        h.kind = Kind::Response;
        h.status = status::CLAMPED;
        let mut buf = [0u8; 48];
        h.encode(&mut buf).unwrap();
        assert!(write_reply(
            &mut buf,
            Marks {
                sent: 0x10,
                seen: 0x11
            }
        ));
        let r = Header::decode(&buf).unwrap();
        assert_eq!(status_of(&r), status::CLAMPED);
        assert_eq!(read_reply(&r).unwrap().sent, 0x10);
        assert_eq!(honoured(0xbb), 0xb8, "CE asked: Not-ECT sent");
        assert_eq!(honoured(0xb9), 0xb9);
        assert_eq!(honoured(0x02), 0x02);
    }

    #[test]
    fn older_peers_and_plain_echoes_say_nothing() {
        // A plain echo returns the request: kind Echo, MARK without MARKED.
        let h = request(0xb8);
        assert_eq!(read_reply(&h), None);
        assert_eq!(status_of(&h), request_status(0xb8));
        // An older responder: EchoReply, flags as asked, its own status.
        let mut old = h;
        old.kind = Kind::EchoReply;
        old.status = 0;
        assert_eq!(read_reply(&old), None);
        // A frame that did not ask is not marked; nor is a query.
        let mut plain = h;
        plain.flags = crate::reflect::REFLECT;
        assert_eq!(wanted(&plain), None);
        let mut q = h;
        q.kind = Kind::FlowQuery;
        assert_eq!(wanted(&q), None);
    }

    #[test]
    fn truncated_buffers_are_refused() {
        for n in 0..HEADER_LEN {
            let mut b = vec![0u8; n];
            assert!(!write_reply(&mut b, Marks { sent: 1, seen: 2 }));
            assert_eq!(b, vec![0u8; n]);
        }
    }

    /// The fuzz property on stable: random and mutated bytes never panic, and a marked reply
    /// reads back what was written.
    #[test]
    fn random_bytes_never_panic() {
        let mut m = crate::mangle::Mangler::new(0x9E37_79B9_7F4A_7C15);
        let mut base = [0u8; 64];
        request(0x2a).encode(&mut base).unwrap();
        for i in 0..50_000u64 {
            let mut b = m.mangle(&base, 70, i % 5);
            let [s, t, ..] = m.next().to_be_bytes();
            let m = Marks { sent: s, seen: t };
            let wrote = write_reply(&mut b, m);
            assert_eq!(wrote, b.len() >= HEADER_LEN);
            if let Ok(h) = Header::decode(&b) {
                let _ = wanted(&h);
                let _ = status_of(&h);
                if matches!(h.kind, Kind::EchoReply | Kind::Response) {
                    assert_eq!(read_reply(&h), Some(m));
                }
            }
        }
    }
}
