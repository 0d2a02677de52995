//! The search as a state machine, sans IO: it says which flows to open and what to send on
//! them ([`Action`]), is told what came back ([`Search::on_datagram`]) and what time it is
//! ([`Search::poll`]); [`crate::net`] does the sockets. Tested on a virtual clock against a
//! fake path that forgets a mapping after a known idle time (`search_tests.rs`).
//!
//! A **timed flow**: open a fresh socket, send an `Idle` request for its gap ([`STAGGER_NS`]
//! after the round's previous flow; again after [`ACK_RETRY_NS`], [`ACK_TRIES`] times), wait
//! for the ack, then for the callback until the gap plus a grace after the ack: it came
//! (alive, held as long as the responder says) or not (gone). A flow whose gap no longer
//! matters to the bracket is cancelled (a gap-0 request drops its callback at the responder)
//! and closed.
//!
//! A **stream flow** (`tcp://`, [`Search::over_streams`]): a fresh connection per flow, opened
//! at the flow's turn (its ack's round trip includes the connect), its request sent once (the
//! transport retries), no rebind flows (a connection cannot come back
//! from another port). The path may also close it ([`Search::on_closed`]): a relay that timed
//! out sends FIN or RST, and the time it came is an expiry as good as a missing callback.
//!
//! A **rebind flow**, once the bracket has an upper end: ask only for the address (gap 0),
//! stay silent past the upper end, ask again. Neither side sent in between, so the path
//! forgot the mapping quietly, and the second ack's address says whether its new mapping has
//! a new source port. (Not the timed flows: a callback sent into a forgotten mapping leaves
//! a conntrack entry on the NAT holding the old port's tuple, which makes even a NAT that keeps
//! ports choose another.)

use std::net::SocketAddr;

use npt_wire::frame::{status, Header, Kind};
use npt_wire::idle::{self, IDLE_REQUEST_LEN};

use crate::plan::Plan;

/// Sequence numbers of a flow's requests: its asks count from here, its asks after a silence
/// from [`SEQ_AFTER`], its cancel is [`SEQ_CANCEL`] — each request its own, so that a `--token`
/// responder's replay check takes a retry, and an answer says which request it answers.
pub const SEQ_ASK: u64 = 0;
pub const SEQ_AFTER: u64 = 100;
pub const SEQ_CANCEL: u64 = 200;
/// How long an unanswered request waits before it is sent again.
pub const ACK_RETRY_NS: u64 = 300_000_000;
/// Requests per flow before it counts as unanswered.
pub const ACK_TRIES: u32 = 5;
/// Between two flows' first requests: a relay that forks a process per flow (`socat
/// UDP-LISTEN:…,fork`) drops datagrams of new flows that arrive while it forks.
pub const STAGGER_NS: u64 = 25_000_000;
/// The wait for a callback past its gap: this, plus four round trips of the flow's ack.
pub const GRACE_NS: u64 = 500_000_000;
/// The grace's ceiling (a slow path's round trips).
pub const MAX_GRACE_NS: u64 = 2_000_000_000;
/// Rebind flows per search.
pub const REBIND_FLOWS: usize = 2;
/// How far past the bracket's upper end a rebind flow stays silent: this, or 5 % of it.
pub const REBIND_MARGIN_NS: u64 = 1_000_000_000;

/// What the search asks of the sockets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Open flow `flow`'s socket (a fresh one, so a fresh mapping).
    Open { flow: usize },
    /// Send `frame` on flow `flow`'s socket.
    Send {
        flow: usize,
        frame: [u8; IDLE_REQUEST_LEN],
    },
    /// Close flow `flow`'s socket.
    Close { flow: usize },
}

/// How a flow ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Pending,
    Alive {
        held_ns: u64,
    },
    Gone,
    NoAck,
    Refused,
    Cancelled,
    /// A rebind flow that was answered after its silence (`seen_after`).
    Rebind,
    /// A stream flow the path closed while it waited, `after_ns` after its ack.
    Closed {
        by: Close,
        after_ns: u64,
    },
}

/// How the path ended a stream flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Close {
    /// An orderly close (FIN): a relay that timed out and closed its side.
    Fin,
    /// A reset (RST): a middlebox that refused the connection it no longer knew.
    Rst,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Asking { next: u64, tries: u32 },
    Waiting { deadline: u64 },
    After { next: u64, tries: u32 },
    Done,
}

/// One flow of the search.
#[derive(Clone, Debug)]
pub struct Flow {
    pub round: u32,
    /// The idle gap: the callback's (timed) or the silence's (rebind), ns.
    pub gap_ns: u64,
    pub rebind: bool,
    pub id: u32,
    pub fate: Fate,
    /// Request → ack, ns.
    pub ack_rtt_ns: Option<u64>,
    pub seen: Option<SocketAddr>,
    pub seen_after: Option<SocketAddr>,
    /// When the ack came, ns on the search's clock.
    acked_at: u64,
    state: State,
    sent_at: u64,
    /// The gap its asks ask for, ms (0 for a rebind flow).
    ask_ms: u32,
}

