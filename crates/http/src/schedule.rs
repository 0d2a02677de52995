//! When each request is due and which host it goes to: plain arithmetic on nanosecond offsets
//! from the start of the run, no clock and no sockets, so it is unit-tested with a virtual clock.
//!
//! Closed loop (`-c`): every worker slot sends its next request as soon as the previous answer
//! is in; there is no schedule. Open loop (`--rate`): request `k` is *intended* at `k / rate`
//! seconds whatever happened before; the [`crate::pacer`] thread releases it then and any free
//! slot takes it. When every slot is busy (the server stalls) requests pile up and leave late;
//! latency is always measured from the intended time as well (coordinated-omission correction,
//! as wrk2), so a stall shows in the corrected percentiles instead of silently lowering the
//! send rate.

use std::sync::atomic::{AtomicU64, Ordering};

/// Open-loop schedule: request `k` is due `k × 1e9 / rate` ns after the start.
#[derive(Clone, Copy, Debug)]
pub struct OpenLoop {
    rate: f64,
    /// No ticket is intended at or after this offset (the run's duration), if set.
    end_ns: Option<u64>,
}

impl OpenLoop {
    /// `rate` requests per second; must be finite and > 0 (validated by the caller).
    pub fn new(rate: f64, end_ns: Option<u64>) -> OpenLoop {
        OpenLoop { rate, end_ns }
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Offset from the start at which ticket `k` is intended, in ns.
    // NO-PANIC: a float-to-int `as` saturates (NaN gives 0); `new`'s caller checks `rate > 0`.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    pub fn intended_ns(&self, k: u64) -> u64 {
        (k as f64 * 1e9 / self.rate).round() as u64
    }

    /// The intended time of ticket `k`, or `None` when it falls after the end of the run.
    pub fn due(&self, k: u64) -> Option<u64> {
        let t = self.intended_ns(k);
        match self.end_ns {
            Some(end) if t >= end => None,
            _ => Some(t),
        }
    }

    /// How late a send at `now_ns` is for ticket `k` (0 when early or on time).
    pub fn lateness_ns(&self, k: u64, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.intended_ns(k))
    }
}

/// Hands out request numbers to every worker: the open-loop ticket and the round-robin host.
#[derive(Debug, Default)]
pub struct Tickets(AtomicU64);

impl Tickets {
    pub fn new() -> Tickets {
        Tickets(AtomicU64::new(0))
    }

    /// The next request number (0, 1, 2 … across all workers).
    #[inline]
    pub fn take(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }

    pub fn taken(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Round-robin over hosts: request `k` goes to host `k mod n`.
// NO-PANIC: the remainder is below `hosts`, a usize, so the cast back is lossless.
#[allow(clippy::cast_possible_truncation)]
#[inline]
pub fn host_for(k: u64, hosts: usize) -> usize {
    if hosts <= 1 {
        0
    } else {
        (k % hosts as u64) as usize
    }
}

/// A sans-IO model of one run, used by the tests below and handy for reasoning: `slots`
/// workers, each with one request outstanding, a server whose service time depends on when a
/// request arrives, and the open-loop schedule. Returns `(intended, sent, done)` per request.
pub fn simulate_open_loop(
    sched: &OpenLoop,
    slots: usize,
    service_ns: impl Fn(u64) -> u64,
) -> Vec<(u64, u64, u64)> {
    let mut free_at = vec![0u64; slots.max(1)];
    let mut out = Vec::new();
    let mut k = 0u64;
    while let Some(intended) = sched.due(k) {
        // The slot that frees up first takes the ticket (what the driver does, in effect).
        let Some(free) = free_at.iter_mut().min_by_key(|t| **t) else {
            break; // never: there is at least one slot
        };
        let sent = intended.max(*free);
        let done = sent + service_ns(sent);
        *free = done;
        out.push((intended, sent, done));
        k += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    #[test]
    fn tickets_are_evenly_spaced_and_end_with_the_run() {
        let s = OpenLoop::new(1000.0, Some(S));
        assert_eq!(s.intended_ns(0), 0);
        assert_eq!(s.intended_ns(1), MS);
        assert_eq!(s.intended_ns(999), 999 * MS);
        assert_eq!(s.due(999), Some(999 * MS));
        assert_eq!(s.due(1000), None, "nothing is intended at or after the end");
        let odd = OpenLoop::new(3.0, None);
        assert_eq!(odd.intended_ns(1), 333_333_333);
        assert_eq!(odd.intended_ns(3), S, "no drift from accumulated rounding");
    }

    #[test]
    fn lateness_is_never_negative() {
        let s = OpenLoop::new(100.0, None);
        assert_eq!(s.lateness_ns(2, 15 * MS), 0);
        assert_eq!(s.lateness_ns(2, 25 * MS), 5 * MS);
    }

    #[test]
    fn hosts_rotate() {
        let seq: Vec<usize> = (0..7).map(|k| host_for(k, 3)).collect();
        assert_eq!(seq, vec![0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(host_for(5, 1), 0);
        assert_eq!(host_for(5, 0), 0);
        let t = Tickets::new();
        assert_eq!((t.take(), t.take(), t.taken()), (0, 1, 2));
    }

    /// The correctness property on a virtual clock: a server that stalls for 1 s every
    /// 3 s. Measured from the actual send, only the few requests caught in the stall are slow;
    /// measured from the intended time, everything scheduled during the stall is.
    #[test]
    fn stall_shows_in_corrected_latency_only() {
        let sched = OpenLoop::new(1000.0, Some(6 * S));
        let stall = |t: u64| {
            let phase = t % (3 * S);
            if (S..2 * S).contains(&phase) {
                2 * S - phase + 100_000
            } else {
                100_000
            }
        };
        let runs = simulate_open_loop(&sched, 4, stall);
        assert_eq!(runs.len(), 6000);
        let mut corrected: Vec<u64> = runs.iter().map(|&(i, _, d)| d - i).collect();
        let mut uncorrected: Vec<u64> = runs.iter().map(|&(_, s, d)| d - s).collect();
        corrected.sort_unstable();
        uncorrected.sort_unstable();
        let p99 = |v: &[u64]| v[v.len() * 99 / 100];
        assert!(
            p99(&corrected) > 800 * MS,
            "corrected p99 {}",
            p99(&corrected)
        );
        assert!(
            p99(&uncorrected) < MS,
            "uncorrected p99 {}",
            p99(&uncorrected)
        );
        let behind = runs.iter().filter(|&&(i, s, _)| s > i).count();
        assert!(
            behind > 1500,
            "sends during the stall leave behind schedule: {behind}"
        );
    }

    #[test]
    fn no_stall_no_difference() {
        let sched = OpenLoop::new(500.0, Some(2 * S));
        let runs = simulate_open_loop(&sched, 2, |_| MS);
        assert!(runs.iter().all(|&(i, s, _)| i == s));
    }
}
