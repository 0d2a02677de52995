//! What the responder saw: the reflect block of an echo reply, refusal notices, and the flow
//! report — so a client can tell loss on the way up from loss on the way down, a packet the
//! server's budget refused from a packet the path lost, and time spent in the responder from
//! time spent on the path (as irtt's server timestamps and STAMP's stateful reflector do).
//!
//! A client asks by setting [`REFLECT`] in a frame's `flags`. Everything here is an extension of
//! wire version 1: a responder that predates it answers with the flags untouched, and the client
//! then knows only round trips (as with `--raw`).
//!
//! **Echo replies.** The responder answers a `REFLECT` frame (`Echo` or `Request`) as before and
//! additionally:
//! - sets [`REFLECTED`] and writes the flow's *receive count* into `reply_len` (bytes 12..16):
//!   how many frames of this flow (source address and flow id) it has received so far, this one
//!   included, duplicates included, refused ones not, modulo 2³²;
//! - if the frame has at least [`STAMP_LEN`] payload bytes, sets [`STAMPED`] and writes
//!   [`Stamps`] over the first [`STAMP_LEN`] bytes of the payload:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |   responder receive time, ns since the Unix epoch (wall clock) | 48
//! |                                                               |
//! +---------------------------------------------------------------+
//! |   dwell: responder send time - receive time, ns (saturating)  | 56
//! +---------------------------------------------------------------+
//! |   frames of this flow the responder refused so far, mod 2^32  | 60
//! +---------------------------------------------------------------+
//! |   payload as sent ...                                         | 64
//! ```
//!
//! The receive time is a wall clock so that one-way delay can be computed where the two clocks
//! are one (same host, lab namespaces) or synced; the dwell needs no sync (one clock).
//! Both fields sit inside the reply the client's own request paid for: the answer is never
//! larger than the request. Under `--token` the header (so `flags` and the receive count) is
//! covered by the frame's tag; the stamps, like all payload, are not.
//!
//! **Refusal notices.** When the responder refuses a `REFLECT` frame (its budget, or a missing
//! or foreign `--token`), it may answer with a *notice*: the refused frame's own header, cut to
//! [`HEADER_LEN`] bytes (never longer than what it refuses), with `kind` turned into the reply's
//! kind, [`NOTICE`] set in `flags`, `status` saying why ([`crate::frame::status`]), the flow's
//! refused count so far in `reply_len` (with [`REFLECTED`]) and the token/tag field zeroed.
//! Notices are rate-limited per source by the responder, so a client may see fewer notices than
//! refusals: the counts, not the notices, are what it adds up.
//!
//! **Flow report.** At the end a client asks with a [`Kind::FlowQuery`] frame and gets a
//! [`Kind::FlowReport`] of the same length whose payload is a [`FlowReport`] (its layout in
//! `flow_report.rs`).
//!
//! All integers big-endian.

use crate::frame::{self, be32, be64, Header, Kind, HEADER_LEN};
use crate::WireError;

/// Request flag: tell me what you saw of this flow.
pub const REFLECT: u16 = 0x0001;
/// Reply flag: `reply_len` holds the flow's receive count (or, in a notice, its refused count).
pub const REFLECTED: u16 = 0x0002;
/// Reply flag: the first [`STAMP_LEN`] payload bytes hold [`Stamps`].
pub const STAMPED: u16 = 0x0004;
/// Reply flag: this is a refusal notice (header only; `status` says why).
pub const NOTICE: u16 = 0x0008;

/// Payload bytes the [`Stamps`] take.
pub const STAMP_LEN: usize = 16;
/// [`HEADER_LEN`] as the header's `frame_len` field spells it.
const HEADER_LEN_U32: u32 = 48;
const _: () = assert!(HEADER_LEN_U32 as usize == HEADER_LEN);

mod flow_report;

pub use flow_report::{
    read_report, write_query, write_report, FlowReport, FLOW_QUERY_LEN, FLOW_REPORT_LEN,
};

/// The responder's view of one frame, written over the front of the reply's payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamps {
    /// When the frame arrived, ns since the Unix epoch on the responder's wall clock.
    pub rx_wall_ns: u64,
    /// Send time minus receive time, ns (saturating at `u32::MAX`, 4.3 s).
    pub dwell_ns: u32,
    /// Frames of this flow refused so far, modulo 2³².
    pub refused: u32,
}

