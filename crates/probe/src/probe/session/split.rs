//! Per-direction bookkeeping of one flow: where each missing packet went (up, down, or refused
//! by the far end), duplicates and reordering per direction, and delay per direction — from
//! what the far end says it saw ([`FarEnd`]), with no sockets and no clock.
//!
//! **Placing losses.** The sequence window settles packets in sequence order. A run of
//! consecutive missing packets (a *gap*) is placed once the reply after it is settled: the far
//! end's receive count grew by `c_b − c_a − 1` between the replies around the gap (the packets
//! that reached it and whose replies were lost: *down*), its refused count by `r_b − r_a`
//! (*refused*, notices first), and the rest never reached it (*up*). Which packets of a gap
//! went which way is known only as counts; gaps are short on any path that delivers, so the
//! interval a loss belongs to (the one it was sent in) is rarely ambiguous. The gap after the
//! last reply is placed by the far end's final counts (the flow report), or stays unplaced.
//! Refusals telescope: the refused packets placed never exceed the far end's count, so the
//! flow's path loss only grows and ends exact when the report answers.
//!
//! **Per direction, exactly.** With the report: up-unique = received − duplicated (its
//! counts), `lost_up = sent − refused − up_unique`, `lost_down = up_unique − on-time replies`
//! (a late reply stays lost, as a round trip's does), duplicates and reordering up are its own.
//! Down duplicates are replies seen twice with the same receive count (an echo of an up
//! duplicate carries a new one); down reordering is a reply whose receive count is below one
//! seen before (the far end answers in receive order).
//!
//! **Delay.** Dwell is the far end's send − receive time (one clock). Each way's transit is
//! `far receive − our send` and `our receive − far send`, with our wall time as the session
//! clock plus an offset the driver keeps fresh: their difference between consecutive replies
//! (IPDV) needs no clock sync; the transit itself is a one-way delay only under a stated
//! [`ClockSync`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use npt_wire::reflect::{unwrap_count, FlowReport};

use super::directions::{ClockSync, DirTotals, Reflect};
use super::far::{FarEnd, RefusalWhy};

/// Where the missing packets of one interval in a placed gap went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Placed {
    pub tag: u32,
    pub refused: u64,
    pub up: u64,
    pub down: u64,
    /// Path losses whose direction nothing told.
    pub unknown: u64,
}

/// How a flow's far end answered the query at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Final {
    Report(FlowReport),
    UnknownFlow,
    NoAnswer,
}

/// Consecutive missing packets sent in one interval.
#[derive(Clone, Copy, Debug)]
struct Run {
    tag: u32,
    missing: u64,
    noticed: u64,
}

/// A reply or a notice waiting to be settled: the far end's counts when the packet arrived
/// there. A reply's receive count closes the gap before it; a notice's refused count (of the
/// packets before it, `c` None) places refusals only, the rest of the gap waits for a reply; a
/// reply without counts (both None) is one more arrival.
#[derive(Clone, Copy, Debug)]
struct Point {
    c: Option<u64>,
    r: Option<u64>,
}

/// Up-duplicate classification memory: at most this many recent packets' receive counts.
const FIRST_COUNTS_CAP: usize = 1 << 16;

pub(super) struct Split {
    mode: Reflect,
    clock: ClockSync,
    /// Whether the far end reflects: unknown until the first reply.
    reflecting: Option<bool>,
    /// Highest receive and refused counts seen (unwrapped).
    c_hi: u64,
    r_hi: u64,
    /// Receive count at the last placed reply.
    anchor_c: u64,
    /// Refusals placed so far (never more than the far end's count).
    placed_refused: u64,
    /// Replies not yet settled, by sequence number: each closes the gap below it.
    points: BTreeMap<u64, Point>,
    /// The open gap: missing packets since the last placed reply, by interval.
    gap: VecDeque<Run>,
    /// Packets in flight the far end said it refused.
    noticed: BTreeSet<u64>,
    /// Each recent packet's first receive count (0: none yet), from `first_base` on.
    first_c: VecDeque<u32>,
    first_base: u64,
    first_cap: usize,
    /// Highest receive count among first arrivals (down reordering).
    max_first_c: u64,
    last_up: Option<i64>,
    last_down: Option<i64>,
    /// A notice or a reflected reply was seen: the far end keeps this flow.
    heard: bool,
    /// The framing has no final query (STAMP): a flow that ends without one is not "no
    /// report" but what it is.
    no_query: bool,
}

