//! The path MTU probes (`npt mtu`): how large a datagram crosses the path each way.
//!
//! - **Up**: the client sends an [`Kind::Mtu`] frame padded to the size it tries, with the
//!   IP "don't fragment" bit set; the responder answers with a short [`Kind::MtuReply`]
//!   ([`MTU_LEN`] bytes, never longer than the probe) saying how many bytes arrived and, when
//!   the datagram was reassembled from fragments, the largest fragment.
//! - **Down**: the client asks for a size ([`Mtu::size`]); the responder sends a `MtuReply`
//!   of that size itself, DF set. Without `--token` the size is clamped to the request's own
//!   length (`status = CLAMPED`): the responder never sends more bytes than the request
//!   brought, so an unauthenticated down search goes no higher than the up path delivers a
//!   request (fragmented if need be). When the responder's own interface cannot send the size,
//!   it answers [`MTU_LEN`] bytes with [`status::MTU_TOO_BIG`].
//!
//! Every answer also carries the path MTU the responder's kernel holds toward the client (an
//! ICMP "fragmentation needed" or "packet too big" on the way down lowers it: that is how the
//! client learns whether PMTUD works downward).
//!
//! The frame is the usual header ([`crate::frame`]; `flow`, `seq` and `send_ts` come back as
//! the client sent them) and this payload, all integers big-endian:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------+---------------+-------------------------------+
//! | direction 1/2 |  reserved 0   |          reserved 0           | 48
//! +---------------+---------------+-------------------------------+
//! |   size asked for, bytes (down; 0 up)                          | 52
//! +---------------------------------------------------------------+
//! |   length received: the request's datagram as it arrived      | 56
//! +---------------------------------------------------------------+
//! |   largest fragment of it, IP bytes (0: it arrived whole)      | 60
//! +---------------------------------------------------------------+
//! |   responder's path MTU toward the client, IP bytes (0: none)  | 64
//! +---------------------------------------------------------------+
//! |   padding to the probe's size                                 | 68
//! ```
//!
//! A request fills `direction` and `size`; the responder writes the rest. Answers go only to
//! the address the request came from.

use crate::frame::{be32, status, Header, Kind, HEADER_LEN};
use crate::WireError;

/// Payload bytes of an MTU frame (before padding).
pub const MTU_PAYLOAD_LEN: usize = 20;
/// The shortest MTU frame: an up answer, a down refusal, the smallest probe.
pub const MTU_LEN: usize = HEADER_LEN + MTU_PAYLOAD_LEN;
const MTU_LEN_U32: u32 = 68;
const _: () = assert!(MTU_LEN_U32 as usize == MTU_LEN);
/// The largest datagram a down probe asks for (IPv4's largest UDP payload).
pub const MAX_PROBE: usize = 65_507;

/// Which way a probe measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Client to responder: the probe is the request.
    Up = 1,
    /// Responder to client: the probe is the answer.
    Down = 2,
}

/// The payload of an MTU frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mtu {
    pub direction: Direction,
    /// Down: the datagram length asked for.
    pub size: u32,
    /// Answers: the request's datagram length as the responder received it.
    pub received: u32,
    /// Answers: the largest fragment of the request, IP bytes; 0 when it arrived whole.
    pub frag: u32,
    /// Answers: the responder kernel's path MTU toward the client, IP bytes; 0 unknown.
    pub pmtu: u32,
}

impl Mtu {
    /// A request's payload.
    pub fn ask(direction: Direction, size: u32) -> Mtu {
        Mtu {
            direction,
            size,
            received: 0,
            frag: 0,
            pmtu: 0,
        }
    }

    /// Writes the payload into the first [`MTU_PAYLOAD_LEN`] bytes of `payload`.
    pub fn encode(&self, payload: &mut [u8]) -> Result<(), WireError> {
        let have = payload.len();
        let b: &mut [u8; MTU_PAYLOAD_LEN] =
            payload.first_chunk_mut().ok_or(WireError::Truncated {
                need: MTU_PAYLOAD_LEN,
                have,
            })?;
        *b = [0; MTU_PAYLOAD_LEN];
        b[0] = self.direction as u8;
        b[4..8].copy_from_slice(&self.size.to_be_bytes());
        b[8..12].copy_from_slice(&self.received.to_be_bytes());
        b[12..16].copy_from_slice(&self.frag.to_be_bytes());
        b[16..20].copy_from_slice(&self.pmtu.to_be_bytes());
        Ok(())
    }

    /// Reads the payload from the front of `payload`.
    pub fn decode(payload: &[u8]) -> Result<Mtu, WireError> {
        let b: &[u8; MTU_PAYLOAD_LEN] = payload.first_chunk().ok_or(WireError::Truncated {
            need: MTU_PAYLOAD_LEN,
            have: payload.len(),
        })?;
        let direction = match b[0] {
            1 => Direction::Up,
            2 => Direction::Down,
            d => return Err(WireError::BadDirection(d)),
        };
        Ok(Mtu {
            direction,
            size: be32(&b[4..8]),
            received: be32(&b[8..12]),
            frag: be32(&b[12..16]),
            pmtu: be32(&b[16..20]),
        })
    }
}

