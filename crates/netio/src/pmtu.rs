//! Path MTU socket helpers (`npt mtu`, and `npt serve`'s down probes): the don't-fragment
//! policy of a socket (`IP_MTU_DISCOVER`), the path MTU the kernel holds toward an address
//! (`IP_MTU` of a connected socket), and the ICMP errors a socket was sent (`IP_RECVERR`, the
//! error queue) — "fragmentation needed" / "packet too big" with the MTU and the router that
//! sent it.
//!
//! Why `IP_PMTUDISC_PROBE` for probes: it sets DF but ignores the path MTU the kernel learned
//! (`IP_PMTUDISC_DO` would refuse every datagram above a cached MTU locally, so a search would
//! read the cache instead of the path); the interface's own MTU still holds (`EMSGSIZE`).

use std::io;
use std::mem;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

/// A socket's don't-fragment policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discover {
    /// DF set, the learned path MTU ignored (probes).
    Probe,
    /// DF clear: the kernel and routers fragment.
    Dont,
    /// The kernel's default: DF set up to the learned path MTU, fragmented above.
    Want,
}

impl Discover {
    fn values(self) -> (libc::c_int, libc::c_int) {
        match self {
            Discover::Probe => (libc::IP_PMTUDISC_PROBE, libc::IPV6_PMTUDISC_PROBE),
            Discover::Dont => (libc::IP_PMTUDISC_DONT, libc::IPV6_PMTUDISC_DONT),
            Discover::Want => (libc::IP_PMTUDISC_WANT, libc::IPV6_PMTUDISC_WANT),
        }
    }
}

fn set(fd: RawFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: an int option of the declared size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>().try_into().unwrap_or(4),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn get(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len: libc::socklen_t = mem::size_of::<libc::c_int>().try_into().unwrap_or(4);
    // SAFETY: an int option; `len` says the buffer's size.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets `fd`'s don't-fragment policy; an IPv6 socket sets both levels (a dual-stack socket
/// sends IPv4 too). Fails only when neither could be set.
pub fn set_discover(fd: RawFd, ipv6: bool, d: Discover) -> io::Result<()> {
    let (v4, v6) = d.values();
    let a = set(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, v4);
    if !ipv6 {
        return a;
    }
    let b = set(fd, libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER, v6);
    a.or(b)
}

/// A socket's don't-fragment settings as they were, to put back after a probe.
#[derive(Clone, Copy, Debug)]
pub struct Saved {
    v4: Option<libc::c_int>,
    v6: Option<libc::c_int>,
}

impl Saved {
    /// Reads `fd`'s settings.
    pub fn read(fd: RawFd, ipv6: bool) -> Saved {
        Saved {
            v4: get(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER).ok(),
            v6: if ipv6 {
                get(fd, libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER).ok()
            } else {
                None
            },
        }
    }

    /// Puts them back.
    pub fn restore(&self, fd: RawFd) {
        if let Some(v) = self.v4 {
            let _ = set(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, v);
        }
        if let Some(v) = self.v6 {
            let _ = set(fd, libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER, v);
        }
    }
}

/// An IPv4 address carried as `::ffff:a.b.c.d` (a dual-stack socket's peer) as IPv4.
pub fn unmapped(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(a, |v4| SocketAddr::new(IpAddr::V4(v4), a.port())),
        IpAddr::V4(_) => a,
    }
}

/// The path MTU (IP bytes) the kernel holds toward `peer` — the route's, lowered by any
/// "fragmentation needed" / "packet too big" it was sent — read from a connected socket of
/// its own (the learned MTU is per destination, not per socket). `IP_MTU` / `IPV6_MTU`.
pub fn route_mtu(peer: SocketAddr) -> Option<u32> {
    let peer = unmapped(peer);
    let any: SocketAddr = if peer.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(any).ok()?;
    s.connect(peer).ok()?;
    let v = if peer.is_ipv4() {
        get(s.as_raw_fd(), libc::IPPROTO_IP, libc::IP_MTU)
    } else {
        get(s.as_raw_fd(), libc::IPPROTO_IPV6, libc::IPV6_MTU)
    };
    v.ok().and_then(|m| u32::try_from(m).ok())
}

/// Asks the kernel to queue the ICMP errors `fd` is sent, and its own local ones
/// (`IP_RECVERR`; an IPv6 socket also `IPV6_RECVERR`). Read them with [`read_error`].
pub fn enable_recverr(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let a = set(fd, libc::IPPROTO_IP, libc::IP_RECVERR, 1);
    if !ipv6 {
        return a;
    }
    let b = set(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVERR, 1);
    a.or(b)
}

/// Where a queued error came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// This host refused the send (a datagram over its interface's MTU).
    Local,
    /// An ICMP (IPv4) message from a router or the far host.
    Icmp,
    /// An ICMPv6 message.
    Icmp6,
}

