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

use std::collections::VecDeque;
use std::ops::AddAssign;

use npt_stats::{ErrorCounts, Histogram, Jitter, JitterMean};
use npt_wire::frame::{Header, Kind, HEADER_LEN};
use npt_wire::raw::{RawStamp, RAW_HEADER_LEN};
use npt_wire::{fill, Fill, Outcome, Pacer, Pacing, Window};

/// How packets are laid out on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// npt's framed header (needs `npt serve`); carries the access token.
    Framed { token: u64 },
    /// Stamp inside the payload; works with any plain echo server.
    Raw,
}

impl Framing {
    pub fn header_len(&self) -> usize {
        match self {
            Framing::Framed { .. } => HEADER_LEN,
            Framing::Raw => RAW_HEADER_LEN,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Framing::Framed { .. } => "framed",
            Framing::Raw => "raw",
        }
    }
}

/// When stage (interval) records are cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Every `ns` of send time.
    Time(u64),
    /// Every this many packets sent by this session.
    Packets(u64),
}

#[derive(Clone, Debug)]
pub struct SessionConfig {
    pub flow: u32,
    pub framing: Framing,
    /// Bytes per packet, header included.
    pub size: usize,
    pub fill: Fill,
    pub fill_seed: u64,
    /// Compare every echoed payload with what was sent.
    pub verify: bool,
    pub pacing: Pacing,
    /// ns after which an unanswered packet is lost.
    pub loss_timeout: u64,
    /// Stop sending after this many packets.
    pub count: Option<u64>,
    /// Stop sending packets due at or after this time (ns, session clock).
    pub send_until: Option<u64>,
    /// Session clock time the schedule starts at.
    pub start: u64,
    pub stage: Stage,
    /// A send later than this after its due time counts as behind schedule.
    pub behind_threshold: u64,
    /// Retired sequence numbers remembered to tell late from duplicate.
    pub history: usize,
    /// `--token`: the session key every framed packet is sealed with, and every reply must
    /// verify under (else it counts as foreign). Set per connection on TCP.
    pub auth: Option<npt_wire::auth::SessionKey>,
}

