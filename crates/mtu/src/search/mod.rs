//! The search as a state machine, sans IO: it says what to send ([`Send`]), is told what came
//! back ([`Search::on_datagram`]), which probe an ICMP or a local refusal was about
//! ([`Search::on_too_big`]) and what time it is ([`Search::poll`]); [`crate::net`] does the
//! socket. Tested on a virtual clock against a fake path with an up MTU, a down MTU, ICMP on
//! or off, and loss (`tests.rs`).
//!
//! Both directions are searched at once, one probe in flight each ([`ladder`]): the largest
//! size first, then the smallest, then bisection (or the size an MTU figure names). A probe
//! unanswered after the retry timeout is sent again, [`TRIES`] times in all, before its size
//! counts as lost — so that loss is not read as MTU; a later answer still counts (and a
//! "lost" size that then crosses is counted as a contradiction). An ICMP or a local refusal
//! settles a size at once.
//!
//! Up: the probe is an `Mtu` frame padded to the size, DF set. Down: a request asking the
//! responder for a datagram of the size (DF set by the responder); without `--token` the
//! request is padded to the size itself and sent without DF (the responder sends no more than
//! a request brought; routers may fragment it on the way up).

pub mod ladder;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::net::IpAddr;

use npt_wire::frame::{status, Header, Kind};
use npt_wire::mtu::{self, Direction, Mtu, MTU_LEN};

use ladder::{Ladder, Limit};

/// Sends of one size before it counts as lost.
pub const TRIES: u32 = 3;
/// The retry timeout before any answer, and its ceiling.
pub const MAX_RTO_NS: u64 = 1_000_000_000;
/// The retry timeout's floor (a fragment's reassembly, a relay's forwarding).
pub const MIN_RTO_NS: u64 = 200_000_000;
/// Probes per direction at most (a bisection of 65,507 bytes takes 17 sizes).
pub const MAX_SIZES: u32 = 40;

/// A datagram to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Send {
    pub seq: u64,
    pub direction: Direction,
    /// The size measured: the datagram itself (up), the datagram asked for (down).
    pub size: usize,
    /// The bytes to send.
    pub frame: Vec<u8>,
    /// Send with DF set (up probes); a down request goes without.
    pub df: bool,
}

/// What the search knows of one direction.
#[derive(Clone, Debug)]
pub struct Side {
    pub ladder: Ladder,
    /// Datagrams sent and answered.
    pub sent: u32,
    pub answered: u32,
    /// Sizes counted as lost after every try.
    pub lost_sizes: u32,
    /// The largest fragment of a probe that arrived reassembled (IP bytes).
    pub largest_fragment: Option<u32>,
    /// The ICMP that said "too big" (its MTU, and the router that sent it).
    pub icmp: Option<(u32, Option<IpAddr>)>,
    /// Down: the responder's path MTU toward us, as its first and its last answer said.
    pub far_pmtu_first: Option<u32>,
    pub far_pmtu_last: Option<u32>,
    /// Down: answers the responder clamped to its request's length.
    pub clamped: u32,
    /// The far end cannot answer this direction (a plain echo has no down probes).
    pub unreadable: bool,
    sizes: u32,
    waiting: Option<Waiting>,
    done: bool,
}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    size: usize,
    tries: u32,
    next_ns: u64,
}

impl Side {
    fn new(min: usize, max: usize) -> Side {
        Side {
            ladder: Ladder::new(min, max),
            sent: 0,
            answered: 0,
            lost_sizes: 0,
            largest_fragment: None,
            icmp: None,
            far_pmtu_first: None,
            far_pmtu_last: None,
            clamped: 0,
            unreadable: false,
            sizes: 0,
            waiting: None,
            done: false,
        }
    }

    /// True when this side's search has ended.
    pub fn done(&self) -> bool {
        self.done
    }
}

/// Why the search could not measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Nothing answered, not even the smallest probe.
    Silent,
}

/// What the far end turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FarEnd {
    Unknown,
    /// `npt serve`: each direction on its own.
    NptServe,
    /// A plain echo: an up probe comes back whole, so only the round trip is read.
    Echo,
}

