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

/// `UDP_SEGMENT`'s control space, CMSG_SPACE(2) = 24 bytes, in words.
const GSO_CTRL_WORDS: usize = 3;
/// A grouped send's control space per message: `UDP_SEGMENT` and a TOS, `CMSG_SPACE` 24 bytes each.
const GROUPED_CTRL_WORDS: usize = 6;

// NO-PANIC: slot indices are the caller's (`idx`, each below `capacity()`), as in `MsgBatch`'s
// own impl; a grouped send writes at most `idx.len() <= capacity()` iovecs, headers and
// control blocks, each vector holding `capacity()` of them.
#[allow(clippy::indexing_slicing)]
impl crate::MsgBatch {
    /// Sends the messages at `idx` to their stored peers, as [`crate::MsgBatch::send`] with
    /// addresses does, except that a run of consecutive messages to the same peer, all as long
    /// as the first but the last (which may be shorter), leaves as one GSO message: the kernel
    /// walks its send path once for the run and cuts it into datagrams at the device (on
    /// loopback, at the receiving socket). Returns how many *datagrams* left; stops at the
    /// first error after at least one, as `send` does. A socket whose kernel refuses GSO
    /// sends one message per datagram from then on.
    ///
    /// A slot with its own TOS byte ([`crate::MsgBatch::set_tx_tos`]) is sent with it (an
    /// `IP_TOS` or `IPV6_TCLASS` control message, by the peer's family); only slots of one TOS
    /// share a GSO message.
    pub fn send_grouped(&mut self, fd: RawFd, idx: &[usize]) -> io::Result<usize> {
        let marked = idx.iter().any(|&i| self.tx_tos[i].is_some());
        if (self.gso_off || idx.len() < 2) && !marked {
            return self.send(fd, idx, true, 0);
        }
        self.recv_layout = false;
        if self.gso_ctrl.is_empty() {
            self.gso_ctrl = vec![0; self.capacity() * GROUPED_CTRL_WORDS];
        }
        let (mut m, mut k, mut j) = (0, 0, 0);
        while j < idx.len() {
            let first = idx[j];
            let seg = self.lens[first];
            let max = if self.gso_off {
                1
            } else {
                gso_segments(seg).max(1)
            };
            let tos = self.tx_tos[first];
            let mut run = 1;
            while j + run < idx.len() && run < max {
                let next = idx[j + run];
                let l = self.lens[next];
                if l == 0 || l > seg || !self.same_peer(first, next) || self.tx_tos[next] != tos {
                    break;
                }
                run += 1;
                if l < seg {
                    break; // only the last datagram of a run may be shorter
                }
            }
            for r in 0..run {
                let i = idx[j + r];
                self.iovs[k + r] = libc::iovec {
                    iov_base: self.bufs[i * self.buf_size..].as_mut_ptr().cast(),
                    iov_len: self.lens[i],
                };
            }
            // SAFETY: all-zero msghdr is valid; every pointer set below points into this
            // batch's own vectors, which are not resized until the call returns.
            let mut h: libc::msghdr = unsafe { mem::zeroed() };
            h.msg_iov = &mut self.iovs[k];
            h.msg_iovlen = run;
            h.msg_name = (&mut self.addrs[first] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = self.addr_lens[first];
            if run > 1 || tos.is_some() {
                let c = &mut self.gso_ctrl[m * GROUPED_CTRL_WORDS..(m + 1) * GROUPED_CTRL_WORDS];
                c.fill(0);
                h.msg_control = c.as_mut_ptr().cast();
                let v6 = i32::from(self.addrs[first].ss_family) == libc::AF_INET6;
                // SAFETY: CMSG_* are arithmetic on our 48-byte, 8-aligned control block, which
                // holds both messages (24 + 24 bytes); `msg_controllen` is set to the space of
                // the ones written before each CMSG_NXTHDR/FIRSTHDR walk.
                unsafe {
                    let gso = if run > 1 { libc::CMSG_SPACE(2) } else { 0 };
                    let tos_space = if tos.is_some() {
                        libc::CMSG_SPACE(4)
                    } else {
                        0
                    };
                    h.msg_controllen = (gso + tos_space) as usize;
                    let mut cm = libc::CMSG_FIRSTHDR(&h);
                    if run > 1 {
                        (*cm).cmsg_level = libc::SOL_UDP;
                        (*cm).cmsg_type = UDP_SEGMENT;
                        (*cm).cmsg_len = libc::CMSG_LEN(2) as usize;
                        let seg16 = u16::try_from(seg).unwrap_or(u16::MAX);
                        std::ptr::write_unaligned(libc::CMSG_DATA(cm).cast::<u16>(), seg16);
                        cm = libc::CMSG_NXTHDR(&h, cm);
                    }
                    if let (Some(t), false) = (tos, cm.is_null()) {
                        (*cm).cmsg_level = if v6 {
                            libc::IPPROTO_IPV6
                        } else {
                            libc::IPPROTO_IP
                        };
                        (*cm).cmsg_type = if v6 { libc::IPV6_TCLASS } else { libc::IP_TOS };
                        (*cm).cmsg_len = libc::CMSG_LEN(4) as usize;
                        let v = libc::c_int::from(t);
                        std::ptr::write_unaligned(libc::CMSG_DATA(cm).cast::<libc::c_int>(), v);
                    }
                }
            }
            self.hdrs[m] = libc::mmsghdr {
                msg_hdr: h,
                msg_len: 0,
            };
            self.runs[m] = run;
            m += 1;
            k += run;
            j += run;
        }
        let (mut done, mut sent) = (0, 0);
        while done < m {
            // SAFETY: hdrs[done..m] were built above and point into our own buffers.
            let n = unsafe {
                libc::sendmmsg(
                    fd,
                    self.hdrs[done..].as_mut_ptr(),
                    crate::batch::c_count(m - done),
                    0,
                )
            };
            if let Ok(n) = usize::try_from(n) {
                sent += self.runs[done..done + n].iter().sum::<usize>();
                done += n;
                continue;
            }
            let e = io::Error::last_os_error();
            if self.runs[done] > 1 && gso_unsupported(&e) {
                // This kernel, socket or route takes no GSO: this run and everything after
                // it go one datagram per message.
                self.gso_off = true;
                let rest: usize = self.runs[done..m].iter().sum();
                return Ok(sent + self.send_grouped(fd, &idx[idx.len() - rest..])?);
            }
            return if sent > 0 { Ok(sent) } else { Err(e) };
        }
        Ok(sent)
    }

    /// Sends slots `first..first + n` on a connected socket as one GSO message: datagrams of
    /// `len(first)` bytes each (the caller keeps every slot that long but the last, which may
    /// be shorter), one iovec per slot, so the slots need not fill their buffers. Returns the
    /// bytes handed over (all of them) or the error, as [`send_gso`].
    pub fn send_gso_slots(&mut self, fd: RawFd, first: usize, n: usize) -> io::Result<usize> {
        self.recv_layout = false;
        for (k, i) in (first..first + n).enumerate() {
            self.iovs[k] = libc::iovec {
                iov_base: self.bufs[i * self.buf_size..].as_mut_ptr().cast(),
                iov_len: self.lens[i],
            };
        }
        send_segmented(fd, &mut self.iovs[..n], self.lens[first])
    }

    /// Whether slots `a` and `b` hold the same peer address.
    fn same_peer(&self, a: usize, b: usize) -> bool {
        let (la, lb) = (self.addr_lens[a], self.addr_lens[b]);
        la == lb
            && crate::batch::storage_bytes(&self.addrs[a], la)
                == crate::batch::storage_bytes(&self.addrs[b], lb)
    }
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

    /// A responder's batch: datagrams from two peers, interleaved, answered in place. Runs to
    /// one peer leave as GSO messages; every peer gets each of its answers, in order, whole.
    #[test]
    fn grouped_answers_reach_each_peer_in_order() {
        let srv = UdpSocket::bind("127.0.0.1:0").unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = srv.local_addr().unwrap();
        // a: 1..=5 (64 B, the last 20 B), b: 10, 11 (64 B), a again: 6 (64 B).
        let sends: [(&UdpSocket, u8, usize); 8] = [
            (&a, 1, 64),
            (&a, 2, 64),
            (&a, 3, 64),
            (&a, 4, 64),
            (&a, 5, 20),
            (&b, 10, 64),
            (&b, 11, 64),
            (&a, 6, 64),
        ];
        for (s, v, n) in sends {
            s.send_to(&vec![v; n], to).unwrap();
        }
        for gso in [true, false] {
            let mut batch = crate::MsgBatch::new(16, 2048);
            batch.gso_off = !gso;
            let mut got = 0;
            let mut ready = Vec::new();
            for _ in 0..100 {
                if got == sends.len() {
                    break;
                }
                crate::wait(
                    &[srv.as_raw_fd()],
                    &[false],
                    Some(Duration::from_millis(100)),
                    &mut ready,
                )
                .unwrap();
                // Receive everything into slots 0.. (one call may not see all 8 yet).
                let n = batch
                    .recv(srv.as_raw_fd(), sends.len() - got, libc::MSG_DONTWAIT)
                    .unwrap_or(0);
                // Keep what arrived: answer each receive's datagrams right away.
                let idx: Vec<usize> = (0..n).collect();
                assert_eq!(batch.send_grouped(srv.as_raw_fd(), &idx).unwrap(), n);
                if gso && n == sends.len() {
                    // All eight in one batch (they were queued before the first receive):
                    // three messages, a's five (the last shorter), b's two, a's one.
                    assert_eq!(&batch.runs[..3], &[5, 2, 1]);
                }
                got += n;
            }
            assert_eq!(got, sends.len());
            a.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut buf = [0u8; 4096];
            let mut read = |s: &UdpSocket, k: usize| -> Vec<(u8, usize)> {
                (0..k)
                    .map(|_| {
                        let n = s.recv(&mut buf).unwrap();
                        assert!(
                            buf[..n].iter().all(|&x| x == buf[0]),
                            "one datagram, one value"
                        );
                        (buf[0], n)
                    })
                    .collect()
            };
            assert_eq!(
                read(&a, 6),
                vec![(1, 64), (2, 64), (3, 64), (4, 64), (5, 20), (6, 64)],
                "gso {gso}"
            );
            assert_eq!(read(&b, 2), vec![(10, 64), (11, 64)], "gso {gso}");
            // The second round sends the same datagrams again.
            for (s, v, n) in sends {
                if gso {
                    s.send_to(&vec![v; n], to).unwrap();
                }
            }
        }
    }

    /// Answers with their own TOS byte leave with it, with or without GSO: runs of one TOS are
    /// grouped, a change of TOS starts a new message, and unmarked slots keep the socket's.
    #[test]
    fn grouped_answers_carry_each_slots_tos() {
        let srv = UdpSocket::bind("127.0.0.1:0").unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        crate::rxtime::enable_tos(a.as_raw_fd(), false).unwrap();
        let to = srv.local_addr().unwrap();
        let tos = [
            Some(0xb8u8),
            Some(0xb8),
            Some(0x2a),
            None,
            Some(0x01),
            Some(0x01),
        ];
        for gso in [true, false] {
            for k in 0..tos.len() {
                a.send_to(&[u8::try_from(k).unwrap(); 64], to).unwrap();
            }
            let mut batch = crate::MsgBatch::new(8, 2048);
            batch.gso_off = !gso;
            let mut got = 0;
            let mut ready = Vec::new();
            for _ in 0..100 {
                if got == tos.len() {
                    break;
                }
                crate::wait(
                    &[srv.as_raw_fd()],
                    &[false],
                    Some(Duration::from_millis(100)),
                    &mut ready,
                )
                .unwrap();
                let n = batch
                    .recv(srv.as_raw_fd(), tos.len() - got, libc::MSG_DONTWAIT)
                    .unwrap_or(0);
                for i in 0..n {
                    let k = usize::from(batch.data(i)[0]);
                    batch.set_tx_tos(i, tos[k]);
                }
                let idx: Vec<usize> = (0..n).collect();
                assert_eq!(batch.send_grouped(srv.as_raw_fd(), &idx).unwrap(), n);
                got += n;
            }
            assert_eq!(got, tos.len());
            let mut inb = crate::MsgBatch::new(8, 2048).with_rx_times();
            a.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut seen = vec![None; tos.len()];
            let mut read = 0;
            while read < tos.len() {
                let n = inb.recv(a.as_raw_fd(), 8, 0).unwrap();
                for i in 0..n {
                    // GRO is off on this socket: one datagram a slot.
                    seen[usize::from(inb.data(i)[0])] = inb.rx_tos(i);
                }
                read += n;
            }
            let want: Vec<Option<u8>> = tos.iter().map(|t| Some(t.unwrap_or(0))).collect();
            assert_eq!(seen, want, "gso {gso}");
        }
    }

    /// Slots shorter than the batch's buffers (a 64-byte probe packet in a batch sized for a
    /// longer flow query) leave as one GSO message and arrive as their own datagrams.
    #[test]
    fn gso_from_slots_shorter_than_their_buffers() {
        let r = UdpSocket::bind("127.0.0.1:0").unwrap();
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.connect(r.local_addr().unwrap()).unwrap();
        let mut out = crate::MsgBatch::new(8, 128);
        for i in 0..5u8 {
            let n = if i == 4 { 20 } else { 64 };
            out.buf_mut(usize::from(i))[..n].fill(i + 1);
            out.set_len(usize::from(i), n);
        }
        match out.send_gso_slots(s.as_raw_fd(), 0, 5) {
            Ok(n) => assert_eq!(n, 4 * 64 + 20),
            Err(e) if gso_unsupported(&e) => {
                eprintln!("SKIPPED: this kernel has no UDP GSO ({e})");
                return;
            }
            Err(e) => panic!("{e}"),
        }
        r.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = [0u8; 256];
        let got: Vec<(u8, usize)> = (0..5)
            .map(|_| {
                let n = r.recv(&mut buf).unwrap();
                assert!(
                    buf[..n].iter().all(|&x| x == buf[0]),
                    "one datagram, one slot"
                );
                (buf[0], n)
            })
            .collect();
        assert_eq!(got, vec![(1, 64), (2, 64), (3, 64), (4, 64), (5, 20)]);
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
