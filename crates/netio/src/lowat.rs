//! The receive low-water mark of a bulk reader's TCP socket (`SO_RCVLOWAT`): how many bytes
//! must wait in the socket before the kernel wakes the reader.
//!
//! Why: with the default of one byte, every segment that arrives wakes an epoll reader (tokio's
//! edge-triggered registration is always on the socket's wait queue, where iperf3's `select`
//! is not while it reads). At 10–40 Gbit/s on loopback that is a wake-up per 64 KiB segment,
//! and on loopback the kernel runs the receive path, wake-up included, in the *sending*
//! process: npt's uploads cost their client 1.2–1.7× iperf3's CPU per GB and moved fewer
//! bytes, its downloads 20 Gbit/s where 32 were possible (bench/bulk.sh). Waking the reader
//! only when about [`WAKE_AFTER`] of data at the recent rate has arrived removes most of those
//! wake-ups and leaves the byte counts at most that far behind.
//!
//! Only for a peer on this host ([`wanted`]): below the mark the kernel ACKs every segment at
//! once (`__tcp_ack_snd_check`) instead of every other one, so across a link the mark changes
//! the path under test — 45 % more ACKs and 10–15 % less goodput through a 2 Gbit/s `npt lab`
//! link, whose emulator forwards ACKs as packets — while a link's wake-ups cost only the
//! reader, which has the time.
//!
//! The mark stays under a quarter of the socket's receive buffer: `tcp_set_rcvlowat` grows a
//! buffer too small for twice the mark and clamps the window to the mark, which held a single
//! stream across a 2 Gbit/s lab link at 0.85× iperf3's goodput when the mark was a plain
//! millisecond; under a quarter the kernel leaves buffer, window and autotuning alone.
//!
//! The kernel keeps the reader from waiting forever: a socket is readable below the mark once
//! its receive buffer is under pressure, its window is nearly closed, or the peer closed
//! (`tcp_epollin_ready`, `tcp_data_ready`), and lowering the mark signals data already there
//! (`tcp_set_rcvlowat`) — so a rate that drops is caught up at the next adjustment.