/// The search.
pub struct Search {
    pub up: Side,
    pub down: Side,
    pub far_end: FarEnd,
    /// Largest round trip seen, ns.
    pub max_rtt_ns: Option<u64>,
    /// Every answer's round trip, ns (at most [`MAX_SIZES`] × [`TRIES`] per direction).
    pub rtts: Vec<u64>,
    /// True when the deadline cut the search short.
    pub timed_out: bool,
    /// The headers' bytes under a datagram: 28 (IPv4 + UDP) or 48 (IPv6 + UDP).
    pub hdr: usize,
    /// Bytes a relay's framing adds to each datagram on the client's own leg (`--via`: the
    /// SOCKS5 UDP header); an MTU figure from that leg leaves room for them.
    pub extra: usize,
    flow: u32,
    /// Requests are sealed (`--token`): down requests need no padding.
    pub token: bool,
    next_seq: u64,
    /// Every probe sent: its direction, size and request length.
    sent: HashMap<u64, (Direction, usize, usize, u64)>,
    deadline_ns: u64,
}

impl Search {
    /// A search of datagram sizes up to `max` each way, IP headers `hdr` bytes, for flow
    /// `flow`; `token`: requests are sealed, so down requests need no padding; ends by
    /// `deadline_ns`.
    pub fn new(max: usize, hdr: usize, flow: u32, token: bool, deadline_ns: u64) -> Search {
        Search {
            up: Side::new(MTU_LEN, max),
            down: Side::new(MTU_LEN, max),
            far_end: FarEnd::Unknown,
            max_rtt_ns: None,
            rtts: Vec::new(),
            timed_out: false,
            hdr,
            extra: 0,
            flow,
            token,
            next_seq: 1,
            sent: HashMap::new(),
            deadline_ns,
        }
    }

    /// The retry timeout now.
    pub fn rto_ns(&self) -> u64 {
        self.max_rtt_ns
            .map_or(MAX_RTO_NS, |r| r.saturating_mul(4))
            .clamp(MIN_RTO_NS, MAX_RTO_NS)
    }

    /// True when both directions are done.
    pub fn finished(&self) -> bool {
        self.up.done && self.down.done
    }

    /// None, or why nothing could be measured.
    pub fn failure(&self) -> Option<Failure> {
        (self.finished() && self.up.answered == 0 && self.down.answered == 0)
            .then_some(Failure::Silent)
    }

    /// When [`Search::poll`] next has something to do.
    pub fn next_wake(&self) -> Option<u64> {
        let w = [&self.up, &self.down]
            .into_iter()
            .filter_map(|s| s.waiting.map(|w| w.next_ns))
            .min();
        Some(w.map_or(self.deadline_ns, |w| w.min(self.deadline_ns)))
    }

    /// What to send at `now`: retries due, and each idle direction's next size.
    pub fn poll(&mut self, now: u64) -> Vec<Send> {
        if now >= self.deadline_ns && !self.finished() {
            self.timed_out = true;
            for s in [&mut self.up, &mut self.down] {
                s.waiting = None;
                s.done = true;
            }
        }
        let mut out = Vec::new();
        for d in [Direction::Up, Direction::Down] {
            if let Some(s) = self.step(d, now) {
                out.push(s);
            }
        }
        out
    }

    fn side(&mut self, d: Direction) -> &mut Side {
        match d {
            Direction::Up => &mut self.up,
            Direction::Down => &mut self.down,
        }
    }

    fn step(&mut self, d: Direction, now: u64) -> Option<Send> {
        let rto = self.rto_ns();
        let side = self.side(d);
        if side.done {
            return None;
        }
        let size = match side.waiting {
            Some(w) if now < w.next_ns => return None,
            Some(w) if w.tries >= TRIES => {
                side.waiting = None;
                side.lost_sizes += 1;
                side.ladder.failed(w.size, Limit::Lost, None);
                return self.step(d, now);
            }
            Some(mut w) => {
                w.tries += 1;
                w.next_ns = now + rto;
                side.waiting = Some(w);
                w.size
            }
            None => {
                let next = if side.sizes >= MAX_SIZES {
                    None
                } else {
                    side.ladder.next_size()
                };
                let Some(size) = next else {
                    side.done = true;
                    return None;
                };
                side.sizes += 1;
                side.waiting = Some(Waiting {
                    size,
                    tries: 1,
                    next_ns: now + rto,
                });
                size
            }
        };
        self.side(d).sent += 1;
        Some(self.frame(d, size, now))
    }

    fn frame(&mut self, d: Direction, size: usize, now: u64) -> Send {
        let seq = self.next_seq;
        self.next_seq += 1;
        let (len, df) = match d {
            Direction::Up => (size, true),
            Direction::Down if self.token => (MTU_LEN, false),
            Direction::Down => (size, false),
        };
        let asked = u32::try_from(size).unwrap_or(u32::MAX);
        let frame = mtu::request(self.flow, seq, now, &Mtu::ask(d, asked), len);
        self.sent.insert(seq, (d, size, frame.len(), now));
        Send {
            seq,
            direction: d,
            size,
            frame,
            df,
        }
    }