/// One error from a socket's error queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuedError {
    pub origin: Origin,
    /// The errno it stands for (`EMSGSIZE` for "too big", `ECONNREFUSED`, `EHOSTUNREACH` …).
    pub errno: i32,
    /// ICMP type and code.
    pub icmp_type: u8,
    pub icmp_code: u8,
    /// The MTU it announces ("fragmentation needed", "packet too big", a local refusal).
    pub mtu: Option<u32>,
    /// Who sent it (the router), when the kernel says.
    pub offender: Option<IpAddr>,
    /// The front of the datagram it was about (the payload as this socket sent it).
    pub datagram: Vec<u8>,
}

impl QueuedError {
    /// A "too big" error: ICMP fragmentation needed, ICMPv6 packet too big, or a local
    /// `EMSGSIZE`.
    pub fn too_big(&self) -> bool {
        self.errno == libc::EMSGSIZE
    }
}

/// The next error queued on `fd` (given [`enable_recverr`]); None when the queue is empty.
pub fn read_error(fd: RawFd) -> io::Result<Option<QueuedError>> {
    let mut data = [0u8; 128];
    let mut ctrl = [0u64; 64];
    let mut name: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    // SAFETY: msghdr is a plain C struct; all-zero is valid, then filled with our buffers.
    let mut h: libc::msghdr = unsafe { mem::zeroed() };
    h.msg_name = (&mut name as *mut libc::sockaddr_storage).cast();
    h.msg_namelen = mem::size_of::<libc::sockaddr_storage>()
        .try_into()
        .unwrap_or(0);
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    h.msg_control = ctrl.as_mut_ptr().cast();
    #[allow(clippy::useless_conversion)] // `msg_controllen` is a `socklen_t` on musl
    {
        h.msg_controllen = mem::size_of_val(&ctrl).try_into().unwrap_or(0);
    }
    // SAFETY: every pointer in `h` points at a live buffer of the length it states.
    let n = unsafe { libc::recvmsg(fd, &mut h, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
    let Ok(n) = usize::try_from(n) else {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(e)
        };
    };
    let datagram = data.get(..n.min(data.len())).unwrap_or_default().to_vec();
    // SAFETY: the kernel filled `h`; CMSG_FIRSTHDR/NXTHDR stay inside `msg_controllen`, and
    // an extended error is read only from a message long enough to hold one.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&h);
        while !c.is_null() {
            let level_type = ((*c).cmsg_level, (*c).cmsg_type);
            let is_err = level_type == (libc::IPPROTO_IP, libc::IP_RECVERR)
                || level_type == (libc::IPPROTO_IPV6, libc::IPV6_RECVERR);
            #[allow(clippy::useless_conversion)] // `cmsg_len` is a `socklen_t` on musl
            let len = usize::try_from((*c).cmsg_len).unwrap_or(0);
            let need = usize::try_from(libc::CMSG_LEN(
                u32::try_from(mem::size_of::<libc::sock_extended_err>()).unwrap_or(16),
            ))
            .unwrap_or(usize::MAX);
            if is_err && len >= need {
                let ee_ptr = libc::CMSG_DATA(c).cast::<libc::sock_extended_err>();
                let ee: libc::sock_extended_err = std::ptr::read_unaligned(ee_ptr);
                let origin = match ee.ee_origin {
                    libc::SO_EE_ORIGIN_LOCAL => Origin::Local,
                    libc::SO_EE_ORIGIN_ICMP => Origin::Icmp,
                    libc::SO_EE_ORIGIN_ICMP6 => Origin::Icmp6,
                    _ => {
                        c = libc::CMSG_NXTHDR(&h, c);
                        continue;
                    }
                };
                let offender = offender(ee_ptr, len, need);
                let errno = i32::try_from(ee.ee_errno).unwrap_or(0);
                let mtu = (errno == libc::EMSGSIZE && ee.ee_info != 0).then_some(ee.ee_info);
                return Ok(Some(QueuedError {
                    origin,
                    errno,
                    icmp_type: ee.ee_type,
                    icmp_code: ee.ee_code,
                    mtu,
                    offender,
                    datagram,
                }));
            }
            c = libc::CMSG_NXTHDR(&h, c);
        }
    }
    // An error without an extended record: consumed, nothing to say.
    Ok(Some(QueuedError {
        origin: Origin::Local,
        errno: 0,
        icmp_type: 0,
        icmp_code: 0,
        mtu: None,
        offender: None,
        datagram,
    }))
}

