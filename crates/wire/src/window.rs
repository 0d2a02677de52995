//! The sequence window: which packets are in flight, answered, lost, late, duplicated or
//! reordered. Pure bookkeeping over sequence numbers and caller-supplied times (ns).
//!
//! Rules (docs/measurement.md, "Loss, late, duplicates, reordering"):
//! - a packet unanswered `timeout` after it was sent is **lost**, once, and the loss belongs to
//!   whatever `tag` (interval) the packet was sent in;
//! - a first reply after that is **late**: counted once, and the packet stays lost, so
//!   `received + lost == sent` always holds and loss can never go negative;
//! - any further reply for a sequence number is a **duplicate**;
//! - a first reply whose sequence number is below the highest already answered is **reordered**.
//!
//! Memory is bounded: slots live only while in flight, and the fates of retired sequence
//! numbers are kept in a ring of at most `history` entries; a reply older than that is
//! **stale** (counted, but it cannot be told apart as late or duplicate).
//!
//! The caller must call [`Window::expire`] with the current time before [`Window::on_reply`],
//! so that a reply arriving after its deadline is seen as late, never as on time.

use std::collections::VecDeque;

/// What the window remembers of a packet in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// When it was handed to the socket.
    pub sent: u64,
    /// When the schedule meant it to be sent (== `sent` for closed-loop pacing).
    pub intended: u64,
    /// The caller's label, e.g. the index of the interval it was sent in.
    pub tag: u32,
    answered: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Answered,
    Lost,
    LateSeen,
}

/// What a reply turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The first reply, within the timeout.
    OnTime { slot: Slot, reordered: bool },
    /// The first reply to a packet already counted lost.
    Late { reordered: bool },
    /// A second (or later) reply.
    Duplicate,
    /// A sequence number this window never sent.
    Unknown,
    /// Older than the history kept; neither late nor duplicate can be told.
    Stale,
}

#[derive(Debug)]
pub struct Window {
    timeout: u64,
    base: u64,
    slots: VecDeque<Slot>,
    unanswered: u64,
    hist_base: u64,
    history: VecDeque<Fate>,
    hist_cap: usize,
    highest: Option<u64>,
}

impl Window {
    /// `timeout`: the loss timeout in ns. `history`: how many retired sequence numbers to
    /// remember for late/duplicate classification (memory: one byte each).
    pub fn new(timeout: u64, history: usize) -> Window {
        Window {
            timeout,
            base: 0,
            slots: VecDeque::new(),
            unanswered: 0,
            hist_base: 0,
            history: VecDeque::new(),
            hist_cap: history.max(1),
            highest: None,
        }
    }

    /// The sequence number the next [`push`](Window::push) will get.
    pub fn next_seq(&self) -> u64 {
        self.base + self.slots.len() as u64
    }

    /// Every sequence number below this one is settled: answered or lost (the lowest one still
    /// in flight, or the next to send). A reply's place among the losses around it is known
    /// once its own number is at or below this.
    pub fn settled_below(&self) -> u64 {
        self.base
    }

    /// Packets sent and neither answered nor lost yet.
    pub fn in_flight(&self) -> u64 {
        self.unanswered
    }

    /// The loss timeout now in force, ns.
    pub fn timeout(&self) -> u64 {
        self.timeout
    }

    /// Changes the loss timeout for every packet in flight and to come (a stream's hold:
    /// longer while its connection is up, back to the loss timeout once it is gone).
    pub fn set_timeout(&mut self, timeout: u64) {
        self.timeout = timeout;
    }

    /// The oldest packet still in flight, if any: its sequence number and slot (the front
    /// slot is never an answered one).
    pub fn oldest(&self) -> Option<(u64, Slot)> {
        self.slots.front().map(|s| (self.base, *s))
    }

    /// Records a send and returns its sequence number.
    pub fn push(&mut self, sent: u64, intended: u64, tag: u32) -> u64 {
        let seq = self.next_seq();
        self.slots.push_back(Slot {
            sent,
            intended,
            tag,
            answered: false,
        });
        self.unanswered += 1;
        seq
    }

    /// When the oldest unanswered packet will be declared lost, if any is in flight.
    pub fn next_expiry(&self) -> Option<u64> {
        self.slots
            .front()
            .map(|s| s.sent.saturating_add(self.timeout))
    }

    /// Declares lost every packet whose deadline is at or before `now`; calls `lost` for each.
    pub fn expire(&mut self, now: u64, mut lost: impl FnMut(u64, Slot)) {
        while let Some(front) = self.slots.front() {
            if front.sent.saturating_add(self.timeout) > now {
                break;
            }
            self.retire_front(&mut lost);
        }
    }