impl Stamps {
    /// Writes the stamps into the first [`STAMP_LEN`] bytes of `payload`.
    pub fn encode(&self, payload: &mut [u8]) -> Result<(), WireError> {
        let have = payload.len();
        let b: &mut [u8; STAMP_LEN] = payload.first_chunk_mut().ok_or(WireError::Truncated {
            need: STAMP_LEN,
            have,
        })?;
        b[0..8].copy_from_slice(&self.rx_wall_ns.to_be_bytes());
        b[8..12].copy_from_slice(&self.dwell_ns.to_be_bytes());
        b[12..16].copy_from_slice(&self.refused.to_be_bytes());
        Ok(())
    }

    pub fn decode(payload: &[u8]) -> Result<Stamps, WireError> {
        let b: &[u8; STAMP_LEN] = payload.first_chunk().ok_or(WireError::Truncated {
            need: STAMP_LEN,
            have: payload.len(),
        })?;
        Ok(Stamps {
            rx_wall_ns: be64(&b[0..8]),
            dwell_ns: be32(&b[8..12]),
            refused: be32(&b[12..16]),
        })
    }
}

/// What a reply says the responder saw, as the client reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reflection {
    /// The flow's receive count when this frame arrived, modulo 2³² (see [`unwrap_count`]).
    pub rx_count: u32,
    /// Present when the frame had room for them.
    pub stamps: Option<Stamps>,
}

/// The reply kind that answers a request kind (a notice takes it); None for reply kinds.
pub fn reply_kind(k: Kind) -> Option<Kind> {
    match k {
        Kind::Echo => Some(Kind::EchoReply),
        Kind::Request => Some(Kind::Response),
        Kind::Bulk | Kind::BulkData => Some(Kind::BulkReply),
        Kind::FlowQuery => Some(Kind::FlowReport),
        Kind::HopRequest => Some(Kind::HopReply),
        Kind::Idle => Some(Kind::IdleAck),
        Kind::Mtu => Some(Kind::MtuReply),
        Kind::EchoReply
        | Kind::Response
        | Kind::HopReply
        | Kind::BulkReply
        | Kind::FlowReport
        | Kind::IdleAck
        | Kind::IdleCallback
        | Kind::MtuReply => None,
    }
}

/// Responder: turns the already-answered frame `reply` (an encoded echo reply or response, its
/// header decoded as `h`) into a reflected one: sets [`REFLECTED`] and the receive count, and
/// when there is room [`STAMPED`] and the stamps. Call before sealing (`--token`). Returns
/// whether the stamps were written.
pub fn write_reply(
    reply: &mut [u8],
    h: &Header,
    rx_count: u32,
    stamps: &Stamps,
) -> Result<bool, WireError> {
    let room = reply.len() >= HEADER_LEN + STAMP_LEN;
    let mut out = *h;
    out.flags |= REFLECTED;
    out.reply_len = rx_count;
    if room {
        out.flags |= STAMPED;
        stamps.encode(reply.get_mut(HEADER_LEN..).unwrap_or_default())?;
    }
    out.encode(reply)?;
    Ok(room)
}

/// Responder: sets the dwell of a reply whose stamps [`write_reply`] wrote, as late as
/// possible (just before the send); sealing does not cover it (payload), so it may come after.
/// False when `reply` has no room for stamps.
pub fn write_dwell(reply: &mut [u8], dwell_ns: u32) -> bool {
    match reply.get_mut(HEADER_LEN + 8..HEADER_LEN + 12) {
        Some(b) => {
            b.copy_from_slice(&dwell_ns.to_be_bytes());
            true
        }
        None => false,
    }
}

/// Client: what a reply (decoded header `h`, whole frame `frame`) says the responder saw; None
/// when it says nothing (an older responder, or a notice — see [`read_notice`]).
pub fn read_reply(h: &Header, frame: &[u8]) -> Option<Reflection> {
    if h.flags & REFLECTED == 0 || h.flags & NOTICE != 0 {
        return None;
    }
    let stamps = if h.flags & STAMPED != 0 {
        Stamps::decode(frame.get(HEADER_LEN..)?).ok()
    } else {
        None
    };
    Some(Reflection {
        rx_count: h.reply_len,
        stamps,
    })
}

/// A refusal notice as the client reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Why ([`status::BUDGET`], [`status::TOKEN_REQUIRED`], …).
    pub status: u32,
    /// The flow's refused count so far (mod 2³²), when the responder keeps the flow.
    pub refused: Option<u32>,
}

