//! The probe session: one flow's whole measurement, with no sockets and no clock.
//!
//! The driver owns the socket and the time; it calls, in a loop:
//! - [`Session::poll_transmit`]`(now, buf)` → bytes to send now, if a packet is due;
//! - [`Session::handle_reply`]`(now, bytes)` for every datagram (or TCP frame) received;
//! - [`Session::handle_timeout`]`(now)` whenever it wakes; and waits until
//!   [`Session::poll_timeout`] (the next due send, loss deadline or interval close).
//!
//! The session stamps each packet with `now`, keeps the sequence window (loss, late, duplicate,
//! reorder), the histograms, and the interval series, and emits each interval once every
//! packet sent in it has been answered or declared lost (so a stage line never shows negative
//! or not-yet-known loss). Tests drive it with a virtual clock and a fake link.
//!
//! A driver that hands results on while the session runs (`npt run`'s game, into per-second
//! run intervals) uses [`Session::handle_arrival`] for each reply's RTT and
//! [`Session::take_progress`] for the counts decided since its last batch.
//!
//! Framed sessions ask the far end what it saw ([`Reflect`]): `reply` reads it from each reply,
//! `split` places every loss up, down or refused and keeps delay per direction, and `query`
//! asks for the far end's final counts once the flow is drained.
//!
//! The configuration and the records the session hands back are plain data, in `types` and
//! `directions`.

mod directions;
mod far;
mod hold;
mod intervals;
mod log;
mod query;
mod reply;
mod split;
pub mod stamp;
mod types;
mod who;

use std::collections::VecDeque;

use npt_result::error::ErrorKind;
use npt_stats::{Jitter, JitterMean};
use npt_wire::frame::{Header, Kind};
use npt_wire::raw::RawStamp;
use npt_wire::{fill, Pacer, Window};

pub use far::{FarEnd, RefusalWhy};
pub use hold::STREAM_HOLD_NS;
pub use reply::Parsed;
use split::{Final, Placed, Split};
use types::min_opt;
pub use types::*;
pub use who::{Answered, Responder};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Sending,
    Draining {
        until: u64,
    },
    /// Asking the far end for its final counts: `sent` queries so far, the next at `next`,
    /// giving up at `until`.
    Querying {
        sent: u32,
        next: u64,
        until: u64,
    },
    Done,
}

pub struct Session {
    cfg: SessionConfig,
    pacer: Pacer,
    window: Window,
    totals: Totals,
    jitter: Jitter,
    open: VecDeque<Interval>,
    first_open: u32,
    done_intervals: VecDeque<Interval>,
    state: State,
    stop_reason: Option<StopReason>,
    scratch: Vec<u8>,
    lost_tags: Vec<(u64, u32)>,
    /// The counts (and jitter samples) at the last [`take_progress`](Session::take_progress).
    taken: Progress,
    /// See [`keep_histograms`](Session::keep_histograms).
    histograms: bool,
    /// Per-direction bookkeeping.
    split: Split,
    /// Losses placed and not yet put into the totals and intervals (reused).
    placed: Vec<Placed>,
    /// Wall clock − session clock, ns: see [`set_wall_offset`](Session::set_wall_offset).
    wall_offset: i64,
    /// `--packets`: each packet's fate, for the driver ([`Session::take_packets`]).
    log: Option<log::Log>,
    /// A held stream's packets below this number are no longer held (their replies may have
    /// been destroyed: [`stream_out_of_step`](Session::stream_out_of_step)).
    released_below: u64,
    /// The TOS byte the datagram being handed in arrived with, as the driver's kernel said
    /// ([`Session::note_arrival_tos`]).
    arrival_tos: Option<u8>,
}

impl Session {
    pub fn new(cfg: SessionConfig) -> Session {
        let pacer = Pacer::new(cfg.pacing, cfg.start);
        let window = Window::new(cfg.loss_timeout, cfg.history);
        let mut s = Session {
            pacer,
            window,
            totals: Totals::default(),
            jitter: Jitter::default(),
            open: VecDeque::new(),
            first_open: 0,
            done_intervals: VecDeque::new(),
            state: State::Sending,
            stop_reason: None,
            scratch: Vec::new(),
            lost_tags: Vec::new(),
            arrival_tos: None,
            taken: Progress::default(),
            histograms: true,
            split: Split::new(cfg.reflect, cfg.clock, cfg.history)
                .without_query(matches!(cfg.framing, Framing::Stamp(_))),
            placed: Vec::new(),
            wall_offset: 0,
            log: cfg.log_packets.then(|| log::Log::new(cfg.flow)),
            released_below: 0,
            cfg,
        };
        s.open.push_back(s.new_interval(0));
        s
    }