    /// A datagram came back at `now`; `frag`: its largest fragment when it arrived
    /// reassembled. Returns what to send next.
    pub fn on_datagram(&mut self, now: u64, bytes: &[u8], frag: Option<u16>) -> Vec<Send> {
        let Ok(h) = Header::decode(bytes) else {
            return Vec::new();
        };
        let Some(&(d, size, len, sent_ns)) = self.sent.get(&h.seq) else {
            return Vec::new();
        };
        if h.kind == Kind::Mtu && h.flow == self.flow && bytes.len() == len {
            // Our own request, unchanged: a plain echo. Up probes measure the round trip;
            // nothing measures down.
            self.far_end = FarEnd::Echo;
            if d == Direction::Up {
                self.rtt(now, sent_ns);
                self.crossed(Direction::Up, size, now);
            } else {
                self.down.unreadable = true;
                self.down.waiting = None;
                self.down.done = true;
            }
            return self.poll(now);
        }
        let Some((h, m)) = mtu::read(bytes) else {
            return Vec::new();
        };
        if h.flow != self.flow || m.direction != d {
            return Vec::new();
        }
        self.far_end = FarEnd::NptServe;
        self.rtt(now, sent_ns);
        match d {
            Direction::Up => {
                if m.frag != 0 {
                    self.up.largest_fragment =
                        Some(m.frag.max(self.up.largest_fragment.unwrap_or(0)));
                }
                self.crossed(Direction::Up, size, now);
            }
            Direction::Down => {
                let s = &mut self.down;
                if m.pmtu != 0 {
                    s.far_pmtu_first.get_or_insert(m.pmtu);
                    s.far_pmtu_last = Some(m.pmtu);
                }
                if let Some(f) = frag {
                    s.largest_fragment = Some(u32::from(f).max(s.largest_fragment.unwrap_or(0)));
                }
                if h.status == status::MTU_TOO_BIG {
                    // The responder's own interface cannot send it.
                    s.answered += 1;
                    let fits = (m.pmtu as usize).checked_sub(self.hdr);
                    self.settle(d, size, Limit::Local { mtu: m.pmtu }, fits);
                } else {
                    if h.status == status::CLAMPED {
                        self.down.clamped += 1;
                    }
                    // What arrived is what crossed (a clamped answer is shorter than asked).
                    self.crossed(Direction::Down, bytes.len().min(size), now);
                    if bytes.len() < size {
                        // The responder will not send more to a stranger: nothing above it
                        // can be read, so the search ends here.
                        self.down.waiting = None;
                        self.down.done = true;
                    }
                }
            }
        }
        self.poll(now)
    }

    fn rtt(&mut self, now: u64, sent_ns: u64) {
        let r = now.saturating_sub(sent_ns);
        self.rtts.push(r);
        self.max_rtt_ns = Some(self.max_rtt_ns.map_or(r, |m| m.max(r)));
    }

    fn crossed(&mut self, d: Direction, size: usize, _now: u64) {
        let s = self.side(d);
        s.answered += 1;
        s.ladder.crossed(size);
        if s.waiting.is_some_and(|w| w.size <= size) {
            s.waiting = None;
        }
    }

    /// A size settled as not crossing, for `why`, at once.
    fn settle(&mut self, d: Direction, size: usize, why: Limit, fits: Option<usize>) {
        let s = self.side(d);
        s.ladder.failed(size, why, fits);
        if s.waiting.is_some_and(|w| w.size >= size) {
            s.waiting = None;
        }
    }

    /// Probe `seq` was too big: an ICMP from `from` said so with `mtu` (`local`: this host's
    /// own interface refused it). Returns what to send next.
    pub fn on_too_big(
        &mut self,
        now: u64,
        seq: u64,
        mtu: Option<u32>,
        from: Option<IpAddr>,
        local: bool,
    ) -> Vec<Send> {
        let Some(&(d, size, _, _)) = self.sent.get(&seq) else {
            return Vec::new();
        };
        if d != Direction::Up {
            // A down request goes without DF: nothing on the way refuses it.
            return Vec::new();
        }
        let m = mtu.unwrap_or(0);
        let why = if local {
            Limit::Local { mtu: m }
        } else {
            self.up.icmp = Some((m, from));
            Limit::Icmp { mtu: m }
        };
        let fits = mtu.and_then(|m| (m as usize).checked_sub(self.hdr + self.extra));
        self.settle(d, size, why, fits);
        self.poll(now)
    }
}
