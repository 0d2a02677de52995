//! The flow report of the reflect extension ([`super`]), apart from the per-reply stamps and
//! notices because it is a frame pair of its own, with its own layout.
//!
//! At the end a client asks with a [`Kind::FlowQuery`] frame of
//! [`FLOW_QUERY_LEN`] bytes (same flow id; not counted in the flow) and gets a
//! [`Kind::FlowReport`] of the same length whose payload is a [`FlowReport`]: the flow's final
//! counts, which settle what the replies alone cannot (the packets after the last reply).
//! `status` is `OK`, or [`status::UNKNOWN_FLOW`] when the responder keeps no record of the flow.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |   received: frames that arrived and were not refused          | 48
//! |   (duplicates included)                                       |
//! +---------------------------------------------------------------+
//! |   refused: frames the responder refused                       | 56
//! |                                                               |
//! +---------------------------------------------------------------+
//! |   duplicated: arrivals of a sequence number seen before       | 64
//! |                                                               |
//! +---------------------------------------------------------------+
//! |   reordered: arrivals below the highest sequence number seen  | 72
//! |   that were not duplicates                                    |
//! +---------------------------------------------------------------+
//! ```
//! All integers big-endian.

use crate::frame::{be64, status, Header, Kind, HEADER_LEN};
use crate::WireError;

use super::REFLECT;

/// Payload bytes of a [`FlowReport`].
pub const FLOW_REPORT_LEN: usize = 32;
/// Length of a flow query and of its report.
pub const FLOW_QUERY_LEN: usize = HEADER_LEN + FLOW_REPORT_LEN;
/// [`FLOW_QUERY_LEN`] as the header's `frame_len` field spells it.
const FLOW_QUERY_LEN_U32: u32 = 80;
const _: () = assert!(FLOW_QUERY_LEN_U32 as usize == FLOW_QUERY_LEN);

/// What the responder counted of one flow, as its final answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowReport {
    pub received: u64,
    pub refused: u64,
    pub duplicated: u64,
    pub reordered: u64,
}

impl FlowReport {
    pub fn encode(&self, payload: &mut [u8]) -> Result<(), WireError> {
        let have = payload.len();
        let b: &mut [u8; FLOW_REPORT_LEN] =
            payload.first_chunk_mut().ok_or(WireError::Truncated {
                need: FLOW_REPORT_LEN,
                have,
            })?;
        b[0..8].copy_from_slice(&self.received.to_be_bytes());
        b[8..16].copy_from_slice(&self.refused.to_be_bytes());
        b[16..24].copy_from_slice(&self.duplicated.to_be_bytes());
        b[24..32].copy_from_slice(&self.reordered.to_be_bytes());
        Ok(())
    }

    pub fn decode(payload: &[u8]) -> Result<FlowReport, WireError> {
        let b: &[u8; FLOW_REPORT_LEN] = payload.first_chunk().ok_or(WireError::Truncated {
            need: FLOW_REPORT_LEN,
            have: payload.len(),
        })?;
        Ok(FlowReport {
            received: be64(&b[0..8]),
            refused: be64(&b[8..16]),
            duplicated: be64(&b[16..24]),
            reordered: be64(&b[24..32]),
        })
    }
}

/// Client: writes a flow query for `flow` into `buf` (at least [`FLOW_QUERY_LEN`] bytes; the
/// payload is zero). `seq` tells the answers to repeated queries apart. Returns its length.
pub fn write_query(buf: &mut [u8], flow: u32, seq: u64, send_ts: u64) -> Result<usize, WireError> {
    let have = buf.len();
    let b: &mut [u8; FLOW_QUERY_LEN] = buf.first_chunk_mut().ok_or(WireError::Truncated {
        need: FLOW_QUERY_LEN,
        have,
    })?;
    b.fill(0);
    Header {
        kind: Kind::FlowQuery,
        flags: REFLECT,
        frame_len: FLOW_QUERY_LEN_U32,
        reply_len: 0,
        flow,
        status: status::OK,
        seq,
        send_ts,
        token: 0,
    }
    .encode(b)?;
    Ok(FLOW_QUERY_LEN)
}

