//! The wire of one link direction: a thread that reads packets from the sending end's TUN
//! device, passes them through the sans-IO emulator ([`npt_link::Link`]) and writes each to
//! the receiving end's TUN device when it is due.
//!
//! Waiting (DESIGN "lab"): plain sleeps wake 50–130 µs late on the machines npt runs on, so the
//! thread sleeps in `ppoll` (1 ns timer slack) until [`SPIN`] before the next due time — waking
//! early if a packet arrives — then spins, still reading arrivals, until the due time. With
//! nothing held it blocks on the TUN descriptor alone. Every loop is bounded by the stop flag,
//! checked at least every [`IDLE`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use npt_link::{Impairments, Link, LinkStats};

use crate::tun::Tun;

/// How long before a due time the thread stops sleeping and spins.
pub const SPIN: Duration = Duration::from_micros(200);
/// The longest block with nothing held, so a stop request is seen promptly.
pub const IDLE: Duration = Duration::from_millis(50);
/// How often the published snapshot of the stats is refreshed.
const PUBLISH: Duration = Duration::from_millis(200);
/// Largest packet read (the TUN MTU is at most 65,535).
const BUF: usize = 65_536;
/// Packets read per pass before releasing what is due again.
const BATCH: usize = 64;

/// What a direction publishes for `npt lab status`: the emulator's stats plus I/O errors.
#[derive(Clone, Debug, Default)]
pub struct Published {
    pub stats: LinkStats,
    pub write_errors: u64,
    pub read_errors: u64,
}

pub struct Pump {
    stop: Arc<AtomicBool>,
    published: Arc<Mutex<Published>>,
    handle: Option<JoinHandle<()>>,
}

impl Pump {
    /// Starts moving packets from `from` to `to` under `imp`.
    pub fn start(
        name: String,
        from: Arc<Tun>,
        to: Arc<Tun>,
        imp: &Impairments,
        seed: u64,
    ) -> std::io::Result<Pump> {
        let stop = Arc::new(AtomicBool::new(false));
        let published = Arc::new(Mutex::new(Published::default()));
        let link = Link::new(imp, seed);
        let (s, p) = (stop.clone(), published.clone());
        let handle = std::thread::Builder::new()
            .name(name)
            .spawn(move || run(link, &from, &to, &s, &p))?;
        Ok(Pump {
            stop,
            published,
            handle: Some(handle),
        })
    }

    pub fn snapshot(&self) -> Published {
        self.published.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Stops the thread and returns its final stats.
    pub fn stop(mut self) -> Published {
        self.halt();
        self.snapshot()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Pump {
    fn drop(&mut self) {
        self.halt();
    }
}

fn run(
    mut link: Link<Vec<u8>>,
    from: &Tun,
    to: &Tun,
    stop: &AtomicBool,
    published: &Mutex<Published>,
) {
    npt_netio::tighten_timer_slack();
    raise_priority();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut ready = Vec::with_capacity(1);
    let (mut read_errors, mut write_errors) = (0u64, 0u64);
    let mut last_publish = Instant::now();
    let publish = |link: &Link<Vec<u8>>, r: u64, w: u64| {
        if let Ok(mut p) = published.lock() {
            p.stats = link.stats().clone();
            p.read_errors = r;
            p.write_errors = w;
        }
    };
    while !stop.load(Ordering::Relaxed) {
        // Release everything due.
        let now = Instant::now();
        while let Some((pkt, due)) = link.pop_due(now) {
            let at = Instant::now();
            if to.send(&pkt).is_err() {
                write_errors += 1;
            }
            link.record_release(due, at);
            if pool.len() < 1024 {
                pool.push(pkt);
            }
        }
        // Take what has arrived.
        for _ in 0..BATCH {
            let mut buf = pool.pop().unwrap_or_default();
            buf.resize(BUF, 0);
            match from.recv(&mut buf) {
                Ok(n) => {
                    buf.truncate(n);
                    link.push(Instant::now(), buf, n);
                }
                Err(e) => {
                    if e.kind() != std::io::ErrorKind::WouldBlock {
                        read_errors += 1;
                    }
                    pool.push(buf);
                    break;
                }
            }
        }
        if last_publish.elapsed() >= PUBLISH {
            publish(&link, read_errors, write_errors);
            last_publish = Instant::now();
        }
        // Wait for the next due time or the next arrival.
        let now = Instant::now();
        let timeout = match link.next_due() {
            None => IDLE,
            Some(due) if due <= now => continue,
            Some(due) => {
                let left = due - now;
                if left <= SPIN {
                    spin_until(due, from);
                    continue;
                }
                (left - SPIN).min(IDLE)
            }
        };
        let _ = npt_netio::wait(&[from.fd()], &[false], Some(timeout), &mut ready);
    }
    publish(&link, read_errors, write_errors);
}

/// Spins until `due` or until a packet is waiting on `from` (it must be stamped on arrival,
/// not after the spin). Bounded by `due`, at most [`SPIN`] away.
fn spin_until(due: Instant, from: &Tun) {
    let mut ready = Vec::with_capacity(1);
    while Instant::now() < due {
        // A zero-timeout poll is one cheap syscall and keeps arrival stamps honest.
        if npt_netio::wait(&[from.fd()], &[false], Some(Duration::ZERO), &mut ready).is_ok()
            && ready.first().is_some_and(|r| r.readable)
        {
            return;
        }
        std::hint::spin_loop();
    }
}

/// Nice −15 for this thread (root only; ignored otherwise): on a box that is also compiling or
/// running the test's own client and server, a link thread that waits its turn behind them
/// releases packets late. Not a real-time class: a link at 75 kpps never sleeps, and a
/// SCHED_FIFO spinner would starve the very programs whose packets it carries.
fn raise_priority() {
    // SAFETY: gettid and setpriority on the calling thread only.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, -15);
    }
}
