//! The session's STAMP framing (`npt probe stamp://`): test packets out, a Session-Reflector's
//! answers in (RFC 8762, [`npt_wire::stamp`]), mapped onto the session's own records so a STAMP
//! probe is a UDP probe by construction — the same window, histograms and intervals.
//!
//! Two clocks. The session runs on the monotonic clock and so does every RTT (the send time
//! is kept in the window, as for framed echoes). STAMP's timestamps are the wall clock in NTP
//! format: a packet sent at session time `now` carries `now + wall_offset`, the offset read once
//! from `CLOCK_REALTIME` when the run starts. Linux slews the two clocks alike (NTP and PTP
//! daemons adjust both), so the T1 written is the wall clock to within the read's skew unless
//! the wall clock is stepped during the run. The reflector echoes T1 unchanged; turned back into
//! session time it must equal the send time kept in the window exactly (ns → NTP → ns is exact),
//! or the answer counts as corrupt, as a framed echo with a changed stamp does.

use npt_wire::stamp::time::{ntp_to_unix_ns, unix_ns_to_ntp};

use super::far::FarEnd;
use npt_wire::stamp::{
    write_padding_header, ErrorEstimate, Mode, ReflectedPacket, StampKey, TestPacket,
    TLV_HEADER_LEN,
};

/// How one flow speaks STAMP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StampFraming {
    /// Authenticated mode; the key is [`super::SessionConfig::stamp_key`].
    pub authenticated: bool,
    /// Wall clock (Unix ns) minus session clock (ns) at the run's start.
    pub wall_offset: u64,
    /// The wire sequence number of the flow's first packet. Random per flow: a stateful
    /// reflector's own count (from 0 or 1) then never equals the sender's by chance, so its
    /// answers show which kind of reflector it is, and an answer to an earlier run is foreign.
    pub seq_base: u32,
    /// This host's clock, in every test packet ([`ErrorEstimate::of_clock`]).
    pub error: ErrorEstimate,
}

impl StampFraming {
    pub fn mode(&self) -> Mode {
        if self.authenticated {
            Mode::Authenticated
        } else {
            Mode::Open
        }
    }

    /// Where the payload fill starts: after the base and the padding TLV's header (a packet
    /// of exactly the base length has no fill).
    pub fn header_len(&self) -> usize {
        self.mode().base_len() + TLV_HEADER_LEN
    }

    /// The session clock time `unix_ns` of the wall clock stands for.
    pub fn session_time(&self, unix_ns: u64) -> u64 {
        unix_ns.saturating_sub(self.wall_offset)
    }

    /// Writes test packet `seq` (the window's number), sent at session time `now`, over `buf`
    /// (the whole datagram: base, then an Extra Padding TLV header when there is room; the
    /// caller fills the rest), sealed with `key` in authenticated mode.
    pub fn encode(&self, key: Option<&StampKey>, seq: u64, now: u64, buf: &mut [u8]) -> Option<()> {
        let mode = self.mode();
        TestPacket {
            seq: low32(seq).wrapping_add(self.seq_base),
            timestamp: unix_ns_to_ntp(now.saturating_add(self.wall_offset)),
            error: self.error,
            ssid: 0,
        }
        .encode(mode, buf)
        .ok()?;
        write_padding_header(buf.get_mut(mode.base_len()..)?).ok()?;
        if let Some(k) = key {
            k.seal(buf).ok()?;
        }
        Some(())
    }

    /// What the reflector's answer says it saw, for the session's per-direction bookkeeping
    /// ([`super::split`]): a stateful reflector's own sequence number counts the packets it
    /// received in this session from 0 (as TWAMP's does, RFC 5357 §4.2.1), so this one is its
    /// number + 1; a stateless one copies ours (the random [`seq_base`](Self::seq_base) makes
    /// that visible) and tells no count. T2 and T3 in the format its Z bit says; its Error
    /// Estimate and S bit.
    pub fn far_end(&self, r: &ReflectedPacket) -> FarEnd {
        let stateful = r.seq != r.sender_seq;
        FarEnd {
            rx_count: stateful.then(|| r.seq.wrapping_add(1)),
            rx_wall_ns: r.error.to_unix_ns(r.receive_timestamp),
            tx_wall_ns: r.error.to_unix_ns(r.timestamp),
            refused: None,
            // NO-PANIC: a float-to-int `as` saturates; the estimate is positive and finite.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            error_ns: r.error.ns().map(|e| e.ceil() as u64),
            synced: Some(r.error.synced),
        }
    }

