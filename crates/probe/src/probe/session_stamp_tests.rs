//! A STAMP session (`npt probe stamp://`) against a fake path with its own fate per direction
//! and, between the legs, a STAMP Session-Reflector as RFC 8762 describes one (stateful: its own
//! count from 0; stateless: the sender's number), on a virtual clock. What it must show: the
//! same loss, RTT and intervals as any probe, losses placed up and down exactly from a stateful
//! reflector's count (and unplaced from a stateless one), one-way delay and IPDV per direction
//! and the reflector's dwell from the four timestamps, and T1 echoed intact.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use npt_wire::stamp::time::unix_ns_to_ntp;
use npt_wire::stamp::{ErrorEstimate, Mode, ReflectedPacket, TestPacket};

use super::fake_far::check_split;
use super::fake_link::{cfg, Fate};
use super::session::stamp::StampFraming;
use super::session::*;

const MS: u64 = 1_000_000;
/// The virtual clock's 0 is this Unix time (ns) on both ends: one clock.
const WALL: u64 = 1_795_744_237_000_000_000;

/// The reflector: stateful or not, how long it holds a packet, its clock's offset from ours.
struct Reflector {
    stateful: bool,
    count: u32,
    dwell: u64,
    skew: i64,
}

impl Reflector {
    /// Its answer to `bytes` arriving at `t`: (departure, bytes).
    fn answer(&mut self, t: u64, bytes: &[u8]) -> (u64, Vec<u8>) {
        let req = TestPacket::decode(Mode::Open, bytes).unwrap();
        let seq = if self.stateful { self.count } else { req.seq };
        self.count += 1;
        let wall = |x: u64| unix_ns_to_ntp((WALL + x).saturating_add_signed(self.skew));
        let mut out = bytes.to_vec();
        ReflectedPacket {
            seq,
            timestamp: wall(t + self.dwell),
            error: ErrorEstimate::from_ns(2_000, true),
            ssid: req.ssid,
            receive_timestamp: wall(t),
            sender_seq: req.seq,
            sender_timestamp: req.timestamp,
            sender_error: req.error,
            sender_ttl: 64,
        }
        .encode(Mode::Open, &mut out)
        .unwrap();
        (t + self.dwell, out)
    }
}

/// On the path: (arrival, order, to the reflector?, window seq, bytes).
type InFlight = (u64, u64, bool, u64, Vec<u8>);

/// Up and down legs with their own delay and fate (by the window's sequence number), the
/// reflector between them.
struct Path {
    up_delay: u64,
    down_delay: u64,
    up: Box<dyn Fn(u64) -> Fate>,
    down: Box<dyn Fn(u64) -> Fate>,
    far: Reflector,
    queue: BinaryHeap<Reverse<InFlight>>,
    n: u64,
}

impl Path {
    fn new(up_delay: u64, down_delay: u64, stateful: bool) -> Path {
        Path {
            up_delay,
            down_delay,
            up: Box::new(|_| Fate::default()),
            down: Box::new(|_| Fate::default()),
            far: Reflector {
                stateful,
                count: 0,
                dwell: 50_000,
                skew: 0,
            },
            queue: BinaryHeap::new(),
            n: 0,
        }
    }

    fn push(&mut self, at: u64, to_far: bool, seq: u64, bytes: Vec<u8>) {
        self.n += 1;
        self.queue.push(Reverse((at, self.n, to_far, seq, bytes)));
    }
}

fn stamp_cfg(count: u64) -> SessionConfig {
    SessionConfig {
        framing: Framing::Stamp(StampFraming {
            authenticated: false,
            wall_offset: WALL,
            seq_base: 0xFFFF_FF00,
            error: ErrorEstimate::from_ns(1_000, false),
        }),
        size: 44,
        count: Some(count),
        reflect: Reflect::Full,
        clock: ClockSync::SameHost,
        ..cfg(npt_wire::Pacing::Rate { pps: 1000.0 })
    }
}

