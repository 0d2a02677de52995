//! The per-direction vocabulary of a probe session: whether it asks the far end what it saw
//! ([`Reflect`]), which clock assumption one-way delays rest on ([`ClockSync`]), and what it
//! counted per direction ([`DirTotals`], a value that adds across flows like [`super::Totals`]).

use std::ops::AddAssign;

use npt_result::directions::FlowsSettled;
use npt_stats::Histogram;

use super::far::RefusalWhy;
use super::types::max_opt;

/// How much a session asks of the far end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reflect {
    /// Nothing (`--raw`: any echo server): round trips only.
    #[default]
    Off,
    /// Its timestamps only (a TCP stream, where the transport hides loss): dwell, IPDV and
    /// one-way delay per direction.
    Timing,
    /// Everything (UDP): its receive and refused counts per reply, refusal notices, and its
    /// final counts by a flow query at the end, so loss splits into up, down and refused.
    Full,
}

/// Which clock assumption one-way delays rest on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClockSync {
    /// None: no one-way delay, only what needs no sync (IPDV per direction, dwell).
    #[default]
    None,
    /// Both ends read one clock: the target is on this host, or both run in `npt lab`'s
    /// namespaces of one machine.
    SameHost,
    /// The user says the clocks are synchronized (`--owd`: NTP, PTP).
    Synced,
}

impl ClockSync {
    /// The name in the result (`directions.clock`).
    pub fn name(&self) -> &'static str {
        match self {
            ClockSync::None => "none",
            ClockSync::SameHost => "same-host",
            ClockSync::Synced => "synced",
        }
    }
}

/// Notices received, by reason ([`RefusalWhy`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Notices {
    pub budget: u64,
    pub token_required: u64,
    pub no_token: u64,
    pub unknown_session: u64,
    pub other: u64,
}

impl Notices {
    pub fn count(&mut self, why: RefusalWhy) {
        *match why {
            RefusalWhy::Budget => &mut self.budget,
            RefusalWhy::TokenRequired => &mut self.token_required,
            RefusalWhy::NoToken => &mut self.no_token,
            RefusalWhy::UnknownSession => &mut self.unknown_session,
            RefusalWhy::Other => &mut self.other,
        } += 1;
    }

    /// Each reason with its count, those counted.
    pub fn by_reason(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [
            (RefusalWhy::Budget, self.budget),
            (RefusalWhy::TokenRequired, self.token_required),
            (RefusalWhy::NoToken, self.no_token),
            (RefusalWhy::UnknownSession, self.unknown_session),
            (RefusalWhy::Other, self.other),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(w, n)| (w.name(), n))
    }
}

impl AddAssign<&Notices> for Notices {
    fn add_assign(&mut self, o: &Notices) {
        self.budget += o.budget;
        self.token_required += o.token_required;
        self.no_token += o.no_token;
        self.unknown_session += o.unknown_session;
        self.other += o.other;
    }
}

/// What the far end's answers place per direction, for one flow or many (`+=`).
///
/// Counts of path loss: `lost_up + lost_down + unplaced` is the flow's path loss once it is
/// done. With a flow report (`exact`) `unplaced` is 0 and the split is exact; without one the
/// split is what the replies around each run of losses told, and the losses after the last
/// reply (nothing told) are `unplaced`.
#[derive(Clone, Debug, Default)]
pub struct DirTotals {
    /// Flows whose replies said what the far end saw, and how each ended (settled by the far
    /// end's final counts, or why not): the result's own counts.
    pub flows: FlowsSettled,
    pub lost_up: u64,
    pub lost_down: u64,
    pub unplaced: u64,
    /// Packets the far end received more than once (from its final count; without one, the
    /// echoes of such packets seen here).
    pub dup_up: u64,
    /// Replies that arrived here more than once.
    pub dup_down: u64,
    /// Packets that reached the far end after a later one (its final count).
    pub reorder_up: u64,
    /// Replies that arrived here after one the far end sent later.
    pub reorder_down: u64,
    pub notices: Notices,
    /// On-time replies that carried the far end's timestamps.
    pub stamped: u64,
    /// Time the far end held each packet (its send − receive time).
    pub dwell: Histogram,
    /// |difference of consecutive packets' one-way transit| each way: needs no clock sync.
    pub ipdv_up: Histogram,
    pub ipdv_down: Histogram,
    /// One-way delay each way, under [`ClockSync::SameHost`] or [`ClockSync::Synced`] only
    /// (negative readings recorded as 0 and counted in `owd_negative`).
    pub owd_up: Histogram,
    pub owd_down: Histogram,
    pub owd_negative: u64,
    /// The most negative one-way reading, ns (clocks that are not one).
    pub owd_min_ns: Option<i64>,
    /// The largest clock error a far end stated (STAMP's Error Estimate), ns.
    pub far_error_ns: Option<u64>,
}

fn min_i(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

impl AddAssign<&DirTotals> for DirTotals {
    fn add_assign(&mut self, o: &DirTotals) {
        self.flows += &o.flows;
        self.lost_up += o.lost_up;
        self.lost_down += o.lost_down;
        self.unplaced += o.unplaced;
        self.dup_up += o.dup_up;
        self.dup_down += o.dup_down;
        self.reorder_up += o.reorder_up;
        self.reorder_down += o.reorder_down;
        self.notices += &o.notices;
        self.stamped += o.stamped;
        self.dwell += &o.dwell;
        self.ipdv_up += &o.ipdv_up;
        self.ipdv_down += &o.ipdv_down;
        self.owd_up += &o.owd_up;
        self.owd_down += &o.owd_down;
        self.owd_negative += o.owd_negative;
        self.owd_min_ns = min_i(self.owd_min_ns, o.owd_min_ns);
        self.far_error_ns = max_opt(self.far_error_ns, o.far_error_ns);
    }
}
