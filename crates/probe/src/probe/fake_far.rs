//! A fake path for session tests: a link with its own fate per direction (loss, delay,
//! duplication, reordering) and, between the legs, a fake responder that counts a flow as
//! `npt serve` must (docs: the reflect block of `npt_wire::reflect`): receive and refused counts
//! in every reply, stamps, refusal notices (rate-limited), and a flow report on query. Runs on a
//! virtual clock; no sockets, no sleeping.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use npt_wire::frame::{self, status, Header, Kind, HEADER_LEN};
use npt_wire::reflect::{self, FlowReport, Stamps};

use super::fake_link::Fate;
use super::session::*;

/// Refuses an arriving packet (by its sequence number and the flow's arrival index) for a
/// status, or not.
type Refuse = Box<dyn Fn(u64, u64) -> Option<u32>>;

/// In flight on the path: (arrival time, order, to the responder?, bytes).
type InFlight = BinaryHeap<Reverse<(u64, u64, bool, Vec<u8>)>>;

/// The fake `npt serve`: one flow's counts, kept as the responder keeps them.
pub(super) struct Responder {
    pub received: u64,
    pub refused: u64,
    pub duplicated: u64,
    pub reordered: u64,
    arrivals: u64,
    seen: HashSet<u64>,
    highest: Option<u64>,
    pub refuse: Refuse,
    /// A notice for every n-th refusal (0: none).
    pub notice_every: u64,
    /// Time between receive and send, ns.
    pub dwell: u64,
    /// Its wall clock minus the virtual clock.
    pub wall: i64,
    /// Whether it answers the n-th query (0-based).
    pub answers: Box<dyn Fn(u32) -> bool>,
    /// An older responder: echoes without reflecting.
    pub old: bool,
    /// It forgot the flow: queries get UNKNOWN_FLOW.
    pub forgot: bool,
    pub queries: u32,
    pub notices: u64,
}

impl Default for Responder {
    fn default() -> Self {
        Responder {
            received: 0,
            refused: 0,
            duplicated: 0,
            reordered: 0,
            arrivals: 0,
            seen: HashSet::new(),
            highest: None,
            refuse: Box::new(|_, _| None),
            notice_every: 0,
            dwell: 0,
            wall: 0,
            answers: Box::new(|_| true),
            old: false,
            forgot: false,
            queries: 0,
            notices: 0,
        }
    }
}

impl Responder {
    /// What it sends back for `bytes` arriving at `t`: (departure time, bytes, rx count).
    fn on_frame(&mut self, t: u64, bytes: &[u8]) -> Option<(u64, Vec<u8>, u64)> {
        let h = Header::decode(bytes).ok()?;
        if h.kind == Kind::FlowQuery {
            let n = self.queries;
            self.queries += 1;
            let mut out = bytes.to_vec();
            let report = FlowReport {
                received: self.received,
                refused: self.refused,
                duplicated: self.duplicated,
                reordered: self.reordered,
            };
            reflect::write_report(&mut out, &h, (!self.forgot).then_some(&report))?;
            return (self.answers)(n).then_some((t, out, 0));
        }
        self.arrivals += 1;
        if self.old {
            let mut out = bytes.to_vec();
            frame::set_kind_status(&mut out, Kind::EchoReply, 0);
            return Some((t + self.dwell, out, 0));
        }
        if let Some(why) = (self.refuse)(h.seq, self.arrivals) {
            self.refused += 1;
            if self.notice_every == 0 || !self.refused.is_multiple_of(self.notice_every) {
                return None;
            }
            self.notices += 1;
            let mut out = [0u8; HEADER_LEN];
            let count = u32::try_from(self.refused % (1 << 32)).ok();
            reflect::write_notice(bytes, why, count, &mut out)?;
            return Some((t, out.to_vec(), 0));
        }
        self.received += 1;
        if !self.seen.insert(h.seq) {
            self.duplicated += 1;
        } else if matches!(self.highest, Some(x) if h.seq < x) {
            self.reordered += 1;
        }
        self.highest = Some(self.highest.map_or(h.seq, |x| x.max(h.seq)));
        let mut out = bytes.to_vec();
        frame::set_kind_status(&mut out, Kind::EchoReply, 0);
        let reply = Header::decode(&out).ok()?;
        let rx_wall = u64::try_from(i128::from(t) + i128::from(self.wall)).ok()?;
        let stamps = Stamps {
            rx_wall_ns: rx_wall,
            dwell_ns: u32::try_from(self.dwell).ok()?,
            refused: u32::try_from(self.refused % (1 << 32)).ok()?,
        };
        let rx = u32::try_from(self.received % (1 << 32)).ok()?;
        reflect::write_reply(&mut out, &reply, rx, &stamps).ok()?;
        Some((t + self.dwell, out, self.received))
    }
}

/// A path: the up leg's fate by sequence number, the responder, the down leg's fate by
/// (sequence number, receive count).
pub(super) struct Path {
    pub up_delay: u64,
    pub down_delay: u64,
    pub up: Box<dyn Fn(u64) -> Fate>,
    pub down: Box<dyn Fn(u64, u64) -> Fate>,
    pub far: Responder,
    queue: InFlight,
    n: u64,
}

