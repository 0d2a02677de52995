//! The end of a flow that asked the far end what it saw: once every packet is answered or
//! lost, a flow query ([`npt_wire::reflect`]) asks for the far end's final counts, retried a
//! bounded number of times within a bounded time (together at most one loss timeout); its
//! report places the losses after the last reply and makes the flow's split exact. Also where
//! placed losses land in the totals and the intervals.

use npt_wire::reflect;

use super::split::{Final, Placed};
use super::{Session, State, StopReason};

/// Queries sent at most, one every [`query_spacing`].
pub(super) const QUERY_ATTEMPTS: u32 = 5;

/// The wait between queries: the attempts together take one loss timeout, each at least
/// 20 ms and at most 1 s.
pub(super) fn query_spacing(loss_timeout: u64) -> u64 {
    (loss_timeout / u64::from(QUERY_ATTEMPTS)).clamp(20_000_000, 1_000_000_000)
}

impl Session {
    /// Sending and draining are over: ask the far end (when it can answer) or finish.
    pub(super) fn end_drain(&mut self, now: u64) {
        let framed = matches!(self.cfg.framing, super::Framing::Framed { .. });
        if framed && self.split.wants_query() && self.stop_reason != Some(StopReason::Abort) {
            let spacing = query_spacing(self.cfg.loss_timeout);
            self.state = State::Querying {
                sent: 0,
                next: now,
                until: now.saturating_add(spacing * u64::from(QUERY_ATTEMPTS)),
            };
        } else {
            self.finish_all(now, Final::NoAnswer);
        }
    }

    /// The next flow query, if one is due: written into `buf` (at least
    /// [`reflect::FLOW_QUERY_LEN`] bytes), sealed under `--token`.
    pub(super) fn poll_query(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        let State::Querying { sent, next, until } = self.state else {
            return None;
        };
        if sent >= QUERY_ATTEMPTS || now < next {
            return None;
        }
        // A sequence number no packet of the flow had: under `--token` the server keeps a
        // replay window over the session's numbers, and a reused one gets no answer.
        let seq = self.window.next_seq().saturating_add(u64::from(sent));
        let n = reflect::write_query(buf, self.cfg.flow, seq, now).ok()?;
        if let Some(k) = &self.cfg.auth {
            k.seal(npt_wire::auth::Dir::ToServer, buf).ok()?;
        }
        self.state = State::Querying {
            sent: sent + 1,
            next: now.saturating_add(query_spacing(self.cfg.loss_timeout)),
            until,
        };
        Some(n)
    }

    /// The far end's report (or its "no record"): the flow is settled.
    pub(super) fn on_report(&mut self, now: u64, fin: Final) {
        if matches!(self.state, State::Querying { .. }) {
            self.finish_all(now, fin);
        }
    }

    /// Settles the flow's split by `fin` and closes it.
    pub(super) fn finish_all(&mut self, _now: u64, fin: Final) {
        let (sent, received) = (self.totals.packets.sent, self.totals.packets.received);
        let moved = self
            .split
            .settle(fin, sent, received, &mut self.totals.dir, &mut self.placed);
        self.apply_placed();
        // Refusals the replies could not tell apart from loss up, by the far end's count.
        let t = &mut self.totals;
        t.packets.lost = t.packets.lost.saturating_sub(moved);
        t.refused += moved;
        t.dir.lost_up = t.dir.lost_up.saturating_sub(moved);
        self.split
            .exact_split(fin, sent, received, &mut self.totals.dir);
        if let Some(log) = &mut self.log {
            log.close();
        }
        self.state = State::Done;
        self.totals.jitter = npt_stats::JitterMean::of(&self.jitter);
        self.close_all_intervals();
    }

    /// Puts placed losses into the totals and into the intervals still open.
    pub(super) fn apply_placed(&mut self) {
        let mut placed = std::mem::take(&mut self.placed);
        if let Some(log) = &mut self.log {
            log.placed(&placed);
        }
        for p in placed.drain(..) {
            let Placed {
                tag,
                refused,
                up,
                down,
                unknown,
            } = p;
            let lost = up + down + unknown;
            let t = &mut self.totals;
            t.refused += refused;
            t.packets.lost += lost;
            t.dir.lost_up += up;
            t.dir.lost_down += down;
            t.dir.unplaced += unknown;
            if let Some(iv) = self.interval_mut(tag) {
                iv.refused += refused;
                iv.packets.lost += lost;
                iv.lost_up += up;
                iv.lost_down += down;
            }
        }
        self.placed = placed;
    }
}
