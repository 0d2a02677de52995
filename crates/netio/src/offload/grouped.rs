//! A responder's answers sent with GSO: [`crate::MsgBatch::send_grouped`] sends each run of
//! consecutive slots to one peer (one length, one TOS) as one `UDP_SEGMENT` message, and
//! [`crate::MsgBatch::send_gso_slots`] sends slots to a connected peer as one. Apart from the
//! single-buffer offload because it is a batch's own send: it lays out the batch's headers,
//! addresses and control blocks.

use std::io;
use std::mem;
use std::os::fd::RawFd;

use super::{gso_segments, gso_unsupported, send_segmented, UDP_SEGMENT};

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

#[cfg(test)]
mod tests {
    use super::super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

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
}