/// Drives `s` over `path` until it is done (the session's wall offset: [`WALL`]).
fn run(s: &mut Session, path: &mut Path) -> Vec<Interval> {
    s.set_wall_offset(i64::try_from(WALL).unwrap());
    let mut now = 0u64;
    let mut buf = vec![0u8; 2048];
    let mut intervals = Vec::new();
    for _ in 0..1_000_000 {
        while let Some(n) = s.poll_transmit(now, &mut buf) {
            // The window's number: the wire's minus the flow's base.
            let wire = TestPacket::decode(Mode::Open, &buf[..n]).unwrap().seq;
            let seq = u64::from(wire.wrapping_sub(0xFFFF_FF00));
            let f = (path.up)(seq);
            if !f.drop {
                let at = now + path.up_delay + f.extra_delay;
                path.push(at, true, seq, buf[..n].to_vec());
            }
        }
        while matches!(path.queue.peek(), Some(Reverse((t, ..))) if *t <= now) {
            let Reverse((_, _, to_far, seq, bytes)) = path.queue.pop().unwrap();
            if to_far {
                let (at, out) = path.far.answer(now, &bytes);
                let f = (path.down)(seq);
                if !f.drop {
                    for _ in 0..f.copies.max(1) {
                        path.push(
                            at + path.down_delay + f.extra_delay,
                            false,
                            seq,
                            out.clone(),
                        );
                    }
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
            return intervals;
        }
        let mut next = s.poll_timeout().unwrap_or(u64::MAX);
        if let Some(Reverse((t, ..))) = path.queue.peek() {
            next = next.min(*t);
        }
        assert!(next != u64::MAX, "session neither done nor waiting");
        now = next.max(now);
    }
    panic!("virtual run did not finish");
}

fn drop_at(seqs: &'static [u64]) -> Box<dyn Fn(u64) -> Fate> {
    Box::new(move |s| Fate {
        drop: seqs.contains(&s),
        ..Fate::default()
    })
}

#[test]
fn a_stateful_reflector_places_every_loss_up_or_down() {
    let mut path = Path::new(30 * MS, 10 * MS, true);
    path.up = drop_at(&[3, 10, 11, 400]);
    path.down = drop_at(&[5, 20, 777]);
    let mut s = Session::new(stamp_cfg(1000));
    let iv = run(&mut s, &mut path);
    let t = s.totals();
    check_split(t, &iv);
    assert_eq!(
        (t.packets.sent, t.packets.received, t.packets.lost),
        (1000, 993, 7)
    );
    assert_eq!((t.dir.lost_up, t.dir.lost_down, t.dir.unplaced), (4, 3, 0));
    assert_eq!(t.corrupt + t.foreign, 0, "T1 came back as written");
    let up: u64 = iv.iter().map(|i| i.lost_up).sum();
    assert_eq!(up, 4, "the intervals place them too");
    // 30 ms up, 50 µs in the reflector, 10 ms down, one clock.
    let ms = |h: &npt_stats::Histogram| h.summary().p50;
    assert!((ms(&t.rtt) - 40.05).abs() < 0.05, "rtt {}", ms(&t.rtt));
    assert!(
        (ms(&t.dir.owd_up) - 30.0).abs() < 0.05,
        "{}",
        ms(&t.dir.owd_up)
    );
    assert!(
        (ms(&t.dir.owd_down) - 10.0).abs() < 0.05,
        "{}",
        ms(&t.dir.owd_down)
    );
    assert!((ms(&t.dir.dwell) - 0.05).abs() < 0.001);
    assert_eq!(t.dir.owd_negative, 0);
    assert_eq!(
        t.dir.far_error_ns,
        Some(2_012),
        "its Error Estimate (2 µs, rounded up)"
    );
    assert_eq!(t.dir.stamped, 993);
    assert_eq!(
        (
            t.dir.flows.reflected,
            t.dir.flows.no_query,
            t.dir.flows.no_report
        ),
        (1, 1, 0),
        "STAMP has no query"
    );
}

#[test]
fn jitter_on_one_leg_shows_in_that_direction_only() {
    let mut path = Path::new(5 * MS, 5 * MS, true);
    path.down = Box::new(|s| Fate {
        extra_delay: (s % 7) * MS,
        ..Fate::default()
    });
    let mut s = Session::new(stamp_cfg(500));
    run(&mut s, &mut path);
    let d = &s.totals().dir;
    assert!(d.ipdv_up.summary().max < 0.001, "{:?}", d.ipdv_up.summary());
    assert!(
        d.ipdv_down.summary().p50 >= 0.999,
        "{:?}",
        d.ipdv_down.summary()
    );
}

#[test]
fn a_stateless_reflector_tells_no_direction() {
    let mut path = Path::new(MS, MS, false);
    path.up = drop_at(&[3, 10]);
    path.down = drop_at(&[5]);
    let mut s = Session::new(stamp_cfg(100));
    let iv = run(&mut s, &mut path);
    let t = s.totals();
    check_split(t, &iv);
    assert_eq!(t.packets.lost, 3);
    assert_eq!((t.dir.lost_up, t.dir.lost_down, t.dir.unplaced), (0, 0, 3));
    // Its timestamps still give delay per direction, and its Error Estimate stands beside.
    assert!(!t.dir.owd_up.is_empty() && !t.dir.dwell.is_empty());
    assert_eq!(t.dir.far_error_ns, Some(2_012));
}

#[test]
fn losses_after_the_last_answer_stay_unplaced() {
    let mut path = Path::new(MS, MS, true);
    path.up = drop_at(&[7, 98]);
    path.down = drop_at(&[99]);
    let mut s = Session::new(stamp_cfg(100));
    let iv = run(&mut s, &mut path);
    let t = s.totals();
    check_split(t, &iv);
    assert_eq!(t.packets.lost, 3);
    // 7 is placed by the answers around it; 98 and 99 came after the last answer, and STAMP
    // has no final report to ask for.
    assert_eq!((t.dir.lost_up, t.dir.lost_down, t.dir.unplaced), (1, 0, 2));
}

#[test]
fn a_reflector_clock_off_by_a_second_shows_as_negative_one_way_delay() {
    let mut path = Path::new(5 * MS, 5 * MS, true);
    path.far.skew = -1_000_000_000;
    let mut s = Session::new(stamp_cfg(100));
    run(&mut s, &mut path);
    let d = &s.totals().dir;
    assert_eq!(d.owd_negative, 100, "every up reading is negative");
    assert!(d.owd_min_ns.unwrap() < -990_000_000);
    // IPDV needs no sync: unchanged.
    assert!(d.ipdv_up.summary().max < 0.001);
}
