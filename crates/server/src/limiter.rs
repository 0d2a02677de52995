//! Per-source packet and byte limits for the UDP responder (token buckets keyed by source IP).
//!
//! Pure code: `check(now_ns, ip, bytes)` decides; the caller counts and logs refusals. The table
//! is bounded: idle sources are swept, and when it is still full every further source shares
//! one overflow bucket, so a flood of spoofed sources cannot grow memory or lock out the rest.

use std::collections::HashMap;
use std::net::IpAddr;

/// Limits applied to each source address.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Packets per second per source (burst: one second's worth).
    pub pps: f64,
    /// Payload bytes per second per source (burst: one second's worth).
    pub bytes_per_s: f64,
    /// Sources tracked at once before they share the overflow bucket.
    pub max_sources: usize,
}

impl Default for Limits {
    /// Generous enough that one loopback probe at full speed is never refused, bounded enough
    /// that one source cannot make the server flood a third party at line rate.
    fn default() -> Self {
        Limits {
            pps: 500_000.0,
            bytes_per_s: 250e6,
            max_sources: 65_536,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    PacketLimit,
    ByteLimit,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    packets: f64,
    bytes: f64,
    last: u64,
}

impl Bucket {
    fn full(l: &Limits, now: u64) -> Bucket {
        Bucket {
            packets: l.pps,
            bytes: l.bytes_per_s,
            last: now,
        }
    }

    fn take(&mut self, l: &Limits, now: u64, bytes: usize) -> Verdict {
        let dt = now.saturating_sub(self.last) as f64 / 1e9;
        self.last = now.max(self.last);
        self.packets = (self.packets + dt * l.pps).min(l.pps);
        self.bytes = (self.bytes + dt * l.bytes_per_s).min(l.bytes_per_s);
        if self.packets < 1.0 {
            return Verdict::PacketLimit;
        }
        if self.bytes < bytes as f64 {
            return Verdict::ByteLimit;
        }
        self.packets -= 1.0;
        self.bytes -= bytes as f64;
        Verdict::Allow
    }
}

/// How long a source must be idle before it may be forgotten.
const IDLE_NS: u64 = 10_000_000_000;

pub struct Limiter {
    limits: Limits,
    table: HashMap<IpAddr, Bucket>,
    overflow: Bucket,
    last_sweep: u64,
}

impl Limiter {
    pub fn new(limits: Limits) -> Limiter {
        Limiter {
            limits,
            table: HashMap::new(),
            overflow: Bucket::full(&limits, 0),
            last_sweep: 0,
        }
    }

    pub fn sources(&self) -> usize {
        self.table.len()
    }

    pub fn check(&mut self, now: u64, ip: IpAddr, bytes: usize) -> Verdict {
        let l = self.limits;
        if let Some(b) = self.table.get_mut(&ip) {
            return b.take(&l, now, bytes);
        }
        if self.table.len() >= l.max_sources && now.saturating_sub(self.last_sweep) >= IDLE_NS / 10
        {
            self.last_sweep = now;
            self.table
                .retain(|_, b| now.saturating_sub(b.last) < IDLE_NS);
        }
        if self.table.len() >= l.max_sources {
            return self.overflow.take(&l, now, bytes);
        }
        let mut b = Bucket::full(&l, now);
        let v = b.take(&l, now, bytes);
        self.table.insert(ip, b);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn packet_limit_refills_over_time() {
        let mut l = Limiter::new(Limits {
            pps: 10.0,
            bytes_per_s: 1e9,
            max_sources: 8,
        });
        let allowed = (0..15)
            .filter(|_| l.check(0, ip(1), 100) == Verdict::Allow)
            .count();
        assert_eq!(allowed, 10, "one second of burst");
        assert_eq!(l.check(0, ip(1), 100), Verdict::PacketLimit);
        assert_eq!(
            l.check(S / 2, ip(1), 100),
            Verdict::Allow,
            "half a second refills 5"
        );
        assert_eq!(
            l.check(0, ip(2), 100),
            Verdict::Allow,
            "other sources are separate"
        );
    }

    #[test]
    fn byte_limit() {
        let mut l = Limiter::new(Limits {
            pps: 1e6,
            bytes_per_s: 1000.0,
            max_sources: 8,
        });
        assert_eq!(l.check(0, ip(1), 600), Verdict::Allow);
        assert_eq!(l.check(0, ip(1), 600), Verdict::ByteLimit);
    }

    #[test]
    fn table_is_bounded_and_overflow_is_shared() {
        let mut l = Limiter::new(Limits {
            pps: 2.0,
            bytes_per_s: 1e9,
            max_sources: 4,
        });
        for n in 0..4 {
            assert_eq!(l.check(0, ip(n), 1), Verdict::Allow);
        }
        // Sources 10.. share one bucket of 2 packets.
        assert_eq!(l.check(0, ip(10), 1), Verdict::Allow);
        assert_eq!(l.check(0, ip(11), 1), Verdict::Allow);
        assert_eq!(l.check(0, ip(12), 1), Verdict::PacketLimit);
        assert_eq!(l.sources(), 4);
        // After the idle time the table is swept and new sources get their own bucket.
        assert_eq!(l.check(20 * S, ip(13), 1), Verdict::Allow);
        assert_eq!(l.sources(), 1);
    }
}
