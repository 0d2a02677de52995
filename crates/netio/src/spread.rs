//! A GRO receive spread back into one datagram per slot, for a responder that answers every
//! datagram in its own slot of a batch.
//!
//! Why: with `UDP_GRO` one receive returns a run of one source's datagrams as one buffer, and
//! the kernel does its per-datagram work once per run — on loopback a GSO sender's run is not
//! cut into datagrams at all. Without it, a GSO run is cut at the receiving socket and every
//! datagram walks the receive path and the queue on its own. A responder that answers,
//! charges and counts each datagram still wants them apart: [`Spread`] copies each into its
//! own slot of the answer batch (a few dozen bytes for a probe packet), with the source
//! address, receive time and TOS byte of the run it came in, and keeps where it stopped, so
//! an answer batch of any size takes the datagrams in order, none skipped or split.

use std::io;
use std::os::fd::RawFd;

use crate::MsgBatch;

/// Receive buffers with GRO on, and the datagrams of the last receive not spread yet.
pub struct Spread {
    inb: MsgBatch,
    /// Slots filled by the last receive.
    n: usize,
    /// The next slot to spread, and the offset of its next datagram.
    slot: usize,
    off: usize,
}

/// A GRO buffer holds up to 64 KiB.
const GRO_BUF: usize = 65_536;

impl Spread {
    /// `slots` receive buffers of 64 KiB (pages never written stay unallocated). The socket
    /// must have GRO on ([`crate::offload::enable_gro`]); its control data (the run's segment
    /// size) is collected by these buffers.
    pub fn new(slots: usize) -> Spread {
        Spread {
            inb: MsgBatch::new(slots, GRO_BUF).with_rx_times(),
            n: 0,
            slot: 0,
            off: 0,
        }
    }

    /// Whether datagrams of the last receive wait to be spread (the next
    /// [`recv_into`](Spread::recv_into) returns them without a receive).
    pub fn pending(&self) -> bool {
        self.slot < self.n
    }

    /// Fills `out`'s slots `0..k` with one datagram each and returns `k`: the datagrams left
    /// from the last receive, else those of a new receive (`flags` as
    /// [`MsgBatch::recv`]'s). Each slot gets its datagram's bytes (clamped to the slot) and
    /// its run's source address, receive time, TTL, TOS byte and fragment size; no GRO
    /// segment size, and no TOS to send with.
    pub fn recv_into(&mut self, fd: RawFd, out: &mut MsgBatch, flags: i32) -> io::Result<usize> {
        if !self.pending() {
            self.slot = 0;
            self.off = 0;
            self.n = 0;
            self.n = self.inb.recv(fd, self.inb.capacity(), flags)?;
        }
        let mut k = 0;
        while k < out.capacity() && self.slot < self.n {
            let i = self.slot;
            let data = self.inb.data(i);
            let seg = self.inb.gro_segment(i).unwrap_or(usize::MAX);
            let rest = data.get(self.off..).unwrap_or_default();
            let one = rest.get(..seg.min(rest.len())).unwrap_or_default();
            out.copy_datagram(k, one, &self.inb, i);
            self.off += one.len();
            // An empty datagram is still one: the slot moves on once its bytes are taken.
            if self.off >= data.len() {
                self.slot += 1;
                self.off = 0;
            }
            k += 1;
        }
        Ok(k)
    }
}

// NO-PANIC: `k` and `i` are slot indices below each batch's capacity (see `MsgBatch`'s own
// impl); the copy is clamped to the slot's buffer.
#[allow(clippy::indexing_slicing)]
impl MsgBatch {
    /// Slot `k` becomes datagram `data`, received as slot `i` of `from` was.
    fn copy_datagram(&mut self, k: usize, data: &[u8], from: &MsgBatch, i: usize) {
        let n = data.len().min(self.buf_size);
        let start = k * self.buf_size;
        self.bufs[start..start + n].copy_from_slice(&data[..n]);
        self.lens[k] = n;
        self.addrs[k] = from.addrs[i];
        self.addr_lens[k] = from.addr_lens[i];
        self.rx_ns[k] = from.rx_ns[i];
        self.rx_ttl[k] = from.rx_ttl[i];
        self.rx_tos[k] = from.rx_tos[i];
        self.rx_frag[k] = from.rx_frag[i];
        self.tx_tos[k] = None;
        self.gro[k] = 0;
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests {
    use super::*;
    use crate::offload::{enable_gro, gso_unsupported, send_gso};
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    /// A GSO run of ten (the last shorter), a datagram from another socket and an empty one,
    /// spread over an answer batch of four slots: every datagram in its own slot, in order,
    /// with its own source, over four calls — and only the first of them receives.
    #[test]
    fn a_gro_run_is_spread_one_datagram_a_slot_across_calls() {
        let r = UdpSocket::bind("127.0.0.1:0").unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(r.local_addr().unwrap()).unwrap();
        if !enable_gro(r.as_raw_fd()) {
            eprintln!("SKIPPED: this kernel has no UDP_GRO");
            return;
        }
        let mut run: Vec<u8> = (0..9u8).flat_map(|i| [i; 64]).collect();
        run.extend([9u8; 20]);
        match send_gso(a.as_raw_fd(), &run, 64) {
            Ok(n) => assert_eq!(n, run.len()),
            Err(e) if gso_unsupported(&e) => {
                eprintln!("SKIPPED: this kernel has no UDP GSO ({e})");
                return;
            }
            Err(e) => panic!("{e}"),
        }
        b.send_to(&[10u8; 100], r.local_addr().unwrap()).unwrap();
        b.send_to(&[], r.local_addr().unwrap()).unwrap();
        let mut spread = Spread::new(8);
        let mut out = MsgBatch::new(4, 2048);
        let mut got: Vec<(Option<u8>, usize, u16)> = Vec::new();
        let mut ready = Vec::new();
        for _ in 0..100 {
            if got.len() == 12 {
                break;
            }
            if !spread.pending() {
                crate::wait(
                    &[r.as_raw_fd()],
                    &[false],
                    Some(Duration::from_millis(100)),
                    &mut ready,
                )
                .unwrap();
            }
            let k = spread
                .recv_into(r.as_raw_fd(), &mut out, libc::MSG_DONTWAIT)
                .unwrap_or(0);
            for j in 0..k {
                let d = out.data(j);
                assert!(d.iter().all(|&x| x == d[0]), "one datagram a slot");
                assert_eq!(out.gro_segment(j), None);
                got.push((d.first().copied(), d.len(), out.addr(j).unwrap().port()));
            }
        }
        let (pa, pb) = (
            a.local_addr().unwrap().port(),
            b.local_addr().unwrap().port(),
        );
        let mut want: Vec<(Option<u8>, usize, u16)> = (0..9).map(|i| (Some(i), 64, pa)).collect();
        want.push((Some(9), 20, pa));
        want.push((Some(10), 100, pb));
        want.push((None, 0, pb));
        assert_eq!(got, want);
        assert!(!spread.pending());
    }
}
