//! The UDP responder: one thread per socket, `recvmmsg` in, answers rewritten in place,
//! `sendmmsg` out — no allocation and two syscalls per batch, so it is never the bottleneck.
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
//! - every refusal is counted (the server's log task summarizes them on stderr).

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_netio::MsgBatch;
use npt_wire::auth::{self, AuthError, Dir, ServerAuth, SessionKey, Sessions, HS_LEN};
use npt_wire::bulk::{self, BulkReport, BulkSpec, Direction};
use npt_wire::frame::{self, status, Header, Kind};

use crate::bulk_udp::{grant_down, Counted, DownRefused, Flows, MAX_FLOWS};
use crate::limiter::{Limiter, Verdict};
use crate::loopguard::{self, LoopGuard};
use crate::Shared;

/// Authenticated sessions one UDP socket keeps at once.
pub const MAX_SESSIONS: usize = 4096;
/// A session with no valid frame for this long may be forgotten (when the table is full).
pub const SESSION_IDLE_NS: u64 = 60_000_000_000;

const BATCH: usize = 32;
const MAX_DATAGRAM: usize = 65_536;

#[derive(Default)]
struct Tally {
    rx: u64,
    rx_bytes: u64,
    tx: u64,
    tx_bytes: u64,
    refused_token: u64,
    refused_raw: u64,
    refused_rate: u64,
    auth_handshake: u64,
    auth_session: u64,
    auth_mac: u64,
    auth_replay: u64,
    sessions: u64,
    refused_loop: u64,
    malformed: u64,
    clamped: u64,
    bulk_flows: u64,
    bulk_refused: u64,
    /// UDP down datagrams sent.
    bulk_down: u64,
}

/// What an answer needs besides the datagram: the UDP bulk flows, the time and the source;
/// the session's key (`--token`), and where UDP down pulls queue their datagrams.
struct Cx<'a> {
    flows: &'a mut Flows,
    now: u64,
    /// When this datagram reached the host (the kernel's stamp, on the `now` clock): what a
    /// UDP bulk flow's span and jitter are timed by, so a server that reads late (a loaded
    /// box) does not count its own delay as the path's.
    arrived: u64,
    peer: std::net::SocketAddr,
    key: Option<SessionKey>,
    bursts: &'a mut Vec<Burst>,
    /// A loopback source the server exempts (not `--limit-local`): UDP down without a token.
    loopback_ok: bool,
}

/// UDP down: `count` `BulkData` datagrams of `size` bytes for a pull of `peer`'s flow,
/// numbered from `first_seq` (sent after the batch's answers).
struct Burst {
    peer: std::net::SocketAddr,
    flow: u32,
    first_seq: u64,
    count: u64,
    size: usize,
    key: Option<SessionKey>,
}

/// Sends a burst, each datagram charged to `limiter` first (the open limits); stops at the
/// first one the limits refuse (counted). `buf`: scratch of at least `MAX_DATAGRAM` bytes.
fn send_burst(
    sock: &UdpSocket,
    b: &Burst,
    now: u64,
    limiter: &mut Limiter,
    buf: &mut [u8],
    t: &mut Tally,
) {
    let fill = crate::stream::fill_chunk();
    for j in 0..b.count {
        if limiter.check(now, b.peer, b.size) != Verdict::Allow {
            t.refused_rate += 1;
            return;
        }
        let (Some(frame), Some(payload)) = (buf.get_mut(..b.size), fill.get(..b.size)) else {
            return;
        };
        frame.copy_from_slice(payload);
        let h = Header {
            kind: Kind::BulkData,
            flags: 0,
            frame_len: u32::try_from(b.size).unwrap_or(u32::MAX),
            reply_len: 0,
            flow: b.flow,
            status: status::OK,
            seq: b.first_seq.saturating_add(j),
            send_ts: now,
            token: 0,
        };
        let _ = h.encode(frame);
        if let Some(k) = &b.key {
            let _ = k.seal(Dir::ToClient, frame);
        }
        match sock.send_to(frame, b.peer) {
            Ok(n) => {
                t.tx += 1;
                t.tx_bytes += n as u64;
                t.bulk_down += 1;
            }
            // A full socket buffer: the rest of the burst is lost here, as on a NIC queue.
            Err(_) => return,
        }
    }
}

