//! The wires of a lab: a thread that moves packets for one or more link directions. For each
//! direction it reads packets from the sending end's TUN device, passes them through the
//! sans-IO emulator ([`npt_link::Link`]) and writes each to the receiving end's TUN device when
//! it is due.
//!
//! Waiting (docs/lab.md, "How the links work"): plain sleeps wake 50–130 µs late on the machines npt runs on, so the
//! thread sleeps in `ppoll` (1 ns timer slack) until [`SPIN`] before the earliest due time —
//! waking early if a packet arrives — then spins, still watching for arrivals, until it, while
//! its spin budget lasts ([`crate::duty`]: a real-time thread that never sleeps is throttled by
//! the kernel for tens of milliseconds). With nothing held it blocks on the TUN descriptors
//! alone, checking the stop flag every [`IDLE`].
//!
//! Changes while it runs (`npt lab set`) and fresh readings (`npt lab status`) reach the thread
//! as [`Command`]s on a channel, with an `eventfd` in its poll set to wake it: it applies a
//! change at the top of a pass, to all the directions it names at one instant, which it
//! reports back. The thread never waits for a lock another thread may hold: its periodic
//! snapshot is skipped (and retried on the next pass) while a reader holds the last one, since
//! a reader at normal priority preempted while holding it would stall the wire — priority
//! inversion — for as long as the box keeps the reader off the CPU.
//!
//! Each node's transit time ([`crate::transit`]): a direction hands every packet it delivers
//! into a node, and every packet it reads from one, to that node's matcher, shared by the wire
//! threads whose directions touch the node (a datagram may come in on one thread's link and
//! leave on another's); with one thread, as by default, its lock is never contended.
//!
//! Why one thread serves many directions: a spinning thread per direction does not scale —
//! the forwarding-scenario lab (examples/lab/forwarding-scenarios.toml) has ten directions, and ten spinners on a two-core box delayed each other by
//! tens of milliseconds (measured: delay error p99 of 10–100 ms). One thread spins at most one
//! core; `npt lab --link-threads N` spreads the directions over N threads for heavy traffic.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use npt_link::{Impairments, Link, LinkStats};

use crate::duty::Duty;
use crate::transit::{Transit, TransitStats};
use crate::tun::Tun;

/// How long before a due time the thread stops sleeping and spins.
pub const SPIN: Duration = Duration::from_micros(150);
/// The longest block with nothing held, so a stop request is seen promptly.
pub const IDLE: Duration = Duration::from_millis(50);
/// How often the published snapshots of the stats are refreshed.
const PUBLISH: Duration = Duration::from_millis(200);
/// Packets read per direction per pass before releasing what is due again.
const BATCH: usize = 64;

/// What a direction publishes for `npt lab status`: the emulator's stats plus I/O errors.
#[derive(Clone, Debug, Default)]
pub struct Published {
    pub stats: LinkStats,
    pub write_errors: u64,
    pub read_errors: u64,
}

/// The copy readers take, locked to be refreshed: `wait` blocks for it (a reader asked for
/// this copy and holds nothing), otherwise `None` while a reader holds it.
fn readers_copy<T>(m: &Mutex<T>, wait: bool) -> Option<std::sync::MutexGuard<'_, T>> {
    if wait {
        m.lock().ok()
    } else {
        m.try_lock().ok()
    }
}

/// A node as the wire threads see it: the matcher of the datagrams it forwards
/// ([`crate::transit`]), taken only by wire threads and for one table operation at a time,
/// and the copy of its figures that readers take (as [`Published`] is for a direction).
#[derive(Default)]
pub struct NodeTransit {
    matcher: Mutex<Transit>,
    published: Mutex<TransitStats>,
}

impl NodeTransit {
    fn delivered(&self, now: Instant, pkt: &[u8], in_link: usize) {
        if let Ok(mut m) = self.matcher.lock() {
            m.delivered(now, pkt, in_link);
        }
    }