    /// A new session key (`--token`, after a TCP reconnect's handshake).
    pub fn set_auth(&mut self, key: npt_wire::auth::SessionKey) {
        self.cfg.auth = Some(key);
    }

    /// Whether the session keeps its per-flow histograms (RTT, corrected RTT, IPDV, send
    /// lateness, each interval's RTT); on by default. Off for a driver that hands each RTT on
    /// itself ([`handle_arrival`](Session::handle_arrival)) and runs thousands of sessions at
    /// once, as `npt run`'s game does into the run's shared histograms: an empty histogram
    /// costs nothing, a filled one up to a few hundred KiB. Counts, jitter, the intervals'
    /// counts and [`take_progress`](Session::take_progress) are the same either way.
    pub fn keep_histograms(&mut self, keep: bool) {
        self.histograms = keep;
    }

    /// The wall clock (ns since the Unix epoch) minus the session clock, as the driver last
    /// read both: the session never reads a wall clock itself. One-way transit per direction
    /// compares the far end's wall-clock stamps with ours; the driver refreshes the offset now
    /// and then (once a stage or so), so a stepped or slewed wall clock moves it.
    pub fn set_wall_offset(&mut self, offset_ns: i64) {
        self.wall_offset = offset_ns;
    }

    /// Bytes a driver's send buffer needs: a packet or the flow query at the end.
    pub fn max_send_len(&self) -> usize {
        self.cfg.size.max(npt_wire::reflect::FLOW_QUERY_LEN)
    }

    pub fn config(&self) -> &SessionConfig {
        &self.cfg
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    pub fn is_sending(&self) -> bool {
        self.state == State::Sending
    }

    pub fn stop_reason(&self) -> Option<StopReason> {
        self.stop_reason
    }

    pub fn in_flight(&self) -> u64 {
        self.window.in_flight()
    }

    fn begin_drain(&mut self, now: u64, why: StopReason) {
        if self.state != State::Sending {
            return;
        }
        self.stop_reason.get_or_insert(why);
        let until = self
            .totals
            .last_send
            .map_or(now, |t| t + self.window.timeout())
            .max(now);
        self.state = State::Draining { until };
        self.handle_timeout(now);
    }

    /// Stop sending (Ctrl-C, or the run's time limit); in-flight replies are still awaited.
    pub fn stop(&mut self, now: u64, why: StopReason) {
        self.begin_drain(now, why);
    }

    /// Give up now: everything still in flight counts as lost.
    pub fn abort(&mut self, now: u64, why: StopReason) {
        if self.state == State::Done {
            return;
        }
        // A second Ctrl-C turns a draining stop into an abort: the report says so.
        if why == StopReason::Abort {
            self.stop_reason = Some(why);
        } else {
            self.stop_reason.get_or_insert(why);
        }
        self.abandon(now);
    }

    /// Counts a transport error against this flow, under a kind of the one vocabulary of
    /// every result (the driver classifies with `npt_result::error::io_error_kind`).
    pub fn record_error(&mut self, kind: ErrorKind, example: impl FnOnce() -> String) {
        self.totals.errors.record(kind.name(), example);
    }

    /// A packet that could not be handed to the socket at all. It stays in the window and will
    /// be counted lost at its deadline: a user's packet that never left is a lost packet.
    pub fn send_failed(&mut self, kind: ErrorKind, example: impl FnOnce() -> String) {
        self.record_error(kind, example);
    }

    /// The next packet if one is due at `now`: writes it into `buf` and returns its length.
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        if let State::Querying { .. } = self.state {
            return self.poll_query(now, buf);
        }
        if self.state != State::Sending {
            return None;
        }
        if matches!(self.cfg.count, Some(c) if self.totals.packets.sent >= c) {
            self.begin_drain(now, StopReason::Count);
            return None;
        }
        // A relay waiting on a held reply has nothing due: the time limit still ends it.
        if self.cfg.send_until.is_some_and(|until| now >= until) {
            self.begin_drain(now, StopReason::Duration);
            return None;
        }
        let Some(due) = self.pacer.next_due() else {
            self.check_stalled(now);
            return None;
        };
        if let Some(until) = self.cfg.send_until {
            if due >= until || now >= until {
                self.begin_drain(now, StopReason::Duration);
                return None;
            }
        }
        if due > now {
            return None;
        }
        let size = self.cfg.size;
        let buf = buf.get_mut(..size)?;
        let frame_len = u32::try_from(size).ok()?;
        let index = self.send_interval(now);
        self.ensure_open(index);
        let seq = self.window.push(now, due, index);
        let hl = self.cfg.framing.header_len();
        match self.cfg.framing {
            Framing::Framed { token } => {
                let h = Header {
                    kind: Kind::Echo,
                    flags: self.request_flags(),
                    frame_len,
                    reply_len: 0,
                    flow: self.cfg.flow,
                    status: self.request_status(),
                    seq,
                    send_ts: now,
                    token,
                };
                h.encode(buf).ok()?;
                if let Some(k) = &self.cfg.auth {
                    k.seal(npt_wire::auth::Dir::ToServer, buf).ok()?;
                }
            }
            Framing::Raw => {
                RawStamp {
                    flow: self.cfg.flow,
                    seq,
                    send_ts: now,
                }
                .encode(buf)
                .ok()?;
            }
            Framing::Stamp(f) => f.encode(self.cfg.stamp_key.as_ref(), seq, now, buf)?,
        }
        // A STAMP packet of exactly its base length has nothing to fill.
        if let Some(rest) = buf.get_mut(hl..) {
            fill::fill(self.cfg.fill, self.cfg.fill_seed, seq, rest);
        }
        self.split.on_sent(seq);
        self.pacer.on_sent(due, now);
        let t = &mut self.totals;
        t.packets.sent += 1;
        t.bytes_up += size as u64;
        t.first_send.get_or_insert(now);
        t.last_send = Some(now);
        let late_by = now - due;
        if self.histograms {
            t.send_lateness.record(late_by);
        }
        if late_by > self.cfg.behind_threshold {
            t.behind_schedule += 1;
        }
        if let Some(iv) = self.interval_mut(index) {
            iv.packets.sent += 1;
            iv.bytes_up += size as u64;
            iv.end = iv.end.max(now);
        }
        Some(size)
    }