pub(crate) fn run(sock: UdpSocket, shared: Arc<Shared>) {
    let fd = sock.as_raw_fd();
    let _ = sock.set_read_timeout(Some(Duration::from_millis(100)));
    // Arrivals are timed by the kernel's stamps where it gives them (see `Cx::arrived`).
    let stamped = npt_netio::enable_rx_timestamps(fd).is_ok();
    let mut batch = MsgBatch::new(BATCH, MAX_DATAGRAM);
    if stamped {
        batch = batch.with_rx_timestamps();
    }
    let cfg = &shared.cfg;
    let mut limiter = Limiter::new(cfg.limits);
    let mut open_limiter = Limiter::new(cfg.session_limits);
    let own_port = sock.local_addr().map_or(0, |a| a.port());
    let mut guard = LoopGuard::new(own_port);
    let epoch = Instant::now();
    let mut send_idx: Vec<usize> = Vec::with_capacity(BATCH);
    let mut flows = Flows::new(MAX_FLOWS);
    let mut bursts: Vec<Burst> = Vec::new();
    let mut scratch = vec![0u8; MAX_DATAGRAM];
    let mut sessions = cfg.token.as_deref().map(|secret| {
        Sessions::new(
            ServerAuth::new(secret.as_bytes(), crate::random_key()),
            MAX_SESSIONS,
            SESSION_IDLE_NS,
        )
    });
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
        let now = u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let wall = npt_netio::wall_now();
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
            let exempt = cfg.exempt_local && crate::is_local(peer.ip());
            // A sealed frame from an address with a session is charged to the open limits
            // (its tag is checked below); everything else proved nothing yet.
            let trusted = exempt
                || sessions
                    .as_ref()
                    .is_some_and(|s| s.has_session(&peer) && auth::is_sealed(batch.data_mut(i)));
            let l = if trusted {
                &mut open_limiter
            } else {
                &mut limiter
            };
            match l.check(now, peer, len) {
                Verdict::Allow => {}
                Verdict::PacketLimit | Verdict::ByteLimit => {
                    t.refused_rate += 1;
                    continue;
                }
            }
            let raw_ok = exempt || cfg.raw_echo;
            let cx = Cx {
                flows: &mut flows,
                now,
                arrived: npt_netio::arrival_ns(now, wall, batch.rx_time(i)),
                peer,
                key: None,
                bursts: &mut bursts,
                loopback_ok: exempt && crate::bulk_udp::loopback(peer),
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
            if let Ok(sent) = batch.send(fd, &send_idx, true, 0) {
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
        let c = &shared.counters;
        c.udp_rx.fetch_add(t.rx, Ordering::Relaxed);
        c.udp_rx_bytes.fetch_add(t.rx_bytes, Ordering::Relaxed);
        c.udp_tx.fetch_add(t.tx, Ordering::Relaxed);
        c.udp_tx_bytes.fetch_add(t.tx_bytes, Ordering::Relaxed);
        if t.refused_token
            + t.refused_raw
            + t.refused_rate
            + t.refused_loop
            + t.malformed
            + t.clamped
            + t.auth_handshake
            + t.auth_session
            + t.auth_mac
            + t.auth_replay
            + t.sessions
            + t.bulk_flows
            + t.bulk_refused
            + t.bulk_down
            > 0
        {
            c.udp_refused_token
                .fetch_add(t.refused_token, Ordering::Relaxed);
            c.udp_refused_raw
                .fetch_add(t.refused_raw, Ordering::Relaxed);
            c.udp_auth_handshake
                .fetch_add(t.auth_handshake, Ordering::Relaxed);
            c.udp_auth_session
                .fetch_add(t.auth_session, Ordering::Relaxed);
            c.udp_auth_mac.fetch_add(t.auth_mac, Ordering::Relaxed);
            c.udp_auth_replay
                .fetch_add(t.auth_replay, Ordering::Relaxed);
            c.udp_sessions.fetch_add(t.sessions, Ordering::Relaxed);
            c.udp_refused_rate
                .fetch_add(t.refused_rate, Ordering::Relaxed);
            c.udp_refused_loop
                .fetch_add(t.refused_loop, Ordering::Relaxed);
            c.udp_malformed.fetch_add(t.malformed, Ordering::Relaxed);
            c.udp_clamped.fetch_add(t.clamped, Ordering::Relaxed);
            c.udp_bulk_flows.fetch_add(t.bulk_flows, Ordering::Relaxed);
            c.udp_bulk_refused
                .fetch_add(t.bulk_refused, Ordering::Relaxed);
            c.udp_bulk_down.fetch_add(t.bulk_down, Ordering::Relaxed);
        }
    }
}

/// Why a raw datagram was not echoed.
enum Refused {
    /// Raw echo is for local sources (or `--raw-echo`) only.
    Raw,
    /// It could start or feed an echo loop.
    Loop,
}

/// With `--token`: a handshake message is answered in place (same length); a framed packet is
/// answered only if its session, tag and sequence number check out, and its answer is sealed
/// with the same session's key. Everything else is refused and counted by kind.
fn answer_authenticated(
    batch: &mut MsgBatch,
    i: usize,
    t: &mut Tally,
    sessions: &mut Sessions,
    mut cx: Cx<'_>,
) -> bool {
    let (now, peer) = (cx.now, cx.peer);
    let len = batch.len(i);
    let data = batch.data_mut(i);
    if auth::is_handshake(data) {
        let mut out = [0u8; HS_LEN];
        if len != HS_LEN {
            t.auth_handshake += 1;
            return false;
        }
        let before = sessions.len();
        return match sessions.handshake(now, peer, data, &mut out) {
            Ok(()) => {
                if sessions.len() > before {
                    t.sessions += 1;
                }
                if let Some(d) = data.first_chunk_mut::<HS_LEN>() {
                    *d = out; // `handshake` accepted only a whole message
                }
                true
            }
            Err(_) => {
                t.auth_handshake += 1;
                false
            }
        };
    }
    if !frame::is_framed(data) || !auth::is_sealed(data) {
        // Raw echo and the old clear token carry no proof: refused.
        t.refused_token += 1;
        return false;
    }
    let key = match sessions.open(now, peer, data) {
        Ok(k) => k,
        Err(e) => {
            match e {
                AuthError::UnknownSession => t.auth_session += 1,
                AuthError::Replay => t.auth_replay += 1,
                _ => t.auth_mac += 1,
            }
            return false;
        }
    };
    cx.key = Some(key.clone());
    if !answer(batch, i, t, cx, true, |_| Ok(())) {
        return false;
    }
    // Cannot fail: answer() only answers frames of at least a header.
    let _ = key.seal(Dir::ToClient, batch.data_mut(i));
    true
}

/// Rewrites datagram `i` into its answer in place; false = send nothing. `raw_ok` decides
/// whether a raw (unframed) datagram may be echoed (raw echo allowed, the loop guard);
/// `authenticated` is set when the frame's tag was already checked.
fn answer(
    batch: &mut MsgBatch,
    i: usize,
    t: &mut Tally,
    mut cx: Cx<'_>,
    authenticated: bool,
    raw_ok: impl FnOnce(&[u8]) -> Result<(), Refused>,
) -> bool {
    let len = batch.len(i);
    let data = batch.data_mut(i);
    if auth::is_handshake(data) {
        // A client with --token, and this server has none: not echoed (it would look like an
        // answer), counted as a token refusal.
        t.refused_token += 1;
        return false;
    }
    if !frame::is_framed(data) {
        match raw_ok(data) {
            Ok(()) => return true, // plain echo, same size
            Err(Refused::Raw) => t.refused_raw += 1,
            Err(Refused::Loop) => t.refused_loop += 1,
        }
        return false;
    }
    let Ok(mut h) = Header::decode(data) else {
        t.malformed += 1;
        return false;
    };
    if !authenticated && auth::is_sealed(data) {
        // Sealed for a session this server does not keep (it has no --token).
        t.refused_token += 1;
        return false;
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
            // `reply <= len`, the datagram's length: far inside a `u32`.
            h.frame_len = u32::try_from(reply).unwrap_or(u32::MAX);
            let _ = h.encode(data);
            batch.set_len(i, reply);
            true
        }
        Kind::BulkData => {
            // Counted, never answered.
            count_bulk(&h, len, t, &mut cx, true);
            false
        }
        Kind::Bulk => answer_bulk(data, &h, len, t, &mut cx, authenticated).is_some_and(|n| {
            batch.set_len(i, n);
            true
        }),
        Kind::EchoReply | Kind::Response | Kind::HopReply | Kind::BulkReply => {
            // A reply sent to us: answering it could start a loop between two servers.
            t.malformed += 1;
            false
        }
        // The hop agent answers on streams only (a measurement takes seconds; this thread
        // answers datagrams in microseconds).
        Kind::HopRequest => {
            t.malformed += 1;
            false
        }
    }
}

