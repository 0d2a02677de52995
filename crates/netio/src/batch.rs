//! A batch of message buffers for `recvmmsg`/`sendmmsg`: one syscall receives or sends many
//! datagrams, each slot with its length, peer address and (when asked) the kernel's receive
//! time, TTL, TOS, GRO segment size and reassembled-fragment size. The UDP hot loops' one
//! buffer type; its grouped GSO sends are in [`crate::offload`].

use std::io;
use std::mem;
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

use crate::{offload, rxtime};

/// A set of message buffers for `recvmmsg`/`sendmmsg`.
pub struct MsgBatch {
    pub(crate) bufs: Vec<u8>,
    pub(crate) buf_size: usize,
    pub(crate) lens: Vec<usize>,
    pub(crate) addrs: Vec<libc::sockaddr_storage>,
    pub(crate) addr_lens: Vec<libc::socklen_t>,
    pub(crate) iovs: Vec<libc::iovec>,
    pub(crate) hdrs: Vec<libc::mmsghdr>,
    /// Control-message space, [`rxtime::CTRL_WORDS`] per slot (`u64`s: a `cmsghdr` needs
    /// 8-byte alignment); empty unless [`MsgBatch::with_rx_times`].
    ctrl: Vec<u64>,
    /// The kernel's receive time of each received slot, ns since the Unix epoch (0: none).
    pub(crate) rx_ns: Vec<u64>,
    /// The GRO segment size of each received slot (0: the slot holds one datagram).
    pub(crate) gro: Vec<usize>,
    /// The headers are laid out for a receive into every slot (slot i in header i), so the
    /// next receive only resets what the kernel wrote back instead of rebuilding them.
    pub(crate) recv_layout: bool,
    /// [`MsgBatch::send_grouped`]: `UDP_SEGMENT` control space per message (empty until the
    /// first grouped send), datagrams per message of the last one, and whether the kernel
    /// refused GSO on this socket.
    pub(crate) gso_ctrl: Vec<u64>,
    pub(crate) runs: Vec<usize>,
    pub(crate) gso_off: bool,
    /// The TTL / hop limit of each received slot, when asked for ([`rxtime::enable_ttl`]).
    pub(crate) rx_ttl: Vec<Option<u8>>,
    /// The TOS / traffic class byte of each received slot, when asked for
    /// ([`rxtime::enable_tos`]).
    pub(crate) rx_tos: Vec<Option<u8>>,
    /// The TOS / traffic class byte to send each slot with ([`MsgBatch::set_tx_tos`]); None:
    /// the socket's own. Reset by every receive.
    pub(crate) tx_tos: Vec<Option<u8>>,
    /// The largest fragment of each received slot reassembled from fragments, when asked for
    /// ([`rxtime::enable_fragsize`]).
    pub(crate) rx_frag: Vec<Option<u16>>,
}

// SAFETY: the raw pointers in iovs/hdrs are rebuilt before every syscall and point only into
// the batch's own vectors; the batch is never shared between threads while in use.
unsafe impl Send for MsgBatch {}

