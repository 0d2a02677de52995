//! Turns between the modules of one test binary. Each module was once a binary of its own, and
//! cargo runs binaries one after another: a module's tests ran beside each other (libtest's
//! threads) but never beside another module's. Tests that measure time, flood a server or
//! load a lab were written for that, so they take a turn: up to [`AT_ONCE`] tests of one module
//! hold it at once, and a test of another module waits until they are all done. Tests that
//! read no time (bad flags, a refusal) take none and run beside anything. The cli's test
//! binaries (`crates/cli/tests/AREA/`) and the library crates' (`tests/<crate>/`) share it.
//!
//! A lab test's turn ends when its lab starts going down ([`give_back`], from the lab's drop
//! guard): `npt lab down` reads nothing, and it took 1–2 s of every lab test's turn.

use std::cell::RefCell;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

/// Whose turn it is (a module path) and how many of its tests hold it.
static HOLDER: Mutex<(Option<&'static str>, usize)> = Mutex::new((None, 0));
static RELEASED: Condvar = Condvar::new();
/// When the first test asked for a turn: the log's times are counted from it.
static START: OnceLock<Instant> = OnceLock::new();

/// A turn this thread (a test) holds: which one (its number), and when it asked for it and
/// got it. Removed when the turn is given back, by [`give_back`] or by [`Turn`]'s drop.
struct Held {
    id: u64,
    asked: Instant,
    since: Instant,
}

thread_local! {
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

/// Numbers the turns, so that a [`Turn`] given back early never gives back a later one.
static NEXT_ID: Mutex<u64> = Mutex::new(0);

/// Held by a test for as long as it must not overlap another module's tests (or until its
/// lab starts going down: [`give_back`]). When given back it says (stderr, shown with
/// `--nocapture`) how long its test waited for it, held it, and from when: a binary whose
/// tests take turns lasts at least as long as the turns it held (two of one module's at once
/// count once), so those lines say where its time goes.
#[must_use = "the turn lasts as long as the value is held"]
pub struct Turn {
    id: u64,
}

fn holder() -> MutexGuard<'static, (Option<&'static str>, usize)> {
    // A test that panicked holding the lock left the count consistent (it is changed only
    // under the lock, never across a panic), so a poisoned lock is still good.
    HOLDER.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Tests of one module that hold its turn at once: two, as when each module was a binary of
/// its own run with one test thread per core of a 2-core box — whatever the thread count (the
/// lab binary runs with more, for its tests that take no turn: .cargo/runner.sh).
pub const AT_ONCE: usize = 2;

/// Waits until no test of another module holds a turn and fewer than [`AT_ONCE`] of this one's
/// do, then takes one for `module` (call with `module_path!()`).
pub fn turn(module: &'static str) -> Turn {
    turn_of(module, AT_ONCE)
}

/// As [`turn`], with no other test of the module beside it: for the tests that load a lab's
/// bottleneck and read the queue they made, where a second lab spinning beside them takes
/// the CPU the lab's wire thread needs to release packets on time (CI once read a recovery
/// phase at twice the link's RTT with two of them at once).
pub fn turn_alone(module: &'static str) -> Turn {
    turn_of(module, 1)
}

fn turn_of(module: &'static str, at_once: usize) -> Turn {
    let asked = Instant::now();
    START.get_or_init(|| asked);
    let mut h = holder();
    while h.0.is_some_and(|m| m != module) || h.1 >= at_once {
        h = RELEASED.wait(h).unwrap_or_else(PoisonError::into_inner);
    }
    h.0 = Some(module);
    h.1 += 1;
    drop(h);
    let id = {
        let mut n = NEXT_ID.lock().unwrap_or_else(PoisonError::into_inner);
        *n += 1;
        *n
    };
    HELD.with(|c| {
        c.borrow_mut().push(Held {
            id,
            asked,
            since: Instant::now(),
        });
    });
    Turn { id }
}

/// Gives back the turns this thread's test holds, if any, before their [`Turn`]s are dropped:
/// the lab guard calls it before `npt lab down`, which reads nothing. A test that measures
/// through a second lab after dropping the first takes a new turn for it.
pub fn give_back() {
    let held = HELD.with(|c| std::mem::take(&mut *c.borrow_mut()));
    for h in held {
        release(h);
    }
}

fn release(held: Held) {
    let mut h = holder();
    h.1 -= 1;
    if h.1 == 0 {
        h.0 = None;
    }
    // A test of this module waiting for a free place, or of another for the turn.
    RELEASED.notify_all();
    drop(h);
    let thread = std::thread::current();
    let start = *START.get_or_init(Instant::now);
    eprintln!(
        "turn: {} waited {:.1} s, held {:.1} s (from {:.1} s)",
        thread.name().unwrap_or("?"),
        held.since
            .saturating_duration_since(held.asked)
            .as_secs_f64(),
        held.since.elapsed().as_secs_f64(),
        held.since.saturating_duration_since(start).as_secs_f64()
    );
}

impl Drop for Turn {
    fn drop(&mut self) {
        // Not given back yet (by `give_back`): give it back now.
        let held = HELD.with(|c| {
            let mut v = c.borrow_mut();
            let i = v.iter().position(|h| h.id == self.id)?;
            Some(v.remove(i))
        });
        if let Some(h) = held {
            release(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// Two modules' tests never hold the turn together, and each gets it.
    #[test]
    fn modules_take_turns() {
        let inside = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = ["a", "b", "a", "b"]
            .into_iter()
            .map(|m| {
                let inside = inside.clone();
                std::thread::spawn(move || {
                    let _t = turn(m);
                    let mask = if m == "a" { 1 } else { 1 << 16 };
                    let now = inside.fetch_add(mask, Ordering::SeqCst) + mask;
                    assert!(now & 0xFFFF == 0 || now >> 16 == 0, "two modules at once");
                    std::thread::sleep(Duration::from_millis(20));
                    inside.fetch_sub(mask, Ordering::SeqCst);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(inside.load(Ordering::SeqCst), 0);
    }
}
