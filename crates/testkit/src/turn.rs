//! Turns between the modules of one test binary, for the library crates whose integration tests
//! are one binary per crate (`tests/<crate>/main.rs`). Each module was once a binary of its
//! own, and cargo runs binaries one after another: a module's tests ran beside each other
//! (libtest's threads) but never beside another module's. Tests that measure time or load a
//! server were written for that, so they take a turn: up to [`AT_ONCE`] tests of one module
//! hold it at once, and a test of another module waits until they are all done. The same rule
//! as the cli's test binaries (`crates/cli/tests/common/turn.rs`).

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Whose turn it is (a module path) and how many of its tests hold it.
static HOLDER: Mutex<(Option<&'static str>, usize)> = Mutex::new((None, 0));
static RELEASED: Condvar = Condvar::new();

/// Held by a test for as long as it must not overlap another module's tests.
#[must_use = "the turn lasts as long as the value is held"]
pub struct Turn;

fn holder() -> MutexGuard<'static, (Option<&'static str>, usize)> {
    // A test that panicked holding the lock left the count consistent (it is changed only
    // under the lock, never across a panic), so a poisoned lock is still good.
    HOLDER.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Tests of one module that hold its turn at once: two, as when each module was a binary of
/// its own run with one test thread per core of a 2-core box.
pub const AT_ONCE: usize = 2;

/// Waits until no test of another module holds a turn and fewer than [`AT_ONCE`] of this one's
/// do, then takes one for `module` (call with `module_path!()`).
pub fn turn(module: &'static str) -> Turn {
    let mut h = holder();
    while h.0.is_some_and(|m| m != module) || h.1 >= AT_ONCE {
        h = RELEASED.wait(h).unwrap_or_else(PoisonError::into_inner);
    }
    h.0 = Some(module);
    h.1 += 1;
    Turn
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut h = holder();
        h.1 -= 1;
        if h.1 == 0 {
            h.0 = None;
        }
        // A test of this module waiting for a free place, or of another for the turn.
        RELEASED.notify_all();
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
