//! Requests in flight, so the end of a run can say what it cut off instead of dropping it
//! silently: how many, how old the oldest was, and which had already outlived the timeout
//! (those are `timeout` errors — a server that accepts and never answers must not read as
//! "errors 0" just because the run was shorter than `--timeout`).
//!
//! Each request holds a [`Guard`] for as long as it runs; the table never holds more entries
//! than there are requests running at once. Time is passed in (ns since the run's start).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::config::Activity;

#[derive(Default)]
pub struct InFlight {
    next: AtomicU64,
    table: Mutex<HashMap<u64, (u64, Activity)>>,
}

/// What was still running at the end.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cut {
    pub count: u64,
    pub oldest_ns: u64,
    /// Activities of the requests older than the timeout.
    pub timed_out: Vec<Activity>,
}

pub struct Guard<'a> {
    owner: &'a InFlight,
    id: u64,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if let Ok(mut t) = self.owner.table.lock() {
            t.remove(&self.id);
        }
    }
}

impl InFlight {
    /// A request of activity `a` starts at `now_ns`; it is in flight until the guard drops.
    pub fn enter(&self, now_ns: u64, a: Activity) -> Guard<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut t) = self.table.lock() {
            t.insert(id, (now_ns, a));
        }
        Guard { owner: self, id }
    }

    /// What is in flight at `now_ns`; requests started more than `timeout_ns` ago count as
    /// timed out.
    pub fn cut(&self, now_ns: u64, timeout_ns: u64) -> Cut {
        let Ok(t) = self.table.lock() else {
            return Cut::default();
        };
        let mut c = Cut::default();
        for &(start, a) in t.values() {
            let age = now_ns.saturating_sub(start);
            c.count += 1;
            c.oldest_ns = c.oldest_ns.max(age);
            if age > timeout_ns {
                c.timed_out.push(a);
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn counts_what_is_still_running_and_what_outlived_the_timeout() {
        let f = InFlight::default();
        let done = f.enter(0, Activity::Web);
        let old = f.enter(S, Activity::Download);
        let _young = f.enter(9 * S, Activity::Web);
        drop(done);
        let c = f.cut(10 * S, 5 * S);
        assert_eq!((c.count, c.oldest_ns), (2, 9 * S));
        assert_eq!(c.timed_out, vec![Activity::Download]);
        drop(old);
        assert_eq!(f.cut(10 * S, 5 * S).count, 1);
    }
}