/// Responder: the notice for the refused frame `refused` into `out`; None when `refused` is not
/// a well-formed frame of a request kind that asked for [`REFLECT`] (nothing is sent then).
pub fn write_notice(
    refused: &[u8],
    why: u32,
    refused_count: Option<u32>,
    out: &mut [u8; HEADER_LEN],
) -> Option<()> {
    let h = Header::decode(refused).ok()?;
    if h.flags & REFLECT == 0 || h.flags & NOTICE != 0 {
        return None;
    }
    let kind = reply_kind(h.kind)?;
    let mut flags = NOTICE;
    if refused_count.is_some() {
        flags |= REFLECTED;
    }
    Header {
        kind,
        flags,
        frame_len: HEADER_LEN_U32,
        reply_len: refused_count.unwrap_or(0),
        flow: h.flow,
        status: why,
        seq: h.seq,
        send_ts: h.send_ts,
        token: 0,
    }
    .encode(out)
    .ok()
}

/// Client: the notice a frame is, if it is one.
pub fn read_notice(h: &Header) -> Option<Notice> {
    if h.flags & NOTICE == 0 || h.frame_len as usize != HEADER_LEN {
        return None;
    }
    Some(Notice {
        status: h.status,
        refused: (h.flags & REFLECTED != 0).then_some(h.reply_len),
    })
}

/// Unwraps a 32-bit count from the wire into the 64-bit value nearest to `near` (the last
/// value seen), so counts survive passing 2³² as long as consecutive readings are less than
/// 2³¹ apart.
pub fn unwrap_count(near: u64, wire: u32) -> u64 {
    let low = near & 0xFFFF_FFFF;
    let base = near - low;
    let candidate = base | u64::from(wire);
    let diff = i64::from(wire) - i64::from(u32::try_from(low).unwrap_or(u32::MAX));
    if diff > i64::from(i32::MAX) {
        candidate.checked_sub(1 << 32).unwrap_or(candidate)
    } else if diff < i64::from(i32::MIN) {
        candidate.saturating_add(1 << 32)
    } else {
        candidate
    }
}

/// True when `h` is a frame asking for [`REFLECT`].
pub fn wants_reflect(h: &Header) -> bool {
    h.flags & REFLECT != 0
}

