//! The idle callback: how long a path keeps an idle UDP flow alive (`npt lifetime`).
//!
//! Relays and NATs forget a UDP mapping after an idle time of their own. A client that sends
//! after the gap learns nothing: the NAT or relay makes a new mapping and the reply comes back.
//! Expiry shows only when the **far end sends first** after the gap, so the client asks the
//! responder to do that:
//!
//! 1. the client sends an [`Kind::Idle`] frame of at least [`IDLE_REQUEST_LEN`] bytes (two
//!    answers' worth: the ack and the callback together are no longer than it): "keep flow F
//!    idle for `gap_ms`, then call me back";
//! 2. the responder answers at once with an [`Kind::IdleAck`] (so the mapping exists, and its
//!    last packet is this one), saying the source address it saw;
//! 3. after the gap it sends one [`Kind::IdleCallback`] to that same address, saying how long
//!    it held the flow: through a path that forgot the mapping it never arrives;
//! 4. the client then sends an `Idle` frame with `gap_ms` 0 on the same socket: its ack says
//!    the source address the responder sees now — another one than in step 2 when the path
//!    made a new mapping on another port (a *rebound* flow). A gap of 0 also cancels a
//!    callback still pending for the flow.
//!
//! The frame is the usual header ([`crate::frame`]; `flow`, `seq` and `send_ts` as the client
//! sent them) and this payload, all integers big-endian:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |   gap asked for, ms (0 = no callback: only the address)       | 48
//! +-------------------------------+---------------+---------------+
//! |   source port seen            |  family 4/6   |   reserved 0  | 52
//! +-------------------------------+---------------+---------------+
//! |   source address seen (16 bytes; IPv4 as ::ffff:a.b.c.d)      | 56
//! |                                                               |
//! |                                                               |
//! |                                                               |
//! +---------------------------------------------------------------+
//! |   the responder's longest gap, ms                             | 72
//! +---------------------------------------------------------------+
//! |   held, µs: from the ack leaving to the callback leaving      | 76
//! +---------------------------------------------------------------+
//! ```
//!
//! A request fills only `gap` (and pads to [`IDLE_REQUEST_LEN`]); the responder writes the
//! rest (family 0: no address). The ack's `status` is `OK`, or why no callback was scheduled
//! ([`status::IDLE_FULL`], [`status::IDLE_GAP`], [`status::IDLE_SHORT`]). Both answers are
//! [`IDLE_LEN`] bytes, together no longer than the request, and go only to the address the
//! request came from: the responder cannot be aimed at anyone else, nor amplify.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use crate::frame::{be32, status, Header, Kind, HEADER_LEN};
use crate::WireError;

/// Payload bytes of an idle frame.
pub const IDLE_PAYLOAD_LEN: usize = 32;
/// The length of an idle answer (an ack, a callback).
pub const IDLE_LEN: usize = HEADER_LEN + IDLE_PAYLOAD_LEN;
/// The shortest request that gets a callback: its two answers' length, so the responder never
/// sends more bytes than a request brought (a shorter one, down to [`IDLE_LEN`], gets only
/// the ack, [`status::IDLE_SHORT`]). The payload after the idle fields is padding.
pub const IDLE_REQUEST_LEN: usize = 2 * IDLE_LEN;
const IDLE_REQUEST_LEN_U32: u32 = 160;
const _: () = assert!(IDLE_REQUEST_LEN_U32 as usize == IDLE_REQUEST_LEN);
const IDLE_LEN_U32: u32 = 80;
const _: () = assert!(IDLE_LEN_U32 as usize == IDLE_LEN);

/// The payload of an idle frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Idle {
    /// The gap asked for, ms; 0 asks only for the address (and cancels a pending callback).
    pub gap_ms: u32,
    /// The source address the responder saw (answers only).
    pub seen: Option<SocketAddr>,
    /// The longest gap the responder calls back after, ms (answers only).
    pub max_gap_ms: u32,
    /// From the ack leaving to the callback leaving, µs (callbacks only).
    pub held_us: u32,
}

