//! Bulk transfers (`npt bulk`): capacity measured through npt's own responder, on the same
//! port and in the same framed protocol as every other test, so it passes a forwarder that
//! maps one port (iperf3 and netperf need a control connection plus data connections).
//!
//! **Streams** (TCP, QUIC): the client opens the stream with one `Bulk` frame whose payload is a
//! [`BulkSpec`]. The responder answers with a `BulkReply` header (`status` OK, `CLAMPED` when
//! it shortened the duration, `REFUSED`) and then:
//! - `Down`: sends fill bytes, unframed, until the duration has passed (then closes) or the
//!   client closes;
//! - `Up`: reads the client's unframed bytes until the client shuts its side or the duration
//!   has passed, and every [`REPORT_EVERY_NS`] writes a `BulkReply` frame whose payload is a
//!   [`BulkReport`] of what it received so far, and a last one after the client's end: the
//!   client learns what *arrived*, not what its socket buffer swallowed.
//!
//! **UDP**, `Up` only: the client sends `BulkData` frames at its rate (sequence number and send
//! stamp in the header); the responder keeps a [`OneWay`] count per source and flow and, to
//! a `Bulk` frame padded to hold a report, answers with a same-sized `BulkReply` carrying the
//! [`BulkReport`]: never more bytes than the request, so never an amplifier.
//!
//! `BulkSpec`, the payload of a `Bulk` frame (24 bytes, big-endian):
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------+---------------+-------------------------------+
//! |   direction   |   reserved    |            reserved           |  0
//! +---------------+---------------+-------------------------------+
//! |           datagram size, bytes (UDP; 0 for streams)           |  4
//! +---------------------------------------------------------------+
//! |   rate, bits/s (UDP; a down stream: its pace; 0 = unpaced)    |  8
//! |                                                               |
//! +---------------------------------------------------------------+
//! |           duration, ns                                        | 16
//! |                                                               |
//! +---------------------------------------------------------------+
//! ```
//! direction: 1 = up (the client sends, the responder sinks), 2 = down (the responder sends).
//!
//! **Paced streams** (an extension of wire version 1, `npt bulk --rate` on tcp:// and quic://):
//! a `Down` stream's spec may carry a rate, payload bits/s of the stream. A responder that
//! paces it sets [`PACED`] in the `flags` of its accepting `BulkReply` and never sends faster
//! (its bucket is [`crate::bucket`]); an older one ignores the rate and leaves the flag clear,
//! so the client knows the stream would not be paced. An `Up` stream is paced by the client
//! and its spec's rate stays 0.
//!
//! `BulkReport`, the payload of a `BulkReply` (40 bytes, big-endian u64s):
//! ```text
//! +---------------------------------------------------------------+
//! |  bytes: payload bytes received (up)                           |  0
//! +---------------------------------------------------------------+
//! |  datagrams: UDP datagrams received (0 on streams)             |  8
//! +---------------------------------------------------------------+
//! |  expected: UDP, highest sequence number seen + 1              | 16
//! +---------------------------------------------------------------+
//! |  jitter: UDP, RFC 3550 jitter of the one-way transit, ns      | 24
//! +---------------------------------------------------------------+
//! |  elapsed: ns since the transfer began at the responder        | 32
//! +---------------------------------------------------------------+
//! ```
//!
//! **Refused datagrams** (UDP, an extension of wire version 1): a report request of at least
//! [`REPLY_LEN_REFUSED`] bytes is answered, by a responder that knows it, with
//! [`REFUSED_COUNTED`] set in the reply's `flags` and, after the report, the count of the
//! flow's datagrams its per-source budget refused — so the client can tell them from datagrams
//! the path lost. An older responder answers such a request as any other (its reply is as long
//! as the request, the flag clear); an older client asks with [`REPLY_LEN`] bytes and never gets
//! the count. Both sides read what they know and nothing breaks.
//! ```text
//! +---------------------------------------------------------------+
//! |  refused: UDP datagrams of the flow the responder refused     | 40
//! +---------------------------------------------------------------+
//! ```

use crate::frame::{be32, be64};
use crate::frame::{Header, Kind, HEADER_LEN};
use crate::WireError;