/// Why the search could not measure at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A request came back unchanged: a plain echo, not `npt serve`.
    PlainEcho,
    /// No flow got any answer.
    Silent,
}

/// The search: its plan, its flows, and how it ended.
pub struct Search {
    pub plan: Plan,
    pub flows: Vec<Flow>,
    round_start: usize,
    first_id: u32,
    rebinds: bool,
    /// Flows are connections ([`Search::over_streams`]).
    streams: bool,
    failure: Option<Failure>,
    finished: bool,
}

impl Search {
    /// A search up to `max` ns at `resolution` ns (None: the default's rule); its flows' ids
    /// count from `first_id` (random, so two runs' flows differ at the responder).
    pub fn new(max: u64, resolution: Option<u64>, first_id: u32) -> Search {
        Search {
            plan: Plan::new(max, resolution),
            flows: Vec::new(),
            round_start: 0,
            first_id,
            rebinds: false,
            streams: false,
            failure: None,
            finished: false,
        }
    }

    /// The search of [`Search::new`] with connections for flows: each request sent once,
    /// closes heard, no rebind flows.
    pub fn over_streams(max: u64, resolution: Option<u64>, first_id: u32) -> Search {
        Search {
            streams: true,
            // A connection cannot rebind: there are none to look for.
            rebinds: true,
            ..Search::new(max, resolution, first_id)
        }
    }

    /// Whether flows are connections.
    pub fn streams(&self) -> bool {
        self.streams
    }

    pub fn finished(&self) -> bool {
        self.finished
    }

    pub fn failure(&self) -> Option<Failure> {
        self.failure
    }

    /// The next time something is due, ns (None when finished).
    pub fn next_wake(&self) -> Option<u64> {
        if self.finished {
            return None;
        }
        self.flows
            .iter()
            .filter_map(|f| match f.state {
                State::Asking { next, .. } | State::After { next, .. } => Some(next),
                State::Waiting { deadline } => Some(deadline),
                State::Done => None,
            })
            .min()
    }

    /// Advances to `now`: retries, expiries, cancellations, the next round; what to do.
    pub fn poll(&mut self, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        for i in 0..self.flows.len() {
            self.tick(i, now, &mut out);
        }
        let live = self.flows[self.round_start..]
            .iter()
            .any(|f| f.state != State::Done);
        if live {
            return out;
        }
        if self.failure.is_none()
            && !self.flows.is_empty()
            && self.flows.iter().all(|f| f.ack_rtt_ns.is_none())
        {
            self.failure = Some(Failure::Silent);
        }
        if self.failure.is_some() {
            self.finished = true;
            return out;
        }
        let gaps = self.plan.next_round().unwrap_or_default();
        // The rebind flows go with the first round that knows an upper end (a round of their
        // own when the ladder already settled the bracket).
        let silence = match self.plan.hi() {
            Some(hi) if !self.rebinds => Some(hi + REBIND_MARGIN_NS.max(hi / 20)),
            _ => None,
        };
        if gaps.is_empty() && silence.is_none() {
            self.finished = true;
            return out;
        }
        self.round_start = self.flows.len();
        let round = self.plan.rounds().saturating_sub(1) + u32::from(gaps.is_empty());
        let timed = gaps.into_iter().map(|g| (g, false));
        let rebind = silence
            .into_iter()
            .flat_map(|s| std::iter::repeat_n((s, true), REBIND_FLOWS));
        for (k, (gap, rebind)) in timed.chain(rebind).enumerate() {
            self.rebinds |= rebind;
            let i = self.flows.len();
            let id = self
                .first_id
                .wrapping_add(u32::try_from(i).unwrap_or(u32::MAX));
            let gap_ms = u32::try_from(gap / 1_000_000).unwrap_or(u32::MAX).max(1);
            self.flows.push(Flow {
                round,
                gap_ns: u64::from(gap_ms) * 1_000_000,
                rebind,
                id,
                fate: Fate::Pending,
                ack_rtt_ns: None,
                seen: None,
                seen_after: None,
                acked_at: 0,
                state: State::Asking {
                    next: now + STAGGER_NS * k as u64,
                    tries: 0,
                },
                sent_at: now,
                ask_ms: if rebind { 0 } else { gap_ms },
            });
            if !self.streams {
                out.push(Action::Open { flow: i });
            }
        }
        for i in self.round_start..self.flows.len() {
            self.tick(i, now, &mut out);
        }
        out
    }

