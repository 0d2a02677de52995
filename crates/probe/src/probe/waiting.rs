//! The wait after the send phase: once every flow has stopped sending (its count, its time,
//! Ctrl-C), the probe waits up to the loss timeout for the replies still in flight before it
//! reports. The line tester said so ("stopped sending, waiting for replies, about 1.00 s");
//! [`SendEnds`] tells the runner when that wait begins and what it waits for, and
//! [`OnWaiting`] hands it to whoever shows it (`npt probe` prints a line where its stage lines
//! go).

use std::sync::Arc;
use std::time::Duration;

use super::session::StopReason;

/// The send phase is over and the probe waits for the replies still in flight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Waiting {
    /// Since the run's start.
    pub elapsed: Duration,
    /// Packets in flight when their flows stopped sending, added over the flows still
    /// waiting (with one flow: exactly what it waits for).
    pub in_flight: u64,
    /// The longest wait (after each flow's last send): the loss timeout, or over TCP the
    /// hold on a live connection ([`held`](Waiting::held)).
    pub up_to: Duration,
    /// TCP: a reply on a live connection is waited for past the loss timeout, up to the
    /// stream's hold (`session::STREAM_HOLD_NS`).
    pub held: bool,
    /// Why sending stopped (the first flow's reason).
    pub why: Option<StopReason>,
}

/// A function that sees [`Waiting`].
pub type SayWaiting = Arc<dyn Fn(&Waiting) + Send + Sync>;

/// What sees [`Waiting`], if anything (`npt probe` prints a line where its stage lines go).
#[derive(Clone, Default)]
pub struct OnWaiting(pub Option<SayWaiting>);

impl std::fmt::Debug for OnWaiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "OnWaiting(set)"
        } else {
            "OnWaiting(none)"
        })
    }
}

/// Per flow, whether its send phase is over and what it then had in flight; says [`Waiting`]
/// once every flow has stopped sending (or finished) while replies are still awaited. Counts,
/// not a pass over the flows per event: a run may have thousands.
pub(super) struct SendEnds {
    /// Per flow: `None` while sending, `Some(in flight)` once its send phase ended (0 once it
    /// finished).
    ended: Vec<Option<u64>>,
    /// Flows still sending.
    sending: usize,
    /// In flight over the flows that stopped sending and have not finished.
    in_flight: u64,
    why: Option<StopReason>,
    said: bool,
}

impl SendEnds {
    /// `running[i]`: whether flow `i` runs at all (the others count as finished).
    pub(super) fn new(running: &[Option<u32>]) -> SendEnds {
        SendEnds {
            ended: running
                .iter()
                .map(|r| r.map_or(Some(0), |_| None))
                .collect(),
            sending: running.iter().filter(|r| r.is_some()).count(),
            in_flight: 0,
            why: None,
            said: false,
        }
    }

    pub(super) fn ended(&mut self, flow: usize, in_flight: u64, why: Option<StopReason>) {
        if let Some(e @ None) = self.ended.get_mut(flow) {
            *e = Some(in_flight);
            self.sending -= 1;
            self.in_flight += in_flight;
            self.why = self.why.or(why);
        }
    }

    pub(super) fn finished(&mut self, flow: usize) {
        match self.ended.get_mut(flow) {
            Some(e @ None) => {
                *e = Some(0);
                self.sending -= 1;
            }
            Some(Some(n)) => {
                self.in_flight -= *n;
                *n = 0;
            }
            None => {}
        }
    }

    /// The wait (packets in flight, why sending stopped), the first time no flow is sending
    /// and some have packets in flight.
    pub(super) fn waiting(&mut self) -> Option<(u64, Option<StopReason>)> {
        if self.said || self.sending > 0 || self.in_flight == 0 {
            return None;
        }
        self.said = true;
        Some((self.in_flight, self.why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_said_once_when_no_flow_sends_and_some_await_replies() {
        // Three flows; the third never ran (its share of --count was 0).
        let mut e = SendEnds::new(&[Some(0), Some(0), None]);
        e.ended(0, 5, Some(StopReason::Count));
        assert_eq!(e.waiting(), None, "flow 1 still sends");
        e.ended(1, 2, Some(StopReason::Duration));
        assert_eq!(e.waiting(), Some((7, Some(StopReason::Count))));
        assert_eq!(e.waiting(), None, "once");
        // A flow that finished takes its packets in flight out; one told twice counts once.
        let mut e = SendEnds::new(&[Some(0), Some(0)]);
        e.ended(0, 3, None);
        e.ended(0, 9, None);
        e.finished(0);
        e.ended(1, 4, Some(StopReason::Signal));
        assert_eq!(e.waiting(), Some((4, Some(StopReason::Signal))));
        // Nothing in flight when the last flow stopped: no wait to speak of.
        let mut e = SendEnds::new(&[Some(0), Some(0)]);
        e.ended(0, 0, None);
        e.finished(1);
        assert_eq!(e.waiting(), None);
    }
}
