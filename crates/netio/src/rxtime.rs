//! When the kernel received a datagram: `SO_TIMESTAMPNS`, read from the control messages of
//! `recvmmsg` ([`crate::MsgBatch::with_rx_times`]); with the TTL or hop limit it arrived with
//! ([`enable_ttl`]) and the TOS / traffic class byte ([`enable_tos`]: DSCP and ECN, as the
//! last hop delivered them), and what the kernel says of the wall clock's synchronization
//! ([`clock_sync`]).
//!
//! Why: a responder that says how long it held a packet (its *dwell*, send time minus receive
//! time) must start the clock when the packet arrived, not when its thread got round to it —
//! the time a datagram waits in the socket's receive queue is the responder's, not the path's.
//! The kernel stamps each datagram as it enters the stack (its wall clock, `CLOCK_REALTIME`),
//! so the stamp also serves one-way delay where the two ends share a clock. A STAMP reflector
//! must also return the TTL its test packet arrived with (RFC 8762 §4.3.1), and its Error
//! Estimate should say how far its clock may be from UTC.

use std::io;
use std::mem;
use std::os::fd::RawFd;

/// Control-message space per datagram, in `u64` words: one `SCM_TIMESTAMPNS` message (32
/// bytes), one TTL or hop-limit message (24 bytes) and one TOS or traffic-class message (24
/// bytes), with room to spare.
pub const CTRL_WORDS: usize = 14;

/// A `timespec`'s size (16 bytes) as `CMSG_LEN` takes it.
const TIMESPEC_LEN: u32 = 16;
const _: () = assert!(mem::size_of::<libc::timespec>() == TIMESPEC_LEN as usize);

/// Asks the kernel to stamp every datagram `fd` receives (`SO_TIMESTAMPNS`).
pub fn enable(fd: RawFd) -> io::Result<()> {
    set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS)
}

/// Sets an int socket option to 1.
fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid int option of the declared size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
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

/// Asks the kernel for the TTL (IPv4, `IP_RECVTTL`) or hop limit (IPv6, `IPV6_RECVHOPLIMIT`)
/// of every datagram `fd` receives; an IPv6 socket asks for both (a dual-stack socket receives
/// IPv4 too). Fails only when neither could be set.
pub fn enable_ttl(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let v4 = set_int(fd, libc::IPPROTO_IP, libc::IP_RECVTTL);
    if !ipv6 {
        return v4;
    }
    let v6 = set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT);
    v4.or(v6)
}

/// Asks the kernel for the TOS byte (IPv4, `IP_RECVTOS`) or traffic class (IPv6,
/// `IPV6_RECVTCLASS`) of every datagram `fd` receives; an IPv6 socket asks for both. Read with
/// [`crate::MsgBatch::rx_tos`]. Fails only when neither could be set.
pub fn enable_tos(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let v4 = set_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS);
    if !ipv6 {
        return v4;
    }
    let v6 = set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS);
    v4.or(v6)
}

/// What a received message's control data says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Control {
    /// The receive time, ns since the Unix epoch; 0 when there is none (stamping off, or the
    /// control space was cut short).
    pub time_ns: u64,
    /// The TTL or hop limit.
    pub ttl: Option<u8>,
    /// The TOS byte or traffic class.
    pub tos: Option<u8>,
}

/// The receive time, TTL and TOS in a received message's control data.
pub(crate) fn from_control(h: &libc::msghdr) -> Control {
    if h.msg_control.is_null() || h.msg_flags & libc::MSG_CTRUNC != 0 {
        return Control::default();
    }
    let (mut time, mut ttl, mut tos) = (0, None, None);
    // SAFETY: `h` is a header the kernel just filled: its control pointer and length describe
    // a buffer we own, and CMSG_FIRSTHDR/CMSG_NXTHDR stay inside `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            #[allow(clippy::useless_conversion)] // `cmsg_len` is a `socklen_t` on musl
            let len = usize::try_from((*c).cmsg_len).unwrap_or(0);
            let need = usize::try_from(libc::CMSG_LEN(TIMESPEC_LEN)).unwrap_or(usize::MAX);
            let need_int = usize::try_from(libc::CMSG_LEN(INT_LEN)).unwrap_or(usize::MAX);
            let need_byte = usize::try_from(libc::CMSG_LEN(1)).unwrap_or(usize::MAX);
            match ((*c).cmsg_level, (*c).cmsg_type) {
                (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) if len >= need => {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    time = timespec_ns(&ts);
                }
                (libc::IPPROTO_IP, libc::IP_TTL) | (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT)
                    if len >= need_int =>
                {
                    let v: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    ttl = u8::try_from(v).ok();
                }
                // IPv4 gives the TOS as one byte; IPv6 the traffic class as an int.
                (libc::IPPROTO_IP, libc::IP_TOS) if len >= need_byte => {
                    tos = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u8>()));
                }
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) if len >= need_int => {
                    let v: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    tos = u8::try_from(v).ok();
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    Control {
        time_ns: time,
        ttl,
        tos,
    }
}

/// A `c_int`'s size as `CMSG_LEN` takes it.
const INT_LEN: u32 = 4;
const _: () = assert!(mem::size_of::<libc::c_int>() == INT_LEN as usize);