/// Counters and histograms of a flow or of many flows merged (`+=`).
#[derive(Clone, Debug, Default)]
pub struct Totals {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub late: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub corrupt: u64,
    pub foreign: u64,
    pub stale: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub rtt: Histogram,
    pub rtt_corrected: Histogram,
    pub ipdv: Histogram,
    pub send_lateness: Histogram,
    pub behind_schedule: u64,
    /// RFC 3550 jitter of the flows, sample-weighted (merges exactly).
    pub jitter: JitterMean,
    pub first_send: Option<u64>,
    pub last_send: Option<u64>,
    pub first_reply: Option<u64>,
    pub last_reply: Option<u64>,
    /// Round-trip time of the first on-time reply of a flow (after `+=`: the smallest of the
    /// flows'). TCP's first-packet latency is the connect plus this, nothing else.
    pub first_rtt: Option<u64>,
    pub errors: ErrorCounts,
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

fn max_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

impl AddAssign<&Totals> for Totals {
    fn add_assign(&mut self, o: &Totals) {
        self.sent += o.sent;
        self.received += o.received;
        self.lost += o.lost;
        self.late += o.late;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
        self.corrupt += o.corrupt;
        self.foreign += o.foreign;
        self.stale += o.stale;
        self.bytes_up += o.bytes_up;
        self.bytes_down += o.bytes_down;
        self.rtt += &o.rtt;
        self.rtt_corrected += &o.rtt_corrected;
        self.ipdv += &o.ipdv;
        self.send_lateness += &o.send_lateness;
        self.behind_schedule += o.behind_schedule;
        self.jitter += &o.jitter;
        self.first_send = min_opt(self.first_send, o.first_send);
        self.last_send = max_opt(self.last_send, o.last_send);
        self.first_reply = min_opt(self.first_reply, o.first_reply);
        self.last_reply = max_opt(self.last_reply, o.last_reply);
        self.first_rtt = min_opt(self.first_rtt, o.first_rtt);
        self.errors += &o.errors;
    }
}

impl Totals {
    /// Sample-weighted RFC 3550 jitter in ns.
    pub fn jitter_ns(&self) -> f64 {
        self.jitter.value_ns()
    }
}

/// One stage of one flow (or, after `+=`, of all flows) once it is final.
#[derive(Clone, Debug, Default)]
pub struct Interval {
    pub index: u32,
    /// Session-clock bounds (ns).
    pub start: u64,
    pub end: u64,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub late: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub rtt: Histogram,
    /// A flow's RFC 3550 estimate at its last reply in this interval, weighted by the samples
    /// it took in it; after `+=`, the flows' sample-weighted mean.
    pub jitter: JitterMean,
    /// Flows that contributed.
    pub flows: u32,
}

impl AddAssign<&Interval> for Interval {
    fn add_assign(&mut self, o: &Interval) {
        if self.flows == 0 {
            self.index = o.index;
            self.start = o.start;
            self.end = o.end;
        } else {
            self.start = self.start.min(o.start);
            self.end = self.end.max(o.end);
        }
        self.sent += o.sent;
        self.received += o.received;
        self.lost += o.lost;
        self.late += o.late;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
        self.bytes_up += o.bytes_up;
        self.bytes_down += o.bytes_down;
        self.rtt += &o.rtt;
        self.jitter += &o.jitter;
        self.flows += o.flows;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Sending,
    Draining { until: u64 },
    Done,
}

/// Why a session stopped sending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    Count,
    Duration,
    Signal,
    Abort,
    Error,
    /// Relay pacing with nothing in flight and nothing it may send: every packet that could
    /// release the next one was lost (seed 002: "a network like that is worth a complaint").
    Stalled,
}

impl StopReason {
    pub fn name(&self) -> &'static str {
        match self {
            StopReason::Count => "count",
            StopReason::Duration => "duration",
            StopReason::Signal => "signal",
            StopReason::Abort => "abort",
            StopReason::Error => "error",
            StopReason::Stalled => "stalled",
        }
    }
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
    lost_tags: Vec<u32>,
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
            cfg,
        };
        s.open.push_back(s.new_interval(0));
        s
    }

    /// A new session key (`--token`, after a TCP reconnect's handshake).
    pub fn set_auth(&mut self, key: npt_wire::auth::SessionKey) {
        self.cfg.auth = Some(key);
    }

    pub fn config(&self) -> &SessionConfig {
        &self.cfg
    }

    fn new_interval(&self, index: u32) -> Interval {
        let start = match self.cfg.stage {
            Stage::Time(ns) => self.cfg.start + index as u64 * ns,
            Stage::Packets(_) => self.totals.last_send.unwrap_or(self.cfg.start),
        };
        Interval {
            index,
            start,
            end: start,
            flows: 1,
            ..Interval::default()
        }
    }

    /// Index of the interval a send at `now` belongs to.
    fn send_interval(&self, now: u64) -> u32 {
        match self.cfg.stage {
            Stage::Time(ns) => (now.saturating_sub(self.cfg.start) / ns.max(1)) as u32,
            Stage::Packets(p) => (self.totals.sent / p.max(1)) as u32,
        }
    }

    /// The newest open interval: the home of late and duplicate arrivals. None once the
    /// session is done (every interval has been handed out).
    fn newest_mut(&mut self) -> Option<&mut Interval> {
        self.open.back_mut()
    }

    fn interval_mut(&mut self, index: u32) -> Option<&mut Interval> {
        let i = index.checked_sub(self.first_open)? as usize;
        self.open.get_mut(i)
    }

    fn ensure_open(&mut self, index: u32) {
        while self.first_open + (self.open.len() as u32) <= index {
            let next = self.first_open + self.open.len() as u32;
            let iv = self.new_interval(next);
            self.open.push_back(iv);
        }
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
            .map_or(now, |t| t + self.cfg.loss_timeout)
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
        let mut tags = std::mem::take(&mut self.lost_tags);
        self.window.expire_all(|_, slot| tags.push(slot.tag));
        for &tag in &tags {
            self.count_lost(tag);
        }
        tags.clear();
        self.lost_tags = tags;
        self.finish_all(now);
    }

    /// Counts a transport error (refused, reset, …) against this flow.
    pub fn record_error(&mut self, kind: &str, example: impl FnOnce() -> String) {
        // In the one vocabulary of every result (the driver's classifier says `aborted`).
        let kind = npt_report::result::error_kind(kind);
        self.totals.errors.record(kind, example);
    }

    /// A packet that could not be handed to the socket at all. It stays in the window and will
    /// be counted lost at its deadline: a user's packet that never left is a lost packet.
    pub fn send_failed(&mut self, kind: &str, example: impl FnOnce() -> String) {
        self.record_error(kind, example);
    }

    /// The next packet if one is due at `now`: writes it into `buf` and returns its length.
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        if self.state != State::Sending {
            return None;
        }
        if matches!(self.cfg.count, Some(c) if self.totals.sent >= c) {
            self.begin_drain(now, StopReason::Count);
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
        let index = self.send_interval(now);
        self.ensure_open(index);
        let seq = self.window.push(now, due, index);
        let hl = self.cfg.framing.header_len();
        match self.cfg.framing {
            Framing::Framed { token } => {
                let h = Header {
                    kind: Kind::Echo,
                    flags: 0,
                    frame_len: size as u32,
                    reply_len: 0,
                    flow: self.cfg.flow,
                    status: 0,
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
        }
        fill::fill(self.cfg.fill, self.cfg.fill_seed, seq, &mut buf[hl..]);
        self.pacer.on_sent(due, now);
        let t = &mut self.totals;
        t.sent += 1;
        t.bytes_up += size as u64;
        t.first_send.get_or_insert(now);
        t.last_send = Some(now);
        let late_by = now - due;
        t.send_lateness.record(late_by);
        if late_by > self.cfg.behind_threshold {
            t.behind_schedule += 1;
        }
        if let Some(iv) = self.interval_mut(index) {
            iv.sent += 1;
            iv.bytes_up += size as u64;
            iv.end = iv.end.max(now);
        }
        Some(size)
    }

    /// A relay schedule that has sent its warm-up and has nothing in flight can never send
    /// again (only replies release packets): stop instead of waiting for ever.
    fn check_stalled(&mut self, now: u64) {
        if self.state == State::Sending
            && self.window.in_flight() == 0
            && self.totals.sent > 0
            && self.pacer.next_due().is_none()
        {
            self.totals.errors.record("stalled", || {
                format!(
                    "relay stalled after {} packets: every packet in flight was lost, so none \
                     released the next",
                    self.totals.sent
                )
            });
            self.begin_drain(now, StopReason::Stalled);
        }
    }

    /// Handles `bytes` if they are one of this flow's replies (right framing, flow and size)
    /// and returns true; otherwise counts nothing and returns false (a TCP stream that lost its
    /// step, see [`super::stream`]).
    pub fn try_handle_reply(&mut self, now: u64, bytes: &[u8]) -> bool {
        let ours = bytes.len() == self.cfg.size
            && matches!(self.parse(bytes), Some((flow, _, _)) if flow == self.cfg.flow);
        if ours {
            self.handle_reply(now, bytes);
        }
        ours
    }

    /// Handles one received datagram or frame.
    pub fn handle_reply(&mut self, now: u64, bytes: &[u8]) {
        if self.state == State::Done {
            // After the end (a second Ctrl-C abandons what is in flight): counted, not measured.
            self.totals.stale += 1;
            return;
        }
        let Some((flow, seq, ts)) = self.parse(bytes) else {
            self.totals.foreign += 1;
            return;
        };
        if flow != self.cfg.flow || bytes.len() != self.cfg.size {
            self.totals.foreign += 1;
            return;
        }
        // Deadlines first, so a reply after its timeout is late, never on time.
        self.expire(now);
        let outcome = self.window.on_reply(seq);
        let arrival = bytes.len() as u64;
        match outcome {
            Outcome::OnTime { slot, reordered } => {
                if ts != slot.sent {
                    // The echo did not carry our stamp back intact.
                    self.totals.corrupt += 1;
                }
                let rtt = now.saturating_sub(slot.sent);
                if self.cfg.verify {
                    let hl = self.cfg.framing.header_len();
                    if !fill::verify(
                        self.cfg.fill,
                        self.cfg.fill_seed,
                        seq,
                        &bytes[hl..],
                        &mut self.scratch,
                    ) {
                        self.totals.corrupt += 1;
                    }
                }
                let t = &mut self.totals;
                t.received += 1;
                t.bytes_down += arrival;
                t.rtt.record(rtt);
                if self.cfg.pacing.is_open_loop() {
                    t.rtt_corrected.record(now.saturating_sub(slot.intended));
                }
                t.first_reply.get_or_insert(now);
                t.first_rtt.get_or_insert(rtt);
                t.last_reply = Some(now);
                if reordered {
                    t.reordered += 1;
                }
                let sampled = self
                    .jitter
                    .record(rtt)
                    .inspect(|&d| self.totals.ipdv.record(d));
                let j = self.jitter.value_ns();
                if let Some(iv) = self.interval_mut(slot.tag) {
                    iv.received += 1;
                    iv.bytes_down += arrival;
                    iv.rtt.record(rtt);
                    let n = iv.jitter.samples() + u64::from(sampled.is_some());
                    iv.jitter = JitterMean::from_value(j, n);
                    if reordered {
                        iv.reordered += 1;
                    }
                }
                self.pacer.on_reply(now);
            }
            Outcome::Late { reordered } => {
                self.totals.late += 1;
                self.totals.bytes_down += arrival;
                if reordered {
                    self.totals.reordered += 1;
                }
                if let Some(iv) = self.newest_mut() {
                    iv.late += 1;
                    iv.bytes_down += arrival;
                }
            }
            Outcome::Duplicate => {
                self.totals.duplicated += 1;
                self.totals.bytes_down += arrival;
                if let Some(iv) = self.newest_mut() {
                    iv.duplicated += 1;
                    iv.bytes_down += arrival;
                }
            }
            Outcome::Stale => self.totals.stale += 1,
            Outcome::Unknown => self.totals.foreign += 1,
        }
        self.maybe_finish(now);
    }

    fn parse(&self, bytes: &[u8]) -> Option<(u32, u64, u64)> {
        match self.cfg.framing {
            Framing::Framed { .. } => {
                let h = Header::decode(bytes).ok()?;
                if h.kind != Kind::EchoReply || h.frame_len as usize != bytes.len() {
                    return None;
                }
                if let Some(k) = &self.cfg.auth {
                    k.open(npt_wire::auth::Dir::ToClient, bytes).ok()?;
                }
                Some((h.flow, h.seq, h.send_ts))
            }
            Framing::Raw => {
                let s = RawStamp::decode(bytes).ok()?;
                Some((s.flow, s.seq, s.send_ts))
            }
        }
    }

    fn count_lost(&mut self, tag: u32) {
        self.totals.lost += 1;
        if let Some(iv) = self.interval_mut(tag) {
            iv.lost += 1;
        }
    }

    fn expire(&mut self, now: u64) {
        let mut tags = std::mem::take(&mut self.lost_tags);
        self.window.expire(now, |_, slot| tags.push(slot.tag));
        for &tag in &tags {
            self.count_lost(tag);
        }
        tags.clear();
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
        if let State::Draining { until } = self.state {
            if self.window.in_flight() == 0 || now >= until {
                self.expire(until.max(now));
                self.finish_all(now);
            }
        }
    }

    fn finish_all(&mut self, _now: u64) {
        self.state = State::Done;
        self.totals.jitter = JitterMean::of(&self.jitter);
        // Trailing intervals in which nothing happened (the drain) are not worth a record.
        while matches!(self.open.back(), Some(iv) if self.open.len() > 1
            && iv.sent + iv.received + iv.late + iv.duplicated == 0)
        {
            self.open.pop_back();
        }
        while let Some(mut iv) = self.open.pop_front() {
            self.first_open += 1;
            if let Stage::Time(ns) = self.cfg.stage {
                iv.end = (iv.start + ns).min(iv.end.max(self.totals.last_send.unwrap_or(iv.start)));
            }
            self.done_intervals.push_back(iv);
        }
    }

    fn interval_end(&self, iv: &Interval) -> u64 {
        match self.cfg.stage {
            Stage::Time(ns) => iv.start + ns,
            Stage::Packets(_) => iv.end,
        }
    }

    /// Closes intervals whose every packet is resolved: a newer interval exists (so sending
    /// in it is over) and the loss timeout after its end has passed. The newest interval stays
    /// open until the session is done, as the home of late and duplicate arrivals.
    fn close_intervals(&mut self, now: u64) {
        if self.state == State::Sending {
            let current = self.send_interval(now);
            self.ensure_open(current);
        }
        while self.open.len() > 1 {
            let ended = self.interval_end(&self.open[0]);
            if now < ended.saturating_add(self.cfg.loss_timeout) {
                break;
            }
            let mut iv = self.open.pop_front().expect("len > 1");
            iv.end = ended;
            self.first_open += 1;
            self.done_intervals.push_back(iv);
        }
    }

    /// A finished interval, once all its packets are resolved.
    pub fn poll_interval(&mut self) -> Option<Interval> {
        self.done_intervals.pop_front()
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
                        let ended = match self.cfg.stage {
                            Stage::Time(ns) => front.start + ns,
                            Stage::Packets(_) => front.end,
                        };
                        at(Some(ended + self.cfg.loss_timeout));
                    }
                }
                if let Stage::Time(ns) = self.cfg.stage {
                    // Wake at the next interval boundary to open it and close old ones.
                    let newest = self.open.back().map_or(self.cfg.start, |iv| iv.start);
                    at(Some(newest + ns));
                }
            }
            State::Draining { until } => at(Some(until)),
        }
        at(self.window.next_expiry());
        t
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
}
