//! The UDP responder: one thread per socket, `recvmmsg` in (with GRO, a GSO sender's run as
//! one buffer, spread back into one datagram per slot: [`npt_netio::spread`]), answers
//! rewritten in place, `sendmmsg` out (a run of answers to one source as one GSO message) — no
//! allocation and two syscalls per batch, so it is never the bottleneck.
//!
//! Safe on a public address:
//! - an answer is never larger than the datagram that caused it (a `Request` asking for more
//!   is clamped and marked `status = CLAMPED`), so the server cannot amplify a spoofed request;
//! - per-source packet and byte budgets ([`crate::limiter`]) bound what any one source can make
//!   it send;
//! - with `--token`, a source must first complete the keyed handshake ([`npt_wire::auth`]):
//!   only framed packets sealed with its session key, from the address it did the handshake
//!   from, with a sequence number not seen before, are answered (raw echo is off); handshake
//!   replies are exactly as long as the message that caused them;
//! - sources that proved nothing get [`Limits::safe`](crate::Limits::safe) unless the server
//!   was opened (`--open-limits`); authenticated sessions and local sources
//!   ([`crate::is_local`]) get the open limits;
//! - raw echo answers local sources only, unless `--raw-echo` (it would reflect anything);
//! - raw echo never answers what could be another echo service ([`crate::loopguard`]), so a
//!   forged datagram cannot start an endless ping-pong between two servers (or with itself);
//! - UDP down (`npt bulk udp://… --direction down`), the one answer larger than its request,
//!   only for `--token` sessions and loopback sources, charged to the open limits
//!   ([`crate::bulk_udp`]); everyone else's pull is refused with a bare header;
//! - a client that asks (`REFLECT`, [`npt_wire::reflect`]) learns what the server saw of its
//!   flow — receive count, receive time, dwell, refusals — inside the reply its request paid
//!   for; a refused `REFLECT` frame may get a header-only *notice* (never larger than the
//!   frame, a few per second per source, [`crate::reflect`]);
//! - a client that asks (`MARK`, [`npt_wire::marking`]) gets its reply with the DSCP/ECN it
//!   chose (never CE: the server does not claim congestion it did not see) and learns the
//!   DSCP/ECN its request arrived with, in the reply's header: same length, counted (`marked`);
//! - an idle callback (`npt lifetime`, [`crate::idle`]) goes only to the address its request
//!   came from, no longer than the request, within bounded gaps and counts;
//! - a down MTU probe (`npt mtu`, [`mtu`]) is no longer than its request unless the source is
//!   trusted (`--token`, exempt loopback), charged to the source's budget and counted;
//! - every refusal is counted (the server's log task summarizes them on stderr).
//!
//! One job per file: the loop (here), one datagram's answer ([`answer`]), UDP down bursts
//! ([`burst`]), MTU probes ([`mtu`]), the batch's counts ([`tally`]).

mod answer;
mod burst;
mod mtu;
mod tally;

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_netio::spread::Spread;
use npt_netio::{rxtime, MsgBatch};
use npt_wire::auth::{self, ServerAuth, Sessions};
use npt_wire::frame::{status, Header};

use crate::bulk_udp::{Flows, MAX_FLOWS};
use crate::idle::Callbacks;
use crate::limiter::{Limiter, Verdict};
use crate::loopguard::{self, LoopGuard};
use crate::reflect::{self, FlowTable, Notices, Reflector};
use crate::Shared;
use answer::{answer, answer_authenticated, Cx, Refused};
use burst::{send_burst, Burst};
use tally::Tally;

/// Authenticated sessions one UDP socket keeps at once.
pub const MAX_SESSIONS: usize = 4096;
/// A session with no valid frame for this long may be forgotten (when the table is full).
pub const SESSION_IDLE_NS: u64 = 60_000_000_000;

/// Datagrams answered per batch: a whole GSO run of small ones (`GSO_MAX_SEGMENTS`) leaves as
/// one message.
const BATCH: usize = npt_netio::offload::GSO_MAX_SEGMENTS;
/// How long a read waits when no callback is due sooner (the stop flag is checked as often).
const POLL: Duration = Duration::from_millis(100);
const MAX_DATAGRAM: usize = 65_536;
/// GRO receive buffers read per call (each up to 64 datagrams of one source).
const GRO_BUFFERS: usize = 8;

