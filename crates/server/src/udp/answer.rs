//! One datagram of the UDP responder rewritten into its answer, in place in its batch slot:
//! echo, request (never larger than what caused it), bulk report or pull, flow report, or a
//! refusal notice; or nothing, counted by why.

use std::net::SocketAddr;

use npt_netio::MsgBatch;
use npt_wire::auth::{self, AuthError, Dir, SessionKey, Sessions, HS_LEN};
use npt_wire::bulk::{self, BulkReport, BulkSpec, Direction};
use npt_wire::frame::{self, status, Header, Kind};
use npt_wire::idle::{self as idle_wire, Idle, IDLE_LEN, IDLE_REQUEST_LEN};
use npt_wire::marking::{self, Marks};
use npt_wire::reflect;

use super::burst::Burst;
use super::tally::Tally;
use crate::bulk_udp::{grant_down, Counted, DownRefused, Flows};
use crate::idle::{Callbacks, MAX_GAP_MS};
use crate::reflect::Reflector;

/// What an answer needs besides the datagram: the UDP bulk flows and the reflect state, the
/// time and the source; the session's key (`--token`), and where UDP down pulls queue their
/// datagrams.
pub(super) struct Cx<'a> {
    pub flows: &'a mut Flows,
    pub reflector: &'a mut Reflector,
    /// Monotonic ns (budgets, flow tables).
    pub now: u64,
    /// When the datagram arrived, ns since the Unix epoch (the kernel's stamp, or the batch's).
    pub rx_wall: u64,
    /// The same arrival on the `now` clock: what a UDP bulk flow's span and jitter are timed
    /// by, so a server that reads late (a loaded box) does not count its own delay as the
    /// path's.
    pub arrived: u64,
    pub peer: SocketAddr,
    pub key: Option<SessionKey>,
    pub bursts: &'a mut Vec<Burst>,
    /// The idle callbacks this socket owes (`npt lifetime`).
    pub callbacks: &'a mut Callbacks,
    /// The largest fragment of the datagram, when the kernel reassembled it.
    pub frag: Option<u16>,
    /// Down MTU probes owed after the batch.
    pub mtu_down: &'a mut Vec<super::mtu::Down>,
    /// A loopback source the server exempts (not `--limit-local`): UDP down without a token.
    pub loopback_ok: bool,
}

/// Why a raw datagram was not echoed.
pub(super) enum Refused {
    /// Raw echo is for local sources (or `--raw-echo`) only.
    Raw,
    /// It could start or feed an echo loop.
    Loop,
}

