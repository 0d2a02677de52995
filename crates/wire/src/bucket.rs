//! A byte stream at a rate (`npt bulk --rate` and `--load-rate` on tcp:// and quic://, and the
//! responder sending such a stream down): a token bucket of payload bytes. It never sleeps and
//! never reads a clock: the driver asks [`TokenBucket::grant`] how many bytes it may write
//! `now`, writes at most that many, reports them with [`TokenBucket::spend`], and when nothing
//! is granted waits until [`TokenBucket::next_at`]. Tests drive it with a virtual clock.
//!
//! Why both this and the kernel's pacing (`SO_MAX_PACING_RATE`, [`kernel_pacing_rate`]) on a
//! TCP stream: the kernel paces packets evenly (no fq qdisc needed, TCP paces internally), but
//! it counts the bytes of its packets, headers included, so the payload it moves at a given
//! rate depends on the segment size and on how many segments each packet it builds carries;
//! the bucket counts payload, so the goodput is the rate asked. On a 10 Mbit/s lab link with a
//! 100-packet queue (docs/bulk.md), writes of 128 KiB paced by a bucket alone arrived as bursts
//! that kept the queue's wait at p50 21 ms, p99 56 ms; the kernel's pacing alone held it at
//! p50 1.2, p99 2.3 ms. So the bucket sets the rate and the kernel, capped a little above it,
//! spreads each write's packets out. QUIC has only the bucket (its stack paces its packets).
//!
//! The bucket holds at most [`TokenBucket::burst`] bytes (20 ms of the rate, at least two
//! writes): a writer the path held back does not catch up in a burst later, so the rate is a
//! ceiling, never exceeded over any 20 ms, and a late wake-up of up to that long costs nothing.

/// A write is at least this much of the rate (2 ms), so a writer wakes at most ~500 times a
/// second.
const QUANTUM_NS: f64 = 2e6;
/// The smallest write (a very low rate writes small pieces rarely: 64 B every 5 s at 100
/// bit/s, within npt serve's 10 s stall deadline).
const MIN_QUANTUM: u64 = 64;
/// The largest write the quantum asks for.
const MAX_QUANTUM: u64 = 64 * 1024;
/// The bucket's depth in time: what a late writer may still send at once.
const BURST_NS: f64 = 20e6;

/// How much above the asked payload rate the kernel's pacing is capped: its packets' headers
/// (up to 72 bytes a segment: IPv6, TCP and timestamps, 5 % of a 1,428-byte segment) must fit
/// under the cap, or the kernel and not the bucket would set the rate.
pub const KERNEL_HEADROOM: f64 = 1.10;

/// The kernel pacing cap (bytes/s, for `SO_MAX_PACING_RATE`) that goes with a payload rate of
/// `rate_bps` bits/s.
// NO-PANIC: a float-to-int `as` saturates (NaN gives 0).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn kernel_pacing_rate(rate_bps: f64) -> u64 {
    (rate_bps / 8.0 * KERNEL_HEADROOM).ceil().max(1.0) as u64
}

/// Payload bytes at a rate. Times in ns on the driver's clock.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucket {
    /// Bytes per ns.
    per_ns: f64,
    quantum: u64,
    burst: u64,
    tokens: f64,
    last: u64,
}