/// Length of a [`BulkSpec`].
pub const SPEC_LEN: usize = 24;
/// Length of a [`BulkReport`].
pub const REPORT_LEN: usize = 40;
/// A `Bulk` frame (header + spec): what opens a bulk stream.
pub const REQUEST_LEN: usize = HEADER_LEN + SPEC_LEN;
/// A `BulkReply` frame with a report; also the smallest UDP `Bulk` frame that asks for one.
pub const REPLY_LEN: usize = HEADER_LEN + REPORT_LEN;
/// Reply flag of a UDP `BulkReply`: the refused count follows the report.
pub const REFUSED_COUNTED: u16 = 0x0010;
/// Reply flag of a stream's accepting `BulkReply`: the responder paces the download at the
/// spec's rate.
pub const PACED: u16 = 0x0020;
/// A UDP report request this long (or longer) may get the refused count too.
pub const REPLY_LEN_REFUSED: usize = REPLY_LEN + 8;
/// How often a sinking responder reports what it received (streams).
pub const REPORT_EVERY_NS: u64 = 100_000_000;

/// Which way the bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Direction {
    /// The client sends, the responder sinks.
    Up = 1,
    /// The responder sends, the client sinks.
    Down = 2,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }
}

/// What a `Bulk` frame asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkSpec {
    pub direction: Direction,
    /// UDP datagram size in bytes (0 for streams).
    pub size: u32,
    /// UDP: the flow's rate in bits/s. Streams: 0 (as fast as the path goes), or a `Down`
    /// stream's payload rate in bits/s ([`PACED`]).
    pub rate_bps: u64,
    /// How long the transfer lasts, ns.
    pub duration_ns: u64,
}

impl BulkSpec {
    /// Writes the spec into the first [`SPEC_LEN`] bytes of `buf`.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let have = buf.len();
        let b: &mut [u8; SPEC_LEN] = buf.first_chunk_mut().ok_or(WireError::Truncated {
            need: SPEC_LEN,
            have,
        })?;
        *b = [0; SPEC_LEN];
        b[0] = self.direction as u8;
        b[4..8].copy_from_slice(&self.size.to_be_bytes());
        b[8..16].copy_from_slice(&self.rate_bps.to_be_bytes());
        b[16..24].copy_from_slice(&self.duration_ns.to_be_bytes());
        Ok(())
    }

    /// Reads a spec from the front of `buf` (a `Bulk` frame's payload).
    pub fn decode(buf: &[u8]) -> Result<BulkSpec, WireError> {
        let b: &[u8; SPEC_LEN] = buf.first_chunk().ok_or(WireError::Truncated {
            need: SPEC_LEN,
            have: buf.len(),
        })?;
        let direction = match b[0] {
            1 => Direction::Up,
            2 => Direction::Down,
            other => return Err(WireError::BadDirection(other)),
        };
        Ok(BulkSpec {
            direction,
            size: be32(&b[4..8]),
            rate_bps: be64(&b[8..16]),
            duration_ns: be64(&b[16..24]),
        })
    }
}

/// What a responder received of a bulk transfer so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkReport {
    pub bytes: u64,
    pub datagrams: u64,
    pub expected: u64,
    pub jitter_ns: u64,
    pub elapsed_ns: u64,
}

impl BulkReport {
    /// Writes the report into the first [`REPORT_LEN`] bytes of `buf`.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let have = buf.len();
        let b: &mut [u8; REPORT_LEN] = buf.first_chunk_mut().ok_or(WireError::Truncated {
            need: REPORT_LEN,
            have,
        })?;
        for (i, v) in [
            self.bytes,
            self.datagrams,
            self.expected,
            self.jitter_ns,
            self.elapsed_ns,
        ]
        .into_iter()
        .enumerate()
        {
            if let Some(dst) = b.get_mut(i * 8..i * 8 + 8) {
                dst.copy_from_slice(&v.to_be_bytes());
            }
        }
        Ok(())
    }

    /// Reads a report from the front of `buf` (a `BulkReply` frame's payload).
    pub fn decode(buf: &[u8]) -> Result<BulkReport, WireError> {
        let b: &[u8; REPORT_LEN] = buf.first_chunk().ok_or(WireError::Truncated {
            need: REPORT_LEN,
            have: buf.len(),
        })?;
        Ok(BulkReport {
            bytes: be64(&b[0..8]),
            datagrams: be64(&b[8..16]),
            expected: be64(&b[16..24]),
            jitter_ns: be64(&b[24..32]),
            elapsed_ns: be64(&b[32..40]),
        })
    }

    /// UDP: datagrams sent that did not arrive (as far as the highest sequence number shows).
    pub fn lost(&self) -> u64 {
        self.expected.saturating_sub(self.datagrams)
    }
}