fn take(pool: &mut u64, want: u64) -> u64 {
    let t = (*pool).min(want);
    *pool -= t;
    t
}

fn clamp_i64(x: i128) -> i64 {
    i64::try_from(x).unwrap_or(if x < 0 { i64::MIN } else { i64::MAX })
}

impl Split {
    pub(super) fn new(mode: Reflect, clock: ClockSync, history: usize) -> Split {
        Split {
            mode,
            clock,
            reflecting: None,
            c_hi: 0,
            r_hi: 0,
            anchor_c: 0,
            placed_refused: 0,
            points: BTreeMap::new(),
            gap: VecDeque::new(),
            noticed: BTreeSet::new(),
            first_c: VecDeque::new(),
            first_base: 0,
            first_cap: history.clamp(1, FIRST_COUNTS_CAP),
            max_first_c: 0,
            last_up: None,
            last_down: None,
            heard: false,
            no_query: false,
        }
    }

    /// For a framing that has no final query (STAMP): its flows end as `no_query`.
    pub(super) fn without_query(mut self, yes: bool) -> Split {
        self.no_query = yes;
        self
    }

    /// The far end has said what it saw of this flow (so far) and losses are placed per
    /// direction.
    pub(super) fn placing(&self) -> bool {
        self.mode == Reflect::Full && self.reflecting == Some(true)
    }

    /// Losses wait for their placement (else each is placed, direction unknown, at once).
    fn holds(&self) -> bool {
        self.mode == Reflect::Full && self.reflecting != Some(false)
    }

    /// Worth a flow query at the end: the far end reflected or sent notices.
    pub(super) fn wants_query(&self) -> bool {
        self.mode == Reflect::Full && self.heard && self.reflecting != Some(false)
    }

    /// Whether the far end's notice named packet `seq` refused (and its fate is still open).
    pub(super) fn is_noticed(&self, seq: u64) -> bool {
        self.noticed.contains(&seq)
    }

    /// Missing packets of interval `tag` not placed yet.
    pub(super) fn unplaced_in(&self, tag: u32) -> u64 {
        self.gap
            .iter()
            .filter(|r| r.tag == tag)
            .map(|r| r.missing)
            .sum()
    }

    /// A packet `seq` was sent.
    pub(super) fn on_sent(&mut self, seq: u64) {
        if self.mode != Reflect::Full {
            return;
        }
        if self.first_c.len() == self.first_cap {
            self.first_c.pop_front();
            self.first_base += 1;
        }
        if self.first_base + self.first_c.len() as u64 == seq {
            self.first_c.push_back(0);
        }
    }

    /// Packet `seq`, sent in interval `tag`, was declared missing (its loss timeout passed).
    pub(super) fn on_missing(&mut self, seq: u64, tag: u32, out: &mut Vec<Placed>) {
        let noticed = u64::from(self.noticed.remove(&seq));
        if !self.holds() {
            out.push(Placed {
                tag,
                refused: noticed,
                unknown: 1 - noticed,
                ..Placed::default()
            });
            return;
        }
        self.place_points(seq, out);
        match self.gap.back_mut() {
            Some(r) if r.tag == tag => {
                r.missing += 1;
                r.noticed += noticed;
            }
            _ => self.gap.push_back(Run {
                tag,
                missing: 1,
                noticed,
            }),
        }
    }

    /// Every packet below `settled` is answered or missing: place the replies up to there.
    pub(super) fn advance(&mut self, settled: u64, out: &mut Vec<Placed>) {
        self.place_points(settled.saturating_add(1), out);
    }