/// The offender address after an extended error (`SO_EE_OFFENDER`), when the message holds
/// one.
///
/// # Safety
/// `ee` points at an extended error inside a control message of `len` bytes whose data
/// starts `need - size_of(sock_extended_err)` bytes before the record's end.
unsafe fn offender(ee: *const libc::sock_extended_err, len: usize, need: usize) -> Option<IpAddr> {
    let room = len.checked_sub(need)?;
    let sa = libc::SO_EE_OFFENDER(ee).cast::<libc::sockaddr>();
    if room < mem::size_of::<libc::sockaddr_in>() {
        return None;
    }
    match i32::from(std::ptr::read_unaligned(sa).sa_family) {
        libc::AF_INET => {
            let v4: libc::sockaddr_in = std::ptr::read_unaligned(sa.cast());
            Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr))))
        }
        libc::AF_INET6 if room >= mem::size_of::<libc::sockaddr_in6>() => {
            let v6: libc::sockaddr_in6 = std::ptr::read_unaligned(sa.cast());
            Some(IpAddr::V6(Ipv6Addr::from(v6.sin6_addr.s6_addr)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_route_mtu_and_a_queued_icmp_error() {
        let m = route_mtu("127.0.0.1:9".parse().unwrap()).unwrap();
        assert!(m >= 1280, "{m}");
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        // A port nobody listens on: the kernel answers ICMP port unreachable.
        let gone = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        s.connect(gone).unwrap();
        let fd = s.as_raw_fd();
        set_discover(fd, false, Discover::Probe).unwrap();
        enable_recverr(fd, false).unwrap();
        assert_eq!(Saved::read(fd, false).v4, Some(libc::IP_PMTUDISC_PROBE));
        s.send(b"npt probe").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let q = loop {
            if let Some(q) = read_error(fd).unwrap() {
                break q;
            }
            assert!(std::time::Instant::now() < deadline, "no error queued");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert_eq!(
            (q.origin, q.errno, q.icmp_type, q.icmp_code),
            (Origin::Icmp, libc::ECONNREFUSED, 3, 3)
        );
        assert_eq!(q.offender, Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!((q.too_big(), q.mtu), (false, None));
        assert_eq!(q.datagram, b"npt probe");
        assert_eq!(
            unmapped("[::ffff:10.0.0.1]:5".parse().unwrap()),
            "10.0.0.1:5".parse().unwrap()
        );
    }
}
