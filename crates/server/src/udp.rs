//! The UDP responder: one thread per socket, `recvmmsg` in, answers rewritten in place,
//! `sendmmsg` out — no allocation and two syscalls per batch, so it is never the bottleneck.
//!
//! Safe on a public address:
//! - an answer is never larger than the datagram that caused it (a `Request` asking for more
//!   is clamped and marked `status = CLAMPED`), so the server cannot amplify a spoofed request;
//! - per-source packet and byte budgets ([`crate::limiter`]) bound what any one source can make
//!   it send;
//! - with `--token`, only framed packets carrying the token are answered (raw echo is off);
//! - raw echo never answers what could be another echo service ([`crate::loopguard`]), so a
//!   forged datagram cannot start an endless ping-pong between two servers (or with itself);
//! - every refusal is counted (the server's log task summarizes them on stderr).

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_netio::MsgBatch;
use npt_wire::frame::{self, status, Header, Kind};

use crate::limiter::{Limiter, Verdict};
use crate::loopguard::{self, LoopGuard};
use crate::Shared;

const BATCH: usize = 32;
const MAX_DATAGRAM: usize = 65_536;

#[derive(Default)]
struct Tally {
    rx: u64,
    rx_bytes: u64,
    tx: u64,
    tx_bytes: u64,
    refused_token: u64,
    refused_rate: u64,
    refused_loop: u64,
    malformed: u64,
    clamped: u64,
}

pub(crate) fn run(sock: UdpSocket, shared: Arc<Shared>) {
    let fd = sock.as_raw_fd();
    let _ = sock.set_read_timeout(Some(Duration::from_millis(100)));
    let mut batch = MsgBatch::new(BATCH, MAX_DATAGRAM);
    let mut limiter = Limiter::new(shared.cfg.limits);
    let own_port = sock.local_addr().map_or(0, |a| a.port());
    let mut guard = LoopGuard::new(own_port);
    let epoch = Instant::now();
    let mut send_idx: Vec<usize> = Vec::with_capacity(BATCH);
    let token = shared.cfg.token;
    while !shared.stop.load(Ordering::Relaxed) {
        let n = match batch.recv(fd, BATCH, libc::MSG_WAITFORONE) {
            Ok(n) => n,
            Err(e) => {
                match e.kind() {
                    std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::Interrupted => {}
                    _ => {
                        shared.counters.udp_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                continue;
            }
        };
        let now = epoch.elapsed().as_nanos() as u64;
        let mut t = Tally::default();
        send_idx.clear();
        for i in 0..n {
            let len = batch.len(i);
            t.rx += 1;
            t.rx_bytes += len as u64;
            let Some(peer) = batch.addr(i) else {
                t.malformed += 1;
                continue;
            };
            match limiter.check(now, peer, len) {
                Verdict::Allow => {}
                Verdict::PacketLimit | Verdict::ByteLimit => {
                    t.refused_rate += 1;
                    continue;
                }
            }
            if answer(&mut batch, i, token, &mut t, |data| {
                guard.check(now, peer, data)
            }) {
                send_idx.push(i);
            }
        }
        if !send_idx.is_empty() {
            if let Ok(sent) = batch.send(fd, &send_idx, true, 0) {
                t.tx += sent as u64;
                t.tx_bytes += send_idx[..sent]
                    .iter()
                    .map(|&i| batch.len(i) as u64)
                    .sum::<u64>();
            } else {
                shared.counters.udp_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        let c = &shared.counters;
        c.udp_rx.fetch_add(t.rx, Ordering::Relaxed);
        c.udp_rx_bytes.fetch_add(t.rx_bytes, Ordering::Relaxed);
        c.udp_tx.fetch_add(t.tx, Ordering::Relaxed);
        c.udp_tx_bytes.fetch_add(t.tx_bytes, Ordering::Relaxed);
        if t.refused_token + t.refused_rate + t.refused_loop + t.malformed + t.clamped > 0 {
            c.udp_refused_token
                .fetch_add(t.refused_token, Ordering::Relaxed);
            c.udp_refused_rate
                .fetch_add(t.refused_rate, Ordering::Relaxed);
            c.udp_refused_loop
                .fetch_add(t.refused_loop, Ordering::Relaxed);
            c.udp_malformed.fetch_add(t.malformed, Ordering::Relaxed);
            c.udp_clamped.fetch_add(t.clamped, Ordering::Relaxed);
        }
    }
}

/// Rewrites datagram `i` into its answer in place; false = send nothing. `raw_ok` decides
/// whether a raw (unframed) datagram may be echoed (the loop guard).
fn answer(
    batch: &mut MsgBatch,
    i: usize,
    token: Option<u64>,
    t: &mut Tally,
    raw_ok: impl FnOnce(&[u8]) -> loopguard::Verdict,
) -> bool {
    let len = batch.len(i);
    let data = batch.data_mut(i);
    if !frame::is_framed(data) {
        if token.is_some() {
            // Raw echo cannot carry a token: refused when the server requires one.
            t.refused_token += 1;
            return false;
        }
        if raw_ok(data) != loopguard::Verdict::Answer {
            t.refused_loop += 1;
            return false;
        }
        return true; // plain echo, same size
    }
    let Ok(mut h) = Header::decode(data) else {
        t.malformed += 1;
        return false;
    };
    if let Some(tok) = token {
        if h.token != tok {
            t.refused_token += 1;
            return false;
        }
    }
    if h.frame_len as usize != len {
        t.malformed += 1;
        return false;
    }
    match h.kind {
        Kind::Echo => {
            frame::set_kind_status(data, Kind::EchoReply, status::OK);
            true
        }
        Kind::Request => {
            let want = if h.reply_len == 0 {
                len
            } else {
                h.reply_len as usize
            };
            let mut reply = want.max(frame::HEADER_LEN);
            h.status = status::OK;
            if reply > len {
                // Never larger than what caused it: no amplification.
                reply = len;
                h.status = status::CLAMPED;
                t.clamped += 1;
            }
            h.kind = Kind::Response;
            h.frame_len = reply as u32;
            let _ = h.encode(data);
            batch.set_len(i, reply);
            true
        }
        Kind::EchoReply | Kind::Response => {
            // A reply sent to us: answering it could start a loop between two servers.
            t.malformed += 1;
            false
        }
    }
}
