//! The open-loop pacer of `npt http --rate`: one dedicated thread that releases request `k` at
//! its intended time `k / rate` into a bounded channel, from which whichever worker slot is
//! free takes it. Every open-loop request is then measured from its intended time
//! (coordinated-omission correction, as wrk2), with the figure from its actual send beside it.
//!
//! Why a thread of its own and not tokio's timer: the timer wheel has 1 ms granularity, so
//! slots that sleep until their ticket is due would wake up to 1 ms late, and charging that to
//! every request would add the client's own lateness to the server's latency. Plain
//! `nanosleep` with the default 50 µs timer slack wakes 50–130 µs late on a busy box; this
//! thread tightens its slack to 1 ns ([`npt_netio::tighten_timer_slack`]), sleeps until just
//! before the due time and spins the rest, as hrtimer-based pacers do, and records how late it
//! actually released each request (`health.timer_lateness_ms`).
//!
//! The spin is bounded: at most [`SPIN_SHARE`] of the gap between two requests and at most
//! [`SPIN_MAX`], so the pacer costs at most about a tenth of one core however high the rate;
//! at tens of thousands of requests per second it mostly sleeps and releases requests in small
//! bursts, each still stamped with its own intended time.
//!
//! When every slot is busy and the channel is full (the server holds them up) the pacer blocks
//! on the channel; requests then leave late and their latency counts from when they were due.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use npt_stats::Histogram;

use crate::schedule::OpenLoop;

/// The pacer spins at most this share of the time between two requests.
pub const SPIN_SHARE: f64 = 0.1;
/// … and never longer than this before one request.
pub const SPIN_MAX: Duration = Duration::from_micros(200);
/// Longest single sleep, so a stop is seen promptly.
const MAX_SLEEP: Duration = Duration::from_millis(20);

/// One request released by the pacer: its number (host rotation) and when it was due.
#[derive(Clone, Copy, Debug)]
pub struct Due {
    pub k: u64,
    pub intended: Instant,
}

/// The running pacer: the receiving end for workers, and what it measured.
pub struct Pacer {
    pub rx: async_channel::Receiver<Due>,
    stop: Arc<AtomicBool>,
    lateness: Arc<Mutex<Histogram>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Pacer {
    /// Starts the pacer thread: request `k` is released at `t0 + sched.intended(k)` until the
    /// schedule ends. `capacity` bounds the requests released but not yet taken by a slot.
    pub fn start(sched: OpenLoop, t0: Instant, capacity: usize) -> std::io::Result<Pacer> {
        let (tx, rx) = async_channel::bounded(capacity.max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let lateness = Arc::new(Mutex::new(Histogram::new()));
        let (s, l) = (stop.clone(), lateness.clone());
        let thread = std::thread::Builder::new()
            .name("npt-http-pacer".into())
            .spawn(move || pace(sched, t0, &tx, &s, &l))?;
        Ok(Pacer {
            rx,
            stop,
            lateness,
            thread: Some(thread),
        })
    }

    /// Stops the pacer (if it has not run out of schedule) and returns how late it released
    /// requests compared with their intended times.
    pub fn finish(mut self) -> Histogram {
        self.stop_now();
        std::mem::take(&mut *self.lateness.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // A pacer blocked on a full channel wakes up with an error.
        self.rx.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Pacer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// How long before `due` to stop sleeping and start spinning, given the gap between requests.
pub fn spin_budget(gap: Duration) -> Duration {
    gap.mul_f64(SPIN_SHARE).min(SPIN_MAX)
}

/// Waits until `due`: sleeps until `spin` before it, then spins. Returns `false` when `stop`
/// was set meanwhile.
pub fn wait_until(due: Instant, spin: Duration, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        let left = due - now;
        if left > spin {
            std::thread::sleep((left - spin).min(MAX_SLEEP));
        } else {
            std::hint::spin_loop();
        }
    }
}

fn pace(
    sched: OpenLoop,
    t0: Instant,
    tx: &async_channel::Sender<Due>,
    stop: &AtomicBool,
    lateness: &Mutex<Histogram>,
) {
    npt_netio::tighten_timer_slack();
    let spin = spin_budget(Duration::from_secs_f64(1.0 / sched.rate()));
    // Recorded locally and handed over in batches: the lock is taken once per 1,024 requests.
    let mut local = Histogram::new();
    let mut pending = 0u32;
    let flush = |local: &mut Histogram| {
        *lateness.lock().unwrap_or_else(|e| e.into_inner()) += &*local;
        local.reset();
    };
    let mut k = 0u64;
    while let Some(offset) = sched.due(k) {
        let intended = t0 + Duration::from_nanos(offset);
        if !wait_until(intended, spin, stop) {
            break;
        }
        let late = Instant::now().saturating_duration_since(intended);
        local.record(u64::try_from(late.as_nanos()).unwrap_or(u64::MAX));
        pending += 1;
        if pending == 1024 {
            flush(&mut local);
            pending = 0;
        }
        // Blocks while every slot is busy and the channel is full; fails once the run closed it.
        if tx.send_blocking(Due { k, intended }).is_err() {
            break;
        }
        k += 1;
    }
    flush(&mut local);
    tx.close();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_is_bounded() {
        assert_eq!(spin_budget(Duration::from_millis(2)), SPIN_MAX);
        assert_eq!(
            spin_budget(Duration::from_micros(100)),
            Duration::from_micros(10)
        );
    }

    /// The precise wait on the real clock: never early, in order, and ends with the schedule.
    #[test]
    fn releases_on_time_in_order_and_ends_with_the_schedule() {
        let t0 = Instant::now() + Duration::from_millis(5);
        let sched = OpenLoop::new(1000.0, Some(50_000_000));
        let p = Pacer::start(sched, t0, 64).unwrap();
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Ok(d) = p.rx.recv_blocking() {
            let now = Instant::now();
            assert!(now >= d.intended, "released early");
            got.push(d);
            assert!(now < deadline, "pacer did not end");
        }
        assert_eq!(got.len(), 50, "ends with the schedule (50 ms at 1000/s)");
        assert!(got.iter().enumerate().all(|(i, d)| d.k == i as u64));
        assert_eq!(
            got[10].intended - got[0].intended,
            Duration::from_millis(10)
        );
        // How late it is depends on the machine's load (a median of 1.6 ms was seen at load 8
        // on two cores): the result reports it (`health.timer_lateness_ms`) and bench/http.sh
        // measures it; here only that every release was timed.
        let late = p.finish();
        assert_eq!(late.count(), 50);
    }

    #[test]
    fn stop_unblocks_a_pacer_on_a_full_channel() {
        let sched = OpenLoop::new(1e6, None);
        let p = Pacer::start(sched, Instant::now(), 1).unwrap();
        // Once one request is taken the pacer refills the channel and blocks on the next.
        assert_eq!(p.rx.recv_blocking().unwrap().k, 0);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !p.rx.is_full() {
            assert!(
                Instant::now() < deadline,
                "pacer never refilled the channel"
            );
            std::thread::yield_now();
        }
        let t = Instant::now();
        let late = p.finish();
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(late.count() >= 2, "{} releases recorded", late.count());
    }
}