/// Writes a frame of `kind` and `len` bytes (at least [`MTU_LEN`]) into `buf`: the header,
/// `body`, and zero padding; None when `buf` is shorter than `len` or `len` than a frame.
pub fn write(
    buf: &mut [u8],
    h: &Header,
    kind: Kind,
    st: u32,
    body: &Mtu,
    len: usize,
) -> Option<()> {
    let f = buf.get_mut(..len).filter(|_| len >= MTU_LEN)?;
    f.fill(0);
    let out = Header {
        kind,
        frame_len: u32::try_from(len).ok()?,
        reply_len: 0,
        status: st,
        token: 0,
        flags: 0,
        ..*h
    };
    out.encode(f).ok()?;
    body.encode(f.get_mut(HEADER_LEN..)?).ok()
}

/// Client: a request of `len` bytes for flow `flow` (`len` below [`MTU_LEN`] is [`MTU_LEN`]).
pub fn request(flow: u32, seq: u64, send_ts: u64, ask: &Mtu, len: usize) -> Vec<u8> {
    let len = len.max(MTU_LEN);
    let mut f = vec![0u8; len];
    let h = Header {
        kind: Kind::Mtu,
        flags: 0,
        frame_len: 0,
        reply_len: 0,
        flow,
        status: status::OK,
        seq,
        send_ts,
        token: 0,
    };
    // Cannot fail: the buffer is `len` bytes, at least a frame.
    let _ = write(&mut f, &h, Kind::Mtu, status::OK, ask, len);
    f
}

/// Client: an answer's header and payload (None for anything else, or too short).
pub fn read(frame: &[u8]) -> Option<(Header, Mtu)> {
    let h = Header::decode(frame).ok()?;
    if h.kind != Kind::MtuReply || frame.len() < MTU_LEN {
        return None;
    }
    Some((h, Mtu::decode(frame.get(HEADER_LEN..)?).ok()?))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // fixed offsets into fixed-size test arrays
mod tests {
    use super::*;

    fn sample() -> Mtu {
        Mtu {
            direction: Direction::Down,
            size: 1472,
            received: 1500,
            frag: 1400,
            pmtu: 1280,
        }
    }

    /// Golden bytes: the layout in the module doc, byte for byte.
    const GOLDEN: [u8; MTU_PAYLOAD_LEN] = [
        2, 0, 0, 0, // down, reserved
        0, 0, 0x05, 0xC0, // size 1472
        0, 0, 0x05, 0xDC, // received 1500
        0, 0, 0x05, 0x78, // largest fragment 1400
        0, 0, 0x05, 0x00, // path MTU 1280
    ];

    #[test]
    fn encodes_and_decodes_golden_bytes() {
        let mut b = [0u8; MTU_PAYLOAD_LEN];
        sample().encode(&mut b).unwrap();
        assert_eq!(b, GOLDEN);
        assert_eq!(Mtu::decode(&GOLDEN).unwrap(), sample());
        let mut bad = GOLDEN;
        bad[0] = 3;
        assert_eq!(Mtu::decode(&bad), Err(WireError::BadDirection(3)));
    }

    #[test]
    fn every_truncation_is_one_error() {
        for n in 0..MTU_PAYLOAD_LEN {
            assert_eq!(
                Mtu::decode(&GOLDEN[..n]),
                Err(WireError::Truncated {
                    need: MTU_PAYLOAD_LEN,
                    have: n
                })
            );
        }
    }

    #[test]
    fn request_and_answer_frames() {
        let r = request(9, 3, 77, &Mtu::ask(Direction::Up, 0), 1472);
        assert_eq!(r.len(), 1472);
        let h = Header::decode(&r).unwrap();
        assert_eq!(
            (h.kind, h.flow, h.seq, h.frame_len),
            (Kind::Mtu, 9, 3, 1472)
        );
        assert_eq!(
            Mtu::decode(&r[HEADER_LEN..]).unwrap().direction,
            Direction::Up
        );
        assert_eq!(read(&r), None, "a request is not an answer");
        assert_eq!(request(1, 1, 1, &sample(), 10).len(), MTU_LEN);
        let mut a = vec![0xAAu8; 2000];
        write(&mut a, &h, Kind::MtuReply, status::CLAMPED, &sample(), 1000).unwrap();
        let (ah, body) = read(&a[..1000]).unwrap();
        assert_eq!(
            (
                ah.kind,
                ah.flow,
                ah.seq,
                ah.send_ts,
                ah.frame_len,
                ah.status
            ),
            (Kind::MtuReply, 9, 3, 77, 1000, status::CLAMPED)
        );
        assert_eq!(body, sample());
        assert!(a[MTU_LEN..1000].iter().all(|&b| b == 0), "padding is zero");
        assert_eq!(read(&a[..MTU_LEN - 1]), None);
        assert!(write(&mut a, &h, Kind::MtuReply, 0, &sample(), MTU_LEN - 1).is_none());
        assert!(write(&mut [0u8; 100], &h, Kind::MtuReply, 0, &sample(), 101).is_none());
    }

    /// The fuzz property on stable: random and mutated bytes never panic, and what decodes
    /// re-encodes to the same payload.
    #[test]
    fn random_bytes_never_panic() {
        let mut m = crate::mangle::Mangler::new(0x2545_F491_4F6C_DD1D);
        let frame = request(1, 2, 3, &sample(), 90);
        let mut frame = frame.clone();
        frame[5] = Kind::MtuReply as u8;
        for i in 0..100_000u64 {
            let b = m.mangle(&frame, 100, i % 6);
            if let Some((_, body)) = read(&b) {
                let mut out = [0u8; MTU_PAYLOAD_LEN];
                body.encode(&mut out).unwrap();
                assert_eq!(Mtu::decode(&out).unwrap(), body);
            }
            let _ = Mtu::decode(&b);
        }
    }
}