    /// Places the replies below `below`, in sequence order, each closing the gap before it.
    fn place_points(&mut self, below: u64, out: &mut Vec<Placed>) {
        while let Some(entry) = self.points.first_entry() {
            if *entry.key() >= below {
                break;
            }
            let p = entry.remove();
            self.place(p, out);
        }
    }

    /// Places one settled reply (or notice): it closes the gap before it.
    fn place(&mut self, p: Point, out: &mut Vec<Placed>) {
        match (p.c, p.r) {
            (Some(c), r) => {
                let arrived = c.saturating_sub(self.anchor_c.saturating_add(1));
                self.close_gap(Some(arrived), r, out);
                self.anchor_c = self.anchor_c.max(c);
            }
            (None, Some(r)) => self.refuse_front(r, out),
            // An uncounted reply: one more arrival, the gap stays open for a count.
            (None, None) => self.anchor_c += 1,
        }
    }

    /// Reply `seq`'s point, to be placed once every packet below it is settled. With nothing
    /// waiting before it and `seq` already below `settled` (a reply in order, the usual case),
    /// it is placed now, as the next [`advance`](Split::advance) would place it, without a
    /// trip through the ordered map.
    fn add_point(&mut self, seq: u64, p: Point, settled: u64, out: &mut Vec<Placed>) {
        if self.points.is_empty() && seq < settled {
            self.place(p, out);
        } else {
            self.points.insert(seq, p);
        }
    }

    /// Places refusals from the front of the open gap until the far end's refused count
    /// `refused_to` is reached (a notice told it; which packets of the gap they were is known
    /// as a count only).
    fn refuse_front(&mut self, refused_to: u64, out: &mut Vec<Placed>) {
        let mut quota = refused_to.saturating_sub(self.placed_refused);
        while quota > 0 {
            let Some(run) = self.gap.front_mut() else {
                break;
            };
            let x = run.missing.min(quota);
            run.missing -= x;
            run.noticed -= run.noticed.min(x);
            quota -= x;
            self.placed_refused += x;
            out.push(Placed {
                tag: run.tag,
                refused: x,
                ..Placed::default()
            });
            if run.missing == 0 {
                self.gap.pop_front();
            }
        }
    }

    /// Places the open gap: `arrived` packets reached the far end (None: unknown), and its
    /// refused count had reached `refused_to`.
    fn close_gap(&mut self, arrived: Option<u64>, refused_to: Option<u64>, out: &mut Vec<Placed>) {
        let n: u64 = self.gap.iter().map(|r| r.missing).sum();
        if n == 0 {
            return;
        }
        let noticed: u64 = self.gap.iter().map(|r| r.noticed).sum();
        let told = refused_to.map_or(0, |r| r.saturating_sub(self.placed_refused));
        let refused = n.min(noticed.max(told));
        let rest = n - refused;
        let (mut down, mut up, mut unknown) = match arrived {
            Some(a) => {
                let d = a.min(rest);
                (d, rest - d, 0)
            }
            None => (0, 0, rest),
        };
        let mut extra = refused.saturating_sub(noticed);
        for run in self.gap.drain(..) {
            let mut left = run.missing;
            let r = run.noticed.min(left) + take(&mut extra, left - run.noticed.min(left));
            left -= r;
            let d = take(&mut down, left);
            left -= d;
            let u = take(&mut up, left);
            left -= u;
            let k = take(&mut unknown, left);
            left -= k;
            // The pools add up to the gap's packets, so `left` is 0 here.
            out.push(Placed {
                tag: run.tag,
                refused: r,
                up: u,
                down: d,
                unknown: k + left,
            });
        }
        self.placed_refused += refused;
    }

    fn count(&mut self, wire: u32) -> u64 {
        let c = unwrap_count(self.c_hi, wire);
        self.c_hi = self.c_hi.max(c);
        c
    }

    fn refused(&mut self, wire: u32) -> u64 {
        let r = unwrap_count(self.r_hi, wire);
        self.r_hi = self.r_hi.max(r);
        r
    }

