//! When each target's rounds start: sans-IO, on the monitor's monotonic clock (ns since it
//! started), so that the schedule is tested on a virtual clock and the driver only sleeps
//! until [`Scheduler::next_wake`].
//!
//! Round `k` of a target is due at `phase + k·every + jitter_k`. The phase spreads targets
//! over their interval (a hash of the name, as SmokePing offsets its probes), so a thousand
//! targets every 10 s start ten per second instead of a thousand at once; `jitter_k` is a
//! random delay below the target's `jitter`, drawn from a seeded stream so a run is
//! reproducible. A round that is still running when its successor is due makes the successor
//! *skipped* — never queued behind it, so a hung target never delays anything, its own later
//! rounds included; the skips are reported so the store records them as gaps.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// A target's place in the schedule.
#[derive(Clone, Debug)]
pub struct Cadence {
    every: u64,
    jitter: u64,
    phase: u64,
    seed: u64,
    /// Index of the next round.
    next: u64,
    running: bool,
    /// Bumped when the target is replaced (reload), so stale heap entries are ignored.
    generation: u64,
}

/// splitmix64: one well-mixed number per input, the seeded stream of the jitter.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a of a name: its place in the interval.
pub fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// A duration in the schedule's unit (ns), saturating.
pub(crate) fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Cadence {
    /// A target's cadence, its first round due within one interval of `now`.
    pub fn new(name: &str, every: Duration, jitter: Duration, now: u64) -> Cadence {
        let every = ns(every).max(1);
        let seed = name_hash(name);
        let phase = mix(seed) % every;
        let mut c = Cadence {
            every,
            jitter: ns(jitter).min(every.saturating_sub(1)),
            phase,
            seed,
            next: 0,
            running: false,
            generation: 0,
        };
        c.next = c.first_after(now);
        c
    }

    /// When round `k` is due.
    pub fn due_of(&self, k: u64) -> u64 {
        let j = if self.jitter == 0 {
            0
        } else {
            mix(self.seed ^ k.wrapping_mul(0xD6E8_FEB8_6659_FD93)) % self.jitter
        };
        self.phase
            .saturating_add(k.saturating_mul(self.every))
            .saturating_add(j)
    }

    /// The first round whose due time is at or after `now` (and after those already started).
    fn first_after(&self, now: u64) -> u64 {
        let mut k = now.saturating_sub(self.phase) / self.every;
        // The jitter only delays: round k-1 may be due after `now` too. Step back then forward.
        k = k.saturating_sub(1).max(self.next);
        while self.due_of(k) < now {
            k += 1;
        }
        k
    }

    pub fn due(&self) -> u64 {
        self.due_of(self.next)
    }

    pub fn running(&self) -> bool {
        self.running
    }
}

/// A round to start now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    pub target: usize,
    /// Its index in the target's schedule.
    pub round: u64,
    /// When it was due (monotonic ns).
    pub due: u64,
}

/// Rounds that were due while the target's previous round still ran: never started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub target: usize,
    /// Their due times (monotonic ns).
    pub due: Vec<u64>,
}

/// Every target's cadence, and which is due next.
#[derive(Debug, Default)]
pub struct Scheduler {
    cadences: Vec<Option<Cadence>>,
    /// (due, target, generation), earliest first.
    heap: BinaryHeap<Reverse<(u64, usize, u64)>>,
}

/// At most this many skipped rounds are listed one by one per gap (a target stuck for a day at
/// 1 s would list 86,400); the rest are counted in the gap's last entry's span.
pub const MAX_LISTED_SKIPS: usize = 64;

impl Scheduler {
    pub fn new() -> Scheduler {
        Scheduler::default()
    }

    /// Adds target `i` (or replaces it, keeping its round count: a reload that changes its
    /// interval starts the new one at the next due time after `now`).
    pub fn set(&mut self, i: usize, name: &str, every: Duration, jitter: Duration, now: u64) {
        if self.cadences.len() <= i {
            self.cadences.resize(i + 1, None);
        }
        let mut c = Cadence::new(name, every, jitter, now);
        if let Some(Some(old)) = self.cadences.get(i) {
            c.generation = old.generation + 1;
            c.running = old.running;
        }
        if !c.running {
            self.heap.push(Reverse((c.due(), i, c.generation)));
        }
        if let Some(slot) = self.cadences.get_mut(i) {
            *slot = Some(c);
        }
    }

    /// Removes target `i`: nothing more starts for it (a round in flight finishes).
    pub fn remove(&mut self, i: usize) {
        if let Some(slot) = self.cadences.get_mut(i) {
            *slot = None;
        }
    }

    pub fn cadence(&self, i: usize) -> Option<&Cadence> {
        self.cadences.get(i).and_then(Option::as_ref)
    }

    /// When the next round is due, if any target is waiting.
    pub fn next_wake(&mut self) -> Option<u64> {
        while let Some(Reverse((due, i, g))) = self.heap.peek().copied() {
            match self.cadence(i) {
                Some(c) if c.generation == g && !c.running && c.due() == due => return Some(due),
                _ => {
                    self.heap.pop();
                }
            }
        }
        None
    }

    /// The rounds due at `now`, each marked running.
    pub fn poll(&mut self, now: u64) -> Vec<Start> {
        let mut out = Vec::new();
        while let Some(due) = self.next_wake() {
            if due > now {
                break;
            }
            let Some(Reverse((_, i, _))) = self.heap.pop() else {
                break;
            };
            if let Some(Some(c)) = self.cadences.get_mut(i) {
                out.push(Start {
                    target: i,
                    round: c.next,
                    due,
                });
                c.running = true;
                c.next += 1;
            }
        }
        out
    }

