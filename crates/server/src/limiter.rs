//! Per-source packet and byte limits for the UDP responder: token buckets at two levels.
//!
//! - **Per source socket** (address and port): the configured budget. A client that floods
//!   exhausts its own bucket and nobody else's — before, buckets were per IP address, and one
//!   flooding socket starved every other client behind the same address (4 of 200 probe packets
//!   answered).
//! - **Per IP address**: [`IP_SHARE`] times the budget, so a host cannot multiply its budget
//!   without end by opening (or spoofing) more ports.
//! - **In total** (`total_pps`, `total_bytes_per_s`): what all sources together may make the
//!   server send, so spoofing many addresses cannot turn it into a large reflector.
//!
//! Two sets of limits exist (see `ServeConfig`): [`Limits::safe`] for sources that have proved
//! nothing (the default for public source addresses: about what irtt's server allows one client, its
//! 10 ms minimum interval), and [`Limits::open`] for authenticated sessions, local sources (loopback, private) and
//! `npt serve --open-limits`.
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
    /// Packets per second from all sources together (infinite: no total).
    pub total_pps: f64,
    /// Payload bytes per second from all sources together (infinite: no total).
    pub total_bytes_per_s: f64,
}

impl Default for Limits {
    /// [`Limits::safe`].
    fn default() -> Self {
        Limits::safe()
    }
}

impl Limits {
    /// For sources that proved nothing, on a public address: 200 packets/s and 4 Mbit/s per
    /// source socket (twice what `npt probe` sends by default; irtt's server allows a client
    /// one packet per 10 ms), 10,000 packets/s and 40 Mbit/s for all of them together. A
    /// spoofed flood can make the server reflect at most that, at 1:1 size.
    pub fn safe() -> Limits {
        Limits {
            pps: 200.0,
            bytes_per_s: 0.5e6,
            max_sources: 65_536,
            total_pps: 10_000.0,
            total_bytes_per_s: 5e6,
        }
    }

    /// For authenticated sessions, local sources and `--open-limits`: one loopback probe at full
    /// speed (a relay probe moves 0.5-1 M pps on one core here) is never refused; one source is
    /// still bounded.
    pub fn open() -> Limits {
        Limits {
            pps: 4_000_000.0,
            bytes_per_s: 1.25e9,
            max_sources: 65_536,
            total_pps: f64::INFINITY,
            total_bytes_per_s: f64::INFINITY,
        }
    }

    fn scaled(&self, k: f64) -> Limits {
        Limits {
            pps: self.pps * k,
            bytes_per_s: self.bytes_per_s * k,
            ..*self
        }
    }

