//! The probe session's vocabulary: how packets are framed and staged, the configuration of
//! one flow, and what it hands back — [`Totals`], [`Interval`]s and the [`StopReason`]. Plain
//! data (merged with `+=` across flows and threads); the state machine is in the parent module.

use std::ops::AddAssign;

use npt_stats::{ErrorCounts, Histogram, JitterMean};
use npt_wire::frame::HEADER_LEN;
use npt_wire::raw::RAW_HEADER_LEN;
use npt_wire::{Fill, Pacing};

pub use super::directions::{ClockSync, DirTotals, Notices, Reflect};

/// How packets are laid out on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// npt's framed header (needs `npt serve`); carries the access token.
    Framed { token: u64 },
    /// Stamp inside the payload; works with any plain echo server.
    Raw,
    /// STAMP test packets (RFC 8762) to a Session-Reflector ([`super::stamp`]).
    Stamp(super::stamp::StampFraming),
}

impl Framing {
    pub fn header_len(&self) -> usize {
        match self {
            Framing::Framed { .. } => HEADER_LEN,
            Framing::Raw => RAW_HEADER_LEN,
            Framing::Stamp(s) => s.header_len(),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Framing::Framed { .. } => "framed",
            Framing::Raw => "raw",
            Framing::Stamp(_) => "stamp",
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
    /// STAMP's authenticated mode: the HMAC key of every test packet and answer.
    pub stamp_key: Option<npt_wire::stamp::StampKey>,
    /// `--under-load`: session clock times the loaded and the recovery phases start at. Each
    /// on-time reply's RTT then also goes into its phase's histogram, by the time its packet
    /// was *sent* (as loss is attributed), in [`Totals::phase_rtt`].
    pub phases: Option<[u64; 2]>,
    /// What to ask the far end (framed only): its counts and timestamps per reply, and its
    /// final counts at the end ([`Reflect`]).
    pub reflect: Reflect,
    /// The clock assumption one-way delays rest on; without one, none are recorded.
    pub clock: ClockSync,
    /// `--packets`: queue each packet's fate for [`Session::take_packets`](super::Session).
    pub log_packets: bool,
    /// Ask the far end to send its replies with this TOS byte and to say what each request
    /// arrived with (`npt serve`, [`npt_wire::marking`]; UDP framed only). None: not asked.
    pub mark: Option<u8>,
}

/// Counters and histograms of a flow or of many flows merged (`+=`).
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Sent, received, lost (path loss: unanswered after the loss timeout and not refused by
    /// the far end), late, duplicated, reordered; `received + lost + refused == sent` once the
    /// flow is done.
    pub packets: npt_stats::PacketCounts,
    /// Packets the far end's budget (or its `--token`) refused: never path loss.
    pub refused: u64,
    pub corrupt: u64,
    pub foreign: u64,
    /// What the first foreign reply looked like ([`super::who`]).
    pub foreign_example: Option<String>,
    /// Replies by the far end that sent them.
    pub answered: super::who::Answered,
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
    /// `--under-load`: RTTs by the phase their packet was sent in (idle, loaded, recovery);
    /// empty without phases.
    pub phase_rtt: Vec<Histogram>,
    /// Per direction, from what the far end saw.
    pub dir: DirTotals,
    /// Replies by the TOS byte they arrived with (UDP: the driver reads it from the kernel).
    pub marking: npt_result::marking::Marking,
}

/// Which of the three phases a send at `sent` falls in, for bounds `[loaded, recovery]`.
pub fn phase_of(bounds: [u64; 2], sent: u64) -> usize {
    usize::from(sent >= bounds[0]) + usize::from(sent >= bounds[1])
}

pub(super) fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

pub(super) fn max_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

impl AddAssign<&Totals> for Totals {
    fn add_assign(&mut self, o: &Totals) {
        self.packets += &o.packets;
        self.refused += o.refused;
        self.corrupt += o.corrupt;
        self.foreign += o.foreign;
        if self.foreign_example.is_none() {
            self.foreign_example.clone_from(&o.foreign_example);
        }
        self.answered += &o.answered;
        self.stale += o.stale;
        self.bytes_up += o.bytes_up;
        self.bytes_down += o.bytes_down;
        self.rtt += &o.rtt;
        self.rtt_corrected += &o.rtt_corrected;
        self.ipdv += &o.ipdv;
        self.send_lateness += &o.send_lateness;
        self.behind_schedule += o.behind_schedule;
        if self.phase_rtt.len() < o.phase_rtt.len() {
            self.phase_rtt
                .resize_with(o.phase_rtt.len(), Histogram::new);
        }
        for (a, b) in self.phase_rtt.iter_mut().zip(&o.phase_rtt) {
            *a += b;
        }
        self.jitter += &o.jitter;
        self.first_send = min_opt(self.first_send, o.first_send);
        self.last_send = max_opt(self.last_send, o.last_send);
        self.first_reply = min_opt(self.first_reply, o.first_reply);
        self.last_reply = max_opt(self.last_reply, o.last_reply);
        self.first_rtt = min_opt(self.first_rtt, o.first_rtt);
        self.marking += &o.marking;
        self.errors += &o.errors;
        self.dir += &o.dir;
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
    /// Of the packets sent in it: sent, received, lost (path loss), late, duplicated,
    /// reordered (`received + lost + refused == sent`).
    pub packets: npt_stats::PacketCounts,
    /// Refused by the far end.
    pub refused: u64,
    /// Of `lost`, placed on the way up and on the way down; the rest was still unplaced when
    /// the interval closed (no reply after it yet) or nothing told (no reflecting far end).
    pub lost_up: u64,
    pub lost_down: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub rtt: Histogram,
    /// A flow's RFC 3550 estimate at its last reply in this interval, weighted by the samples
    /// it took in it; after `+=`, the flows' sample-weighted mean.
    pub jitter: JitterMean,
    /// Flows that contributed.
    pub flows: u32,
    /// Of those, flows whose far end said what it saw (UDP, framed): `lost_up`/`lost_down`
    /// mean something.
    pub reflected: u32,
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
        self.packets += &o.packets;
        self.refused += o.refused;
        self.lost_up += o.lost_up;
        self.lost_down += o.lost_down;
        self.bytes_up += o.bytes_up;
        self.bytes_down += o.bytes_down;
        self.rtt += &o.rtt;
        self.jitter += &o.jitter;
        self.flows += o.flows;
        self.reflected += o.reflected;
    }
}

/// Why a session stopped sending: the one stop vocabulary of every result.
pub use npt_result::StopReason;

/// What one received datagram turned out to be ([`super::Session::handle_arrival`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// An on-time reply and its round-trip time (ns).
    OnTime {
        rtt: u64,
    },
    /// A reply after its packet was declared lost.
    Late,
    Duplicate,
    /// A refusal notice: the far end refused one of this flow's packets.
    Refused,
    /// Not a reply of this flow, a stale one, or one after the end: counted, not measured.
    Ignored,
}

/// What a session decided since the last [`super::Session::take_progress`]: for a driver
/// that hands a long session's results on in batches (`npt run`'s game flushes into per-second
/// run intervals) instead of waiting for [`Totals`]. A packet shows up here once its fate is
/// known, so every batch keeps `received + lost + refused == resolved`, and `received` is the number of
/// [`Arrival::OnTime`] replies since the last take.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Packets answered or declared lost.
    pub resolved: u64,
    pub received: u64,
    pub lost: u64,
    /// Refused by the far end (never path loss).
    pub refused: u64,
    pub late: u64,
    pub duplicated: u64,
    pub reordered: u64,
    /// Bytes sent (counted at the send, like [`Totals::bytes_up`]).
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// The flow's RFC 3550 estimate now, weighted by the samples it took since the last take
    /// (as an [`Interval`]'s jitter); adding the takes up gives a mergeable mean.
    pub jitter: JitterMean,
}