    /// Target `i`'s round ended at `now`: the rounds that fell due meanwhile are skipped and the
    /// next one after `now` is scheduled.
    pub fn finish(&mut self, i: usize, now: u64) -> Option<Skipped> {
        let c = self.cadences.get_mut(i)?.as_mut()?;
        c.running = false;
        let mut due = Vec::new();
        while c.due() < now {
            if due.len() < MAX_LISTED_SKIPS {
                due.push(c.due());
            }
            c.next += 1;
            // Far behind (a suspended host, a round stuck for hours): jump, don't loop.
            if due.len() == MAX_LISTED_SKIPS {
                c.next = c.first_after(now);
                break;
            }
        }
        self.heap.push(Reverse((c.due(), i, c.generation)));
        (!due.is_empty()).then_some(Skipped { target: i, due })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn rounds_come_every_interval_after_a_phase_within_it() {
        let c = Cadence::new("relay-udp", Duration::from_secs(10), Duration::ZERO, 0);
        let first = c.due();
        assert!(first < 10 * S);
        assert_eq!(c.due_of(1) - c.due_of(0), 10 * S);
        assert_eq!(c.due_of(7), first + 70 * S);
    }

    #[test]
    fn a_thousand_targets_spread_over_their_interval() {
        let mut per_second = [0u32; 10];
        for i in 0..1000 {
            let c = Cadence::new(&format!("t{i}"), Duration::from_secs(10), Duration::ZERO, 0);
            per_second[usize::try_from(c.due() / S).unwrap()] += 1;
        }
        for n in per_second {
            assert!((60..=140).contains(&n), "{per_second:?}");
        }
    }

    #[test]
    fn jitter_delays_within_its_bound_and_is_reproducible() {
        let a = Cadence::new("x", Duration::from_secs(10), Duration::from_secs(2), 0);
        let b = Cadence::new("x", Duration::from_secs(10), Duration::from_secs(2), 0);
        let mut offsets = std::collections::BTreeSet::new();
        for k in 0..200 {
            let base = a.due_of(0) - (a.due_of(0) - a.phase) + k * 10 * S;
            let off = a.due_of(k) - base;
            assert!(off < 2 * S, "{off}");
            assert_eq!(a.due_of(k), b.due_of(k));
            offsets.insert(off / (S / 10));
        }
        assert!(offsets.len() >= 15, "jitter is spread: {offsets:?}");
    }

    #[test]
    fn a_virtual_day_starts_every_round_on_time() {
        let mut s = Scheduler::new();
        s.set(0, "a", Duration::from_secs(10), Duration::ZERO, 0);
        s.set(1, "b", Duration::from_secs(60), Duration::from_secs(5), 0);
        let mut started = [0u64; 2];
        let mut now = 0;
        while let Some(w) = s.next_wake() {
            if w > 86_400 * S {
                break;
            }
            now = now.max(w);
            for st in s.poll(now) {
                assert_eq!(st.due, now, "started exactly when due");
                started[st.target] += 1;
                // Each round takes 1 s.
                assert_eq!(s.finish(st.target, now + S), None);
            }
        }
        assert_eq!(started, [8640, 1440]);
    }

    #[test]
    fn a_hung_round_skips_its_successors_and_delays_no_other_target() {
        let mut s = Scheduler::new();
        s.set(0, "hung", Duration::from_secs(1), Duration::ZERO, 0);
        s.set(1, "fine", Duration::from_secs(1), Duration::ZERO, 0);
        let mut fine = 0;
        let mut hung_round = None;
        for t in 0..30 * 10 {
            let now = t * S / 10;
            for st in s.poll(now) {
                if st.target == 0 {
                    assert!(hung_round.is_none(), "no second round while the first runs");
                    hung_round = Some(st);
                } else {
                    fine += 1;
                    s.finish(1, now + S / 100);
                }
            }
        }
        assert!((29..=30).contains(&fine), "{fine}");
        let h = hung_round.unwrap();
        // It ends after 30 s: the rounds due meanwhile are skipped, the next is after now.
        let skipped = s.finish(0, 30 * S).unwrap();
        assert_eq!(skipped.due.len(), 29, "{skipped:?}");
        assert_eq!(skipped.due[0], h.due + S);
        assert!(s.cadence(0).unwrap().due() >= 30 * S);
    }

    #[test]
    fn a_very_long_stall_jumps_instead_of_listing_every_round() {
        let mut s = Scheduler::new();
        s.set(0, "x", Duration::from_secs(1), Duration::ZERO, 0);
        let st = s.poll(2 * S);
        assert_eq!(st.len(), 1);
        let skipped = s.finish(0, 86_400 * S).unwrap();
        assert_eq!(skipped.due.len(), MAX_LISTED_SKIPS);
        let next = s.cadence(0).unwrap().due();
        assert!((86_400 * S..86_401 * S).contains(&next), "{next}");
    }

    #[test]
    fn a_replaced_or_removed_target_leaves_no_stale_wakeups() {
        let mut s = Scheduler::new();
        s.set(0, "a", Duration::from_secs(10), Duration::ZERO, 0);
        s.set(0, "a", Duration::from_secs(60), Duration::ZERO, 0);
        let w = s.next_wake().unwrap();
        assert_eq!(s.poll(w).len(), 1, "one round, not one per generation");
        s.finish(0, w);
        s.remove(0);
        assert_eq!(s.next_wake(), None);
    }
}