/// Writes a `Bulk` request frame (header and spec) into `buf`: [`REQUEST_LEN`] bytes.
// SAFE: the frame lengths are constants of 72 and 88 bytes.
#[allow(clippy::cast_possible_truncation)]
pub fn encode_request(
    buf: &mut [u8],
    flow: u32,
    token: u64,
    send_ts: u64,
    spec: &BulkSpec,
) -> Result<usize, WireError> {
    let h = Header {
        kind: Kind::Bulk,
        flags: 0,
        frame_len: REQUEST_LEN as u32,
        reply_len: 0,
        flow,
        status: 0,
        seq: 0,
        send_ts,
        token,
    };
    h.encode(buf)?;
    spec.encode(buf.get_mut(HEADER_LEN..).unwrap_or_default())?;
    Ok(REQUEST_LEN)
}

/// Writes a `BulkReply` frame (header with `status` and `flags`, and `report`) into `buf`:
/// [`REPLY_LEN`] bytes. `flow` and `send_ts` echo the request's.
// SAFE: as in `encode_request`.
#[allow(clippy::cast_possible_truncation)]
pub fn encode_reply(
    buf: &mut [u8],
    flow: u32,
    status: u32,
    flags: u16,
    send_ts: u64,
    report: &BulkReport,
) -> Result<usize, WireError> {
    let h = Header {
        kind: Kind::BulkReply,
        flags,
        frame_len: REPLY_LEN as u32,
        reply_len: 0,
        flow,
        status,
        seq: 0,
        send_ts,
        token: 0,
    };
    h.encode(buf)?;
    report.encode(buf.get_mut(HEADER_LEN..).unwrap_or_default())?;
    Ok(REPLY_LEN)
}

/// Responder: writes the refused count after the report of `reply` (a `BulkReply` frame of at
/// least [`REPLY_LEN_REFUSED`] bytes) and sets [`REFUSED_COUNTED`] in its `flags`; call before
/// sealing (`--token`). False, and nothing written, when the frame is too short.
pub fn write_refused(reply: &mut [u8], refused: u64) -> bool {
    let Some(b) = reply.get_mut(REPLY_LEN..REPLY_LEN_REFUSED) else {
        return false;
    };
    b.copy_from_slice(&refused.to_be_bytes());
    if let Some([hi, lo]) = reply.get_mut(6..8) {
        let v = u16::from_be_bytes([*hi, *lo]) | REFUSED_COUNTED;
        [*hi, *lo] = v.to_be_bytes();
    }
    true
}

/// Client: the refused count a UDP `BulkReply` (header `h`, whole frame `frame`) carries; None
/// from a responder that does not count them.
pub fn read_refused(h: &Header, frame: &[u8]) -> Option<u64> {
    if h.flags & REFUSED_COUNTED == 0 {
        return None;
    }
    frame.get(REPLY_LEN..REPLY_LEN_REFUSED).map(be64)
}

/// The receiving end of a one-way datagram flow: counts, bytes, the highest sequence number,
/// and RFC 3550 interarrival jitter of the transit time `now − send_ts`. The two clocks need
/// not agree: jitter only uses differences of transit times, so the offset cancels.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OneWay {
    datagrams: u64,
    bytes: u64,
    expected: u64,
    jitter_ns: f64,
    last_transit: Option<i64>,
}