impl Idle {
    /// Writes the payload into the first [`IDLE_PAYLOAD_LEN`] bytes of `payload`.
    pub fn encode(&self, payload: &mut [u8]) -> Result<(), WireError> {
        let have = payload.len();
        let b: &mut [u8; IDLE_PAYLOAD_LEN] =
            payload.first_chunk_mut().ok_or(WireError::Truncated {
                need: IDLE_PAYLOAD_LEN,
                have,
            })?;
        *b = [0; IDLE_PAYLOAD_LEN];
        b[0..4].copy_from_slice(&self.gap_ms.to_be_bytes());
        if let Some(a) = self.seen {
            b[4..6].copy_from_slice(&a.port().to_be_bytes());
            let (family, ip) = match a.ip() {
                IpAddr::V4(v4) => (4, v4.to_ipv6_mapped()),
                IpAddr::V6(v6) => (6, v6),
            };
            b[6] = family;
            b[8..24].copy_from_slice(&ip.octets());
        }
        b[24..28].copy_from_slice(&self.max_gap_ms.to_be_bytes());
        b[28..32].copy_from_slice(&self.held_us.to_be_bytes());
        Ok(())
    }

    /// Reads the payload from the front of `payload`; an unknown family is no address.
    pub fn decode(payload: &[u8]) -> Result<Idle, WireError> {
        let b: &[u8; IDLE_PAYLOAD_LEN] = payload.first_chunk().ok_or(WireError::Truncated {
            need: IDLE_PAYLOAD_LEN,
            have: payload.len(),
        })?;
        let port = u16::from_be_bytes([b[4], b[5]]);
        let mut octets = [0u8; 16];
        octets.copy_from_slice(&b[8..24]);
        let v6 = Ipv6Addr::from(octets);
        let seen = match b[6] {
            4 => v6
                .to_ipv4_mapped()
                .map(|v4| SocketAddr::new(IpAddr::V4(v4), port)),
            6 => Some(SocketAddr::new(IpAddr::V6(v6), port)),
            _ => None,
        };
        Ok(Idle {
            gap_ms: be32(&b[0..4]),
            seen,
            max_gap_ms: be32(&b[24..28]),
            held_us: be32(&b[28..32]),
        })
    }
}

/// Client: an [`IDLE_REQUEST_LEN`]-byte `Idle` request for flow `flow`.
pub fn request(flow: u32, seq: u64, send_ts: u64, gap_ms: u32) -> [u8; IDLE_REQUEST_LEN] {
    let mut f = [0u8; IDLE_REQUEST_LEN];
    let h = Header {
        kind: Kind::Idle,
        flags: 0,
        frame_len: IDLE_REQUEST_LEN_U32,
        reply_len: 0,
        flow,
        status: status::OK,
        seq,
        send_ts,
        token: 0,
    };
    // Both cannot fail: the buffer holds a header and a payload.
    let _ = h.encode(&mut f);
    let _ = Idle {
        gap_ms,
        ..Idle::default()
    }
    .encode(f.get_mut(HEADER_LEN..).unwrap_or_default());
    f
}

/// Responder: the answer of `kind` (`IdleAck` or `IdleCallback`) to the request `h` (its
/// header), with `body`; [`IDLE_LEN`] bytes whatever the request's length.
pub fn answer(h: &Header, kind: Kind, st: u32, body: &Idle) -> [u8; IDLE_LEN] {
    let mut f = [0u8; IDLE_LEN];
    let out = Header {
        kind,
        flags: 0,
        frame_len: IDLE_LEN_U32,
        reply_len: 0,
        status: st,
        token: 0,
        ..*h
    };
    let _ = out.encode(&mut f);
    let _ = body.encode(f.get_mut(HEADER_LEN..).unwrap_or_default());
    f
}