pub(crate) fn run(sock: UdpSocket, shared: Arc<Shared>) {
    let fd = sock.as_raw_fd();
    let mut poll = POLL;
    let _ = sock.set_read_timeout(Some(poll));
    let mut batch = MsgBatch::new(BATCH, MAX_DATAGRAM);
    // With GRO a run of one source's datagrams (a GSO sender's batch) arrives as one buffer,
    // spared the kernel's per-datagram receive work, and is spread back into one datagram per
    // slot of `batch`: each still answered, charged to its budget and counted on its own.
    let mut spread = npt_netio::offload::enable_gro(fd).then(|| Spread::new(GRO_BUFFERS));
    // The kernel's receive time of each datagram (else the batch's), from the first client that
    // asks for REFLECT or starts a UDP bulk flow on (a bulk flow's span and jitter are timed
    // by it, see `Cx::arrived`): it costs the receive path about 85 ns a datagram
    // (docs/serve.md), which a server nobody asks need not pay.
    let mut stamping = false;
    // The DSCP/ECN each datagram arrived with ([`crate::marking`]): control space from the
    // start (the TOS message alone; the receive time is asked for as above).
    let ipv6 = sock.local_addr().is_ok_and(|a| a.is_ipv6());
    if npt_netio::rxtime::enable_tos(fd, ipv6).is_ok() {
        batch.collect_rx_times();
    }
    let mut marks = crate::marking::BatchMarks::default();
    // The largest fragment of a reassembled datagram (`npt mtu` says where a path fragments),
    // and the socket's DF policy, put back after each down MTU probe.
    let _ = rxtime::enable_fragsize(fd, ipv6);
    let saved_df = npt_netio::pmtu::Saved::read(fd, ipv6);
    let mut mtu_down = Vec::new();
    let cfg = &shared.cfg;
    let mut limiter = Limiter::new(cfg.limits);
    let mut open_limiter = Limiter::new(cfg.session_limits);
    let own_port = sock.local_addr().map_or(0, |a| a.port());
    let mut guard = LoopGuard::new(own_port);
    let epoch = Instant::now();
    let mut send_idx: Vec<usize> = Vec::with_capacity(BATCH);
    let mut flows = Flows::new(MAX_FLOWS);
    let mut reflector = Reflector::new(
        FlowTable::new(reflect::MAX_FLOWS, reflect::FLOW_IDLE_NS),
        Notices::default(),
        BATCH,
    );
    let mut live_flows = 0u64;
    let mut bursts: Vec<Burst> = Vec::new();
    let mut callbacks = Callbacks::default();
    let mut scratch = vec![0u8; MAX_DATAGRAM];
    let mut sessions = cfg.token.as_deref().map(|secret| {
        Sessions::new(
            ServerAuth::new(secret.as_bytes(), crate::random_key()),
            MAX_SESSIONS,
            SESSION_IDLE_NS,
        )
    });
    while !shared.stop.load(Ordering::Relaxed) {
        // Callbacks due go first; the read then waits no longer than the next one. With none
        // pending (every run but `npt lifetime`'s) the batch loop reads no extra clock.
        let wait = if callbacks.is_empty() {
            POLL
        } else {
            let now = u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
            send_callbacks(&sock, &mut callbacks, now, &shared);
            callbacks.next_due().map_or(POLL, |due| {
                Duration::from_nanos(due.saturating_sub(now)).clamp(Duration::from_millis(1), POLL)
            })
        };
        if wait != poll {
            poll = wait;
            let _ = sock.set_read_timeout(Some(poll));
        }
        let got = match spread.as_mut() {
            Some(sp) => sp.recv_into(fd, &mut batch, libc::MSG_WAITFORONE),
            None => batch.recv(fd, BATCH, libc::MSG_WAITFORONE),
        };
        let n = match got {
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
        // One instant on both clocks, to age the kernel's stamps by (`clockpair`: read back to
        // back, a preemption between the reads would date the batch's arrivals early).
        let (now, batch_wall) = npt_netio::clockpair::now(|| {
            u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
        });
        let mut t = Tally::default();
        send_idx.clear();
        reflector.clear();
        for i in 0..n {
            let len = batch.len(i);
            t.rx += 1;
            if let Some(tos) = batch.rx_tos(i) {
                marks.count(tos);
            }
            t.rx_bytes += len as u64;
            let Some(peer) = batch.addr(i) else {
                t.malformed += 1;
                continue;
            };
            let exempt = cfg.exempt_local && crate::is_local(peer.ip());
            // A sealed frame from an address with a session is charged to the open limits
            // (its tag is checked below); everything else proved nothing yet.
            let trusted = exempt
                || sessions
                    .as_ref()
                    .is_some_and(|s| s.has_session(&peer) && auth::is_sealed(batch.data(i)));
            let l = if trusted {
                &mut open_limiter
            } else {
                &mut limiter
            };
            match l.check(now, peer, len) {
                Verdict::Allow => {}
                Verdict::PacketLimit | Verdict::ByteLimit => {
                    t.refused_rate += 1;
                    // Counted in its flow (bulk or reflect), and perhaps noticed.
                    if let Ok(h) = Header::decode(batch.data(i)) {
                        if answer::refused_bulk(&h, batch.data(i), &mut flows, now, peer, &mut t) {
                            continue;
                        }
                        if reflector.refuse(&mut batch, i, &h, status::BUDGET, now, peer) {
                            send_idx.push(i);
                        }
                    }
                    continue;
                }
            }
            let raw_ok = exempt || cfg.raw_echo;
            let cx = Cx {
                flows: &mut flows,
                reflector: &mut reflector,
                now,
                rx_wall: batch.rx_time_ns(i).unwrap_or(batch_wall),
                arrived: rxtime::arrival_ns(now, batch_wall, batch.rx_time_ns(i)),
                peer,
                key: None,
                bursts: &mut bursts,
                loopback_ok: exempt && crate::bulk_udp::loopback(peer),
                callbacks: &mut callbacks,
                frag: batch.rx_frag(i),
                mtu_down: &mut mtu_down,
            };
            let ok = match sessions.as_mut() {
                None => answer(&mut batch, i, &mut t, cx, false, |data| {
                    if !raw_ok {
                        return Err(Refused::Raw);
                    }
                    match guard.check(now, peer, data) {
                        loopguard::Verdict::Answer => Ok(()),
                        _ => Err(Refused::Loop),
                    }
                }),
                Some(s) => answer_authenticated(&mut batch, i, &mut t, s, cx),
            };
            if ok {
                send_idx.push(i);
            }
        }
        if !send_idx.is_empty() {
            // The dwell ends here: the replies leave with this call.
            reflector.stamp(&mut batch, rxtime::wall_ns);
            // Answers to one source in a row leave as one GSO message where the kernel takes
            // it: each still its own datagram, charged to its budget above.
            if let Ok(sent) = batch.send_grouped(fd, &send_idx) {
                t.tx += sent as u64;
                t.tx_bytes += send_idx
                    .iter()
                    .take(sent)
                    .map(|&i| batch.len(i) as u64)
                    .sum::<u64>();
            } else {
                shared.counters.udp_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        for b in bursts.drain(..) {
            send_burst(&sock, &b, now, &mut open_limiter, &mut scratch, &mut t);
        }
        let sender = mtu::Sender {
            sock: &sock,
            ipv6,
            saved: &saved_df,
            safe: &mut limiter,
            open: &mut open_limiter,
        };
        mtu::send_down(sender, &mut mtu_down, now, &mut scratch, &mut t);
        let c = &shared.counters;
        let notices = (
            std::mem::take(&mut reflector.notices.sent),
            std::mem::take(&mut reflector.notices.suppressed),
        );
        let flows = reflector.flows.take_stats();
        if !stamping && (flows.new > 0 || t.bulk_flows > 0) {
            stamping = true;
            if rxtime::enable(fd).is_ok() {
                batch.collect_rx_times();
            }
        }
        t.publish(c, flows, notices);
        marks.publish(&c.udp_marking);
        let live = reflector.flows.len() as u64;
        if live != live_flows {
            if live > live_flows {
                c.udp_flows_live
                    .fetch_add(live - live_flows, Ordering::Relaxed);
            } else {
                c.udp_flows_live
                    .fetch_sub(live_flows - live, Ordering::Relaxed);
            }
            live_flows = live;
        }
    }
    // This socket's flows are gone with it.
    shared
        .counters
        .udp_flows_live
        .fetch_sub(live_flows, Ordering::Relaxed);
}

/// Sends the idle callbacks due at `now`, each to the address that asked, sealed with its
/// session's key under `--token`; counted as sent datagrams and `callbacks`.
fn send_callbacks(sock: &UdpSocket, callbacks: &mut Callbacks, now: u64, shared: &Shared) {
    let c = &shared.counters;
    while let Some(mut due) = callbacks.pop_due(now) {
        if let Some(k) = &due.key {
            let _ = k.seal(auth::Dir::ToClient, &mut due.frame);
        }
        match sock.send_to(&due.frame, due.peer) {
            Ok(n) => {
                c.udp_tx.fetch_add(1, Ordering::Relaxed);
                c.udp_tx_bytes.fetch_add(n as u64, Ordering::Relaxed);
                c.udp_idle_callbacks.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                c.udp_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