/// What the kernel says of the wall clock's synchronization (`adjtimex`, read only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSync {
    /// A time daemon (chrony, ntpd, phc2sys) keeps the clock synchronized: the kernel's
    /// `STA_UNSYNC` is clear and its state is not `TIME_ERROR`.
    pub synced: bool,
    /// The daemon's estimated error (`esterror`), ns.
    pub est_error_ns: u64,
    /// The maximum error (`maxerror`; 16 s when nothing synchronizes the clock), ns.
    pub max_error_ns: u64,
}

/// The wall clock's synchronization state, or None where `adjtimex` fails.
pub fn clock_sync() -> Option<ClockSync> {
    // SAFETY: an all-zero `timex` (modes 0) asks adjtimex to read, not to change anything.
    let (rc, t) = unsafe {
        let mut t: libc::timex = mem::zeroed();
        (libc::adjtimex(&mut t), t)
    };
    if rc < 0 {
        return None;
    }
    let us = |v: libc::c_long| u64::try_from(v).unwrap_or(0).saturating_mul(1000);
    Some(ClockSync {
        synced: rc != libc::TIME_ERROR && t.status & libc::STA_UNSYNC == 0,
        est_error_ns: us(t.esterror),
        max_error_ns: us(t.maxerror),
    })
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

    /// Waits until the kernel stamps datagrams as they arrive. The first socket on the system
    /// that asks turns stamping on through a deferred work item (a jump label): until it has
    /// run, a datagram is stamped when it is read instead. Bounded: 200 tries of 5 ms.
    fn stamping_on(a: &UdpSocket, b: &UdpSocket) {
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut inb = MsgBatch::new(1, 16).with_rx_times();
        for _ in 0..200 {
            a.send_to(b"w", b.local_addr().unwrap()).unwrap();
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(inb.recv(b.as_raw_fd(), 1, 0).unwrap(), 1);
            let read = wall_ns();
            if inb.rx_time_ns(0).is_some_and(|t| read - t >= 4_000_000) {
                return;
            }
        }
        panic!("the kernel never stamped a datagram on arrival");
    }

    /// The kernel's stamp lies between the send and the read, on the wall clock.
    #[test]
    fn the_kernel_stamps_each_datagram_with_its_arrival() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable(b.as_raw_fd()).unwrap();
        stamping_on(&a, &b);
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
    fn the_ttl_or_hop_limit_each_datagram_arrived_with() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable(b.as_raw_fd()).unwrap();
        enable_ttl(b.as_raw_fd(), false).unwrap();
        a.set_ttl(37).unwrap();
        a.send_to(b"x", b.local_addr().unwrap()).unwrap();
        let mut inb = MsgBatch::new(2, 16).with_rx_times();
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(inb.recv(b.as_raw_fd(), 2, 0).unwrap(), 1);
        assert_eq!(inb.rx_ttl(0), Some(37));
        assert!(inb.rx_time_ns(0).is_some(), "both messages are read");
        let Ok(b6) = UdpSocket::bind("[::1]:0") else {
            eprintln!("SKIPPED: no IPv6 loopback");
            return;
        };
        enable_ttl(b6.as_raw_fd(), true).unwrap();
        let a6 = UdpSocket::bind("[::1]:0").unwrap();
        a6.send_to(b"x", b6.local_addr().unwrap()).unwrap();
        b6.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(inb.recv(b6.as_raw_fd(), 1, 0).unwrap(), 1);
        assert_eq!(inb.rx_ttl(0), Some(64), "the default hop limit");
        assert_eq!(inb.rx_time_ns(0), None, "not asked for on this socket");
    }

    #[test]
    fn the_tos_or_traffic_class_each_datagram_arrived_with() {
        let a = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
        a.set_tos(46 << 2 | 1).unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_tos(b.as_raw_fd(), false).unwrap();
        enable_ttl(b.as_raw_fd(), false).unwrap();
        enable(b.as_raw_fd()).unwrap();
        a.send_to(b"x", &b.local_addr().unwrap().into()).unwrap();
        let mut inb = MsgBatch::new(2, 16).with_rx_times();
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(inb.recv(b.as_raw_fd(), 2, 0).unwrap(), 1);
        assert_eq!(inb.rx_tos(0), Some(46 << 2 | 1), "DSCP 46, ECN 1 as sent");
        assert_eq!(inb.rx_ttl(0), Some(64), "all three messages fit");
        assert!(inb.rx_time_ns(0).is_some(), "all three messages fit");
        let Ok(b6) = UdpSocket::bind("[::1]:0") else {
            eprintln!("SKIPPED: no IPv6 loopback");
            return;
        };
        enable_tos(b6.as_raw_fd(), true).unwrap();
        let a6 = socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::DGRAM, None).unwrap();
        a6.set_tclass_v6(10 << 2).unwrap();
        a6.send_to(b"x", &b6.local_addr().unwrap().into()).unwrap();
        b6.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(inb.recv(b6.as_raw_fd(), 1, 0).unwrap(), 1);
        assert_eq!(inb.rx_tos(0), Some(10 << 2));
    }

    #[test]
    fn the_clock_state_reads() {
        let c = clock_sync().unwrap();
        assert!(c.max_error_ns >= c.est_error_ns || !c.synced);
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
