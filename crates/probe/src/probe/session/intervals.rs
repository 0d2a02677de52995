//! The probe session's interval (stage) series: which interval a send belongs to, where late
//! and duplicate arrivals land, and when an interval is final — once a newer one exists and
//! the loss timeout after its end has passed, so every packet sent in it is resolved.
//! `received + lost + refused == sent` holds for every record handed out.

use super::{Interval, Session, Stage, State};

impl Session {
    pub(super) fn new_interval(&self, index: u32) -> Interval {
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
    pub(super) fn send_interval(&self, now: u64) -> u32 {
        match self.cfg.stage {
            Stage::Time(ns) => {
                u32::try_from(now.saturating_sub(self.cfg.start) / ns.max(1)).unwrap_or(u32::MAX)
            }
            Stage::Packets(p) => {
                u32::try_from(self.totals.packets.sent / p.max(1)).unwrap_or(u32::MAX)
            }
        }
    }

    /// The newest open interval: the home of late and duplicate arrivals. None once the
    /// session is done (every interval has been handed out).
    pub(super) fn newest_mut(&mut self) -> Option<&mut Interval> {
        self.open.back_mut()
    }

    pub(super) fn interval_mut(&mut self, index: u32) -> Option<&mut Interval> {
        let i = index.checked_sub(self.first_open)? as usize;
        self.open.get_mut(i)
    }

    // NO-PANIC: the loop keeps `first_open + open.len() <= index + 1`, so the length fits a u32.
    #[allow(clippy::cast_possible_truncation)]
    pub(super) fn ensure_open(&mut self, index: u32) {
        while self.first_open + (self.open.len() as u32) <= index {
            let next = self.first_open + self.open.len() as u32;
            let iv = self.new_interval(next);
            self.open.push_back(iv);
        }
    }

    pub(super) fn interval_end(&self, iv: &Interval) -> u64 {
        match self.cfg.stage {
            Stage::Time(ns) => iv.start + ns,
            Stage::Packets(_) => iv.end,
        }
    }

    /// When an interval that ended at `ended` may close: its loss timeout later, when every
    /// packet sent in it is resolved — or, while a run of missing packets reaching into it is
    /// still unplaced (the reply after the run is not settled yet), up to one loss timeout
    /// more for that reply (a run of losses across the boundary closes a few packets later).
    /// A live stream's interval with a packet still held waits for it, up to the hold.
    pub(super) fn close_at(&self, index: u32, ended: u64) -> u64 {
        let held = self.holding() && self.window.oldest().is_some_and(|(_, s)| s.tag <= index);
        let lt = if held {
            self.window.timeout()
        } else {
            self.cfg.loss_timeout
        };
        let at = ended.saturating_add(lt);
        if self.split.unplaced_in(index) > 0 {
            at.saturating_add(lt)
        } else {
            at
        }
    }

    /// Closes intervals whose every packet is resolved: a newer interval exists (so sending
    /// in it is over) and the loss timeout after its end has passed. The newest interval stays
    /// open until the session is done, as the home of late and duplicate arrivals.
    pub(super) fn close_intervals(&mut self, now: u64) {
        if self.state == State::Sending {
            let current = self.send_interval(now);
            self.ensure_open(current);
        }
        while self.open.len() > 1 {
            let Some(first) = self.open.front() else {
                break;
            };
            let ended = self.interval_end(first);
            if now < self.close_at(first.index, ended) {
                break;
            }
            let Some(mut iv) = self.open.pop_front() else {
                break;
            };
            // Missing packets no reply has placed yet are path loss, direction unknown, in
            // this record (the totals place them when a reply or the far end's report tells).
            iv.packets.lost += self.split.unplaced_in(iv.index);
            iv.reflected = u32::from(self.split.placing());
            iv.end = ended;
            self.first_open += 1;
            self.done_intervals.push_back(iv);
        }
    }

    /// A finished interval, once all its packets are resolved.
    pub fn poll_interval(&mut self) -> Option<Interval> {
        self.done_intervals.pop_front()
    }

    /// The session is done: every open interval is final (trailing ones in which nothing
    /// happened, the drain, are not worth a record).
    pub(super) fn close_all_intervals(&mut self) {
        while matches!(self.open.back(), Some(iv) if self.open.len() > 1
            && iv.packets.sent + iv.packets.received + iv.packets.late + iv.packets.duplicated == 0)
        {
            self.open.pop_back();
        }
        while let Some(mut iv) = self.open.pop_front() {
            self.first_open += 1;
            iv.reflected = u32::from(self.split.placing());
            if let Stage::Time(ns) = self.cfg.stage {
                iv.end = (iv.start + ns).min(iv.end.max(self.totals.last_send.unwrap_or(iv.start)));
            }
            self.done_intervals.push_back(iv);
        }
    }
}
