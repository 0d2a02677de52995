//! When the kernel received a datagram: `SO_TIMESTAMPNS`, read from the control messages of
//! `recvmmsg` ([`crate::MsgBatch::with_rx_times`]).
//!
//! Why: a responder that says how long it held a packet (its *dwell*, send time minus receive
//! time) must start the clock when the packet arrived, not when its thread got round to it —
//! the time a datagram waits in the socket's receive queue is the responder's, not the path's.
//! The kernel stamps each datagram as it enters the stack (its wall clock, `CLOCK_REALTIME`),
//! so the stamp also serves one-way delay where the two ends share a clock.

use std::io;
use std::mem;
use std::os::fd::RawFd;

/// Control-message space per datagram, in `u64` words: one `SCM_TIMESTAMPNS` message (32
/// bytes) with room to spare.
pub const CTRL_WORDS: usize = 8;

/// A `timespec`'s size (16 bytes) as `CMSG_LEN` takes it.
const TIMESPEC_LEN: u32 = 16;
const _: () = assert!(mem::size_of::<libc::timespec>() == TIMESPEC_LEN as usize);

/// Asks the kernel to stamp every datagram `fd` receives (`SO_TIMESTAMPNS`).
pub fn enable(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid int option of the declared size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>().try_into().unwrap_or(4),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The receive time in a received message's control data, ns since the Unix epoch; 0 when it
/// has none (stamping off, or the control space was cut short).
pub(crate) fn from_control(h: &libc::msghdr) -> u64 {
    if h.msg_control.is_null() || h.msg_flags & libc::MSG_CTRUNC != 0 {
        return 0;
    }
    // SAFETY: `h` is a header the kernel just filled: its control pointer and length describe
    // a buffer we own, and CMSG_FIRSTHDR/CMSG_NXTHDR stay inside `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            #[allow(clippy::useless_conversion)] // `cmsg_len` is a `socklen_t` on musl
            let len = usize::try_from((*c).cmsg_len).unwrap_or(0);
            let need = usize::try_from(libc::CMSG_LEN(TIMESPEC_LEN)).unwrap_or(usize::MAX);
            if (*c).cmsg_level == libc::SOL_SOCKET
                && (*c).cmsg_type == libc::SCM_TIMESTAMPNS
                && len >= need
            {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                return timespec_ns(&ts);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    0
}

fn timespec_ns(ts: &libc::timespec) -> u64 {
    let s = u64::try_from(ts.tv_sec).unwrap_or(0);
    let ns = u64::try_from(ts.tv_nsec).unwrap_or(0);
    s.saturating_mul(1_000_000_000).saturating_add(ns)
}

/// The wall clock now, ns since the Unix epoch (the clock the kernel's stamps are on).
pub fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MsgBatch;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    /// The kernel's stamp lies between the send and the read, on the wall clock.
    #[test]
    fn the_kernel_stamps_each_datagram_with_its_arrival() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable(b.as_raw_fd()).unwrap();
        let before = wall_ns();
        for i in 0..3u8 {
            a.send_to(&[i; 10], b.local_addr().unwrap()).unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
        let mut inb = MsgBatch::new(4, 64).with_rx_times();
        let got = crate::tests::recv_n(&mut inb, b.as_raw_fd(), 3);
        let after = wall_ns();
        assert_eq!(got, 3);
        for i in 0..3 {
            let t = inb.rx_time_ns(i).expect("stamped");
            assert!(before <= t && t <= after, "{before} <= {t} <= {after}");
            // Received 20 ms before the read: the stamp is the arrival, not the read.
            assert!(after - t >= 15_000_000, "{}", after - t);
        }
    }

    #[test]
    fn without_stamping_there_is_no_time() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        a.send_to(&[1; 10], b.local_addr().unwrap()).unwrap();
        let mut inb = MsgBatch::new(1, 64).with_rx_times();
        assert_eq!(inb.recv(b.as_raw_fd(), 1, libc::MSG_WAITFORONE).unwrap(), 1);
        assert_eq!(inb.rx_time_ns(0), None);
        let mut plain = MsgBatch::new(1, 64);
        a.send_to(&[1; 10], b.local_addr().unwrap()).unwrap();
        assert_eq!(
            plain.recv(b.as_raw_fd(), 1, libc::MSG_WAITFORONE).unwrap(),
            1
        );
        assert_eq!(plain.rx_time_ns(0), None);
    }
}
