//! When the kernel received a datagram: `SO_TIMESTAMPNS`, read from the control messages of
//! `recvmmsg` ([`crate::MsgBatch::with_rx_times`]); with the TTL or hop limit it arrived with
//! ([`enable_ttl`]) and the TOS / traffic class byte ([`enable_tos`]: DSCP and ECN, as the
//! last hop delivered them), and what the kernel says of the wall clock's synchronization
//! ([`wall_clock_status`]).
//!
//! Why: a responder that says how long it held a packet (its *dwell*, send time minus receive
//! time) must start the clock when the packet arrived, not when its thread got round to it —
//! the time a datagram waits in the socket's receive queue is the responder's, not the path's.
//! The kernel stamps each datagram as it enters the stack (its wall clock, `CLOCK_REALTIME`),
//! so the stamp also serves one-way delay where the two ends share a clock. A STAMP reflector
//! must also return the TTL its test packet arrived with (RFC 8762 §4.3.1), and its Error
//! Estimate should say how far its clock may be from UTC.
//!
//! A receiver that times arrivals — the UDP bulk responder's delivered rate and one-way jitter,
//! the bulk tester's round trips — would otherwise count its own scheduling delay as the
//! path's: on a loaded box it wakes late and reads a batch of datagrams that arrived
//! milliseconds apart as if they arrived together. One datagram at a time: [`recv_stamped`];
//! on the caller's monotonic clock: [`arrival_on`].

use std::io;
use std::mem;
use std::os::fd::RawFd;

/// Control-message space per datagram, in `u64` words: one `SCM_TIMESTAMPNS` message (32
/// bytes), one TTL or hop-limit message (24 bytes), one TOS or traffic-class message (24
/// bytes), one `UDP_GRO` segment size (24 bytes, [`crate::offload`]) and one largest-fragment
/// size (24 bytes, [`enable_fragsize`]), with room to spare.
pub const CTRL_WORDS: usize = 20;

/// A `timespec`'s size (16 bytes) as `CMSG_LEN` takes it.
const TIMESPEC_LEN: u32 = 16;
const _: () = assert!(mem::size_of::<libc::timespec>() == TIMESPEC_LEN as usize);

/// Asks the kernel to stamp every datagram `fd` receives (`SO_TIMESTAMPNS`).
///
/// The kernel stamps arrivals host-wide while any socket asks; when the first one asks it
/// turns stamping on a moment later (a deferred work item), and a datagram that arrives
/// before then is stamped when it is read — as if there were no stamp.
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

/// Asks the kernel for the largest fragment of every datagram `fd` receives reassembled from
/// fragments (`IP_RECVFRAGSIZE`, `IPV6_RECVFRAGSIZE`: `npt mtu` says where a path fragments);
/// an IPv6 socket asks for both. Read with [`crate::MsgBatch::rx_frag`]. Fails only when
/// neither could be set.
pub fn enable_fragsize(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let v4 = set_int(fd, libc::IPPROTO_IP, libc::IP_RECVFRAGSIZE);
    if !ipv6 {
        return v4;
    }
    let v6 = set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVFRAGSIZE);
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
    /// The largest fragment, IP bytes, of a datagram reassembled from fragments.
    pub frag: Option<u16>,
}

/// The receive time, TTL and TOS in a received message's control data.
pub(crate) fn from_control(h: &libc::msghdr) -> Control {
    if h.msg_control.is_null() || h.msg_flags & libc::MSG_CTRUNC != 0 {
        return Control::default();
    }
    let (mut time, mut ttl, mut tos, mut frag) = (0, None, None, None);
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
                (libc::IPPROTO_IP, libc::IP_RECVFRAGSIZE)
                | (libc::IPPROTO_IPV6, libc::IPV6_RECVFRAGSIZE)
                    if len >= need_int =>
                {
                    let v: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    frag = u16::try_from(v).ok().filter(|&f| f != 0);
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
        frag,
    }
}

/// Receives one datagram on `fd` (given [`enable`]) into `buf`: its length and the kernel's
/// receive time (ns since the Unix epoch), if it gave one. A non-blocking socket returns
/// `WouldBlock` when nothing is waiting, as `recv` does.
pub fn recv_stamped(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
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
    #[allow(clippy::useless_conversion)] // a `socklen_t` on musl
    let cl = (CTRL_WORDS * mem::size_of::<u64>())
        .try_into()
        .unwrap_or_default();
    h.msg_controllen = cl;
    // SAFETY: `h` describes `buf` and `ctrl`, both alive and sized as declared.
    let n = unsafe { libc::recvmsg(fd, &mut h, 0) };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    let time = from_control(&h).time_ns;
    Ok((n.min(buf.len()), Some(time).filter(|&t| t != 0)))
}

/// A datagram's arrival on a monotonic clock read as `now_ns` (ns since some start): `now_ns`
/// less how long ago the kernel stamped it (`stamp_ns`, by the wall clock, which reads
/// `wall_ns` now — [`wall_ns`]). Without a stamp, or with one a wall-clock step made
/// implausible (in the future, or over 10 s old), the datagram is taken to have arrived
/// `now_ns`.
/// `now_ns` and `wall_ns` must be read at one instant ([`crate::clockpair`]; [`arrival_on`]).
pub fn arrival_ns(now_ns: u64, wall_ns: u64, stamp_ns: Option<u64>) -> u64 {
    match stamp_ns.and_then(|s| wall_ns.checked_sub(s)) {
        Some(age) if age <= 10_000_000_000 => now_ns.saturating_sub(age),
        _ => now_ns,
    }
}