use std::io;
use std::net::IpAddr;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Whether a connection to `peer` gets a mark: only on loopback (see the module's note).
pub fn wanted(peer: IpAddr) -> bool {
    match peer {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// The reader is woken after about this much of the recent rate's data.
pub const WAKE_AFTER: Duration = Duration::from_millis(1);

/// The highest mark set: past a few hundred KiB a wake-up costs nothing next to the copies,
/// and the kernel grows the receive buffer (and so the first window) to twice the mark.
pub const MAX_LOWAT: u32 = 512 * 1024;

/// The mark for a reader that took `bytes` in the last `period` into a socket whose receive
/// buffer is `rcvbuf` bytes: [`WAKE_AFTER`] of data at that rate, at least 1 (the kernel's
/// default), at most [`MAX_LOWAT`] and a quarter of `rcvbuf`.
pub fn lowat_for(bytes: u64, period: Duration, rcvbuf: u32) -> u32 {
    let period_ns = period.as_nanos().max(1);
    let mark = u128::from(bytes) * WAKE_AFTER.as_nanos() / period_ns;
    let most = MAX_LOWAT.min(rcvbuf / 4).max(1);
    u32::try_from(mark).unwrap_or(most).clamp(1, most)
}

/// The receive buffer of the socket `fd` in bytes (`SO_RCVBUF`: what autotuning grew it to).
pub fn rcvbuf(fd: RawFd) -> io::Result<u32> {
    let mut v: libc::c_int = 0;
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>()).unwrap_or(4);
    // SAFETY: `v` and `len` are writable and outlive the call; the kernel writes at most `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            std::ptr::from_mut(&mut v).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(u32::try_from(v).unwrap_or(0))
}

/// Sets `SO_RCVLOWAT` of the socket `fd` to `bytes`.
pub fn set_rcvlowat(fd: RawFd, bytes: u32) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>()).unwrap_or(4);
    // SAFETY: `v` is a readable c_int that outlives the call; the kernel copies `len` bytes.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            std::ptr::from_ref(&v).cast(),
            len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Keeps a reader's mark at [`lowat_for`] its rate since the last adjustment: [`Lowat::adjust`]
/// now and then (npt's bulk readers: every 100 ms) with the bytes read so far, or
/// [`Lowat::apply`] to a socket.
#[derive(Debug)]
pub struct Lowat {
    counted: u64,
    since: Instant,
    set: u32,
}

impl Lowat {
    /// A reader that started at `now` with the default mark.
    pub fn new(now: Instant) -> Self {
        Lowat {
            counted: 0,
            since: now,
            set: 1,
        }
    }

    /// The mark for the period that ends `now` with `total` bytes read in all, into a receive
    /// buffer of `rcvbuf` bytes, if it changed since the last call (by more than an eighth, so
    /// a steady rate does not cost a syscall each period; a fall to 1 always counts).
    pub fn adjust(&mut self, total: u64, now: Instant, rcvbuf: u32) -> Option<u32> {
        let period = now.saturating_duration_since(self.since);
        let mark = lowat_for(total.saturating_sub(self.counted), period, rcvbuf);
        (self.counted, self.since) = (total, now);
        let old = self.set;
        let moved = mark.abs_diff(old) > old / 8 || (mark == 1 && old != 1);
        moved.then(|| {
            self.set = mark;
            mark
        })
    }

    /// [`Lowat::adjust`] for the socket `fd`, setting the mark when it changed. A socket the
    /// kernel refuses it on keeps the default (every byte wakes the reader), as before.
    pub fn apply(&mut self, fd: RawFd, total: u64, now: Instant) {
        let Ok(buf) = rcvbuf(fd) else { return };
        if let Some(mark) = self.adjust(total, now, buf) {
            let _ = set_rcvlowat(fd, mark);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    const P: Duration = Duration::from_millis(100);

    #[test]
    fn only_a_peer_on_this_host_gets_a_mark() {
        for (ip, want) in [
            ("127.0.0.1", true),
            ("127.1.2.3", true),
            ("::1", true),
            ("::ffff:127.0.0.1", true),
            ("10.0.1.2", false),
            ("192.168.1.1", false),
            ("2001:db8::1", false),
        ] {
            assert_eq!(wanted(ip.parse().unwrap()), want, "{ip}");
        }
    }

    /// A receive buffer too big to matter.
    const BIG: u32 = 64 << 20;

    #[test]
    fn the_mark_is_a_millisecond_of_the_rate_within_bounds() {
        // 1 Gbit/s = 12.5 MB per 100 ms: 125,000 bytes a millisecond.
        assert_eq!(lowat_for(12_500_000, P, BIG), 125_000);
        // 10 Mbit/s: 1,250 bytes.
        assert_eq!(lowat_for(125_000, P, BIG), 1_250);
        assert_eq!(lowat_for(0, P, BIG), 1, "nothing came: the default");
        let loopback = lowat_for(40_000_000_000, P, BIG);
        assert_eq!(loopback, MAX_LOWAT, "loopback rates: capped");
        assert_eq!(lowat_for(u64::MAX, P, BIG), MAX_LOWAT);
        let no_period = lowat_for(1_000, Duration::ZERO, BIG);
        assert_eq!(no_period, MAX_LOWAT, "no period: no rate to go by");
    }

    #[test]
    fn the_mark_stays_under_a_quarter_of_the_receive_buffer() {
        assert_eq!(lowat_for(12_500_000, P, 131_072), 32_768);
        assert_eq!(lowat_for(12_500_000, P, 2), 1, "a tiny buffer: the default");
        assert_eq!(lowat_for(12_500_000, P, 0), 1);
    }

    #[test]
    fn a_steady_rate_sets_the_mark_once_and_a_fall_lowers_it() {
        let t0 = Instant::now();
        let at = |k: u32| t0 + P * k;
        let mut l = Lowat::new(t0);
        assert_eq!(l.adjust(12_500_000, at(1), BIG), Some(125_000));
        assert_eq!(l.adjust(25_000_000, at(2), BIG), None, "same rate");
        assert_eq!(l.adjust(38_000_000, at(3), BIG), None, "within an eighth");
        assert_eq!(
            l.adjust(38_125_000, at(4), BIG),
            Some(1_250),
            "the rate fell 100x"
        );
        assert_eq!(l.adjust(38_125_000, at(5), BIG), Some(1), "nothing came");
        assert_eq!(l.adjust(38_125_000, at(6), BIG), None);
        let capped = l.adjust(50_625_000, at(7), 200_000);
        assert_eq!(capped, Some(50_000), "the buffer caps it");
        // A late adjustment: the rate is over the time that really passed.
        assert_eq!(l.adjust(63_125_000, at(9), BIG), Some(62_500));
    }

    #[test]
    fn the_kernel_takes_the_mark_and_leaves_the_buffer() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let fd = s.as_raw_fd();
        let before = rcvbuf(fd).unwrap();
        assert!(before >= 4, "{before}");
        let t0 = Instant::now();
        let mut mark = Lowat::new(t0);
        // A rate far above what the buffer holds: the mark is a quarter of the buffer.
        mark.apply(fd, 40_000_000_000, t0 + P);
        assert_eq!(socket_lowat(fd), libc::c_int::try_from(before / 4).unwrap());
        assert_eq!(
            rcvbuf(fd).unwrap(),
            before,
            "the kernel did not grow the buffer"
        );
        mark.apply(fd, 40_000_000_000, t0 + 2 * P);
        assert_eq!(
            socket_lowat(fd),
            1,
            "nothing came since: back to the default"
        );
        assert!(
            set_rcvlowat(-1, 1).is_err(),
            "a bad descriptor is an error, not a panic"
        );
        assert!(rcvbuf(-1).is_err());
    }

    #[test]
    fn bytes_under_the_mark_are_read_once_the_rate_falls() {
        use std::io::Write;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        let fd = rx.as_raw_fd();
        let t0 = Instant::now();
        let mut mark = Lowat::new(t0);
        mark.apply(fd, 10_000_000, t0 + P);
        let set = socket_lowat(fd);
        assert!(set > 1_000, "a mark above what comes next: {set}");
        tx.write_all(&[7u8; 1_000]).unwrap();
        // Bounded: the bytes are on loopback within milliseconds; 200 ms is far beyond.
        assert!(
            !readable(fd, 200),
            "1,000 bytes under the mark do not wake the reader"
        );
        // Nothing was read in the next period: the mark falls to 1 and the kernel signals the
        // bytes already waiting (tcp_set_rcvlowat).
        mark.apply(fd, 10_000_000, t0 + 2 * P);
        assert_eq!(socket_lowat(fd), 1);
        assert!(readable(fd, 1_000), "the waiting bytes wake the reader");
    }

    fn readable(fd: RawFd, timeout_ms: libc::c_int) -> bool {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, writable, outlives the call.
        let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        n == 1 && p.revents & libc::POLLIN != 0
    }

    fn socket_lowat(fd: RawFd) -> libc::c_int {
        let mut v: libc::c_int = 0;
        let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>()).unwrap();
        // SAFETY: `v` and `len` are writable and outlive the call.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                std::ptr::from_mut(&mut v).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        v
    }
}