    /// The first reply to `seq` (on time, or `late`), and what the far end said of it;
    /// `settled`: the window's [`settled_below`](npt_wire::Window::settled_below) after it.
    pub(super) fn on_first_reply(
        &mut self,
        seq: u64,
        late: bool,
        far: Option<&FarEnd>,
        settled: u64,
        dir: &mut DirTotals,
        out: &mut Vec<Placed>,
    ) {
        if self.mode == Reflect::Off {
            return;
        }
        let count = far.and_then(|f| f.rx_count);
        if self.reflecting.is_none() {
            self.reflecting = Some(count.is_some());
            if count.is_none() {
                // An older responder: what waited for a placement is placed now, unknown.
                self.close_gap(None, None, out);
                return;
            }
        }
        self.noticed.remove(&seq);
        let (Some(far), Some(wire)) = (far, count) else {
            if !late && self.mode == Reflect::Full {
                // A reply without counts from a far end that reflects (its flow table was
                // full): it arrived there, and says no more.
                self.add_point(seq, Point { c: None, r: None }, settled, out);
            }
            return;
        };
        self.heard = true;
        let c = self.count(wire);
        let r = far.refused.map(|w| self.refused(w));
        if self.mode != Reflect::Full {
            return;
        }
        if let Some(slot) = seq
            .checked_sub(self.first_base)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.first_c.get_mut(i))
        {
            *slot = wire;
        }
        if c < self.max_first_c {
            dir.reorder_down += 1;
        } else {
            self.max_first_c = c;
        }
        if !late {
            self.add_point(seq, Point { c: Some(c), r }, settled, out);
        }
    }

    /// A reply to `seq` seen before: the echo of an up duplicate (a new receive count) or a
    /// down duplicate (the same one again).
    pub(super) fn on_duplicate(&mut self, seq: u64, far: Option<&FarEnd>, dir: &mut DirTotals) {
        if self.mode != Reflect::Full {
            return;
        }
        let Some(wire) = far.and_then(|f| f.rx_count) else {
            dir.dup_down += 1;
            return;
        };
        self.count(wire);
        let first = seq
            .checked_sub(self.first_base)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.first_c.get(i))
            .copied()
            .unwrap_or(0);
        if first != 0 && first != wire {
            dir.dup_up += 1;
        } else {
            dir.dup_down += 1;
        }
    }

    /// The far end refused packet `seq` (`in_flight`: still awaiting its fate here).
    pub(super) fn on_notice(
        &mut self,
        seq: u64,
        in_flight: bool,
        why: RefusalWhy,
        refused: Option<u32>,
        dir: &mut DirTotals,
    ) {
        dir.notices.count(why);
        self.heard = true;
        let r = refused.map(|w| self.refused(w));
        if in_flight {
            self.noticed.insert(seq);
            if let (Some(r), Reflect::Full) = (r, self.mode) {
                // The count includes this packet: the packets before it had `r - 1` refused.
                let c = None;
                self.points.entry(seq).or_insert(Point {
                    c,
                    r: Some(r.saturating_sub(1)),
                });
            }
        }
    }

    /// Delay per direction from an on-time reply: sent at `send_ts`, received at `now` (session
    /// clock), our wall clock = session clock + `offset`.
    pub(super) fn on_timing(
        &mut self,
        now: u64,
        send_ts: u64,
        offset: i64,
        far: &FarEnd,
        dir: &mut DirTotals,
        hist: bool,
    ) {
        if self.mode == Reflect::Off {
            return;
        }
        // Whatever else it tells (a stateless STAMP reflector tells no count), its clock's
        // stated error stands beside the delays.
        if let Some(e) = far.error_ns {
            dir.far_error_ns = Some(dir.far_error_ns.map_or(e, |x| x.max(e)));
        }
        let (Some(rx), Some(tx)) = (far.rx_wall_ns, far.tx_wall_ns) else {
            return;
        };
        dir.stamped += 1;
        if !hist {
            return;
        }
        dir.dwell.record(tx.saturating_sub(rx));
        let off = i128::from(offset);
        let up = clamp_i64(i128::from(rx) - (i128::from(send_ts) + off));
        let down = clamp_i64(i128::from(now) + off - i128::from(tx));
        if let Some(prev) = self.last_up.replace(up) {
            dir.ipdv_up.record(up.abs_diff(prev));
        }
        if let Some(prev) = self.last_down.replace(down) {
            dir.ipdv_down.record(down.abs_diff(prev));
        }
        if self.clock != ClockSync::None {
            for (v, h) in [(up, &mut dir.owd_up), (down, &mut dir.owd_down)] {
                if v < 0 {
                    dir.owd_negative += 1;
                    dir.owd_min_ns = Some(dir.owd_min_ns.map_or(v, |m| m.min(v)));
                }
                h.record(u64::try_from(v).unwrap_or(0));
            }
        }
    }

    /// The flow is over (nothing in flight): places what is left by the far end's final word
    /// and, with its report, makes the flow's split exact. `sent`: packets sent; `received`:
    /// on-time replies. Returns the packets placed as lost up before that the report shows
    /// were refused (replies without stamps told no refused count, and the notices were
    /// fewer than the refusals): the caller moves them from path loss to refused.
    pub(super) fn settle(
        &mut self,
        fin: Final,
        sent: u64,
        received: u64,
        dir: &mut DirTotals,
        out: &mut Vec<Placed>,
    ) -> u64 {
        match self.mode {
            Reflect::Off => return 0,
            Reflect::Timing => {
                dir.flows.reflected += u32::from(self.heard);
                return 0;
            }
            Reflect::Full => {}
        }
        self.place_points(u64::MAX, out);
        if self.reflecting == Some(false) || (!self.heard && fin == Final::NoAnswer) {
            self.close_gap(None, None, out);
            return 0;
        }
        dir.flows.reflected += 1;
        let rep = match fin {
            Final::Report(rep) => rep,
            Final::UnknownFlow | Final::NoAnswer => {
                if fin == Final::UnknownFlow {
                    dir.flows.unknown_flow += 1;
                } else if self.no_query {
                    dir.flows.no_query += 1;
                } else {
                    dir.flows.no_report += 1;
                }
                let r = self.r_hi;
                self.close_gap(None, Some(r), out);
                return 0;
            }
        };
        let arrived = rep.received.saturating_sub(self.anchor_c);
        self.close_gap(Some(arrived), Some(rep.refused), out);
        // The placements just made are not in `dir` yet: count what is placed as up so far.
        let up_placed = dir.lost_up + out.iter().map(|p| p.up).sum::<u64>();
        let moved = rep
            .refused
            .saturating_sub(self.placed_refused)
            .min(up_placed);
        self.placed_refused += moved;
        dir.dup_up = rep.duplicated;
        dir.reorder_up = rep.reordered;
        if self.fits(&rep, sent, received) {
            dir.flows.exact += 1;
        } else {
            dir.flows.disagree += 1;
        }
        moved
    }

    /// The far end's counts add up with ours: its refusals are the ones placed, and what it
    /// received fits between what was sent and what came back.
    fn fits(&self, rep: &FlowReport, sent: u64, received: u64) -> bool {
        let up_unique = rep.received.saturating_sub(rep.duplicated);
        self.placed_refused == rep.refused
            && rep
                .refused
                .checked_add(up_unique)
                .is_some_and(|x| x <= sent)
            && up_unique >= received
    }

    /// After [`settle`](Split::settle)'s placements are in `dir`: the exact split by the far
    /// end's report, when its counts add up with ours.
    pub(super) fn exact_split(&self, fin: Final, sent: u64, received: u64, dir: &mut DirTotals) {
        let Final::Report(rep) = fin else {
            return;
        };
        if self.mode != Reflect::Full || self.reflecting == Some(false) {
            return;
        }
        if self.fits(&rep, sent, received) {
            let up_unique = rep.received.saturating_sub(rep.duplicated);
            dir.lost_up = sent - rep.refused - up_unique;
            dir.lost_down = up_unique - received;
            dir.unplaced = 0;
        }
    }
}
