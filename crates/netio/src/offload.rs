//! What the kernel can do for a UDP hot loop besides batching: segmentation offload (GSO: many
//! equal-size datagrams handed over as one buffer in one send) and receive coalescing (GRO: the
//! same, on the way in).
//!
//! Why: a datagram's cost on a fast path is mostly the kernel's per-datagram work, not the
//! copy. With `sendmmsg` every datagram still walks the whole send path; with GSO a batch walks
//! it once and is cut into datagrams at the device (or, on loopback, at the receiving socket),
//! and a receiver that asked for GRO gets such a batch back as one buffer.
//!
//! Every function here degrades: a kernel or socket that refuses an option says so (`false`,
//! or an error that [`gso_unsupported`] recognises), and the caller keeps its plain path. The
//! kernel's receive stamps are [`crate::rxtime`]'s; a batch that collects them
//! ([`crate::MsgBatch::with_rx_times`]) reads the GRO segment size from the same control data.
//! A batch's own GSO sends, grouped by peer, are in `grouped`.

use std::io;
use std::mem;
use std::os::fd::RawFd;

/// `UDP_SEGMENT` and `UDP_GRO` (linux/udp.h); the same on every Linux architecture.
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;

/// At most this many segments in one GSO send (the kernel's `UDP_MAX_SEGMENTS` was 64 before
/// Linux 6.7 and is 128 since; the smaller is safe everywhere).
pub const GSO_MAX_SEGMENTS: usize = 64;
/// A GSO buffer must fit one IP datagram.
const GSO_MAX_BYTES: usize = 65_000;

mod grouped;

/// `UDP_SEGMENT`'s control space, CMSG_SPACE(2) = 24 bytes, in words.
const GSO_CTRL_WORDS: usize = 3;

fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> bool {
    // SAFETY: a c_int option value passed by pointer with its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            socklen(mem::size_of::<libc::c_int>()),
        )
    };
    rc == 0
}

fn socklen(n: usize) -> libc::socklen_t {
    libc::socklen_t::try_from(n).unwrap_or(libc::socklen_t::MAX)
}

/// Asks the kernel to coalesce arriving datagrams of one flow (`UDP_GRO`). A buffer then holds
/// one or more datagrams of [`crate::MsgBatch::gro_segment`] bytes each (the last may be shorter), so every
/// receive buffer must take 64 KiB. False if the kernel refuses (before Linux 5.0).
pub fn enable_gro(fd: RawFd) -> bool {
    set_int(fd, libc::SOL_UDP, UDP_GRO, 1)
}

/// How many datagrams of `seg` bytes one GSO send may carry (0: `seg` is 0).
pub fn gso_segments(seg: usize) -> usize {
    if seg == 0 {
        return 0;
    }
    (GSO_MAX_BYTES / seg).min(GSO_MAX_SEGMENTS)
}

/// Sends `data` on a connected UDP socket as datagrams of `seg` bytes each (the last may be
/// shorter) in one `sendmsg` with `UDP_SEGMENT`. Returns the bytes handed over: all of them or
/// an error, never part.
pub fn send_gso(fd: RawFd, data: &[u8], seg: usize) -> io::Result<usize> {
    let mut iov = [libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    }];
    send_segmented(fd, &mut iov, seg)
}

/// One `sendmsg` of `iovs` (their bytes back to back) with `UDP_SEGMENT` = `seg`, on a
/// connected socket: all the bytes handed over, or an error.
fn send_segmented(fd: RawFd, iovs: &mut [libc::iovec], seg: usize) -> io::Result<usize> {
    let seg16 = u16::try_from(seg).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // A u64 array keeps the control buffer aligned for cmsghdr.
    let mut ctrl = [0u64; GSO_CTRL_WORDS];
    // SAFETY: all-zero msghdr is valid; the iovecs are the caller's, pointing at live buffers,
    // and the control block (24 bytes) holds CMSG_SPACE(2); all outlive the call.
    let rc = unsafe {
        let mut h: libc::msghdr = mem::zeroed();
        h.msg_iov = iovs.as_mut_ptr();
        h.msg_iovlen = iovs.len();
        h.msg_control = ctrl.as_mut_ptr().cast();
        h.msg_controllen = libc::CMSG_SPACE(2) as usize;
        let c = libc::CMSG_FIRSTHDR(&h);
        (*c).cmsg_level = libc::SOL_UDP;
        (*c).cmsg_type = UDP_SEGMENT;
        (*c).cmsg_len = libc::CMSG_LEN(2) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg16);
        libc::sendmsg(fd, &h, 0)
    };
    usize::try_from(rc).map_err(|_| io::Error::last_os_error())
}

/// True for the errors a GSO send gets where GSO itself is the problem (an old kernel, a
/// device without checksum offload, a segment larger than the path MTU): the caller turns GSO
/// off for the socket and sends the batch the plain way. Other errors (a refused port, a full
/// buffer) belong to the datagrams, as with any send.
pub fn gso_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::EIO | libc::EOPNOTSUPP | libc::ENOPROTOOPT | libc::EMSGSIZE)
    )
}

