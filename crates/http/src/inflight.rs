//! Requests in flight, without a lock on the hot path, so the end of a run can report what it
//! cut off (how many, the oldest's age) instead of dropping it silently.
//!
//! A fixed table of atomic slots: a request claims a free slot with its start time (ns since
//! the run's start, plus one so 0 means free) and frees it when its guard drops. Claims probe
//! a bounded number of slots from a rotating start; when every probed slot is taken the
//! request is only counted (`overflow`), so the count stays exact and only the oldest age may
//! miss it. The table is sized for far more concurrent requests than `-c × --streams` allows.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const SLOTS: usize = 4096;
const PROBES: usize = 64;

pub struct InFlight {
    slots: Box<[AtomicU64]>,
    next: AtomicUsize,
    overflow: AtomicU64,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            next: AtomicUsize::new(0),
            overflow: AtomicU64::new(0),
        }
    }
}

pub struct Guard<'a> {
    owner: &'a InFlight,
    /// The claimed slot, or None when counted in `overflow`.
    slot: Option<&'a AtomicU64>,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        match self.slot {
            Some(s) => s.store(0, Ordering::Release),
            None => {
                self.owner.overflow.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

impl InFlight {
    /// A request starts at `now_ns`; it is in flight until the guard drops.
    pub fn enter(&self, now_ns: u64) -> Guard<'_> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for k in 0..PROBES {
            // NO-PANIC: `% SLOTS`, and `slots` holds SLOTS entries from `default` on.
            #[allow(clippy::indexing_slicing)]
            let slot = &self.slots[(start + k) % SLOTS];
            let stamp = now_ns.saturating_add(1);
            if slot
                .compare_exchange(0, stamp, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Guard {
                    owner: self,
                    slot: Some(slot),
                };
            }
        }
        self.overflow.fetch_add(1, Ordering::AcqRel);
        Guard {
            owner: self,
            slot: None,
        }
    }

    /// Requests in flight at `now_ns` and the age of the oldest (ns).
    pub fn cut(&self, now_ns: u64) -> (u64, u64) {
        let mut count = self.overflow.load(Ordering::Acquire);
        let mut oldest = 0;
        for s in self.slots.iter() {
            let v = s.load(Ordering::Acquire);
            if v != 0 {
                count += 1;
                oldest = oldest.max(now_ns.saturating_sub(v - 1));
            }
        }
        (count, oldest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ages_what_is_still_running() {
        let f = InFlight::default();
        let a = f.enter(100);
        let b = f.enter(500);
        assert_eq!(f.cut(1_000), (2, 900));
        drop(a);
        assert_eq!(f.cut(1_000), (1, 500));
        drop(b);
        assert_eq!(f.cut(1_000), (0, 0));
    }

    #[test]
    fn more_requests_than_slots_are_still_counted() {
        let f = InFlight::default();
        let guards: Vec<_> = (0..SLOTS + 10).map(|i| f.enter(i as u64)).collect();
        assert_eq!(f.cut(1_000_000).0, (SLOTS + 10) as u64);
        drop(guards);
        assert_eq!(f.cut(1_000_000), (0, 0));
    }
}