impl TokenBucket {
    /// `rate_bps` bits/s of payload from `now`, the first write granted at once.
    // NO-PANIC: float-to-int `as` saturates; the values are clamped first.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    pub fn new(rate_bps: f64, now: u64) -> TokenBucket {
        let per_ns = (rate_bps / 8.0 / 1e9).max(f64::MIN_POSITIVE);
        let quantum = ((per_ns * QUANTUM_NS).round() as u64).clamp(MIN_QUANTUM, MAX_QUANTUM);
        let burst = ((per_ns * BURST_NS).round() as u64).max(2 * quantum);
        TokenBucket {
            per_ns,
            quantum,
            burst,
            tokens: quantum as f64,
            last: now,
        }
    }

    /// The smallest write the bucket grants (the writer waits for this much).
    pub fn quantum(&self) -> u64 {
        self.quantum
    }

    /// The most bytes it ever grants at once.
    pub fn burst(&self) -> u64 {
        self.burst
    }

    fn refill(&mut self, now: u64) {
        let dt = now.saturating_sub(self.last) as f64;
        self.tokens = (self.tokens + dt * self.per_ns).min(self.burst as f64);
        self.last = self.last.max(now);
    }

    /// How many bytes (at most `max`) may be written at `now`: 0 until a quantum has
    /// accumulated, then everything there is.
    // NO-PANIC: `tokens` is between 0 and `burst`, a u64; `as` saturates anyway.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    pub fn grant(&mut self, now: u64, max: u64) -> u64 {
        self.refill(now);
        if self.tokens + 1e-6 < self.quantum.min(max.max(1)) as f64 {
            return 0;
        }
        (self.tokens as u64).min(max)
    }

    /// `n` bytes (at most what was granted) were written.
    pub fn spend(&mut self, n: u64) {
        self.tokens = (self.tokens - n as f64).max(0.0);
    }

    /// When a quantum will have accumulated (the time of the last grant if it already has).
    // NO-PANIC: float-to-int `as` saturates; the wait is not negative.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    pub fn next_at(&self) -> u64 {
        let missing = self.quantum as f64 - self.tokens;
        if missing <= 0.0 {
            return self.last;
        }
        self.last
            .saturating_add((missing / self.per_ns).ceil() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    /// A writer that always can write drives the bucket on a virtual clock: it writes what it
    /// is granted, else sleeps until `next_at` plus `late` ns (a driver's timer wakes late).
    /// Returns the bytes written by `until` and the largest single write.
    fn drive(rate_bps: f64, late: u64, until: u64) -> (u64, u64) {
        let mut b = TokenBucket::new(rate_bps, 0);
        let (mut now, mut total, mut largest) = (0, 0, 0);
        let mut steps = 0;
        while now < until {
            steps += 1;
            assert!(steps < 10_000_000, "bounded");
            let n = b.grant(now, 128 * 1024);
            if n > 0 {
                b.spend(n);
                total += n;
                largest = largest.max(n);
            } else {
                let next = b.next_at();
                assert!(next > now, "a wait moves time on: {next} at {now}");
                now = next + late;
            }
        }
        (total, largest)
    }

    #[test]
    fn the_payload_rate_is_the_asked_one() {
        for rate in [100.0, 1e5, 5e6, 1e9] {
            let (bytes, largest) = drive(rate, 0, 10 * S);
            let want = rate / 8.0 * 10.0;
            assert!(
                (bytes as f64 - want).abs() <= want * 0.001 + 2.0 * MAX_QUANTUM as f64,
                "{rate} bit/s: {bytes} B in 10 s, want {want}"
            );
            let q = TokenBucket::new(rate, 0).quantum();
            assert!(
                largest <= q.max(64) + 1,
                "{rate}: a write of {largest} > {q}"
            );
        }
        let b = TokenBucket::new(5e6, 0);
        assert_eq!(
            (b.quantum(), b.burst()),
            (1250, 12_500),
            "2 ms and 20 ms at 5 Mbit/s"
        );
    }

    /// A timer that wakes 3 ms late every time (half a quantum at most would be lost without
    /// the burst) still gets the rate: the tokens wait in the bucket.
    #[test]
    fn late_wakeups_cost_nothing_within_the_burst() {
        let (bytes, largest) = drive(5e6, 3 * MS, 10 * S);
        let want = 5e6 / 8.0 * 10.0;
        assert!(
            (bytes as f64 - want).abs() <= want * 0.002,
            "{bytes} vs {want}"
        );
        assert!(largest > 1250 && largest <= 12_500, "{largest}");
    }

    /// A writer held back for a second (the path, or the socket buffer) does not burst the
    /// second's bytes after it: it gets at most the burst, then the rate again.
    #[test]
    fn a_stall_is_not_made_up() {
        let mut b = TokenBucket::new(8e6, 0);
        assert_eq!(b.grant(0, u64::MAX), 2000, "one write at once");
        b.spend(2000);
        assert_eq!(b.grant(MS, u64::MAX), 0, "half a quantum after it");
        assert_eq!(b.next_at(), 2 * MS);
        assert_eq!(
            b.grant(S, u64::MAX),
            20_000,
            "the burst, not the second's 1 MB"
        );
        b.spend(20_000);
        assert_eq!(b.grant(S + MS, u64::MAX), 0);
        assert_eq!(
            b.grant(S + 2 * MS, 500),
            500,
            "a smaller ask is granted in part"
        );
        b.spend(500);
        assert_eq!(
            b.grant(S + 2 * MS, u64::MAX),
            0,
            "1,500 left: less than a quantum"
        );
        assert_eq!(b.next_at(), S + 2 * MS + MS / 2);
    }

    #[test]
    fn the_kernel_cap_leaves_room_for_headers() {
        assert_eq!(
            kernel_pacing_rate(5e6),
            687_500,
            "5 Mbit/s + 10 %, in bytes/s"
        );
        assert_eq!(kernel_pacing_rate(0.0), 1);
        assert_eq!(kernel_pacing_rate(f64::NAN), 1);
    }
}