    /// Declares lost, at a shorter `timeout` than the window's, the packets below sequence
    /// number `below` whose deadline by it is at or before `now` (a stream that may have
    /// destroyed their replies: see the probe session's hold).
    pub fn expire_below(
        &mut self,
        now: u64,
        below: u64,
        timeout: u64,
        mut lost: impl FnMut(u64, Slot),
    ) {
        while let Some(front) = self.slots.front() {
            if self.base >= below || front.sent.saturating_add(timeout) > now {
                break;
            }
            self.retire_front(&mut lost);
        }
    }

    /// Declares lost everything still in flight (the run is being abandoned).
    pub fn expire_all(&mut self, mut lost: impl FnMut(u64, Slot)) {
        while !self.slots.is_empty() {
            self.retire_front(&mut lost);
        }
    }

    fn retire_front(&mut self, lost: &mut impl FnMut(u64, Slot)) {
        let Some(slot) = self.slots.pop_front() else {
            return;
        };
        let fate = if slot.answered {
            Fate::Answered
        } else {
            self.unanswered -= 1;
            lost(self.base, slot);
            Fate::Lost
        };
        self.base += 1;
        self.remember(fate);
    }

    fn remember(&mut self, fate: Fate) {
        if self.history.len() == self.hist_cap {
            self.history.pop_front();
            self.hist_base += 1;
        }
        self.history.push_back(fate);
    }

    fn first_arrival(&mut self, seq: u64) -> bool {
        let reordered = matches!(self.highest, Some(h) if seq < h);
        if !reordered {
            self.highest = Some(seq);
        }
        reordered
    }