    /// The flags of every request: whether it asks the far end what it saw, and for a
    /// marking.
    fn request_flags(&self) -> u16 {
        let reflect = if self.cfg.reflect == Reflect::Off {
            0
        } else {
            npt_wire::reflect::REFLECT
        };
        let mark = if self.cfg.mark.is_some() {
            npt_wire::marking::MARK
        } else {
            0
        };
        reflect | mark
    }

    /// The status field of every request: 0, or the marking it asks its reply to carry.
    fn request_status(&self) -> u32 {
        self.cfg.mark.map_or(0, npt_wire::marking::request_status)
    }

    /// The TOS byte the datagram the driver hands in next arrived with (None: the OS did not
    /// say); its replies are counted by it in the marking's per-direction figures.
    pub fn note_arrival_tos(&mut self, tos: Option<u8>) {
        self.arrival_tos = tos;
    }

    /// A relay schedule that has sent its warm-up and has nothing in flight can never send
    /// again (only replies release packets): stop instead of waiting for ever.
    fn check_stalled(&mut self, now: u64) {
        if self.state == State::Sending
            && self.window.in_flight() == 0
            && self.totals.packets.sent > 0
            && self.pacer.next_due().is_none()
        {
            self.totals.errors.record("stalled", || {
                format!(
                    "relay stalled after {} packets: every packet in flight was lost, so none \
                     released the next",
                    self.totals.packets.sent
                )
            });
            self.begin_drain(now, StopReason::Stalled);
        }
    }

    /// Packets whose loss timeout passed: to the per-direction bookkeeping, which places them
    /// (up, down, refused) once the replies around them tell.
    fn on_missing(&mut self, tags: &mut Vec<(u64, u32)>) {
        for (seq, tag) in tags.drain(..) {
            self.split.on_missing(seq, tag, &mut self.placed);
        }
        let settled = self.window.settled_below();
        self.split.advance(settled, &mut self.placed);
        self.apply_placed();
    }

