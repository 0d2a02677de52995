//! What the kernel knows about a received datagram besides its bytes, and about the system
//! clock: a STAMP reflector must return the TTL (IPv4) or Hop Limit (IPv6) its test packet
//! arrived with (RFC 8762 §4.3.1), its receive timestamp is best taken by the kernel
//! (`SO_TIMESTAMPNS`, the wall clock at the moment the datagram was queued, before any batching
//! in user space), and its Error Estimate should say what the kernel says of the clock's
//! synchronization (`adjtimex`).
//!
//! [`enable`] asks for the control messages on a socket; [`parse`] reads them from a
//! [`crate::MsgBatch`] slot ([`crate::MsgBatch::control`]).

use std::io;
use std::mem;
use std::os::fd::RawFd;

/// Bytes of control space per datagram: a TTL (or hop limit) and a timestamp, with room.
pub const CONTROL_LEN: usize = 128;

/// What the control messages of one datagram said.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxInfo {
    /// IPv4 TTL or IPv6 Hop Limit as the datagram arrived.
    pub ttl: Option<u8>,
    /// Kernel receive time, ns since the Unix epoch (`CLOCK_REALTIME`).
    pub realtime_ns: Option<u64>,
}

fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from a live c_int.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&one as *const libc::c_int).cast(),
            c_len(mem::size_of::<libc::c_int>()),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

// NO-PANIC: the sizes passed are of C ints, far inside `socklen_t`.
#[allow(clippy::cast_possible_truncation)]
fn c_len(n: usize) -> libc::socklen_t {
    n as libc::socklen_t
}

/// Asks for the receive TTL / hop limit and the kernel timestamp of every datagram on `fd`.
/// An IPv6 socket asks for both TTL kinds (a dual-stack socket receives IPv4 too). Fails only
/// when none of the TTL options could be set; a missing timestamp is tolerated.
pub fn enable(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let v4 = set_int(fd, libc::IPPROTO_IP, libc::IP_RECVTTL);
    let v6 = if ipv6 {
        set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT)
    } else {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    };
    let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS);
    match (v4, v6) {
        (Err(e), Err(_)) => Err(e),
        _ => Ok(()),
    }
}

/// Reads the TTL and timestamp out of one datagram's control bytes (as the kernel wrote them
/// into a [`crate::MsgBatch`] slot). Anything else, or anything malformed, is skipped.
pub fn parse(control: &[u8]) -> RxInfo {
    let mut info = RxInfo::default();
    if control.is_empty() {
        return info;
    }
    // SAFETY: the msghdr only describes `control` (pointer and length) for the CMSG_* walk,
    // which never reads outside [msg_control, msg_control + msg_controllen); each payload is
    // read unaligned and only when the header says it is long enough.
    unsafe {
        let mut h: libc::msghdr = mem::zeroed();
        h.msg_control = control.as_ptr().cast_mut().cast();
        h.msg_controllen = control.len();
        let mut c = libc::CMSG_FIRSTHDR(&h);
        while !c.is_null() {
            let hdr = std::ptr::read_unaligned(c);
            let data = libc::CMSG_DATA(c);
            let offset = usize::try_from(data.offset_from(c.cast::<u8>())).unwrap_or(usize::MAX);
            let have = hdr.cmsg_len.saturating_sub(offset);
            match (hdr.cmsg_level, hdr.cmsg_type) {
                (libc::IPPROTO_IP, libc::IP_TTL) | (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT)
                    if have >= mem::size_of::<libc::c_int>() =>
                {
                    let v = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                    info.ttl = u8::try_from(v).ok();
                }
                (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS)
                    if have >= mem::size_of::<libc::timespec>() =>
                {
                    let t = std::ptr::read_unaligned(data.cast::<libc::timespec>());
                    info.realtime_ns = u64::try_from(t.tv_sec)
                        .ok()
                        .and_then(|s| s.checked_mul(1_000_000_000))
                        .and_then(|s| s.checked_add(u64::try_from(t.tv_nsec).ok()?));
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(&h, c);
        }
    }
    info
}

/// What the kernel says of the system clock's synchronization (`adjtimex`, read only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSync {
    /// A time daemon (chrony, ntpd, ptp4l's phc2sys) keeps the clock synchronized: the kernel's
    /// `STA_UNSYNC` is clear and its state is not `TIME_ERROR`.
    pub synced: bool,
    /// The daemon's estimated error (`esterror`), ns.
    pub est_error_ns: u64,
    /// The maximum error (`maxerror`; 16 s when nothing synchronizes the clock), ns.
    pub max_error_ns: u64,
}

/// The system clock's synchronization state, or None where `adjtimex` fails.
pub fn clock_sync() -> Option<ClockSync> {
    // SAFETY: all-zero `timex` (modes 0) asks adjtimex to read, not to change anything.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MsgBatch;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    #[test]
    fn ttl_and_kernel_timestamp_of_a_loopback_datagram() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable(b.as_raw_fd(), false).unwrap();
        a.set_ttl(37).unwrap();
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        a.send_to(b"x", b.local_addr().unwrap()).unwrap();
        let mut inb = MsgBatch::with_control(2, 16);
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let n = inb.recv(b.as_raw_fd(), 2, 0).unwrap();
        assert_eq!(n, 1);
        let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let info = parse(inb.control(0));
        assert_eq!(info.ttl, Some(37));
        let t = info.realtime_ns.unwrap();
        assert!(u128::from(t) >= before.as_nanos() && u128::from(t) <= after.as_nanos());
    }

    #[test]
    fn hop_limit_over_ipv6_and_nothing_without_control() {
        let Ok(b) = UdpSocket::bind("[::1]:0") else {
            eprintln!("SKIPPED: no IPv6 loopback");
            return;
        };
        let a = UdpSocket::bind("[::1]:0").unwrap();
        enable(b.as_raw_fd(), true).unwrap();
        a.send_to(b"x", b.local_addr().unwrap()).unwrap();
        let mut inb = MsgBatch::with_control(1, 16);
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(inb.recv(b.as_raw_fd(), 1, 0).unwrap(), 1);
        let info = parse(inb.control(0));
        assert_eq!(info.ttl, Some(64), "the default hop limit");
        assert!(info.realtime_ns.is_some());
        assert_eq!(parse(&[]), RxInfo::default());
        assert_eq!(
            parse(&[0xFF; 7]),
            RxInfo::default(),
            "too short for a header"
        );
    }

    #[test]
    fn the_clock_state_reads() {
        let c = clock_sync().unwrap();
        assert!(c.max_error_ns >= c.est_error_ns || !c.synced);
    }
}