    /// Classifies a reply carrying `seq`. Call [`expire`](Window::expire) first.
    pub fn on_reply(&mut self, seq: u64) -> Outcome {
        if seq >= self.next_seq() {
            return Outcome::Unknown;
        }
        if seq >= self.base {
            // `base <= seq < next_seq() = base + slots.len()`, so the slot exists; a peer's
            // `seq` reaches `get_mut` only through that check.
            let s = usize::try_from(seq - self.base)
                .ok()
                .and_then(|i| self.slots.get_mut(i));
            let Some(s) = s else {
                return Outcome::Unknown;
            };
            if s.answered {
                return Outcome::Duplicate;
            }
            s.answered = true;
            let slot = *s;
            self.unanswered -= 1;
            // Retire answered packets at the front so the front is always the next deadline.
            while matches!(self.slots.front(), Some(s) if s.answered) {
                self.slots.pop_front();
                self.base += 1;
                self.remember(Fate::Answered);
            }
            let reordered = self.first_arrival(seq);
            return Outcome::OnTime { slot, reordered };
        }
        if seq < self.hist_base {
            return Outcome::Stale;
        }
        // `hist_base <= seq < base`: the history holds exactly those numbers.
        let fate = usize::try_from(seq - self.hist_base)
            .ok()
            .and_then(|i| self.history.get_mut(i));
        let Some(fate) = fate else {
            return Outcome::Stale;
        };
        match *fate {
            Fate::Lost => {
                *fate = Fate::LateSeen;
                let reordered = self.first_arrival(seq);
                Outcome::Late { reordered }
            }
            Fate::Answered | Fate::LateSeen => Outcome::Duplicate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn lost_list(w: &mut Window, now: u64) -> Vec<u64> {
        let mut v = Vec::new();
        w.expire(now, |seq, _| v.push(seq));
        v
    }

    #[test]
    fn expire_below_takes_only_the_released_packets_at_the_shorter_timeout() {
        let mut w = Window::new(60_000 * MS, 16);
        for t in 0..4 {
            w.push(t * MS, t * MS, 0);
        }
        let mut v = Vec::new();
        w.expire_below(1001 * MS, 2, 1000 * MS, |seq, _| v.push(seq));
        assert_eq!(
            v,
            vec![0, 1],
            "below 2 and past 1 s; 2 and 3 keep the window's timeout"
        );
        assert_eq!(w.oldest().map(|(seq, _)| seq), Some(2));
        w.set_timeout(1000 * MS);
        assert_eq!(w.timeout(), 1000 * MS);
        assert_eq!(lost_list(&mut w, 1003 * MS), vec![2, 3]);
    }

    #[test]
    fn settled_below_moves_past_answered_and_lost_packets_in_order() {
        let mut w = Window::new(10 * MS, 16);
        for t in 0..4 {
            w.push(t * MS, t * MS, 0);
        }
        assert_eq!(w.settled_below(), 0);
        assert!(matches!(w.on_reply(1), Outcome::OnTime { .. }));
        assert_eq!(w.settled_below(), 0, "0 is still in flight");
        assert_eq!(lost_list(&mut w, 10 * MS), vec![0]);
        assert_eq!(w.settled_below(), 1, "1 is answered but not retired yet");
        assert!(matches!(w.on_reply(2), Outcome::OnTime { .. }));
        assert_eq!(lost_list(&mut w, 13 * MS), vec![3]);
        assert_eq!(w.settled_below(), 4);
    }

    #[test]
    fn on_time_reply_then_duplicate() {
        let mut w = Window::new(1000 * MS, 16);
        let s0 = w.push(0, 0, 0);
        assert_eq!(s0, 0);
        assert!(matches!(
            w.on_reply(0),
            Outcome::OnTime {
                reordered: false,
                ..
            }
        ));
        assert_eq!(w.on_reply(0), Outcome::Duplicate);
        assert_eq!(w.in_flight(), 0);
        assert_eq!(w.next_expiry(), None);
    }

    #[test]
    fn loss_then_late_then_duplicate() {
        let mut w = Window::new(100 * MS, 16);
        w.push(0, 0, 3);
        w.push(10 * MS, 10 * MS, 4);
        assert_eq!(w.next_expiry(), Some(100 * MS));
        assert!(lost_list(&mut w, 99 * MS).is_empty());
        let mut tags = Vec::new();
        w.expire(100 * MS, |_, s| tags.push(s.tag));
        assert_eq!(
            tags,
            vec![3],
            "loss belongs to the interval the packet was sent in"
        );
        assert_eq!(w.on_reply(0), Outcome::Late { reordered: false });
        assert_eq!(w.on_reply(0), Outcome::Duplicate);
        assert!(matches!(w.on_reply(1), Outcome::OnTime { .. }));
        assert_eq!(w.in_flight(), 0);
    }

    #[test]
    fn reordering_is_counted_on_first_arrival_only() {
        let mut w = Window::new(1000 * MS, 16);
        for i in 0..3 {
            w.push(i, i, 0);
        }
        assert!(matches!(
            w.on_reply(2),
            Outcome::OnTime {
                reordered: false,
                ..
            }
        ));
        assert!(matches!(
            w.on_reply(0),
            Outcome::OnTime {
                reordered: true,
                ..
            }
        ));
        assert!(matches!(
            w.on_reply(1),
            Outcome::OnTime {
                reordered: true,
                ..
            }
        ));
        assert_eq!(w.on_reply(1), Outcome::Duplicate);
    }

    #[test]
    fn unknown_and_stale() {
        let mut w = Window::new(MS, 2);
        assert_eq!(w.on_reply(0), Outcome::Unknown);
        for i in 0..5 {
            w.push(i, i, 0);
        }
        let lost = lost_list(&mut w, 10 * MS);
        assert_eq!(lost, vec![0, 1, 2, 3, 4]);
        // history keeps only the last 2 fates (3 and 4)
        assert_eq!(w.on_reply(1), Outcome::Stale);
        assert_eq!(w.on_reply(4), Outcome::Late { reordered: false });
        assert_eq!(w.on_reply(9), Outcome::Unknown);
    }

    #[test]
    fn sent_equals_received_plus_lost_under_any_order() {
        // A deterministic shuffle of replies with some never answered and some duplicated.
        let mut w = Window::new(50, 1 << 12);
        let n = 1000u64;
        let (mut received, mut lost, mut late, mut dup) = (0u64, 0u64, 0u64, 0u64);
        for i in 0..n {
            w.push(i, i, 0);
        }
        let mut order: Vec<u64> = (0..n).filter(|s| s % 7 != 0).collect();
        order.extend((0..n).filter(|s| s % 11 == 0));
        order.reverse();
        for (k, seq) in order.iter().enumerate() {
            let now = k as u64 / 2;
            w.expire(now, |_, _| lost += 1);
            match w.on_reply(*seq) {
                Outcome::OnTime { .. } => received += 1,
                Outcome::Late { .. } => late += 1,
                Outcome::Duplicate => dup += 1,
                other => panic!("{other:?}"),
            }
        }
        w.expire(u64::MAX / 2, |_, _| lost += 1);
        assert_eq!(received + lost, n);
        assert!(late <= lost);
        assert!(dup > 0);
    }
}