impl Path {
    pub(super) fn new(up_delay: u64, down_delay: u64) -> Path {
        Path {
            up_delay,
            down_delay,
            up: Box::new(|_| Fate::default()),
            down: Box::new(|_, _| Fate::default()),
            far: Responder::default(),
            queue: BinaryHeap::new(),
            n: 0,
        }
    }

    fn push(&mut self, at: u64, to_far: bool, bytes: Vec<u8>) {
        self.n += 1;
        self.queue.push(Reverse((at, self.n, to_far, bytes)));
    }

    fn send_up(&mut self, now: u64, bytes: &[u8]) {
        let Ok(h) = Header::decode(bytes) else {
            return;
        };
        let f = if h.kind == Kind::FlowQuery {
            Fate::default()
        } else {
            (self.up)(h.seq)
        };
        if f.drop {
            return;
        }
        for _ in 0..f.copies.max(1) {
            self.push(now + self.up_delay + f.extra_delay, true, bytes.to_vec());
        }
    }

    fn send_down(&mut self, at: u64, bytes: Vec<u8>, rx: u64) {
        let Ok(h) = Header::decode(&bytes) else {
            return;
        };
        let f = match h.kind {
            Kind::EchoReply if h.flags & reflect::NOTICE == 0 => (self.down)(h.seq, rx),
            _ => Fate::default(),
        };
        if f.drop {
            return;
        }
        for _ in 0..f.copies.max(1) {
            self.push(at + self.down_delay + f.extra_delay, false, bytes.clone());
        }
    }

    fn next_time(&self) -> Option<u64> {
        self.queue.peek().map(|Reverse((t, ..))| *t)
    }
}

/// The session's own config for these tests: framed, reflecting, 1000 packets at 1000 pps in
/// 100 ms stages, a 1 s loss timeout.
pub(super) fn far_cfg() -> SessionConfig {
    SessionConfig {
        reflect: Reflect::Full,
        clock: ClockSync::SameHost,
        ..super::fake_link::cfg(npt_wire::Pacing::Rate { pps: 1000.0 })
    }
}

/// Drives `s` over `path` until it is done; the session's wall offset is `wall` (the
/// responder's too, unless the test set another). Returns the intervals and the end time.
pub(super) fn run_path(s: &mut Session, path: &mut Path, wall: i64) -> (Vec<Interval>, u64) {
    s.set_wall_offset(wall);
    let mut now = 0u64;
    let mut buf = vec![0u8; 2048];
    let mut intervals = Vec::new();
    for _ in 0..10_000_000 {
        while let Some(n) = s.poll_transmit(now, &mut buf) {
            path.send_up(now, &buf[..n]);
        }
        while matches!(path.next_time(), Some(t) if t <= now) {
            let Some(Reverse((_, _, to_far, bytes))) = path.queue.pop() else {
                break;
            };
            if to_far {
                if let Some((at, out, rx)) = path.far.on_frame(now, &bytes) {
                    path.send_down(at, out, rx);
                }
            } else {
                s.handle_reply(now, &bytes);
            }
        }
        s.handle_timeout(now);
        while let Some(iv) = s.poll_interval() {
            intervals.push(iv);
        }
        if s.is_done() {
            return (intervals, now);
        }
        let mut next = s.poll_timeout().unwrap_or(u64::MAX);
        if let Some(t) = path.next_time() {
            next = next.min(t);
        }
        assert!(next != u64::MAX, "session neither done nor waiting");
        now = next.max(now);
    }
    panic!("virtual run did not finish");
}

/// `received + lost + refused == sent` in the totals and in every interval, every path loss
/// placed once (up, down or unplaced), and the intervals add up to the totals.
pub(super) fn check_split(t: &Totals, intervals: &[Interval]) {
    assert_eq!(
        t.packets.received + t.packets.lost + t.refused,
        t.packets.sent,
        "totals resolve"
    );
    let d = &t.dir;
    assert_eq!(
        d.lost_up + d.lost_down + d.unplaced,
        t.packets.lost,
        "each loss placed once"
    );
    for iv in intervals {
        assert_eq!(
            iv.packets.received + iv.packets.lost + iv.refused,
            iv.packets.sent,
            "interval {} resolves",
            iv.index
        );
        assert!(
            iv.lost_up + iv.lost_down <= iv.packets.lost,
            "interval {}",
            iv.index
        );
    }
    let sum = |f: fn(&Interval) -> u64| intervals.iter().map(f).sum::<u64>();
    assert_eq!(sum(|i| i.packets.sent), t.packets.sent);
    assert_eq!(
        sum(|i| i.packets.lost),
        t.packets.lost,
        "intervals' loss adds up"
    );
    assert_eq!(sum(|i| i.refused), t.refused, "intervals' refusals add up");
}

/// The notice status the tests refuse with.
pub(super) const BUDGET: u32 = status::BUDGET;