    /// A reflector's answer: the window's sequence number it answers (`next_seq`: the number
    /// the next send would get, to place a 32-bit wire number), the send time it echoes on the
    /// session clock, and the answer itself. None: not an answer of this flow (too short, its
    /// HMAC does not verify under `key`).
    pub fn decode(
        &self,
        key: Option<&StampKey>,
        next_seq: u64,
        bytes: &[u8],
    ) -> Option<(u64, u64, ReflectedPacket)> {
        if let Some(k) = key {
            if !k.verify(bytes) {
                return None;
            }
        }
        let r = ReflectedPacket::decode(self.mode(), bytes).ok()?;
        let seq = unwrap_seq(next_seq, r.sender_seq.wrapping_sub(self.seq_base));
        // We wrote T1 in NTP format (Z = 0): it comes back as written.
        let sent = self.session_time(ntp_to_unix_ns(r.sender_timestamp));
        Some((seq, sent, r))
    }
}

fn low32(x: u64) -> u32 {
    u32::try_from(x & u64::from(u32::MAX)).unwrap_or(0)
}

/// The window sequence number below `next_seq` whose low 32 bits are `low` (the most recent
/// one); `next_seq` itself or above when there is none (the window then calls it unknown).
fn unwrap_seq(next_seq: u64, low: u32) -> u64 {
    let candidate = (next_seq & !u64::from(u32::MAX)) | u64::from(low);
    if candidate < next_seq {
        candidate
    } else {
        candidate.checked_sub(1 << 32).unwrap_or(candidate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framing() -> StampFraming {
        StampFraming {
            authenticated: false,
            wall_offset: 1_795_744_237_000_000_000,
            seq_base: 0xFFFF_FFF0,
            error: ErrorEstimate::from_ns(1_000, false),
        }
    }

    #[test]
    fn a_packet_and_its_answer_map_back_to_the_window() {
        let f = framing();
        let mut b = vec![0u8; 60];
        f.encode(None, 20, 123_456_789, &mut b).unwrap();
        let t = TestPacket::decode(Mode::Open, &b).unwrap();
        assert_eq!(t.seq, 4, "0xFFFF_FFF0 + 20 wraps");
        assert_eq!(
            &b[44..48],
            &[0, 1, 0, 12],
            "Extra Padding TLV of 12 value bytes"
        );
        let answer = ReflectedPacket {
            seq: 7,
            sender_seq: t.seq,
            sender_timestamp: t.timestamp,
            ..ReflectedPacket::default()
        };
        answer.encode(Mode::Open, &mut b).unwrap();
        let (seq, sent, r) = f.decode(None, 21, &b).unwrap();
        assert_eq!((seq, sent, r.seq), (20, 123_456_789, 7));
        assert_eq!(f.decode(None, 21, &b[..43]), None);
    }

    #[test]
    fn authenticated_packets_are_sealed_and_answers_must_verify() {
        let f = StampFraming {
            authenticated: true,
            ..framing()
        };
        let key = StampKey::from_bytes(&[1; 16]).unwrap();
        let mut b = vec![0u8; 112];
        f.encode(Some(&key), 0, 5, &mut b).unwrap();
        assert!(key.verify(&b));
        let t = TestPacket::decode(Mode::Authenticated, &b).unwrap();
        ReflectedPacket {
            sender_seq: t.seq,
            sender_timestamp: t.timestamp,
            ..ReflectedPacket::default()
        }
        .encode(Mode::Authenticated, &mut b)
        .unwrap();
        assert_eq!(f.decode(Some(&key), 1, &b), None, "not sealed");
        key.seal(&mut b).unwrap();
        assert_eq!(
            f.decode(Some(&key), 1, &b).map(|x| (x.0, x.1)),
            Some((0, 5))
        );
    }

    #[test]
    fn a_stateful_reflector_counts_and_a_stateless_one_does_not() {
        let f = framing();
        let t2 = unix_ns_to_ntp(1_795_744_237_000_000_500);
        let mut r = ReflectedPacket {
            seq: 0,
            sender_seq: 0xFFFF_FFF3,
            receive_timestamp: t2,
            timestamp: unix_ns_to_ntp(1_795_744_237_000_002_500),
            error: ErrorEstimate::from_ns(1_000, true),
            ..ReflectedPacket::default()
        };
        let far = f.far_end(&r);
        assert_eq!(
            far.rx_count,
            Some(1),
            "its first packet: 3 lost on the way up"
        );
        assert_eq!(far.rx_wall_ns, Some(1_795_744_237_000_000_500));
        assert_eq!(far.dwell_ns(), Some(2_000));
        assert_eq!((far.synced, far.error_ns), (Some(true), Some(1_006)));
        r.seq = r.sender_seq;
        assert_eq!(f.far_end(&r).rx_count, None, "stateless: our number copied");
    }

    #[test]
    fn wire_numbers_unwrap_to_the_latest_send() {
        assert_eq!(unwrap_seq(10, 3), 3);
        assert_eq!(
            unwrap_seq(10, 10),
            10,
            "not sent yet: unknown to the window"
        );
        assert_eq!(unwrap_seq((1 << 32) + 5, 4), (1 << 32) + 4);
        assert_eq!(unwrap_seq((1 << 32) + 5, 0xFFFF_FFFF), 0xFFFF_FFFF);
    }
}
