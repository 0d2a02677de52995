//! Per-source packet and byte limits for the UDP responder: token buckets at two levels.
//!
//! - **Per source socket** (address and port): the configured budget. A client that floods
//!   exhausts its own bucket and nobody else's — before, buckets were per IP address, and one
//!   flooding socket starved every other client behind the same address (4 of 200 probe packets
//!   answered).
//! - **Per IP address**: [`IP_SHARE`] times the budget, so a host cannot multiply its budget
//!   without end by opening (or spoofing) more ports.
//!
//! Pure code: `check(now_ns, source, bytes)` decides; the caller counts and logs refusals. Both
//! tables are bounded: idle entries are swept, and when a table is still full every further
//! key shares one overflow bucket, so a flood of spoofed sources cannot grow memory or lock out
//! the sources already known.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, SocketAddr};

/// How many per-source budgets one IP address may use at once.
pub const IP_SHARE: f64 = 4.0;

/// Limits applied to each source.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Packets per second per source socket (burst: one second's worth).
    pub pps: f64,
    /// Payload bytes per second per source socket (burst: one second's worth).
    pub bytes_per_s: f64,
    /// Sources (and, separately, addresses) tracked at once before they share the overflow
    /// bucket.
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

impl Limits {
    fn scaled(&self, k: f64) -> Limits {
        Limits {
            pps: self.pps * k,
            bytes_per_s: self.bytes_per_s * k,
            max_sources: self.max_sources,
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
pub(crate) struct Bucket {
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

    fn refill(&mut self, l: &Limits, now: u64) {
        let dt = now.saturating_sub(self.last) as f64 / 1e9;
        self.last = now.max(self.last);
        self.packets = (self.packets + dt * l.pps).min(l.pps);
        self.bytes = (self.bytes + dt * l.bytes_per_s).min(l.bytes_per_s);
    }

    pub(crate) fn can_take(&self, bytes: usize) -> Verdict {
        if self.packets < 1.0 {
            Verdict::PacketLimit
        } else if self.bytes < bytes as f64 {
            Verdict::ByteLimit
        } else {
            Verdict::Allow
        }
    }

    pub(crate) fn take(&mut self, bytes: usize) {
        self.packets -= 1.0;
        self.bytes -= bytes as f64;
    }
}

/// How long an entry must be idle before it may be forgotten.
const IDLE_NS: u64 = 10_000_000_000;

/// A bounded table of buckets with one shared overflow bucket (also used, per address, by the
/// reply budget in [`crate::budget`]).
pub(crate) struct Table<K> {
    limits: Limits,
    map: HashMap<K, Bucket>,
    overflow: Bucket,
    last_sweep: u64,
}

impl<K: Hash + Eq + Copy> Table<K> {
    pub(crate) fn new(limits: Limits) -> Table<K> {
        Table {
            limits,
            map: HashMap::new(),
            overflow: Bucket::full(&limits, 0),
            last_sweep: 0,
        }
    }

    /// The (refilled) bucket for `key`: its own, or the overflow when the table is full.
    pub(crate) fn bucket(&mut self, now: u64, key: K) -> &mut Bucket {
        let l = self.limits;
        if !self.map.contains_key(&key) {
            if self.map.len() >= l.max_sources
                && now.saturating_sub(self.last_sweep) >= IDLE_NS / 10
            {
                self.last_sweep = now;
                self.map.retain(|_, b| now.saturating_sub(b.last) < IDLE_NS);
            }
            if self.map.len() >= l.max_sources {
                self.overflow.refill(&l, now);
                return &mut self.overflow;
            }
            self.map.insert(key, Bucket::full(&l, now));
        }
        let b = self.map.get_mut(&key).expect("inserted above");
        b.refill(&l, now);
        b
    }
}

pub struct Limiter {
    sources: Table<SocketAddr>,
    ips: Table<IpAddr>,
}

impl Limiter {
    pub fn new(limits: Limits) -> Limiter {
        Limiter {
            sources: Table::new(limits),
            ips: Table::new(limits.scaled(IP_SHARE)),
        }
    }

    /// Source sockets tracked.
    pub fn sources(&self) -> usize {
        self.sources.map.len()
    }

    /// A packet of `bytes` from `source` at `now`: allowed only if both its socket's and its
    /// address's buckets have room (and then taken from both).
    pub fn check(&mut self, now: u64, source: SocketAddr, bytes: usize) -> Verdict {
        let v = self.sources.bucket(now, source).can_take(bytes);
        if v != Verdict::Allow {
            return v;
        }
        let ip = self.ips.bucket(now, source.ip());
        let v = ip.can_take(bytes);
        if v != Verdict::Allow {
            return v;
        }
        ip.take(bytes);
        self.sources.bucket(now, source).take(bytes);
        Verdict::Allow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn src(n: u8, port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, n], port))
    }

    #[test]
    fn packet_limit_refills_over_time() {
        let mut l = Limiter::new(Limits {
            pps: 10.0,
            bytes_per_s: 1e9,
            max_sources: 8,
        });
        let allowed = (0..15)
            .filter(|_| l.check(0, src(1, 1000), 100) == Verdict::Allow)
            .count();
        assert_eq!(allowed, 10, "one second of burst");
        assert_eq!(l.check(0, src(1, 1000), 100), Verdict::PacketLimit);
        assert_eq!(
            l.check(S / 2, src(1, 1000), 100),
            Verdict::Allow,
            "half a second refills 5"
        );
        assert_eq!(
            l.check(0, src(2, 1000), 100),
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
        assert_eq!(l.check(0, src(1, 1), 600), Verdict::Allow);
        assert_eq!(l.check(0, src(1, 1), 600), Verdict::ByteLimit);
    }

    #[test]
    fn a_flooding_socket_does_not_starve_its_neighbours() {
        let mut l = Limiter::new(Limits {
            pps: 100.0,
            bytes_per_s: 1e9,
            max_sources: 64,
        });
        let (flood, probe) = (src(1, 40000), src(1, 40001));
        let mut answered = 0;
        // One second: the flooder sends 10,000 packets, the probe 100 (its budget), interleaved.
        for i in 0..10_000u64 {
            let now = i * S / 10_000;
            let _ = l.check(now, flood, 64);
            if i % 100 == 0 && l.check(now, probe, 64) == Verdict::Allow {
                answered += 1;
            }
        }
        assert_eq!(answered, 100, "the probe keeps its own budget");
    }

    #[test]
    fn one_address_cannot_multiply_its_budget_with_ports() {
        let mut l = Limiter::new(Limits {
            pps: 10.0,
            bytes_per_s: 1e9,
            max_sources: 1024,
        });
        let allowed = (0..100u16)
            .flat_map(|p| (0..20).map(move |_| p))
            .filter(|&p| l.check(0, src(7, 1000 + p), 1) == Verdict::Allow)
            .count();
        assert_eq!(
            allowed as f64,
            10.0 * IP_SHARE,
            "the address's share, not 100 x 10"
        );
    }

    #[test]
    fn tables_are_bounded_and_overflow_is_shared() {
        let mut l = Limiter::new(Limits {
            pps: 2.0,
            bytes_per_s: 1e9,
            max_sources: 4,
        });
        for n in 0..4 {
            assert_eq!(l.check(0, src(n, 1), 1), Verdict::Allow);
        }
        // Sources 10.. share one bucket of 2 packets.
        assert_eq!(l.check(0, src(10, 1), 1), Verdict::Allow);
        assert_eq!(l.check(0, src(11, 1), 1), Verdict::Allow);
        assert_eq!(l.check(0, src(12, 1), 1), Verdict::PacketLimit);
        assert_eq!(l.sources(), 4);
        // After the idle time the table is swept and new sources get their own bucket.
        assert_eq!(l.check(20 * S, src(13, 1), 1), Verdict::Allow);
        assert_eq!(l.sources(), 1);
    }
}