    fn expire(&mut self, now: u64) {
        let mut tags = std::mem::take(&mut self.lost_tags);
        let (log, split) = (&mut self.log, &self.split);
        let mut lost = |seq: u64, slot: npt_wire::window::Slot| {
            tags.push((seq, slot.tag));
            if let Some(log) = log {
                log.missing(seq, slot.sent, split.is_noticed(seq));
            }
        };
        // Packets no longer held go at their loss timeout, the rest at the window's.
        let (below, lt) = (self.released_below, self.cfg.loss_timeout);
        self.window.expire_below(now, below, lt, &mut lost);
        self.window.expire(now, &mut lost);
        self.on_missing(&mut tags);
        self.lost_tags = tags;
    }

    /// Advances deadlines and interval closes to `now`.
    pub fn handle_timeout(&mut self, now: u64) {
        self.expire(now);
        self.check_stalled(now);
        self.close_intervals(now);
        self.maybe_finish(now);
    }

    fn maybe_finish(&mut self, now: u64) {
        match self.state {
            State::Draining { until } if self.window.in_flight() == 0 || now >= until => {
                self.expire(until.max(now));
                self.end_drain(now);
            }
            State::Querying { until, .. } if now >= until => {
                self.finish_all(now, Final::NoAnswer);
            }
            _ => {}
        }
    }

    /// When the driver should call [`handle_timeout`](Session::handle_timeout) or
    /// [`poll_transmit`](Session::poll_transmit) next, at the latest.
    pub fn poll_timeout(&self) -> Option<u64> {
        let mut t: Option<u64> = None;
        let mut at = |x: Option<u64>| t = min_opt(t, x);
        match self.state {
            State::Done => return None,
            State::Sending => {
                at(self.pacer.next_due());
                at(self.cfg.send_until);
                if let Some(front) = self.open.front() {
                    if self.open.len() > 1 {
                        let ended = self.interval_end(front);
                        at(Some(self.close_at(front.index, ended)));
                    }
                }
                if let Stage::Time(ns) = self.cfg.stage {
                    // Wake at the next interval boundary to open it and close old ones.
                    let newest = self.open.back().map_or(self.cfg.start, |iv| iv.start);
                    at(Some(newest + ns));
                }
            }
            State::Draining { until } => at(Some(until)),
            State::Querying { sent, next, until } => {
                if sent < query::QUERY_ATTEMPTS {
                    at(Some(next));
                }
                at(Some(until));
            }
        }
        at(self.next_expiry());
        t
    }

    /// `--packets`: the fates decided since the last call, `sent_ns` on the session clock
    /// (nothing unless the config asked, [`SessionConfig::log_packets`]).
    pub fn take_packets(&mut self) -> Vec<npt_result::packets::PacketLine> {
        self.log.as_mut().map(log::Log::take).unwrap_or_default()
    }

    /// Everything counted so far (final once [`is_done`](Session::is_done)).
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// Mutable access for the driver to move the final totals out.
    pub fn totals_mut(&mut self) -> &mut Totals {
        &mut self.totals
    }

    pub fn into_totals(self) -> Totals {
        self.totals
    }

    /// What was decided since the last call (all of it on the first): packets resolved,
    /// replies, bytes and the jitter estimate, for a driver that hands a long session's results
    /// on in batches. Packets still in flight are not in it until their fate is known; once the
    /// session [`is_done`](Session::is_done), the takes add up to [`totals`](Session::totals).
    pub fn take_progress(&mut self) -> Progress {
        let t = &self.totals;
        let now = Progress {
            resolved: t.packets.received + t.packets.lost + t.refused,
            received: t.packets.received,
            lost: t.packets.lost,
            refused: t.refused,
            late: t.packets.late,
            duplicated: t.packets.duplicated,
            reordered: t.packets.reordered,
            bytes_up: t.bytes_up,
            bytes_down: t.bytes_down,
            jitter: JitterMean::from_value(0.0, self.jitter.samples()),
        };
        let was = std::mem::replace(&mut self.taken, now);
        Progress {
            resolved: now.resolved - was.resolved,
            received: now.received - was.received,
            // A flow's last take can move packets from lost to refused (the far end's final
            // count): never a negative take.
            lost: now.lost.saturating_sub(was.lost),
            refused: now.refused - was.refused,
            late: now.late - was.late,
            duplicated: now.duplicated - was.duplicated,
            reordered: now.reordered - was.reordered,
            bytes_up: now.bytes_up - was.bytes_up,
            bytes_down: now.bytes_down - was.bytes_down,
            jitter: JitterMean::from_value(
                self.jitter.value_ns(),
                now.jitter.samples() - was.jitter.samples(),
            ),
        }
    }
}