/// With `--token`: a handshake message is answered in place (same length); a framed packet is
/// answered only if its session, tag and sequence number check out, and its answer is sealed
/// with the same session's key. Everything else is refused and counted by kind; a refused
/// `REFLECT` frame without a session may get a notice saying so.
pub(super) fn answer_authenticated(
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
        return notice(batch, i, status::TOKEN_REQUIRED, &mut cx);
    }
    let key = match sessions.open(now, peer, data) {
        Ok(k) => k,
        Err(e) => {
            return match e {
                AuthError::UnknownSession => {
                    t.auth_session += 1;
                    notice(batch, i, status::UNKNOWN_SESSION, &mut cx)
                }
                // Replayed or forged: no answer of any kind.
                AuthError::Replay => {
                    t.auth_replay += 1;
                    false
                }
                _ => {
                    t.auth_mac += 1;
                    false
                }
            };
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
pub(super) fn answer(
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
        return cx
            .reflector
            .refuse(batch, i, &h, status::NO_TOKEN, cx.now, cx.peer);
    }
    if h.frame_len as usize != len {
        t.malformed += 1;
        return false;
    }
    // Asked before the answer overwrites the request's status.
    let mark = marking::wanted(&h);
    match h.kind {
        Kind::Echo => {
            frame::set_kind_status(data, Kind::EchoReply, status::OK);
            h.kind = Kind::EchoReply;
            h.status = status::OK;
            reflect_reply(batch, i, &h, t, &mut cx);
            mark_reply(batch, i, mark, t);
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
            reflect_reply(batch, i, &h, t, &mut cx);
            mark_reply(batch, i, mark, t);
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
        Kind::FlowQuery => {
            // Same length as the query (at least FLOW_QUERY_LEN), or no answer.
            let report = cx.reflector.report(cx.now, cx.peer, h.flow);
            if reflect::write_report(data, &h, report.as_ref()).is_none() {
                t.malformed += 1;
                return false;
            }
            t.flow_reports += 1;
            true
        }
        Kind::Idle => answer_idle(data, &h, len, t, &mut cx).is_some_and(|n| {
            batch.set_len(i, n);
            true
        }),
        Kind::Mtu => {
            super::mtu::answer(data, &h, len, t, &mut cx, authenticated).is_some_and(|n| {
                batch.set_len(i, n);
                true
            })
        }
        Kind::EchoReply
        | Kind::Response
        | Kind::HopReply
        | Kind::BulkReply
        | Kind::FlowReport
        | Kind::IdleAck
        | Kind::IdleCallback
        | Kind::MtuReply => {
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

/// A frame refused for a token reason (`why`): counted in its flow and perhaps noticed, if it
/// is one that asked. True when the slot now holds the notice.
fn notice(batch: &mut MsgBatch, i: usize, why: u32, cx: &mut Cx<'_>) -> bool {
    match Header::decode(batch.data(i)) {
        Ok(h) => cx.reflector.refuse(batch, i, &h, why, cx.now, cx.peer),
        Err(_) => false,
    }
}

/// A datagram (header `h`, bytes `data`) the per-source budget refused: when it belongs to an
/// `Up` bulk flow (its data, or a report request), counted in that flow's refused datagrams,
/// which its next report carries. True when it was one (nothing is sent for it).
pub(super) fn refused_bulk(
    h: &Header,
    data: &[u8],
    flows: &mut Flows,
    now: u64,
    peer: SocketAddr,
    t: &mut Tally,
) -> bool {
    let up = match h.kind {
        Kind::BulkData => true,
        Kind::Bulk => data
            .get(frame::HEADER_LEN..)
            .and_then(|p| BulkSpec::decode(p).ok())
            .is_some_and(|s| s.direction == Direction::Up),
        _ => false,
    };
    if up {
        match flows.on_refused(now, peer, h.flow) {
            Counted::New => t.bulk_flows += 1,
            Counted::Known => {}
            Counted::Full => t.bulk_refused += 1,
        }
    }
    up
}

/// An echo or response (header `h`, already the reply's) to a frame that asked for `REFLECT`
/// gets its flow's counts and stamps.
fn reflect_reply(batch: &mut MsgBatch, i: usize, h: &Header, t: &mut Tally, cx: &mut Cx<'_>) {
    if reflect::wants_reflect(h) && cx.reflector.reply(batch, i, h, cx.now, cx.peer, cx.rx_wall) {
        t.reflected += 1;
    }
}

/// An echo or response whose request asked for a marking (`want`, [`npt_wire::marking`]): sent
/// with the TOS byte asked (never CE, [`marking::honoured`]) and saying the one its request
/// arrived with — when the kernel said (it always does on Linux; without it the reply goes
/// out as an older responder's would). Same length: the marking costs no byte.
fn mark_reply(batch: &mut MsgBatch, i: usize, want: Option<u8>, t: &mut Tally) {
    let (Some(want), Some(seen)) = (want, batch.rx_tos(i)) else {
        return;
    };
    let sent = marking::honoured(want);
    if marking::write_reply(batch.data_mut(i), Marks { sent, seen }) {
        batch.set_tx_tos(i, Some(sent));
        t.marked += 1;
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
/// queues its burst ([`grant_down`]) and gets no answer of its own; a `Down` pull of anyone
/// else, or a frame too short for a report, is answered with a bare header saying `REFUSED`
/// (counted). The answer's length, or None for no answer.
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
        // With room (a client that knows to ask): the refused count, and the flag saying so.
        bulk::write_refused(data, cx.flows.refused(cx.peer, h.flow));
    }
    Some(reply_len)
}

/// An `Idle` frame ([`npt_wire::idle`]): its callback scheduled (or refused, counted), and the
/// ack written over the request — [`IDLE_LEN`] bytes, saying the source address seen; ack
/// and callback together never longer than the request ([`IDLE_REQUEST_LEN`]). A request
/// shorter than an ack is malformed (no answer).
fn answer_idle(
    data: &mut [u8],
    h: &Header,
    len: usize,
    t: &mut Tally,
    cx: &mut Cx<'_>,
) -> Option<usize> {
    let ask = data
        .get(frame::HEADER_LEN..)
        .and_then(|p| Idle::decode(p).ok())
        .filter(|_| len >= IDLE_LEN);
    let Some(ask) = ask else {
        t.malformed += 1;
        return None;
    };
    // A callback only for a request that brought both answers' bytes.
    let st = if ask.gap_ms != 0 && len < IDLE_REQUEST_LEN {
        status::IDLE_SHORT
    } else {
        cx.callbacks.ask(cx.now, cx.peer, h, &ask, cx.key.clone())
    };
    if ask.gap_ms != 0 && st != status::OK {
        t.idle_refused += 1;
    }
    let body = Idle {
        gap_ms: ask.gap_ms,
        seen: Some(cx.peer),
        max_gap_ms: MAX_GAP_MS,
        held_us: 0,
    };
    let ack = idle_wire::answer(h, Kind::IdleAck, st, &body);
    data.get_mut(..IDLE_LEN)?.copy_from_slice(&ack);
    Some(IDLE_LEN)
}