/// The GRO segment size in a received message's control data (0: none, the buffer is one
/// datagram). The kernel writes it before any timestamp, so the walk is short.
pub(crate) fn gro_from_control(h: &libc::msghdr) -> usize {
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
            let need = usize::try_from(libc::CMSG_LEN(4)).unwrap_or(usize::MAX);
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO && len >= need {
                let g: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                return usize::try_from(g).unwrap_or(0);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    0
}

/// The datagrams in a received buffer: the buffer itself (an empty datagram included), or
/// with GRO several of `segment` bytes each, the last possibly shorter.
pub fn segments(buf: &[u8], segment: Option<usize>) -> Segments<'_> {
    let seg = segment.filter(|&s| s > 0).unwrap_or(usize::MAX);
    Segments {
        rest: Some(buf),
        seg,
    }
}

/// See [`segments`].
pub struct Segments<'a> {
    rest: Option<&'a [u8]>,
    seg: usize,
}

impl<'a> Iterator for Segments<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest.take()?;
        if rest.len() <= self.seg {
            return Some(rest);
        }
        let (one, more) = rest.split_at(self.seg);
        self.rest = Some(more);
        Some(one)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    #[test]
    fn segments_split_a_coalesced_buffer() {
        let b = [1u8; 10];
        let v: Vec<usize> = segments(&b, Some(4)).map(<[u8]>::len).collect();
        assert_eq!(v, vec![4, 4, 2]);
        assert_eq!(segments(&b, None).count(), 1);
        assert_eq!(segments(&b, Some(10)).count(), 1);
        assert_eq!(segments(&b, Some(0)).count(), 1);
        assert_eq!(segments(&b, Some(5)).count(), 2);
        // An empty datagram is still one datagram.
        assert_eq!(segments(&[], None).count(), 1);
        assert_eq!(segments(&[], Some(4)).count(), 1);
    }

    #[test]
    fn gso_sends_and_gro_receives_one_buffer_on_loopback() {
        let r = UdpSocket::bind("127.0.0.1:0").unwrap();
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.connect(r.local_addr().unwrap()).unwrap();
        if !enable_gro(r.as_raw_fd()) {
            eprintln!("SKIPPED: this kernel has no UDP_GRO");
            return;
        }
        crate::rxtime::enable(r.as_raw_fd()).unwrap();
        let data: Vec<u8> = (0..10u8).flat_map(|i| [i; 64]).collect();
        match send_gso(s.as_raw_fd(), &data, 64) {
            Ok(n) => assert_eq!(n, data.len()),
            Err(e) if gso_unsupported(&e) => {
                eprintln!("SKIPPED: this kernel has no UDP GSO ({e})");
                return;
            }
            Err(e) => panic!("{e}"),
        }
        let mut b = crate::MsgBatch::new(2, 65_536).with_rx_times();
        let mut ready = Vec::new();
        crate::wait(
            &[r.as_raw_fd()],
            &[false],
            Some(Duration::from_secs(2)),
            &mut ready,
        )
        .unwrap();
        let n = b.recv(r.as_raw_fd(), 2, libc::MSG_DONTWAIT).unwrap();
        assert_eq!(n, 1, "one coalesced buffer");
        assert_eq!(b.gro_segment(0), Some(64));
        let real = crate::rxtime::wall_ns();
        let stamp = b
            .rx_time_ns(0)
            .expect("a kernel timestamp beside the GRO size");
        assert!(
            stamp <= real && real - stamp < 5_000_000_000,
            "{stamp} vs {real}"
        );
        let got: Vec<u8> = segments(b.data(0), b.gro_segment(0))
            .map(|d| d[0])
            .collect();
        assert_eq!(got, (0..10).collect::<Vec<u8>>());
    }

    #[test]
    fn a_plain_receiver_gets_gso_datagrams_one_by_one() {
        let r = UdpSocket::bind("127.0.0.1:0").unwrap();
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.connect(r.local_addr().unwrap()).unwrap();
        let data = vec![7u8; 3 * 100 + 50];
        match send_gso(s.as_raw_fd(), &data, 100) {
            Ok(_) => {}
            Err(e) if gso_unsupported(&e) => {
                eprintln!("SKIPPED: this kernel has no UDP GSO ({e})");
                return;
            }
            Err(e) => panic!("{e}"),
        }
        r.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = [0u8; 2048];
        let lens: Vec<usize> = (0..4).map(|_| r.recv(&mut buf).unwrap()).collect();
        assert_eq!(lens, vec![100, 100, 100, 50]);
    }

    #[test]
    fn gso_limits() {
        assert_eq!(gso_segments(64), GSO_MAX_SEGMENTS);
        assert_eq!(gso_segments(1200), 54);
        assert_eq!(gso_segments(0), 0);
        assert_eq!(gso_segments(70_000), 0);
        assert!(gso_unsupported(&io::Error::from_raw_os_error(libc::EIO)));
        assert!(!gso_unsupported(&io::Error::from_raw_os_error(
            libc::ECONNREFUSED
        )));
    }
}
