//! A stream's hold: over TCP a reply is never lost while the connection lives, only late.
//!
//! The kernel retransmits whatever the path drops, so an echo that takes longer than the loss
//! timeout (a retransmission's backoff at 1–2 % loss) is still on its way. Declaring it lost
//! at the loss timeout would count a loss that never happened, keep its wait out of the round
//! trips and the totals, and leave a ping-pong (one packet in flight, the next sent when its
//! echo is back) with nothing in flight: it would stop as stalled. So while the driver says
//! the connection is up, a packet in flight is held — declared lost only after
//! [`STREAM_HOLD_NS`] (or the loss timeout, if longer) — and its reply counts as received,
//! with the wait in its RTT. When the connection is gone the loss timeout is back in force:
//! what was in flight on it never returns, and a relay with nothing in flight stalls as before.
//! Only a relay schedule (ping-pong, `--mode relay`) holds: its next send waits for a reply,
//! so a reply given up is a run given up. A paced schedule (rate, interval) keeps sending
//! whatever its replies do, and keeps `--loss-timeout` as its bound, so a `--duration` run ends
//! on time (a slow reply there is counted late, as before). UDP sessions never hold.

use super::{Final, Session};

/// How long a packet in flight on a live TCP connection is held before it counts as lost:
/// Linux retransmits one segment with a doubling timeout from 200 ms, so 60 s covers eight
/// losses of the same segment in a row — a far end that answers nothing in that time has
/// hung, and a relay then stops as stalled.
pub const STREAM_HOLD_NS: u64 = 60_000_000_000;

impl Session {
    /// The stream's connection is up (the first one, or a reconnect). Whatever is still in
    /// flight was sent on a connection that is gone, or while there was none: it never comes
    /// back, and is lost now. From here a packet is held while the connection lives.
    pub fn connection_up(&mut self, now: u64) {
        self.lose_in_flight();
        self.released_below = 0;
        let hold = match self.cfg.pacing {
            npt_wire::pacing::Pacing::Relay { .. } => STREAM_HOLD_NS.max(self.cfg.loss_timeout),
            _ => self.cfg.loss_timeout,
        };
        self.window.set_timeout(hold);
        self.handle_timeout(now);
    }

    /// The stream's connection is gone: packets in flight on it are lost at their loss
    /// timeout, as a datagram's are.
    pub fn connection_down(&mut self, now: u64) {
        self.window.set_timeout(self.cfg.loss_timeout);
        self.handle_timeout(now);
    }

    /// The stream lost its step (bytes skipped between replies): a reply of a packet now in
    /// flight may have been destroyed, so those packets are no longer held — each is lost at
    /// its loss timeout unless its reply still comes. Packets sent from here on are held.
    pub fn stream_out_of_step(&mut self, now: u64) {
        self.released_below = self.window.next_seq();
        self.handle_timeout(now);
    }

    /// When the oldest packet in flight is declared lost: at its loss timeout if it is no
    /// longer held, else at the window's (the hold, on a live stream).
    pub(super) fn next_expiry(&self) -> Option<u64> {
        let (seq, slot) = self.window.oldest()?;
        let timeout = if seq < self.released_below {
            self.cfg.loss_timeout
        } else {
            self.window.timeout()
        };
        Some(slot.sent.saturating_add(timeout))
    }

    /// Whether the session is holding packets past the loss timeout (a live stream).
    pub(super) fn holding(&self) -> bool {
        self.window.timeout() > self.cfg.loss_timeout
    }

    /// Everything in flight is lost now (a broken stream's packets; an abandoned run's).
    pub(super) fn lose_in_flight(&mut self) {
        let mut tags = std::mem::take(&mut self.lost_tags);
        let (log, split) = (&mut self.log, &self.split);
        self.window.expire_all(|seq, slot| {
            tags.push((seq, slot.tag));
            if let Some(log) = log {
                log.missing(seq, slot.sent, split.is_noticed(seq));
            }
        });
        self.on_missing(&mut tags);
        self.lost_tags = tags;
    }

    /// An abandoned run: everything in flight is lost and every interval final.
    pub(super) fn abandon(&mut self, now: u64) {
        self.lose_in_flight();
        self.finish_all(now, Final::NoAnswer);
    }
}