// NO-PANIC: slot indices are the caller's, never read from a packet: `0..capacity()`, or `0..n`
// with `n` returned by `recv` (at most the slots offered). Each vector holds `capacity()`
// slots of `buf_size` bytes from `new` on, and every length stored in `lens` is clamped to
// `buf_size`, so the ranges of a valid slot lie inside `bufs`. An index past `capacity()` is
// a caller bug, not input.
#[allow(clippy::indexing_slicing)]
impl MsgBatch {
    /// `n` messages of up to `buf_size` bytes each.
    pub fn new(n: usize, buf_size: usize) -> MsgBatch {
        let n = n.max(1);
        MsgBatch {
            bufs: vec![0; n * buf_size],
            buf_size,
            lens: vec![0; n],
            // SAFETY: sockaddr_storage and mmsghdr are plain C structs; all-zero is valid.
            addrs: vec![unsafe { mem::zeroed() }; n],
            addr_lens: vec![0; n],
            iovs: vec![
                libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0
                };
                n
            ],
            hdrs: vec![unsafe { mem::zeroed() }; n],
            ctrl: Vec::new(),
            rx_ns: vec![0; n],
            gro: vec![0; n],
            recv_layout: false,
            gso_ctrl: Vec::new(),
            runs: vec![0; n],
            gso_off: false,
            rx_ttl: vec![None; n],
            rx_tos: vec![None; n],
            tx_tos: vec![None; n],
            rx_frag: vec![None; n],
        }
    }

    /// Also collects each datagram's kernel receive time ([`MsgBatch::rx_time_ns`]), for a
    /// socket that has [`rxtime::enable`] on.
    pub fn with_rx_times(mut self) -> MsgBatch {
        self.collect_rx_times();
        self
    }

    /// [`MsgBatch::with_rx_times`] on a batch already in use (from the next `recv` on).
    pub fn collect_rx_times(&mut self) {
        if self.ctrl.is_empty() {
            self.ctrl = vec![0; self.capacity() * rxtime::CTRL_WORDS];
            // The receive headers point at no control space yet: lay them out again.
            self.recv_layout = false;
        }
    }

    /// When the kernel received datagram `i` (ns since the Unix epoch, its wall clock), if the
    /// batch collects receive times and the kernel gave one.
    pub fn rx_time_ns(&self, i: usize) -> Option<u64> {
        Some(self.rx_ns[i]).filter(|&t| t != 0)
    }

    /// With GRO on ([`offload::enable_gro`]) and control messages collected
    /// ([`MsgBatch::with_rx_times`]): the size of each datagram coalesced into slot `i` (the
    /// last may be shorter), or None when the slot holds one datagram. [`offload::segments`]
    /// splits it.
    pub fn gro_segment(&self, i: usize) -> Option<usize> {
        Some(self.gro[i]).filter(|&g| g != 0)
    }

    /// The TTL (IPv4) or hop limit (IPv6) datagram `i` arrived with, if the batch collects
    /// receive times and the socket has [`rxtime::enable_ttl`] on.
    pub fn rx_ttl(&self, i: usize) -> Option<u8> {
        self.rx_ttl[i]
    }

    /// The TOS byte (IPv4) or traffic class (IPv6) datagram `i` arrived with — DSCP and ECN
    /// as the last hop delivered them — if the batch collects control data
    /// ([`MsgBatch::collect_rx_times`]) and the socket has [`rxtime::enable_tos`] on.
    pub fn rx_tos(&self, i: usize) -> Option<u8> {
        self.rx_tos[i]
    }

    /// Sends slot `i` with this TOS byte (IPv4) or traffic class (IPv6) instead of the
    /// socket's, as a control message of [`MsgBatch::send_grouped`] (other sends ignore it);
    /// until the next receive into the slot.
    pub fn set_tx_tos(&mut self, i: usize, tos: Option<u8>) {
        self.tx_tos[i] = tos;
    }

    /// The largest fragment (IP bytes) of datagram `i` when the kernel reassembled it from
    /// fragments, if the batch collects control data and the socket has
    /// [`rxtime::enable_fragsize`] on; None for a datagram that arrived whole.
    pub fn rx_frag(&self, i: usize) -> Option<u16> {
        self.rx_frag[i]
    }

    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    pub fn buf_size(&self) -> usize {
        self.buf_size
    }

    /// The whole buffer of message `i`, to write a message into.
    pub fn buf_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i * self.buf_size..(i + 1) * self.buf_size]
    }

    /// The received (or to-be-sent) bytes of message `i`.
    pub fn data(&self, i: usize) -> &[u8] {
        &self.bufs[i * self.buf_size..i * self.buf_size + self.lens[i]]
    }

    pub fn data_mut(&mut self, i: usize) -> &mut [u8] {
        let start = i * self.buf_size;
        &mut self.bufs[start..start + self.lens[i]]
    }

    pub fn len(&self, i: usize) -> usize {
        self.lens[i]
    }

    pub fn set_len(&mut self, i: usize, len: usize) {
        self.lens[i] = len.min(self.buf_size);
    }

    /// The peer address of received message `i`.
    pub fn addr(&self, i: usize) -> Option<SocketAddr> {
        from_storage(&self.addrs[i], self.addr_lens[i])
    }

    fn prepare(
        &mut self,
        idx: impl Iterator<Item = usize>,
        for_recv: bool,
        with_addr: bool,
    ) -> usize {
        self.recv_layout = false;
        let mut k = 0;
        for i in idx {
            let base = self.bufs[i * self.buf_size..].as_mut_ptr();
            self.iovs[k] = libc::iovec {
                iov_base: base.cast(),
                iov_len: if for_recv {
                    self.buf_size
                } else {
                    self.lens[i]
                },
            };
            // SAFETY: all-zero msghdr is valid; pointers set below stay valid for the call.
            let mut h: libc::msghdr = unsafe { mem::zeroed() };
            h.msg_iov = &mut self.iovs[k];
            h.msg_iovlen = 1;
            if for_recv && !self.ctrl.is_empty() {
                let w = rxtime::CTRL_WORDS;
                h.msg_control = self.ctrl[i * w..(i + 1) * w].as_mut_ptr().cast();
                #[allow(clippy::useless_conversion)] // a `socklen_t` on musl
                let cl = (w * mem::size_of::<u64>()).try_into().unwrap_or_default();
                h.msg_controllen = cl;
            }
            if with_addr {
                h.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
                h.msg_namelen = if for_recv {
                    STORAGE_LEN
                } else {
                    self.addr_lens[i]
                };
            }
            self.hdrs[k] = libc::mmsghdr {
                msg_hdr: h,
                msg_len: 0,
            };
            k += 1;
        }
        k
    }

    /// Receives up to `max` messages into slots `0..n`; returns `n`. `flags` e.g.
    /// `libc::MSG_DONTWAIT` or `libc::MSG_WAITFORONE`.
    pub fn recv(&mut self, fd: RawFd, max: usize, flags: i32) -> io::Result<usize> {
        let max = max.min(self.capacity());
        // iovs/hdrs index k == slot i here, so the iovec used for slot i is iovs[i]. Laid out
        // once for every slot; a receive after a receive resets only what the kernel wrote
        // (a per-packet saving of a loop that reads often into a batch it never sends from).
        if self.recv_layout {
            #[allow(clippy::useless_conversion)] // a `socklen_t` on musl
            let cl = (rxtime::CTRL_WORDS * mem::size_of::<u64>())
                .try_into()
                .unwrap_or_default();
            let ctrl = !self.ctrl.is_empty();
            for m in &mut self.hdrs[..max] {
                m.msg_hdr.msg_namelen = STORAGE_LEN;
                m.msg_hdr.msg_flags = 0;
                if ctrl {
                    m.msg_hdr.msg_controllen = cl;
                }
            }
        } else {
            self.prepare(0..self.capacity(), true, true);
            self.recv_layout = true;
        }
        let k = max;
        // SAFETY: hdrs[..k] point into our own buffers, sized as declared.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                c_count(k),
                flags,
                std::ptr::null_mut(),
            )
        };
        let Ok(n) = usize::try_from(n) else {
            return Err(io::Error::last_os_error());
        };
        for i in 0..n {
            // With `MSG_TRUNC` the kernel reports the datagram's real length, which may
            // exceed the buffer: clamp so `data(i)` stays inside it.
            self.lens[i] = (self.hdrs[i].msg_len as usize).min(self.buf_size);
            self.addr_lens[i] = self.hdrs[i].msg_hdr.msg_namelen;
            let c = if self.ctrl.is_empty() {
                rxtime::Control::default()
            } else {
                // The header's control pointer still points into `ctrl` (not moved since
                // `prepare`); the kernel set `msg_controllen` to what it wrote.
                rxtime::from_control(&self.hdrs[i].msg_hdr)
            };
            self.tx_tos[i] = None;
            (
                self.rx_ns[i],
                self.rx_ttl[i],
                self.rx_tos[i],
                self.rx_frag[i],
            ) = (c.time_ns, c.ttl, c.tos, c.frag);
            self.gro[i] = if self.ctrl.is_empty() {
                0
            } else {
                offload::gro_from_control(&self.hdrs[i].msg_hdr)
            };
        }
        Ok(n)
    }

    /// Sends the messages at `idx` (to their stored peer address when `with_addr`, else on
    /// a connected socket). Returns how many left; stops at the first error after at least one.
    pub fn send(
        &mut self,
        fd: RawFd,
        idx: &[usize],
        with_addr: bool,
        flags: i32,
    ) -> io::Result<usize> {
        let k = self.prepare(idx.iter().copied(), false, with_addr);
        let mut done = 0;
        while done < k {
            // SAFETY: as in recv.
            let n = unsafe {
                libc::sendmmsg(fd, self.hdrs[done..].as_mut_ptr(), c_count(k - done), flags)
            };
            let Ok(n) = usize::try_from(n) else {
                let e = io::Error::last_os_error();
                if done > 0 {
                    return Ok(done);
                }
                return Err(e);
            };
            done += n;
        }
        Ok(done)
    }

    /// Sends slots `0..n` on a connected socket.
    pub fn send_first(&mut self, fd: RawFd, n: usize, flags: i32) -> io::Result<usize> {
        let k = self.prepare(0..n, false, false);
        // SAFETY: as in recv.
        let r = unsafe { libc::sendmmsg(fd, self.hdrs.as_mut_ptr(), c_count(k), flags) };
        usize::try_from(r).map_err(|_| io::Error::last_os_error())
    }
}