/// Client: an idle answer's header and payload (None for anything else, or too short).
pub fn read(frame: &[u8]) -> Option<(Header, Idle)> {
    let h = Header::decode(frame).ok()?;
    if !matches!(h.kind, Kind::IdleAck | Kind::IdleCallback) || frame.len() < IDLE_LEN {
        return None;
    }
    let body = Idle::decode(frame.get(HEADER_LEN..)?).ok()?;
    Some((h, body))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // fixed offsets into fixed-size test arrays
mod tests {
    use super::*;

    fn sample() -> Idle {
        Idle {
            gap_ms: 30_000,
            seen: Some("192.0.2.7:40001".parse().unwrap()),
            max_gap_ms: 600_000,
            held_us: 30_000_123,
        }
    }

    /// Golden bytes: the layout in the module doc, byte for byte.
    const GOLDEN: [u8; IDLE_PAYLOAD_LEN] = [
        0, 0, 0x75, 0x30, // gap 30,000 ms
        0x9C, 0x41, 4, 0, // port 40001, family 4, reserved
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7, // ::ffff:192.0.2.7
        0, 0x09, 0x27, 0xC0, // max gap 600,000 ms
        0x01, 0xC9, 0xC3, 0xFB, // held 30,000,123 µs
    ];

    #[test]
    fn encodes_and_decodes_golden_bytes() {
        let mut b = [0u8; IDLE_PAYLOAD_LEN];
        sample().encode(&mut b).unwrap();
        assert_eq!(b, GOLDEN);
        assert_eq!(Idle::decode(&GOLDEN).unwrap(), sample());
    }

    #[test]
    fn ipv6_and_no_address_round_trip() {
        let v6 = Idle {
            seen: Some("[2001:db8::5]:443".parse().unwrap()),
            ..sample()
        };
        let mut b = [0u8; IDLE_PAYLOAD_LEN];
        v6.encode(&mut b).unwrap();
        assert_eq!(b[6], 6);
        assert_eq!(Idle::decode(&b).unwrap(), v6);
        let none = Idle {
            gap_ms: 5,
            ..Idle::default()
        };
        none.encode(&mut b).unwrap();
        assert_eq!(Idle::decode(&b).unwrap(), none);
    }

    #[test]
    fn every_truncation_is_one_error() {
        for n in 0..IDLE_PAYLOAD_LEN {
            assert_eq!(
                Idle::decode(&GOLDEN[..n]),
                Err(WireError::Truncated {
                    need: IDLE_PAYLOAD_LEN,
                    have: n
                })
            );
        }
    }

    #[test]
    fn request_and_answer_frames() {
        let r = request(9, 3, 77, 5_000);
        let h = Header::decode(&r).unwrap();
        assert_eq!(
            (h.kind, h.flow, h.seq, h.frame_len),
            (Kind::Idle, 9, 3, 160)
        );
        assert_eq!(Idle::decode(&r[HEADER_LEN..]).unwrap().gap_ms, 5_000);
        assert_eq!(read(&r), None, "a request is not an answer");
        let a = answer(&h, Kind::IdleCallback, status::OK, &sample());
        let (ah, body) = read(&a).unwrap();
        assert_eq!(
            (ah.kind, ah.flow, ah.seq, ah.send_ts),
            (Kind::IdleCallback, 9, 3, 77)
        );
        assert_eq!(body, sample());
        assert_eq!(read(&a[..IDLE_LEN - 1]), None);
    }

    /// The fuzz property on stable: random and mutated bytes never panic, and what decodes
    /// re-encodes to the same payload.
    #[test]
    fn random_bytes_never_panic() {
        let mut m = crate::mangle::Mangler::new(0x2545_F491_4F6C_DD1D);
        let frame = answer(
            &Header::decode(&request(1, 2, 3, 4)).unwrap(),
            Kind::IdleAck,
            status::OK,
            &sample(),
        );
        for i in 0..100_000u64 {
            let b = m.mangle(&frame, 90, i % 6);
            if let Some((_, body)) = read(&b) {
                let mut out = [0u8; IDLE_PAYLOAD_LEN];
                body.encode(&mut out).unwrap();
                assert_eq!(Idle::decode(&out).unwrap(), body);
            }
            let _ = Idle::decode(&b);
        }
    }
}
