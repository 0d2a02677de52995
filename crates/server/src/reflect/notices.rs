//! How many refusal notices ([`npt_wire::reflect::write_notice`]) the UDP responder may send:
//! a few per second per source, and a bounded number in total.
//!
//! A notice is a 48-byte header answering a refused frame of at least 48 bytes, so it is never
//! larger than what caused it; the limits make it also far *rarer*: a spoofed flood aimed at a
//! victim gets back at most [`PER_SOURCE_PPS`] notices a second per source socket (four times
//! that per address, [`crate::limiter::IP_SHARE`]) and [`TOTAL_PPS`] from the whole socket,
//! whatever it sends. A client counts refusals from the counts a notice carries (and the stamps
//! and the flow report), never from the number of notices, so the limit costs it nothing.
//!
//! The buckets are the UDP limiter's ([`crate::limiter::Limiter`]): bounded tables, idle
//! entries swept, further sources sharing one overflow bucket.

use std::net::SocketAddr;

use npt_wire::frame::HEADER_LEN;

use crate::limiter::{Limiter, Limits, Verdict};

/// Notices per second to one source socket (and its burst).
pub const PER_SOURCE_PPS: f64 = 5.0;
/// Notices per second from one UDP socket in total (and its burst).
pub const TOTAL_PPS: f64 = 1000.0;
/// Sources with a bucket of their own before further ones share one.
pub const MAX_SOURCES: usize = 16_384;

/// The notice budget of one UDP socket, and what it let through.
pub struct Notices {
    limiter: Limiter,
    /// Notices allowed (the caller sends them).
    pub sent: u64,
    /// Notices a limit held back.
    pub suppressed: u64,
}

impl Default for Notices {
    fn default() -> Self {
        Notices::new(PER_SOURCE_PPS, TOTAL_PPS)
    }
}

impl Notices {
    pub fn new(per_source_pps: f64, total_pps: f64) -> Notices {
        // Bytes are not limited (a notice is always HEADER_LEN): a huge finite budget, so the
        // bucket arithmetic never meets infinity.
        let no_bytes = 1e18;
        Notices {
            limiter: Limiter::new(Limits {
                pps: per_source_pps,
                bytes_per_s: no_bytes,
                max_sources: MAX_SOURCES,
                total_pps,
                total_bytes_per_s: no_bytes,
            }),
            sent: 0,
            suppressed: 0,
        }
    }

    /// May a notice go to `peer` at `now`? Counted either way.
    pub fn allow(&mut self, now: u64, peer: SocketAddr) -> bool {
        let ok = self.limiter.check(now, peer, HEADER_LEN) == Verdict::Allow;
        if ok {
            self.sent += 1;
        } else {
            self.suppressed += 1;
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn src(a: u8, port: u16) -> SocketAddr {
        SocketAddr::from(([203, 0, 113, a], port))
    }

    #[test]
    fn a_few_per_second_per_source() {
        let mut n = Notices::default();
        // 10 s of 1,000 refusals a second from one source.
        let sent = (0..10_000u64)
            .filter(|i| n.allow(i * S / 1000, src(1, 5000)))
            .count();
        assert!((50..=55).contains(&sent), "{sent}: 5 a second (burst 5)");
        assert_eq!(n.sent + n.suppressed, 10_000);
        assert!(n.allow(0, src(2, 5000)), "another source has its own");
    }

    #[test]
    fn spoofed_sources_share_one_total() {
        let mut n = Notices::default();
        // One second: 100,000 refused frames from 50,000 spoofed sources.
        let sent = (0..100_000u32)
            .filter(|i| {
                let [_, b, c, d] = (i % 50_000).to_be_bytes();
                let s = SocketAddr::from(([10, b, c, d], 9));
                n.allow(u64::from(*i) * 10_000, s)
            })
            .count();
        assert!(
            sent <= 2 * 1000,
            "{sent}: the total's burst and a second of refill"
        );
        assert!(sent >= 1000, "{sent}");
    }
}