    fn sent(&self, now: Instant, pkt: &[u8], out_link: usize) {
        if let Ok(mut m) = self.matcher.lock() {
            m.sent(now, pkt, out_link);
        }
    }

    /// As [`Direction::publish`]: the readers' lock first, then the matcher's.
    fn publish(&self, wait: bool) -> bool {
        let Some(mut p) = readers_copy(&self.published, wait) else {
            return false;
        };
        if let Ok(m) = self.matcher.lock() {
            p.clone_from(m.stats());
        }
        true
    }

    /// The last published figures (a reader's copy).
    pub fn snapshot(&self) -> TransitStats {
        self.published.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

/// The two nodes a direction joins, seen from it: it reads what `out_of` sends and delivers
/// into `into`, over link `link` (its position in the file).
pub struct Ends {
    pub out_of: Arc<NodeTransit>,
    pub into: Arc<NodeTransit>,
    pub link: usize,
    /// This direction copies `out_of`'s figures out for readers (one direction per node does).
    pub publishes_node: bool,
}

/// A packet held by the emulator: a buffer of the link's MTU, allocated (and zeroed) once and
/// reused from a pool, and the length read into it.
#[derive(Clone)]
struct Pkt {
    buf: Vec<u8>,
    len: usize,
}

/// One direction of a link: from one TUN device, through the emulator, to the other.
pub struct Direction {
    from: Arc<Tun>,
    to: Arc<Tun>,
    ends: Ends,
    link: Link<Pkt>,
    /// The link's MTU: no packet read from its TUN device is longer.
    mtu: usize,
    published: Arc<Mutex<Published>>,
    read_errors: u64,
    write_errors: u64,
}

impl Direction {
    /// A direction and the handle its snapshots are read through.
    pub fn new(
        (from, to): (Arc<Tun>, Arc<Tun>),
        ends: Ends,
        imp: &Impairments,
        mtu: u32,
        seed: u64,
    ) -> (Direction, Arc<Mutex<Published>>) {
        let published = Arc::new(Mutex::new(Published::default()));
        let d = Direction {
            from,
            to,
            ends,
            link: Link::new(imp, seed),
            mtu: mtu as usize,
            published: published.clone(),
            read_errors: 0,
            write_errors: 0,
        };
        (d, published)
    }

    /// Copies the stats out for readers. `wait`: block for the lock (a reader asked for this
    /// copy and holds nothing); otherwise give up if a reader holds it. True if published.
    fn publish(&self, wait: bool) -> bool {
        let Some(mut p) = readers_copy(&self.published, wait) else {
            return false;
        };
        p.stats = self.link.stats().clone();
        p.read_errors = self.read_errors;
        p.write_errors = self.write_errors;
        drop(p);
        !self.ends.publishes_node || self.ends.out_of.publish(wait)
    }

    fn release(&mut self, pool: &mut Vec<Vec<u8>>) {
        let now = Instant::now();
        while let Some((pkt, due)) = self.link.pop_due(now) {
            let at = Instant::now();
            let bytes = pkt.buf.get(..pkt.len).unwrap_or_default();
            // Remembered before the write: the kernel may forward it (to a link another wire
            // thread reads) before the write returns.
            self.ends.into.delivered(at, bytes, self.ends.link);
            if self.to.send(bytes).is_err() {
                self.write_errors += 1;
            }
            self.link.record_release(due, at);
            if pool.len() < 4096 {
                pool.push(pkt.buf);
            }
        }
    }

    fn take_arrivals(&mut self, pool: &mut Vec<Vec<u8>>) {
        for _ in 0..BATCH {
            // Pool buffers are never shorter than they were made; a link with a larger MTU
            // than the buffer's makes its own.
            let mut buf = pool
                .pop()
                .filter(|b| b.len() >= self.mtu)
                .unwrap_or_else(|| vec![0; self.mtu]);
            match self.from.recv(&mut buf) {
                Ok(len) => {
                    let now = Instant::now();
                    let bytes = buf.get(..len).unwrap_or_default();
                    self.ends.out_of.sent(now, bytes, self.ends.link);
                    // A link with an `ecn` threshold marks ECN-capable packets CE in place.
                    let ect = crate::ecn::is_ect(bytes);
                    self.link
                        .push_marking(now, Pkt { buf, len }, len, ect, |p: &mut Pkt| {
                            if let Some(b) = p.buf.get_mut(..p.len) {
                                crate::ecn::mark_ce(b);
                            }
                        });
                }
                Err(e) => {
                    if e.kind() != std::io::ErrorKind::WouldBlock {
                        self.read_errors += 1;
                    }
                    pool.push(buf);
                    break;
                }
            }
        }
    }
}

/// What another thread asks of a wire thread.
pub enum Command {
    /// From now on, the directions at these positions (in the order given to
    /// [`Pump::start`]) apply these impairments, all at one instant, which is sent back.
    Set {
        dirs: Vec<(usize, Impairments)>,
        done: Sender<Instant>,
    },
    /// Publish every direction's stats now, then answer.
    Publish { done: Sender<()> },
}

/// An `eventfd` that wakes the wire thread from its `ppoll` when a command is sent, and a flag
/// the thread checks on each pass (an atomic load: no syscall while nothing was sent).
struct Waker {
    fd: OwnedFd,
    pending: AtomicBool,
}

impl Waker {
    fn new() -> std::io::Result<Waker> {
        // SAFETY: eventfd has no memory preconditions; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        Ok(Waker {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            pending: AtomicBool::new(false),
        })
    }