/// Cheap test on undecoded bytes (the responder's refusal path, before any decode): the flow id
/// of a framed datagram that asks for [`REFLECT`], else None.
pub fn reflect_flow(buf: &[u8]) -> Option<u32> {
    let b: &[u8; HEADER_LEN] = buf.first_chunk()?;
    if !frame::is_framed(b) || u16::from_be_bytes([b[6], b[7]]) & REFLECT == 0 {
        return None;
    }
    Some(be32(&b[16..20]))
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests {
    use super::*;
    use crate::frame::status;

    fn echo(len: u32) -> Header {
        Header {
            kind: Kind::Echo,
            flags: REFLECT,
            frame_len: len,
            reply_len: 0,
            flow: 7,
            status: 0,
            seq: 0x0102_0304_0506_0708,
            send_ts: 1_000_000_123,
            token: 0xdead_beef_cafe_f00d,
        }
    }

    /// Golden bytes of a 64-byte reflected echo reply: the layout in the module doc.
    const GOLDEN_REPLY: [u8; 64] = [
        0x1E, b'N', b'P', b'T', // magic
        1, 2, 0x00, 0x07, // version, kind=EchoReply, flags = REFLECT|REFLECTED|STAMPED
        0, 0, 0, 64, // frame_len
        0, 0, 0x01, 0x00, // reply_len = receive count 256
        0, 0, 0, 7, // flow
        0, 0, 0, 0, // status
        1, 2, 3, 4, 5, 6, 7, 8, // seq
        0, 0, 0, 0, 0x3B, 0x9A, 0xCA, 0x7B, // send_ts = 1_000_000_123
        0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xf0, 0x0d, // token (the tag, under --token)
        0x18, 0x77, 0x6F, 0x28, 0xCA, 0x5F, 0x4D,
        0x00, // rx_wall_ns = 1_763_000_000_123_456_768
        0, 0, 0x30, 0x39, // dwell_ns = 12345
        0, 0, 0, 3, // refused = 3
    ];

    #[test]
    fn a_reflected_reply_has_the_golden_bytes_and_reads_back() {
        let mut frame = [0xAAu8; 64];
        let mut h = echo(64);
        h.kind = Kind::EchoReply;
        h.encode(&mut frame).unwrap();
        let stamps = Stamps {
            rx_wall_ns: 1_763_000_000_123_456_768,
            dwell_ns: 12_345,
            refused: 3,
        };
        assert!(write_reply(
            &mut frame,
            &h,
            256,
            &Stamps {
                dwell_ns: 0,
                ..stamps
            }
        )
        .unwrap());
        assert!(
            write_dwell(&mut frame, 12_345),
            "the dwell, set just before the send"
        );
        assert_eq!(frame, GOLDEN_REPLY);
        let back = Header::decode(&frame).unwrap();
        assert_eq!(
            read_reply(&back, &frame),
            Some(Reflection {
                rx_count: 256,
                stamps: Some(stamps)
            })
        );
        assert_eq!(read_notice(&back), None);
    }

    #[test]
    fn a_frame_without_room_gets_the_count_only() {
        let mut frame = [0u8; 60];
        let mut h = echo(60);
        h.kind = Kind::EchoReply;
        h.encode(&mut frame).unwrap();
        assert!(!write_reply(&mut frame, &h, 9, &Stamps::default()).unwrap());
        let back = Header::decode(&frame).unwrap();
        assert_eq!(back.flags, REFLECT | REFLECTED);
        assert_eq!(
            read_reply(&back, &frame),
            Some(Reflection {
                rx_count: 9,
                stamps: None
            })
        );
        assert_eq!(&frame[48..], &[0u8; 12], "payload untouched");
        assert!(!write_dwell(&mut frame[..59], 1));
    }

    #[test]
    fn an_old_responders_reply_says_nothing() {
        let mut frame = [0u8; 64];
        let mut h = echo(64);
        h.kind = Kind::EchoReply;
        h.encode(&mut frame).unwrap();
        assert_eq!(read_reply(&h, &frame), None);
    }

    /// Golden bytes of the notice for a refused 200-byte echo: header only, kind turned into the
    /// reply's, status BUDGET, refused count 41, tag zeroed.
    const GOLDEN_NOTICE: [u8; 48] = [
        0x1E, b'N', b'P', b'T', // magic
        1, 2, 0x00, 0x0A, // version, kind=EchoReply, flags = REFLECTED|NOTICE
        0, 0, 0, 48, // frame_len
        0, 0, 0, 41, // reply_len = refused count
        0, 0, 0, 7, // flow
        0, 0, 0, 3, // status = BUDGET
        1, 2, 3, 4, 5, 6, 7, 8, // seq
        0, 0, 0, 0, 0x3B, 0x9A, 0xCA, 0x7B, // send_ts
        0, 0, 0, 0, 0, 0, 0, 0, // token zeroed
    ];

    #[test]
    fn a_notice_is_the_refused_header_cut_to_48_bytes() {
        let mut refused = [0x55u8; 200];
        echo(200).encode(&mut refused).unwrap();
        let mut out = [0u8; HEADER_LEN];
        write_notice(&refused, status::BUDGET, Some(41), &mut out).unwrap();
        assert_eq!(out, GOLDEN_NOTICE);
        let h = Header::decode(&out).unwrap();
        assert_eq!(
            read_notice(&h),
            Some(Notice {
                status: status::BUDGET,
                refused: Some(41)
            })
        );
        assert_eq!(read_reply(&h, &out), None, "a notice is not a reply");
    }

    #[test]
    fn no_notice_for_frames_that_did_not_ask_or_are_replies() {
        let mut out = [0u8; HEADER_LEN];
        let mut f = [0u8; 64];
        let mut h = echo(64);
        h.flags = 0;
        h.encode(&mut f).unwrap();
        assert_eq!(write_notice(&f, status::BUDGET, None, &mut out), None);
        h.flags = REFLECT;
        h.kind = Kind::EchoReply;
        h.encode(&mut f).unwrap();
        assert_eq!(write_notice(&f, status::BUDGET, None, &mut out), None);
        assert_eq!(write_notice(&f[..47], status::BUDGET, None, &mut out), None);
        assert_eq!(
            write_notice(
                b"not a frame at all, not at all, no, no, no, no.",
                3,
                None,
                &mut out
            ),
            None
        );
    }

    #[test]
    fn every_truncation_is_one_error() {
        for n in 0..STAMP_LEN {
            assert_eq!(
                Stamps::decode(&[0u8; STAMP_LEN][..n]),
                Err(WireError::Truncated {
                    need: STAMP_LEN,
                    have: n
                })
            );
        }
    }

    #[test]
    fn counts_unwrap_across_two_to_the_32() {
        assert_eq!(unwrap_count(0, 5), 5);
        assert_eq!(unwrap_count(0xFFFF_FFF0, 3), 0x1_0000_0003);
        assert_eq!(unwrap_count(0x1_0000_0003, 0xFFFF_FFF0), 0xFFFF_FFF0);
        assert_eq!(unwrap_count(0x5_0000_0010, 0x20), 0x5_0000_0020);
        assert_eq!(
            unwrap_count(10, 0xFFFF_FFFF),
            0xFFFF_FFFF,
            "no going below zero"
        );
    }
}