/// Counts a datagram of an `Up` flow: `data` (`BulkData`) or its report request.
fn count_bulk(h: &Header, len: usize, t: &mut Tally, cx: &mut Cx<'_>, data: bool) {
    match cx.flows.on_datagram(
        cx.arrived, cx.peer, h.flow, h.seq, h.send_ts, len as u64, data,
    ) {
        Counted::New => t.bulk_flows += 1,
        Counted::Known => {}
        Counted::Full => t.bulk_refused += 1,
    }
}

/// A UDP `Bulk` frame: for an `Up` flow, a report of what arrived (the frame itself counted
/// first, since it is part of the flow's sequence), written over the request; never longer
/// than it. A `Down` pull of a trusted source (`authenticated`, or an exempt loopback one)
/// queues its burst
/// ([`grant_down`]) and gets no answer of its own; a `Down` pull of anyone else, or a frame
/// too short for a report, is answered with a bare header saying `REFUSED` (counted). The
/// answer's length, or None for no answer.
fn answer_bulk(
    data: &mut [u8],
    h: &Header,
    len: usize,
    t: &mut Tally,
    cx: &mut Cx<'_>,
    authenticated: bool,
) -> Option<usize> {
    let spec = data
        .get(frame::HEADER_LEN..)
        .and_then(|p| BulkSpec::decode(p).ok());
    let Some(spec) = spec else {
        t.malformed += 1;
        return None;
    };
    if spec.direction == Direction::Down {
        let trusted = authenticated || cx.loopback_ok;
        match grant_down(trusted, spec.size, h.reply_len) {
            Ok(count) => {
                cx.bursts.push(Burst {
                    peer: cx.peer,
                    flow: h.flow,
                    first_seq: h.seq.saturating_mul(count),
                    count,
                    size: spec.size as usize,
                    key: cx.key.clone(),
                });
                return None;
            }
            Err(DownRefused::Malformed) => {
                t.malformed += 1;
                return None;
            }
            // Refused below, with a bare header (no larger than the pull).
            Err(DownRefused::Stranger) => {}
        }
    }
    let up = spec.direction == Direction::Up && len >= bulk::REPLY_LEN;
    let (status, reply_len, report) = if up {
        count_bulk(h, len, t, cx, false);
        (status::OK, len, cx.flows.report(cx.peer, h.flow))
    } else {
        t.bulk_refused += 1;
        (status::REFUSED, frame::HEADER_LEN, BulkReport::default())
    };
    let out = Header {
        kind: Kind::BulkReply,
        status,
        // `reply_len <= len`, the datagram's length: far inside a `u32`.
        frame_len: u32::try_from(reply_len).unwrap_or(u32::MAX),
        ..*h
    };
    let _ = out.encode(data);
    if up {
        let _ = report.encode(data.get_mut(frame::HEADER_LEN..).unwrap_or_default());
    }
    Some(reply_len)
}
