//! How long a wire thread may stay awake: its spin budget.
//!
//! A wire thread runs SCHED_FIFO and spins the last [`crate::pump::SPIN`] before each due time
//! (sleeps wake 50–130 µs late). With packets due closer together than that — 10,000 pps
//! through a 20 ms link — it never sleeps, and Linux throttles a real-time thread that runs
//! more than `sched_rt_runtime_us` (950 ms) of each `sched_rt_period_us` (1 s): it is stopped
//! for the rest of the period, and every packet due meanwhile leaves tens of milliseconds late.
//! Measured with `bench/lab.sh`'s delay case on a quiet box: delay error p99 7.4–12.0 ms and
//! max 33–35 ms, against p99 54–73 µs and max 0.8–1.2 ms with the kernel's throttling turned
//! off (`sched_rt_runtime_us = -1`, for the experiment only: npt never changes it).
//!
//! So the thread keeps its own awake time under [`SHARE`] of each [`WINDOW`] and, once that is
//! spent, sleeps to the due time instead of spinning until the window ends: a packet then
//! leaves a sleep's wake-up late (50–130 µs), never a throttled period's. Awake time is wall
//! time between the thread's sleeps — an upper bound of the CPU time the kernel counts.
//! Sans-IO: the caller passes `now`; tested on a virtual clock below.

use std::time::{Duration, Instant};

/// The window the budget is counted over: a tenth of the kernel's period, so no 1 s period
/// can hold more than ten windows' budgets plus one window's edge.
pub const WINDOW: Duration = Duration::from_millis(100);
/// The share of a window the thread may be awake and still spin: 80 %, leaving the kernel's
/// 95 % a margin for the work done after the budget is spent (releases keep going).
pub const SHARE: f64 = 0.8;

/// Awake time in the current window, and whether the thread is awake now.
#[derive(Debug)]
pub struct Duty {
    window_start: Instant,
    /// Awake time in this window up to `awake_since` (or up to the last sleep).
    awake: Duration,
    /// Set while the thread is awake.
    awake_since: Option<Instant>,
    budget: Duration,
}

impl Duty {
    /// A thread awake from `now`.
    pub fn new(now: Instant) -> Duty {
        Duty {
            window_start: now,
            awake: Duration::ZERO,
            awake_since: Some(now),
            budget: WINDOW.mul_f64(SHARE),
        }
    }

    /// Starts a new window when `now` is past this one; awake time so far in this window
    /// (the current stretch counted from the window's start if it began before).
    fn roll(&mut self, now: Instant) {
        if now.saturating_duration_since(self.window_start) < WINDOW {
            return;
        }
        // Whole windows skipped while asleep are empty; keep the grid.
        let periods = now.duration_since(self.window_start).as_nanos() / WINDOW.as_nanos();
        let skip = u32::try_from(periods).unwrap_or(u32::MAX);
        self.window_start += WINDOW.saturating_mul(skip);
        self.awake = Duration::ZERO;
        if let Some(s) = &mut self.awake_since {
            *s = (*s).max(self.window_start);
        }
    }

    /// The thread is about to sleep.
    pub fn sleep(&mut self, now: Instant) {
        self.roll(now);
        if let Some(s) = self.awake_since.take() {
            self.awake += now.saturating_duration_since(s);
        }
    }

    /// The thread woke up.
    pub fn wake(&mut self, now: Instant) {
        self.roll(now);
        self.awake_since = Some(now);
    }

    /// Whether the thread may spin now: its awake time in this window is under the budget.
    pub fn may_spin(&mut self, now: Instant) -> bool {
        self.roll(now);
        let stretch = self
            .awake_since
            .map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
        self.awake + stretch < self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP: Duration = Duration::from_micros(10);

    /// A thread that would spin all the time (packets due every 100 µs, spinning 150 µs
    /// before each): simulated on a virtual clock, with a sleep taking 100 µs when it may
    /// not spin. Returns the awake time of every 1 s period (aligned anywhere).
    fn always_spinning(total: Duration) -> Vec<(Instant, bool)> {
        let t0 = Instant::now();
        let mut d = Duty::new(t0);
        let mut now = t0;
        let mut trace = Vec::new();
        while now < t0 + total {
            if d.may_spin(now) {
                trace.push((now, true));
                now += STEP;
            } else {
                d.sleep(now);
                trace.push((now, false));
                now += Duration::from_micros(100);
                d.wake(now);
            }
        }
        trace
    }

    #[test]
    fn a_thread_that_never_sleeps_on_its_own_stays_under_the_kernels_share() {
        let trace = always_spinning(Duration::from_secs(3));
        // Awake time in every 1 s span, sliding by 10 ms: at most 90 % (the kernel throttles
        // above 95 %), and the thread did spin most of the time (not a budget of zero).
        let t0 = trace[0].0;
        let awake_in = |from: Instant| -> Duration {
            let steps = trace
                .iter()
                .filter(|(t, spin)| *spin && *t >= from && *t < from + Duration::from_secs(1))
                .count();
            STEP * u32::try_from(steps).unwrap()
        };
        for k in 0..200 {
            let a = awake_in(t0 + Duration::from_millis(10 * k));
            assert!(a <= Duration::from_millis(900), "span {k}: awake {a:?}");
            assert!(
                a >= Duration::from_millis(700),
                "span {k}: awake only {a:?}"
            );
        }
    }

    #[test]
    fn the_budget_comes_back_in_the_next_window() {
        let t0 = Instant::now();
        let mut d = Duty::new(t0);
        assert!(d.may_spin(t0 + Duration::from_millis(79)));
        assert!(!d.may_spin(t0 + Duration::from_millis(81)));
        d.sleep(t0 + Duration::from_millis(81));
        d.wake(t0 + Duration::from_millis(99));
        assert!(!d.may_spin(t0 + Duration::from_millis(99)));
        // The next window: awake since its start only.
        assert!(d.may_spin(t0 + Duration::from_millis(101)));
        assert!(d.may_spin(t0 + Duration::from_millis(179)));
        assert!(!d.may_spin(t0 + Duration::from_millis(181)));
    }

    #[test]
    fn a_thread_that_mostly_sleeps_is_never_refused() {
        let t0 = Instant::now();
        let mut d = Duty::new(t0);
        let mut now = t0;
        // 50 µs awake, 50 µs asleep, for 2 s: 50 % awake.
        for _ in 0..20_000 {
            assert!(
                d.may_spin(now + Duration::from_micros(49)),
                "{:?}",
                now - t0
            );
            now += Duration::from_micros(50);
            d.sleep(now);
            now += Duration::from_micros(50);
            d.wake(now);
        }
    }

    #[test]
    fn a_long_sleep_skips_empty_windows() {
        let t0 = Instant::now();
        let mut d = Duty::new(t0);
        d.sleep(t0 + Duration::from_millis(90));
        d.wake(t0 + Duration::from_secs(5) + Duration::from_millis(30));
        assert!(d.may_spin(t0 + Duration::from_secs(5) + Duration::from_millis(100)));
        assert!(!d.may_spin(t0 + Duration::from_secs(5) + Duration::from_millis(199)));
    }
}
