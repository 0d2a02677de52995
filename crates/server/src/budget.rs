//! Per-source reply budget: how many bytes of *asked-for* replies one address may make the
//! server send. A 48-byte TCP `Request` may ask for a 64 MiB `Response`, and `GET /bytes/N` for
//! up to 16 GiB; without a budget anyone who can reach the port can make the server push
//! its whole uplink at them (or, through many connections, at its own expense).
//!
//! Each source **address** (not socket: a new connection must not mean a new budget) has a
//! token bucket of `bytes_per_s`, holding at most one second's worth. A reply is sent only if
//! the bucket holds all of it, and then taken whole; so no single reply can be larger than
//! one second's budget. Echoes are not charged (the peer sent the same bytes first).
//!
//! The table is the UDP limiter's ([`crate::limiter`]): bounded, idle entries swept, further
//! addresses share one overflow bucket. [`BudgetTable`] is pure (takes `now`); [`ReplyBudget`]
//! adds the lock and the clock for the responders.

use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

use crate::limiter::{Limits, Table, Verdict};

/// The budget every source address gets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BudgetLimits {
    /// Reply bytes per second per source address; the bucket holds one second's worth.
    pub bytes_per_s: f64,
    /// Addresses tracked at once before further ones share the overflow bucket.
    pub max_sources: usize,
    /// Local addresses ([`crate::is_local`]) are not charged (a benchmark on the same host
    /// or LAN).
    pub exempt_local: bool,
}

impl Default for BudgetLimits {
    /// [`BudgetLimits::safe`].
    fn default() -> Self {
        BudgetLimits::safe()
    }
}

impl BudgetLimits {
    /// 100 Mbit/s per address (a single reply at most 12.5 MB), local addresses exempt: what a public
    /// server can give strangers without one of them taking its uplink.
    pub fn safe() -> BudgetLimits {
        BudgetLimits {
            bytes_per_s: 12.5e6,
            max_sources: 65_536,
            exempt_local: true,
        }
    }

    /// 10 Gbit/s per address (`--open-limits`): never in the way of a LAN benchmark from one
    /// host, but a single reply is at most 1.25 GB.
    pub fn open() -> BudgetLimits {
        BudgetLimits {
            bytes_per_s: 1.25e9,
            ..BudgetLimits::safe()
        }
    }
}

/// The pure budget: `take(now_ns, addr, bytes)`.
pub struct BudgetTable {
    table: Table<IpAddr>,
    exempt_local: bool,
}

impl BudgetTable {
    pub fn new(l: BudgetLimits) -> BudgetTable {
        BudgetTable {
            // Packets are not limited here: an infinite packet rate never runs out.
            table: Table::new(Limits {
                pps: f64::INFINITY,
                bytes_per_s: l.bytes_per_s,
                max_sources: l.max_sources,
                total_pps: f64::INFINITY,
                total_bytes_per_s: f64::INFINITY,
            }),
            exempt_local: l.exempt_local,
        }
    }

    /// True (and the bytes are taken) if `addr` may be sent a reply of `bytes` at `now_ns`.
    pub fn take(&mut self, now_ns: u64, addr: IpAddr, bytes: u64) -> bool {
        if self.exempt_local && crate::is_local(addr) {
            return true;
        }
        let b = self.table.bucket(now_ns, addr);
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        if b.can_take(bytes) == Verdict::Allow {
            b.take(bytes);
            true
        } else {
            false
        }
    }
}

/// The budget shared by every responder of one `npt serve` (TCP, QUIC streams, HTTP).
pub struct ReplyBudget {
    table: Mutex<BudgetTable>,
    epoch: Instant,
}

impl ReplyBudget {
    pub fn new(l: BudgetLimits) -> ReplyBudget {
        ReplyBudget {
            table: Mutex::new(BudgetTable::new(l)),
            epoch: Instant::now(),
        }
    }

    /// True (and the bytes are taken) if `addr` may be sent a reply of `bytes` now.
    pub fn take(&self, addr: IpAddr, bytes: u64) -> bool {
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // A poisoned lock only means another task panicked mid-update of plain numbers.
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        t.take(now, addr, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([198, 51, 100, n])
    }

    #[test]
    fn one_second_of_budget_then_refill() {
        let mut b = BudgetTable::new(BudgetLimits {
            bytes_per_s: 1000.0,
            max_sources: 8,
            exempt_local: true,
        });
        assert!(b.take(0, ip(1), 600));
        assert!(!b.take(0, ip(1), 600), "only 400 left");
        assert!(b.take(0, ip(2), 600), "another address has its own");
        assert!(b.take(S / 5, ip(1), 600), "200 ms refilled 200");
    }

    #[test]
    fn a_reply_larger_than_one_second_is_never_sent() {
        let mut b = BudgetTable::new(BudgetLimits {
            bytes_per_s: 1000.0,
            max_sources: 8,
            exempt_local: true,
        });
        assert!(!b.take(100 * S, ip(1), 1001));
        assert!(b.take(100 * S, ip(1), 1000));
    }

    #[test]
    fn sixteen_gib_is_refused_even_when_open() {
        let mut b = BudgetTable::new(BudgetLimits::open());
        assert!(!b.take(0, ip(1), 16 << 30));
        assert!(b.take(0, ip(1), 64 << 20));
        let mut b = BudgetTable::new(BudgetLimits::default());
        assert!(!b.take(0, ip(1), 64 << 20), "safe: 12.5 MB a second");
        assert!(b.take(0, ip(1), 12_000_000));
        assert!(
            b.take(0, IpAddr::from([127, 0, 0, 1]), 1 << 30),
            "loopback exempt"
        );
    }
}