/// [`arrival_ns`] with the monotonic clock `mono` read now: with a stamp, `mono` and the wall
/// clock are read at one instant ([`crate::clockpair::now`]) to age it by; without one, the
/// datagram arrived `mono()`.
pub fn arrival_on(mut mono: impl FnMut() -> u64, stamp_ns: Option<u64>) -> u64 {
    match stamp_ns {
        Some(_) => {
            let (now, wall) = crate::clockpair::now(mono);
            arrival_ns(now, wall, stamp_ns)
        }
        None => mono(),
    }
}

/// A `c_int`'s size as `CMSG_LEN` takes it.
const INT_LEN: u32 = 4;
const _: () = assert!(mem::size_of::<libc::c_int>() == INT_LEN as usize);

/// What the kernel says of the wall clock's synchronization (`adjtimex`, read only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallClockStatus {
    /// A time daemon (chrony, ntpd, phc2sys) keeps the clock synchronized: the kernel's
    /// `STA_UNSYNC` is clear and its state is not `TIME_ERROR`.
    pub synced: bool,
    /// The daemon's estimated error (`esterror`), ns.
    pub est_error_ns: u64,
    /// The maximum error (`maxerror`; 16 s when nothing synchronizes the clock), ns.
    pub max_error_ns: u64,
}

/// The wall clock's synchronization state, or None where `adjtimex` fails.
pub fn wall_clock_status() -> Option<WallClockStatus> {
    // SAFETY: an all-zero `timex` (modes 0) asks adjtimex to read, not to change anything.
    let (rc, t) = unsafe {
        let mut t: libc::timex = mem::zeroed();
        (libc::adjtimex(&mut t), t)
    };
    if rc < 0 {
        return None;
    }
    let us = |v: libc::c_long| u64::try_from(v).unwrap_or(0).saturating_mul(1000);
    Some(WallClockStatus {
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

    /// A socket that asked for stamps, once the kernel stamps arrivals (see [`enable`]: the
    /// first socket on the host to ask waits a moment): datagrams read 5 ms after they were
    /// sent show it, within 2 s.
    fn stamped_socket() -> UdpSocket {
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable(b.as_raw_fd()).unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut buf = [0u8; 16];
        for _ in 0..200 {
            a.send_to(b"warm", b.local_addr().unwrap()).unwrap();
            std::thread::sleep(Duration::from_millis(5));
            let (_, stamp) = recv_stamped(b.as_raw_fd(), &mut buf).unwrap();
            if stamp.is_some_and(|t| wall_ns().saturating_sub(t) >= 4_000_000) {
                return b;
            }
        }
        panic!("the kernel never stamped an arrival in 2 s");
    }

    /// The kernel's stamp lies between the send and the read, on the wall clock.
    #[test]
    fn the_kernel_stamps_each_datagram_with_its_arrival() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = stamped_socket();
        let before = wall_ns();
        for i in 0..3u8 {
            a.send_to(&[i; 10], b.local_addr().unwrap()).unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
        let mut inb = MsgBatch::new(4, 64).with_rx_times();
        let got = crate::batch::tests::recv_n(&mut inb, b.as_raw_fd(), 3);
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

    /// One datagram at a time, stamped likewise: the stamp is the arrival, not the read.
    #[test]
    fn recv_stamped_reads_one_datagram_and_its_arrival() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = stamped_socket();
        a.send_to(b"three", b.local_addr().unwrap()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let mut buf = [0u8; 64];
        let (n, stamp) = recv_stamped(b.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"three");
        let age = wall_ns() - stamp.expect("a timestamp");
        assert!(age >= 15_000_000, "{age}");
        // Without stamping asked for, none.
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.send_to(b"four", c.local_addr().unwrap()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let (n, stamp) = recv_stamped(c.as_raw_fd(), &mut buf).unwrap();
        assert_eq!((&buf[..n], stamp), (&b"four"[..], None));
    }

    #[test]
    fn an_arrival_is_the_kernels_stamp_on_the_callers_clock() {
        let (s, ms) = (1_000_000_000u64, 1_000_000u64);
        // Stamped 7 ms before it was read.
        assert_eq!(
            arrival_ns(5 * s, 100 * s, Some(100 * s - 7 * ms)),
            5 * s - 7 * ms
        );
        assert_eq!(arrival_ns(5, 100 * s, None), 5, "no stamp: now");
        assert_eq!(arrival_ns(5, 100 * s, Some(101 * s)), 5, "from the future");
        assert_eq!(arrival_ns(5, 100 * s, Some(50 * s)), 5, "a wall-clock step");
        assert_eq!(arrival_ns(1_000, 100 * s, Some(100 * s - 7 * ms)), 0);
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
        let c = wall_clock_status().unwrap();
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