impl OneWay {
    /// A datagram of `len` payload bytes with `seq` and `send_ts` arrived at `now` (ns).
    pub fn on_datagram(&mut self, seq: u64, send_ts: u64, now: u64, len: u64) {
        self.on_request(seq, len);
        // Wrapping: the clocks are unrelated; only differences of transits matter.
        #[allow(clippy::cast_possible_wrap)]
        let transit = now.wrapping_sub(send_ts) as i64;
        if let Some(last) = self.last_transit {
            let d = transit.wrapping_sub(last).unsigned_abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    /// A report request of the flow (`seq`, `len` bytes) arrived: counted as a datagram of the
    /// flow, but not in the jitter, which is the data's. (A request asked again after the
    /// stop crosses an empty queue that the data crossed full: its transit would read as
    /// jitter that no data saw.)
    pub fn on_request(&mut self, seq: u64, len: u64) {
        self.datagrams += 1;
        self.bytes += len;
        self.expected = self.expected.max(seq.saturating_add(1));
    }

    /// What has arrived so far, `elapsed_ns` since the flow began.
    pub fn report(&self, elapsed_ns: u64) -> BulkReport {
        BulkReport {
            bytes: self.bytes,
            datagrams: self.datagrams,
            expected: self.expected,
            // SAFE: a float-to-int `as` saturates; jitter is never negative.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            jitter_ns: self.jitter_ns as u64,
            elapsed_ns,
        }
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // small test values (clippy.toml)
mod tests {
    use super::*;

    const SPEC: BulkSpec = BulkSpec {
        direction: Direction::Down,
        size: 1200,
        rate_bps: 50_000_000,
        duration_ns: 10_000_000_000,
    };

    /// Golden bytes: the spec layout in the module doc, byte for byte.
    const SPEC_GOLDEN: [u8; SPEC_LEN] = [
        2, 0, 0, 0, // direction = down, reserved
        0, 0, 0x04, 0xB0, // size = 1200
        0, 0, 0, 0, 0x02, 0xFA, 0xF0, 0x80, // rate = 50,000,000
        0, 0, 0, 0x02, 0x54, 0x0B, 0xE4, 0x00, // duration = 10 s
    ];

    const REPORT: BulkReport = BulkReport {
        bytes: 0x0102,
        datagrams: 3,
        expected: 5,
        jitter_ns: 1_000,
        elapsed_ns: 0x1_0000_0000,
    };

    const REPORT_GOLDEN: [u8; REPORT_LEN] = [
        0, 0, 0, 0, 0, 0, 1, 2, // bytes
        0, 0, 0, 0, 0, 0, 0, 3, // datagrams
        0, 0, 0, 0, 0, 0, 0, 5, // expected
        0, 0, 0, 0, 0, 0, 0x03, 0xE8, // jitter = 1000 ns
        0, 0, 0, 1, 0, 0, 0, 0, // elapsed = 2^32 ns
    ];

    #[test]
    fn spec_golden_bytes() {
        let mut b = [0xFFu8; SPEC_LEN];
        SPEC.encode(&mut b).unwrap();
        assert_eq!(b, SPEC_GOLDEN);
        assert_eq!(BulkSpec::decode(&SPEC_GOLDEN).unwrap(), SPEC);
    }

    #[test]
    fn report_golden_bytes() {
        let mut b = [0u8; REPORT_LEN];
        REPORT.encode(&mut b).unwrap();
        assert_eq!(b, REPORT_GOLDEN);
        assert_eq!(BulkReport::decode(&REPORT_GOLDEN).unwrap(), REPORT);
        assert_eq!(REPORT.lost(), 2);
    }

    #[test]
    fn every_truncation_is_one_error_and_a_bad_direction_is_named() {
        for n in 0..SPEC_LEN {
            assert_eq!(
                BulkSpec::decode(&SPEC_GOLDEN[..n]),
                Err(WireError::Truncated {
                    need: SPEC_LEN,
                    have: n
                })
            );
        }
        for n in 0..REPORT_LEN {
            assert!(matches!(
                BulkReport::decode(&REPORT_GOLDEN[..n]),
                Err(WireError::Truncated { .. })
            ));
        }
        for d in [0u8, 3, 255] {
            let mut b = SPEC_GOLDEN;
            b[0] = d;
            assert_eq!(BulkSpec::decode(&b), Err(WireError::BadDirection(d)));
        }
    }

    #[test]
    fn request_and_reply_frames_decode_as_headers() {
        let mut b = [0u8; REPLY_LEN];
        assert_eq!(
            encode_request(&mut b, 9, 0, 77, &SPEC).unwrap(),
            REQUEST_LEN
        );
        let h = Header::decode(&b).unwrap();
        assert_eq!((h.kind, h.flow, h.send_ts), (Kind::Bulk, 9, 77));
        assert_eq!(h.frame_len as usize, REQUEST_LEN);
        assert_eq!(BulkSpec::decode(&b[HEADER_LEN..]).unwrap(), SPEC);
        assert_eq!(
            encode_reply(&mut b, 9, 1, 0, 77, &REPORT).unwrap(),
            REPLY_LEN
        );
        let h = Header::decode(&b).unwrap();
        assert_eq!((h.kind, h.status, h.frame_len), (Kind::BulkReply, 1, 88));
        assert_eq!(BulkReport::decode(&b[HEADER_LEN..]).unwrap(), REPORT);
        assert!(encode_request(&mut [0u8; REQUEST_LEN - 1], 0, 0, 0, &SPEC).is_err());
    }

    /// Golden bytes of a paced download's accepting reply: flags = PACED, the rest as any
    /// reply; the spec that asked for it carries the stream's rate where UDP's goes.
    #[test]
    fn a_paced_download_says_so_in_its_reply() {
        let mut b = [0u8; REPLY_LEN];
        encode_reply(&mut b, 9, 0, PACED, 77, &BulkReport::default()).unwrap();
        assert_eq!(
            &b[4..8],
            &[1, 8, 0x00, 0x20],
            "version, kind, flags = PACED"
        );
        assert_eq!(Header::decode(&b).unwrap().flags & PACED, PACED);
        let spec = BulkSpec {
            direction: Direction::Down,
            size: 0,
            rate_bps: 5_000_000,
            duration_ns: 1,
        };
        let mut s = [0u8; SPEC_LEN];
        spec.encode(&mut s).unwrap();
        assert_eq!(
            &s[..16],
            &[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x4C, 0x4B, 0x40]
        );
    }

    /// Golden bytes of a UDP reply with the refused count: the report request's header turned
    /// into a `BulkReply` with `REFUSED_COUNTED`, the report, then the count.
    #[test]
    fn a_udp_reply_carries_the_refused_count_and_old_peers_read_what_they_know() {
        let mut b = [0xEEu8; REPLY_LEN_REFUSED];
        encode_reply(&mut b, 9, 0, 0, 77, &REPORT).unwrap();
        let mut h = Header::decode(&b).unwrap();
        h.frame_len = REPLY_LEN_REFUSED as u32;
        h.encode(&mut b).unwrap();
        assert!(write_refused(&mut b, 0x0102_0304));
        assert_eq!(
            &b[4..8],
            &[1, 8, 0x00, 0x10],
            "version, kind, flags = REFUSED_COUNTED"
        );
        assert_eq!(&b[HEADER_LEN..REPLY_LEN], &REPORT_GOLDEN);
        assert_eq!(&b[REPLY_LEN..], &[0, 0, 0, 0, 1, 2, 3, 4]);
        let h = Header::decode(&b).unwrap();
        assert_eq!(read_refused(&h, &b), Some(0x0102_0304));
        // An old client reads the report as before.
        assert_eq!(BulkReport::decode(&b[HEADER_LEN..]).unwrap(), REPORT);
        // An old responder's answer to a long request: flag clear, the request's bytes after
        // the report — not a count.
        let mut old = [0xEEu8; REPLY_LEN_REFUSED];
        encode_reply(&mut old, 9, 0, 0, 77, &REPORT).unwrap();
        let h = Header::decode(&old).unwrap();
        assert_eq!(read_refused(&h, &old), None);
        // Too short: nothing written.
        let mut short = [0u8; REPLY_LEN];
        assert!(!write_refused(&mut short, 1));
        assert_eq!(short, [0u8; REPLY_LEN]);
    }

    /// A flow with a gap, a reordered datagram and transit times that vary by 1 ms: the count,
    /// the loss the highest sequence number shows, and jitter as RFC 3550 computes it.
    #[test]
    fn one_way_counts_loss_and_jitter() {
        const MS: u64 = 1_000_000;
        let mut w = OneWay::default();
        // The sender's clock is far ahead of ours: the offset must not matter.
        let off = 5_000 * MS;
        w.on_datagram(0, off, 10 * MS, 100);
        w.on_datagram(2, off + 20 * MS, 31 * MS, 100); // transit +1 ms
        w.on_datagram(1, off + 10 * MS, 30 * MS, 100); // late, reordered
        let r = w.report(40 * MS);
        assert_eq!((r.datagrams, r.bytes, r.expected, r.lost()), (3, 300, 3, 0));
        let mut j = 0.0f64;
        for d in [MS as f64, 9.0 * MS as f64] {
            j += (d - j) / 16.0;
        }
        assert_eq!(r.jitter_ns, j as u64);
        w.on_datagram(9, off + 90 * MS, 100 * MS, 100);
        assert_eq!(w.report(0).lost(), 6, "sequence 3..=8 never came");
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x % 48) as usize;
            let b: Vec<u8> = (0..n).map(|i| (x >> (i % 8 * 8)) as u8).collect();
            if let Ok(s) = BulkSpec::decode(&b) {
                let mut out = [0u8; SPEC_LEN];
                s.encode(&mut out).unwrap();
                assert_eq!(BulkSpec::decode(&out).unwrap(), s);
            }
            let _ = BulkReport::decode(&b);
        }
    }
}
