//! The kernel's receive timestamp of a datagram (`SO_TIMESTAMPNS`): when the packet reached
//! the host's network stack, not when a busy receiver got round to reading it. A receiver that
//! times arrivals — the UDP bulk responder's delivered rate and one-way jitter — would
//! otherwise count its own scheduling delay as the path's: on a loaded box it wakes late and
//! reads a batch of datagrams that arrived milliseconds apart as if they arrived together.

use std::io;
use std::mem;
use std::os::fd::RawFd;
use std::time::Duration;

/// Control-message space per message in u64 words: one `SCM_TIMESTAMPNS` (a 16-byte header
/// and a 16-byte `timespec`) with room to spare.
pub(crate) const CTRL_WORDS: usize = 8;

/// Asks the kernel to stamp every datagram `fd` receives (read with
/// [`crate::MsgBatch::with_rx_timestamps`]).
pub fn enable_rx_timestamps(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from the live `on`.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            libc::socklen_t::try_from(mem::size_of::<libc::c_int>()).unwrap_or(4),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Receives one datagram on `fd` (given [`enable_rx_timestamps`]) into `buf`: its length and
/// the kernel's receive time (wall clock since the epoch), if it gave one. Non-blocking
/// sockets return `WouldBlock` when nothing is waiting, as `recv` does.
pub fn recv_stamped(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
    let mut ctrl = [0u64; CTRL_WORDS];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is valid; its pointers are set to live locals below.
    let mut h: libc::msghdr = unsafe { mem::zeroed() };
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    h.msg_control = ctrl.as_mut_ptr().cast();
    h.msg_controllen = CTRL_WORDS * mem::size_of::<u64>();
    // SAFETY: `h` describes `buf` and `ctrl`, both alive and sized as declared.
    let n = unsafe { libc::recvmsg(fd, &mut h, 0) };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    Ok((n.min(buf.len()), timestamp(&h)))
}

/// A datagram's arrival on a monotonic clock read as `now_ns` (ns since some start): `now_ns`
/// less how long ago the kernel stamped it (`stamp`, by the wall clock, which reads `wall`
/// now). Without a stamp, or with one a wall-clock step made implausible (in the future, or
/// over 10 s old), the datagram is taken to have arrived `now_ns`.
pub fn arrival_ns(now_ns: u64, wall: Duration, stamp: Option<Duration>) -> u64 {
    match stamp.and_then(|s| wall.checked_sub(s)) {
        Some(age) if age <= Duration::from_secs(10) => {
            now_ns.saturating_sub(u64::try_from(age.as_nanos()).unwrap_or(u64::MAX))
        }
        _ => now_ns,
    }
}

/// The wall clock now, since the epoch (what [`arrival_ns`] compares stamps with).
pub fn wall_now() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

/// The size of a `timespec` (16 bytes), as `CMSG_LEN` takes it.
// NO-PANIC: 16 fits a u32.
#[allow(clippy::cast_possible_truncation)]
const TIMESPEC_LEN: u32 = mem::size_of::<libc::timespec>() as u32;

/// The `SCM_TIMESTAMPNS` of a received message, if it carries one.
pub(crate) fn timestamp(h: &libc::msghdr) -> Option<Duration> {
    // SAFETY: `h` is a header the kernel filled by recvmmsg; its control pointer and length
    // describe our own (aligned) buffer, and the CMSG_* walk stays inside msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            let cm = &*c;
            if cm.cmsg_level == libc::SOL_SOCKET
                && cm.cmsg_type == libc::SCM_TIMESTAMPNS
                && cm.cmsg_len >= libc::CMSG_LEN(TIMESPEC_LEN) as usize
            {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                let secs = u64::try_from(ts.tv_sec).ok()?;
                let nanos = u32::try_from(ts.tv_nsec)
                    .ok()
                    .filter(|&n| n < 1_000_000_000)?;
                return Some(Duration::new(secs, nanos));
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MsgBatch;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn a_datagram_carries_the_time_it_arrived_not_the_time_it_was_read() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_rx_timestamps(b.as_raw_fd()).unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        let sent = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        a.send(b"one").unwrap();
        // Read 50 ms later: the stamp is still the arrival.
        std::thread::sleep(Duration::from_millis(50));
        let mut batch = MsgBatch::new(4, 64).with_rx_timestamps();
        let n = batch.recv(b.as_raw_fd(), 4, libc::MSG_DONTWAIT).unwrap();
        assert_eq!(n, 1);
        let read = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let at = batch.rx_time(0).expect("a timestamp");
        assert!(at >= sent && at <= read, "{sent:?} <= {at:?} <= {read:?}");
        assert!(
            read - at >= Duration::from_millis(45),
            "stamped on arrival: {:?}",
            read - at
        );
        // A batch that does not ask has none.
        a.send(b"two").unwrap();
        let mut plain = MsgBatch::new(4, 64);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(plain.recv(b.as_raw_fd(), 4, libc::MSG_DONTWAIT).unwrap(), 1);
        assert_eq!(plain.rx_time(0), None);
        // One datagram at a time, stamped likewise.
        a.send(b"three").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let mut buf = [0u8; 64];
        let (n, stamp) = recv_stamped(b.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"three");
        let age = wall_now() - stamp.expect("a timestamp");
        assert!(age >= Duration::from_millis(15), "{age:?}");
    }

    #[test]
    fn an_arrival_is_the_kernels_stamp_on_the_callers_clock() {
        let (s, ms) = (Duration::from_secs, Duration::from_millis);
        // Stamped 7 ms before it was read.
        assert_eq!(
            arrival_ns(5_000_000_000, s(100), Some(s(100) - ms(7))),
            4_993_000_000
        );
        assert_eq!(arrival_ns(5, s(100), None), 5, "no stamp: now");
        assert_eq!(arrival_ns(5, s(100), Some(s(101))), 5, "from the future");
        assert_eq!(arrival_ns(5, s(100), Some(s(50))), 5, "a wall-clock step");
        assert_eq!(arrival_ns(1_000, s(100), Some(s(100) - ms(7))), 0);
    }
}