    fn total(&self) -> Limits {
        Limits {
            pps: self.total_pps,
            bytes_per_s: self.total_bytes_per_s,
            ..*self
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
        // A batch's datagrams share one `now`: nothing to add after the first.
        if now <= self.last {
            return;
        }
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
///
/// The buckets live in a vector, found through a hash index, and the table remembers the last
/// key it was asked for: a batch is mostly runs of packets from one source, and a run hashes
/// its source once instead of once per packet (SipHash of a socket address is a few hundred
/// instructions — the limiter was four-fifths of the responder's own per-packet work).
pub(crate) struct Table<K> {
    limits: Limits,
    index: HashMap<K, usize>,
    slots: Vec<(K, Bucket)>,
    overflow: Bucket,
    last_sweep: u64,
    last: Option<(K, usize)>,
}

impl<K: Hash + Eq + Copy> Table<K> {
    pub(crate) fn new(limits: Limits) -> Table<K> {
        Table {
            limits,
            index: HashMap::new(),
            slots: Vec::new(),
            overflow: Bucket::full(&limits, 0),
            last_sweep: 0,
            last: None,
        }
    }

    /// Keys tracked (the overflow bucket not counted).
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The (refilled) bucket for `key`: its own, or the overflow when the table is full.
    pub(crate) fn bucket(&mut self, now: u64, key: K) -> &mut Bucket {
        let l = self.limits;
        let found = match self.last {
            Some((k, i)) if k == key => Some(i),
            _ => self.index.get(&key).copied(),
        };
        let i = match found {
            Some(i) => i,
            None => {
                if self.slots.len() >= l.max_sources
                    && now.saturating_sub(self.last_sweep) >= IDLE_NS / 10
                {
                    self.last_sweep = now;
                    self.sweep(now);
                }
                if self.slots.len() >= l.max_sources {
                    self.overflow.refill(&l, now);
                    return &mut self.overflow;
                }
                self.slots.push((key, Bucket::full(&l, now)));
                let i = self.slots.len() - 1;
                self.index.insert(key, i);
                i
            }
        };
        self.last = Some((key, i));
        // `i` came from the index or the push above: always a slot (the overflow otherwise).
        match self.slots.get_mut(i) {
            Some((_, b)) => {
                b.refill(&l, now);
                b
            }
            None => {
                self.overflow.refill(&l, now);
                &mut self.overflow
            }
        }
    }

    /// Forgets the buckets idle for [`IDLE_NS`] and re-indexes the rest.
    fn sweep(&mut self, now: u64) {
        self.slots
            .retain(|(_, b)| now.saturating_sub(b.last) < IDLE_NS);
        self.index.clear();
        self.index
            .extend(self.slots.iter().enumerate().map(|(i, (k, _))| (*k, i)));
        self.last = None;
    }
}

pub struct Limiter {
    sources: Table<SocketAddr>,
    ips: Table<IpAddr>,
    total: Table<()>,
}

impl Limiter {
    pub fn new(limits: Limits) -> Limiter {
        Limiter {
            sources: Table::new(limits),
            ips: Table::new(limits.scaled(IP_SHARE)),
            total: Table::new(limits.total()),
        }
    }

    /// Source sockets tracked.
    pub fn sources(&self) -> usize {
        self.sources.len()
    }

    /// A packet of `bytes` from `source` at `now`: allowed only if its socket's, its address's
    /// and the total bucket all have room (and then taken from all three). One lookup per
    /// table.
    pub fn check(&mut self, now: u64, source: SocketAddr, bytes: usize) -> Verdict {
        let s = self.sources.bucket(now, source);
        let v = s.can_take(bytes);
        if v != Verdict::Allow {
            return v;
        }
        let ip = self.ips.bucket(now, source.ip());
        let v = ip.can_take(bytes);
        if v != Verdict::Allow {
            return v;
        }
        let total = self.total.bucket(now, ());
        let v = total.can_take(bytes);
        if v != Verdict::Allow {
            return v;
        }
        total.take(bytes);
        ip.take(bytes);
        s.take(bytes);
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
            ..Limits::open()
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
            ..Limits::open()
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
            ..Limits::open()
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
            ..Limits::open()
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
    fn the_total_holds_across_spoofed_sources() {
        let mut l = Limiter::new(Limits {
            pps: 10.0,
            total_pps: 100.0,
            ..Limits::safe()
        });
        let allowed = (0..=255u8)
            .flat_map(|a| (0..4u8).map(move |b| src(a, 1000 + u16::from(b))))
            .filter(|&s| l.check(0, s, 64) == Verdict::Allow)
            .count();
        assert_eq!(allowed, 100, "1,024 sources, one total");
        assert_eq!(l.check(S / 10, src(1, 1000), 64), Verdict::Allow, "refills");
    }

    #[test]
    fn safe_defaults_are_small_and_open_ones_are_not() {
        let (s, o) = (Limits::safe(), Limits::open());
        assert!(s.pps <= 200.0 && s.bytes_per_s * 8.0 <= 4e6);
        assert!(s.total_pps.is_finite() && s.total_bytes_per_s * 8.0 <= 40e6);
        // One loopback relay probe moves ~0.5-1 M pps here: it must never meet the open limit.
        assert!(o.pps >= 2_000_000.0 && o.total_pps.is_infinite());
    }

    #[test]
    fn tables_are_bounded_and_overflow_is_shared() {
        let mut l = Limiter::new(Limits {
            pps: 2.0,
            bytes_per_s: 1e9,
            max_sources: 4,
            ..Limits::open()
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