/// Responder: turns the query `frame` (header `h`, already checked to be a [`Kind::FlowQuery`]
/// of `frame.len()` bytes) into its report in place; None when it is too short to hold one
/// (then nothing is sent: the answer would have to be larger than the query).
pub fn write_report(frame: &mut [u8], h: &Header, report: Option<&FlowReport>) -> Option<()> {
    if frame.len() < FLOW_QUERY_LEN {
        return None;
    }
    let out = Header {
        kind: Kind::FlowReport,
        flags: h.flags & !REFLECT,
        status: if report.is_some() {
            status::OK
        } else {
            status::UNKNOWN_FLOW
        },
        ..*h
    };
    out.encode(frame).ok()?;
    report
        .copied()
        .unwrap_or_default()
        .encode(frame.get_mut(HEADER_LEN..)?)
        .ok()
}

/// Client: the counts a [`Kind::FlowReport`] frame carries (None when it is not one, or its
/// status says the responder kept no record).
pub fn read_report(h: &Header, frame: &[u8]) -> Option<FlowReport> {
    if h.kind != Kind::FlowReport || h.status != status::OK {
        return None;
    }
    FlowReport::decode(frame.get(HEADER_LEN..)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reflect::reflect_flow;

    /// Golden bytes of a flow report: the query's header with kind FlowReport, REFLECT cleared.
    #[test]
    fn a_flow_query_and_its_report() {
        let mut q = [0xFFu8; 100];
        assert_eq!(write_query(&mut q, 7, 1, 99).unwrap(), FLOW_QUERY_LEN);
        let q = &mut q[..FLOW_QUERY_LEN];
        let h = Header::decode(q).unwrap();
        assert_eq!(
            (h.kind, h.flags, h.frame_len),
            (Kind::FlowQuery, REFLECT, 80)
        );
        assert_eq!(reflect_flow(q), Some(7));
        let r = FlowReport {
            received: 1000,
            refused: 0x0102_0304,
            duplicated: 2,
            reordered: 1,
        };
        write_report(q, &h, Some(&r)).unwrap();
        let golden: [u8; 80] = [
            0x1E, b'N', b'P', b'T', 1, 11, 0, 0, // kind=FlowReport, flags 0
            0, 0, 0, 80, 0, 0, 0, 0, // frame_len, reply_len
            0, 0, 0, 7, 0, 0, 0, 0, // flow, status OK
            0, 0, 0, 0, 0, 0, 0, 1, // seq
            0, 0, 0, 0, 0, 0, 0, 99, // send_ts
            0, 0, 0, 0, 0, 0, 0, 0, // token
            0, 0, 0, 0, 0, 0, 0x03, 0xE8, // received 1000
            0, 0, 0, 0, 1, 2, 3, 4, // refused
            0, 0, 0, 0, 0, 0, 0, 2, // duplicated
            0, 0, 0, 0, 0, 0, 0, 1, // reordered
        ];
        assert_eq!(*q, golden);
        let back = Header::decode(q).unwrap();
        assert_eq!(read_report(&back, q), Some(r));
        write_report(q, &h, None).unwrap();
        let back = Header::decode(q).unwrap();
        assert_eq!(back.status, status::UNKNOWN_FLOW);
        assert_eq!(read_report(&back, q), None);
        let mut short = [0u8; 64];
        assert_eq!(write_report(&mut short, &h, Some(&r)), None);
    }

    #[test]
    fn every_truncation_is_one_error() {
        for n in 0..FLOW_REPORT_LEN {
            assert_eq!(
                FlowReport::decode(&[0u8; FLOW_REPORT_LEN][..n]),
                Err(WireError::Truncated {
                    need: FLOW_REPORT_LEN,
                    have: n
                })
            );
        }
    }
}