/// The size of a `sockaddr_storage`, as the kernel takes it.
// NO-PANIC: the struct is 128 bytes on Linux, far inside `socklen_t` (u32).
#[allow(clippy::cast_possible_truncation)]
const STORAGE_LEN: libc::socklen_t = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;

/// A message count for `recvmmsg`/`sendmmsg` (at most the batch's capacity, far below
/// `c_uint::MAX`; saturating would only offer the kernel fewer messages).
pub(crate) fn c_count(k: usize) -> libc::c_uint {
    libc::c_uint::try_from(k).unwrap_or(libc::c_uint::MAX)
}

/// The first `len` bytes of an address (all of it at most), for comparing two peers.
pub(crate) fn storage_bytes(s: &libc::sockaddr_storage, len: libc::socklen_t) -> &[u8] {
    // SAFETY: a sockaddr_storage is plain bytes; the slice covers at most the whole struct.
    let all: &[u8] = unsafe {
        std::slice::from_raw_parts(
            (s as *const libc::sockaddr_storage).cast(),
            mem::size_of::<libc::sockaddr_storage>(),
        )
    };
    all.get(..len as usize).unwrap_or(all)
}

fn from_storage(s: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    match s.ss_family as i32 {
        libc::AF_INET if len as usize >= mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: family says this storage holds a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(s as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                u32::from_be(a.sin_addr.s_addr).into(),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 if len as usize >= mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: family says this storage holds a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(s as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                a.sin6_addr.s6_addr.into(),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
pub(crate) mod tests {
    use super::*;
    use crate::wait;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    /// Receives until `n` datagrams are in `inb` (bounded: 100 waits of 100 ms); how many came.
    pub(crate) fn recv_n(inb: &mut MsgBatch, fd: RawFd, n: usize) -> usize {
        let mut got = 0;
        let mut ready = Vec::new();
        for _ in 0..100 {
            wait(
                &[fd],
                &[false],
                Some(Duration::from_millis(100)),
                &mut ready,
            )
            .unwrap();
            got += inb.recv(fd, n - got, libc::MSG_DONTWAIT).unwrap_or(0);
            if got == n {
                break;
            }
        }
        got
    }

    #[test]
    fn batch_round_trip_over_loopback() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        let mut out = MsgBatch::new(4, 64);
        for i in 0..3 {
            out.buf_mut(i)[..3].copy_from_slice(&[i as u8; 3]);
            out.set_len(i, 3);
        }
        assert_eq!(out.send_first(a.as_raw_fd(), 3, 0).unwrap(), 3);
        let mut inb = MsgBatch::new(4, 64);
        assert_eq!(recv_n(&mut inb, b.as_raw_fd(), 3), 3);
        assert_eq!(inb.data(0), &[0, 0, 0]);
        assert_eq!(inb.addr(0), Some(a.local_addr().unwrap()));
        // Echo slot 1 back to its sender by address.
        assert_eq!(inb.send(b.as_raw_fd(), &[1], true, 0).unwrap(), 1);
        let mut buf = [0u8; 16];
        a.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], &[1, 1, 1]);
    }

    /// Found by the no-panic audit: with `MSG_TRUNC` the kernel reports a datagram's real
    /// length, and a peer's 100-byte datagram into a 16-byte slot made `data(0)` slice past
    /// the slot (a panic). The length is now clamped to the slot.
    #[test]
    fn a_truncated_datagram_stays_inside_its_slot() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.send_to(&[7u8; 100], b.local_addr().unwrap()).unwrap();
        let mut inb = MsgBatch::new(2, 16);
        let mut ready = Vec::new();
        let mut got = 0;
        for _ in 0..100 {
            wait(
                &[b.as_raw_fd()],
                &[false],
                Some(Duration::from_millis(100)),
                &mut ready,
            )
            .unwrap();
            got = inb
                .recv(b.as_raw_fd(), 1, libc::MSG_DONTWAIT | libc::MSG_TRUNC)
                .unwrap_or(0);
            if got == 1 {
                break;
            }
        }
        assert_eq!(got, 1);
        assert_eq!(inb.len(0), 16);
        assert_eq!(inb.data(0), &[7u8; 16]);
        assert_eq!(inb.data_mut(0).len(), 16);
    }
}
