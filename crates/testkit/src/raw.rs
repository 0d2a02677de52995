//! Raw IPv4 sockets for the hostile tests (root only): forge a UDP datagram from any source
//! address ([`forge_udp`]), and see every UDP datagram the host receives ([`UdpTap`]) — so a
//! test can send as a spoofed victim and count exactly what the server sent that victim, even
//! where nothing listens.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

/// Whether this process runs as root (raw sockets need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A raw socket that sends IPv4 packets with our own headers (IPPROTO_RAW implies IP_HDRINCL;
/// the kernel fills in the IP checksum and length).
pub struct Forger(i32);

impl Forger {
    pub fn new() -> Forger {
        // SAFETY: a plain socket call.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) };
        assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
        Forger(fd)
    }

    /// Sends one UDP datagram from `src` to `dst` (no UDP checksum: allowed over IPv4).
    pub fn send(&self, src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) {
        let pkt = udp4(src, dst, payload);
        let sin = sockaddr(dst);
        // SAFETY: the buffers outlive the call; the descriptor is ours.
        let n = unsafe {
            libc::sendto(
                self.0,
                pkt.as_ptr().cast(),
                pkt.len(),
                0,
                (&sin as *const libc::sockaddr_in).cast(),
                sin_len(),
            )
        };
        assert_eq!(
            usize::try_from(n).ok(),
            Some(pkt.len()),
            "raw sendto: {}",
            std::io::Error::last_os_error()
        );
    }
}

impl Default for Forger {
    fn default() -> Self {
        Forger::new()
    }
}

impl Drop for Forger {
    fn drop(&mut self) {
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(self.0) };
    }
}

/// An IPv4 UDP packet `src` → `dst` carrying `payload`, as it is on the wire: no IP options,
/// DF set, TTL 64, checksums 0 (the kernel fills the IP one on a raw send; 0 means none for UDP).
pub fn udp4(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let mut pkt = Vec::with_capacity(28 + payload.len());
    let total = u16::try_from(28 + payload.len()).expect("fits a datagram");
    pkt.extend_from_slice(&[0x45, 0]);
    pkt.extend_from_slice(&total.to_be_bytes());
    pkt.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    pkt.extend_from_slice(&src.ip().octets());
    pkt.extend_from_slice(&dst.ip().octets());
    pkt.extend_from_slice(&src.port().to_be_bytes());
    pkt.extend_from_slice(&dst.port().to_be_bytes());
    pkt.extend_from_slice(&(total - 20).to_be_bytes());
    pkt.extend_from_slice(&[0, 0]);
    pkt.extend_from_slice(payload);
    pkt
}

/// Sends one forged UDP datagram (a [`Forger`] for one packet).
pub fn forge_udp(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) {
    Forger::new().send(src, dst, payload);
}

/// One UDP datagram the host received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    /// The UDP payload.
    pub payload: Vec<u8>,
}

/// A raw `IPPROTO_UDP` socket: a copy of every UDP datagram the host receives (on loopback,
/// everything sent to a loopback address), whether or not anything listens at its destination.
pub struct UdpTap(i32);

impl UdpTap {
    /// With a large receive buffer, so a burst is not dropped before it is read.
    pub fn new() -> UdpTap {
        // SAFETY: plain socket calls on a descriptor we own.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_UDP);
            assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
            let size: libc::c_int = 64 << 20;
            let p = (&size as *const libc::c_int).cast();
            let l = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, p, l);
            UdpTap(fd)
        }
    }

    /// The next datagram, or None after `wait` without one.
    pub fn next(&self, wait: Duration) -> Option<Seen> {
        let mut pfd = libc::pollfd {
            fd: self.0,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, ms) } <= 0 {
            return None;
        }
        let mut buf = vec![0u8; 65_536];
        // SAFETY: the buffer outlives the call.
        let n = unsafe { libc::recv(self.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
        let n = usize::try_from(n).ok()?;
        let ip = buf.get(..n)?;
        let ihl = usize::from(ip.first()? & 0x0F) * 4;
        let udp = ip.get(ihl..)?;
        let addr = |a: &[u8], p: &[u8]| {
            SocketAddrV4::new(
                Ipv4Addr::new(a[0], a[1], a[2], a[3]),
                u16::from_be_bytes([p[0], p[1]]),
            )
        };
        Some(Seen {
            src: addr(ip.get(12..16)?, udp.get(0..2)?),
            dst: addr(ip.get(16..20)?, udp.get(2..4)?),
            payload: udp.get(8..)?.to_vec(),
        })
    }
}

impl Default for UdpTap {
    fn default() -> Self {
        UdpTap::new()
    }
}

impl Drop for UdpTap {
    fn drop(&mut self) {
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(self.0) };
    }
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::sa_family_t::try_from(libc::AF_INET).expect("AF_INET"),
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn sin_len() -> libc::socklen_t {
    libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_in>()).expect("small")
}