    /// After the command is on the channel: wake the thread, then flag it. (In this order
    /// every write to the eventfd is followed by the thread's read of it: the read comes after
    /// the swap that sees the flag set after the write. The other order could leave the
    /// eventfd readable with the flag taken, and the thread's `ppoll` would never sleep.)
    fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd (non-blocking; a full counter
        // means it is already readable, which is all a wake needs).
        unsafe {
            libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
        self.pending.store(true, Ordering::SeqCst);
    }

    /// True (once) when commands were sent since the last call; the eventfd is then cleared.
    /// A command is on the channel before its wake and its flag, so draining the channel
    /// after this sees it, or the next pass does.
    fn take(&self) -> bool {
        if !self.pending.swap(false, Ordering::SeqCst) {
            return false;
        }
        let mut n: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64 (non-blocking).
        unsafe {
            libc::read(self.fd.as_raw_fd(), (&mut n as *mut u64).cast(), 8);
        }
        true
    }

    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A thread driving some directions; stopped (and joined) on `stop` or drop.
pub struct Pump {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    commands: Sender<Command>,
    waker: Arc<Waker>,
}

impl Pump {
    pub fn start(name: String, dirs: Vec<Direction>) -> std::io::Result<Pump> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let waker = Arc::new(Waker::new()?);
        let w = waker.clone();
        let (commands, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(name)
            .spawn(move || run(dirs, &s, &rx, &w))?;
        Ok(Pump {
            stop,
            handle: Some(handle),
            commands,
            waker,
        })
    }

    /// Hands `c` to the thread and wakes it; false if the thread is gone.
    pub fn send(&self, c: Command) -> bool {
        let ok = self.commands.send(c).is_ok();
        self.waker.wake();
        ok
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Pump {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(mut dirs: Vec<Direction>, stop: &AtomicBool, commands: &Receiver<Command>, waker: &Waker) {
    npt_netio::tighten_timer_slack();
    raise_priority();
    let mut fds: Vec<i32> = dirs.iter().map(|d| d.from.fd()).collect();
    fds.push(waker.fd());
    let mut poll = npt_netio::PollSet::new(&fds);
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut last_publish = Instant::now();
    let mut duty = Duty::new(last_publish);
    while !stop.load(Ordering::Relaxed) {
        if waker.take() {
            while let Ok(c) = commands.try_recv() {
                obey(c, &mut dirs);
            }
        }
        for d in &mut dirs {
            d.release(&mut pool);
        }
        for d in &mut dirs {
            d.take_arrivals(&mut pool);
        }
        if last_publish.elapsed() >= PUBLISH {
            // Every direction, or none this pass (retried on the next).
            if dirs.iter().all(|d| d.publish(false)) {
                last_publish = Instant::now();
            }
        }
        let now = Instant::now();
        let timeout = match dirs.iter().filter_map(|d| d.link.next_due()).min() {
            None => IDLE,
            Some(due) if due <= now => continue,
            Some(due) => {
                let left = due - now;
                if left > SPIN {
                    (left - SPIN).min(IDLE)
                } else if duty.may_spin(now) {
                    spin_until(due, &mut poll);
                    continue;
                } else {
                    // The spin budget of this window is spent: sleep to the due time.
                    left
                }
            }
        };
        duty.sleep(now);
        let _ = poll.readable(timeout);
        duty.wake(Instant::now());
    }
    for d in &dirs {
        d.publish(true);
    }
}

fn obey(c: Command, dirs: &mut [Direction]) {
    match c {
        Command::Set { dirs: set, done } => {
            let now = Instant::now();
            for (i, imp) in &set {
                if let Some(d) = dirs.get_mut(*i) {
                    d.link.reconfigure(now, imp);
                }
            }
            for d in dirs.iter() {
                d.publish(true);
            }
            let _ = done.send(now);
        }
        Command::Publish { done } => {
            for d in dirs.iter() {
                d.publish(true);
            }
            let _ = done.send(());
        }
    }
}

/// Spins until `due` or until a packet is waiting (it must be stamped on arrival, not after
/// the spin). Bounded by `due`, at most [`SPIN`] away.
fn spin_until(due: Instant, poll: &mut npt_netio::PollSet) {
    while Instant::now() < due {
        // A zero-timeout poll is one cheap syscall (no allocation) and keeps arrival stamps
        // honest.
        if poll.readable(Duration::ZERO).unwrap_or(false) {
            return;
        }
        std::hint::spin_loop();
    }
}

/// The lowest real-time priority (SCHED_FIFO 1) for this thread when allowed (root), else
/// nice −15. A wire that waits its turn behind a compiler, a fuzzer or the test's own client
/// and server releases packets late: with nice −15 alone, the forwarding-scenario lab on a loaded
/// two-core box showed delay-error p99 of 25–60 ms. FIFO 1 runs it as soon as it wakes; its spin
/// budget ([`crate::duty`]) keeps waiting from holding its core past the kernel's real-time
/// throttling (a link with more packets due than the thread can move still can), and at most
/// one core per wire thread is taken, so the programs whose packets it carries run on the others.
fn raise_priority() {
    // SAFETY: sched_setscheduler / setpriority on the calling thread only, with a valid
    // sched_param.
    unsafe {
        let param = libc::sched_param { sched_priority: 1 };
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 {
            return;
        }
        // NO-PANIC: gettid returns the caller's pid_t, positive and below `pid_max` (2^22).
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, -15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However a wake and the thread's takes interleave, once the wake has been taken the
    /// eventfd is not left readable (the wire thread's `ppoll` would return at once, forever).
    /// Many rounds of one wake each, taken while it happens.
    #[test]
    fn the_waker_never_stays_readable_once_taken() {
        let w = Arc::new(Waker::new().unwrap());
        let mut poll = npt_netio::PollSet::new(&[w.fd()]);
        for round in 0..300 {
            let go = Arc::new(AtomicBool::new(false));
            let sender = {
                let (w, go) = (w.clone(), go.clone());
                std::thread::spawn(move || {
                    while !go.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    w.wake();
                })
            };
            go.store(true, Ordering::Release);
            let mut taken = false;
            while !sender.is_finished() {
                taken |= w.take();
            }
            sender.join().unwrap();
            taken |= w.take();
            assert!(taken, "round {round}: the wake was never taken");
            assert!(
                !poll.readable(Duration::ZERO).unwrap(),
                "round {round}: left readable"
            );
        }
    }
}