    fn tick(&mut self, i: usize, now: u64, out: &mut Vec<Action>) {
        let f = &self.flows[i];
        let waiting = matches!(f.state, State::Asking { .. } | State::Waiting { .. });
        if waiting && !f.rebind && !self.plan.matters(f.gap_ns) {
            // Drop its callback at the responder, then the socket.
            let cancel = idle::request(f.id, SEQ_CANCEL, now, 0);
            let f = &mut self.flows[i];
            f.fate = Fate::Cancelled;
            f.state = State::Done;
            out.push(Action::Send {
                flow: i,
                frame: cancel,
            });
            out.push(Action::Close { flow: i });
            return;
        }
        let f = &mut self.flows[i];
        match f.state {
            State::Asking { next, tries } | State::After { next, tries } if now >= next => {
                if tries >= ACK_TRIES {
                    if matches!(f.state, State::Asking { .. }) {
                        f.fate = Fate::NoAck;
                    }
                    f.state = State::Done;
                    out.push(Action::Close { flow: i });
                    return;
                }
                let next = now + ACK_RETRY_NS;
                if self.streams && tries > 0 {
                    // The connection retransmits: the request is waited for, not resent.
                    f.state = State::Asking {
                        next,
                        tries: tries + 1,
                    };
                    return;
                }
                let frame = if let State::After { .. } = f.state {
                    f.state = State::After {
                        next,
                        tries: tries + 1,
                    };
                    idle::request(f.id, SEQ_AFTER + u64::from(tries), now, 0)
                } else {
                    f.state = State::Asking {
                        next,
                        tries: tries + 1,
                    };
                    f.sent_at = now;
                    if self.streams {
                        // A connection opens at its flow's turn, not with its round: a relay
                        // with a short accept queue (socat's is 5) stalls connections that
                        // arrive at once.
                        out.push(Action::Open { flow: i });
                    }
                    idle::request(f.id, SEQ_ASK + u64::from(tries), now, f.ask_ms)
                };
                out.push(Action::Send { flow: i, frame });
            }
            State::Waiting { deadline } if now >= deadline => {
                if f.rebind {
                    // The silence is over: where does the path put the flow now?
                    f.state = State::After {
                        next: now,
                        tries: 0,
                    };
                    self.tick(i, now, out);
                    return;
                }
                f.fate = Fate::Gone;
                f.state = State::Done;
                out.push(Action::Close { flow: i });
                let gap = f.gap_ns;
                self.plan.gone(gap);
            }
            _ => {}
        }
    }

    /// A datagram on flow `flow`'s socket at `now`.
    pub fn on_datagram(&mut self, flow: usize, now: u64, bytes: &[u8]) -> Vec<Action> {
        let mut out = Vec::new();
        let Some(f) = self.flows.get_mut(flow) else {
            return out;
        };
        // A responder never answers with a request's kind: this is one of ours, echoed.
        if Header::decode(bytes).is_ok_and(|h| h.kind == Kind::Idle) {
            self.failure = Some(Failure::PlainEcho);
            self.finished = true;
            return out;
        }
        let Some((h, body)) = idle::read(bytes) else {
            return out;
        };
        if h.flow != f.id {
            return out;
        }
        match (f.state, h.kind) {
            (State::Asking { .. }, Kind::IdleAck) if h.seq < SEQ_AFTER => {
                let rtt = now.saturating_sub(f.sent_at);
                f.ack_rtt_ns = Some(rtt);
                f.acked_at = now;
                f.seen = body.seen;
                if h.status != status::OK {
                    f.fate = Fate::Refused;
                    f.state = State::Done;
                    out.push(Action::Close { flow });
                    return out;
                }
                let grace = if f.rebind {
                    0
                } else {
                    (GRACE_NS + 4 * rtt).min(MAX_GRACE_NS)
                };
                f.state = State::Waiting {
                    deadline: now + f.gap_ns + grace,
                };
            }
            (State::Waiting { .. }, Kind::IdleCallback) if !f.rebind => {
                let held = u64::from(body.held_us) * 1_000;
                f.fate = Fate::Alive { held_ns: held };
                f.state = State::Done;
                out.push(Action::Close { flow });
                self.plan.alive(held);
            }
            (State::After { .. }, Kind::IdleAck) if (SEQ_AFTER..SEQ_CANCEL).contains(&h.seq) => {
                f.seen_after = body.seen;
                f.fate = Fate::Rebind;
                f.state = State::Done;
                out.push(Action::Close { flow });
            }
            _ => {}
        }
        out
    }

    /// The path closed flow `flow`'s connection at `now`: before its ack the flow got no
    /// answer; while it waited for its callback, the path cut it off that long after the ack.
    pub fn on_closed(&mut self, flow: usize, now: u64, by: Close) -> Vec<Action> {
        let mut out = Vec::new();
        let Some(f) = self.flows.get_mut(flow) else {
            return out;
        };
        match f.state {
            State::Asking { .. } => f.fate = Fate::NoAck,
            State::Waiting { .. } if !f.rebind => {
                let after_ns = now.saturating_sub(f.acked_at);
                f.fate = Fate::Closed { by, after_ns };
                let gap = f.gap_ns.min(after_ns);
                self.plan.gone(gap);
            }
            _ => return out,
        }
        self.flows[flow].state = State::Done;
        out.push(Action::Close { flow });
        out
    }

    /// Rebind flows answered after their silence, and how many of those were seen from a new
    /// source address.
    pub fn rebound(&self) -> (u32, u32) {
        let checked = self.flows.iter().filter(|f| f.fate == Fate::Rebind);
        let (mut n, mut moved) = (0, 0);
        for f in checked {
            n += 1;
            if f.seen_after != f.seen {
                moved += 1;
            }
        }
        (n, moved)
    }
}

#[cfg(test)]
mod tests;
