//! What a driver that hands results on in batches sees (`npt run`'s game): each reply's
//! [`Arrival`], [`Progress`] takes that add up to the totals, `Tick` pacing under a driver that
//! wakes late, `--token` sealing, and the same counts without per-session histograms — on the
//! virtual clock and fake link of `fake_link`.

use std::cmp::Reverse;

use npt_stats::{Jitter, JitterMean};
use npt_wire::auth::{Dir, SessionKey};
use npt_wire::frame::{self, Kind};
use npt_wire::Pacing;

use super::fake_link::{cfg, check_invariants, FakeLink, Fate, MS};
use super::session::*;

/// What the batching driver saw.
#[derive(Default)]
struct Seen {
    takes: Vec<Progress>,
    /// Sequence numbers handed to the link, in order.
    sent: Vec<u64>,
    rtts: Vec<u64>,
    late: u64,
    duplicated: u64,
    ignored: u64,
    intervals: Vec<Interval>,
    /// On-time replies since the last take.
    pending: u64,
    /// The RFC 3550 estimate over `rtts`, fed by the test itself.
    jitter: Jitter,
    jitter_taken: u64,
}

impl Seen {
    /// Takes the session's progress and checks it against what the arrivals said.
    fn take(&mut self, s: &mut Session) {
        let p = s.take_progress();
        assert_eq!(p.received, self.pending, "one on-time arrival per reply");
        assert_eq!(p.resolved, p.received + p.lost);
        let expect = JitterMean::from_value(
            self.jitter.value_ns(),
            self.jitter.samples() - self.jitter_taken,
        );
        assert_eq!(
            p.jitter, expect,
            "the estimate now, weighted by new samples"
        );
        self.jitter_taken = self.jitter.samples();
        self.pending = 0;
        self.takes.push(p);
    }
}

/// Drives `s` as `npt run`'s game does: every reply through `handle_arrival`, a take after
/// every `batch` on-time replies and one at the end. The driver wakes `wake_late` after each
/// deadline (a loaded timer); replies are read as they arrive.
fn drive(s: &mut Session, link: &mut FakeLink, batch: u64, wake_late: u64) -> Seen {
    let mut now = 0u64;
    let mut buf = vec![0u8; 2048];
    let mut seen = Seen::default();
    for _ in 0..1_000_000 {
        while let Some(n) = s.poll_transmit(now, &mut buf) {
            let seq = frame::Header::decode(&buf[..n]).unwrap().seq;
            seen.sent.push(seq);
            link.send(now, &buf[..n], seq);
        }
        while matches!(link.next_time(), Some(t) if t <= now) {
            let Reverse((_, _, bytes)) = link.queue.pop().unwrap();
            match s.handle_arrival(now, &bytes) {
                Arrival::OnTime { rtt } => {
                    seen.rtts.push(rtt);
                    seen.jitter.record(rtt);
                    seen.pending += 1;
                    if seen.pending == batch {
                        seen.take(s);
                    }
                }
                Arrival::Late => seen.late += 1,
                Arrival::Duplicate => seen.duplicated += 1,
                Arrival::Ignored | Arrival::Refused => seen.ignored += 1,
            }
        }
        s.handle_timeout(now);
        while let Some(iv) = s.poll_interval() {
            seen.intervals.push(iv);
        }
        if s.is_done() {
            seen.take(s);
            return seen;
        }
        let wake = s.poll_timeout().map_or(u64::MAX, |t| t + wake_late);
        let next = wake.min(link.next_time().unwrap_or(u64::MAX));
        assert!(next != u64::MAX, "session neither done nor waiting");
        now = next.max(now);
    }
    panic!("virtual run did not finish");
}

/// Every tenth packet by its last digit: 3 dropped, 6 duplicated, 9 late (after the loss
/// timeout), 0 a little slower (so jitter has something to measure).
fn fate(seq: u64) -> Fate {
    match seq % 10 {
        3 => Fate {
            drop: true,
            ..Fate::default()
        },
        6 => Fate {
            copies: 2,
            ..Fate::default()
        },
        9 => Fate {
            extra_delay: 150 * MS,
            ..Fate::default()
        },
        0 => Fate {
            extra_delay: 4 * MS,
            ..Fate::default()
        },
        _ => Fate::default(),
    }
}

fn tick_cfg(pacing: Pacing) -> SessionConfig {
    let mut c = cfg(pacing);
    c.count = None;
    c.send_until = Some(1000 * MS);
    c.loss_timeout = 100 * MS;
    c
}

#[test]
fn progress_takes_add_up_to_the_totals_and_to_what_the_link_did() {
    let mut s = Session::new(tick_cfg(Pacing::Tick { every: 10 * MS }));
    assert_eq!(
        s.take_progress(),
        Progress::default(),
        "nothing decided yet"
    );
    let mut link = FakeLink::new(20 * MS, fate);
    let seen = drive(&mut s, &mut link, 16, 0);
    let t = s.totals();
    let n = |d: u64| seen.sent.iter().filter(|&&q| q % 10 == d).count() as u64;
    assert_eq!(t.packets.sent, 100, "1 s of 10 ms ticks");
    // The last packet's late reply (sent at 990 ms, due back at 1160 ms) is still on the
    // wire when the drain ends (990 + 100 ms): lost, but never seen late.
    assert_eq!(seen.sent.last(), Some(&99));
    assert_eq!(link.queue.len(), 1);
    assert_eq!(
        (
            t.packets.lost,
            t.packets.late,
            t.packets.duplicated,
            t.packets.received
        ),
        (n(3) + n(9), n(9) - 1, n(6), 100 - n(3) - n(9))
    );
    assert_eq!(
        (seen.late, seen.duplicated, seen.ignored),
        (t.packets.late, t.packets.duplicated, 0)
    );
    assert_eq!(seen.rtts.len() as u64, t.packets.received);
    assert!(seen.rtts.iter().all(|&r| r == 20 * MS || r == 24 * MS));
    let mut sum = Progress::default();
    for p in &seen.takes {
        sum.resolved += p.resolved;
        sum.received += p.received;
        sum.lost += p.lost;
        sum.late += p.late;
        sum.duplicated += p.duplicated;
        sum.reordered += p.reordered;
        sum.bytes_up += p.bytes_up;
        sum.bytes_down += p.bytes_down;
        sum.jitter += &p.jitter;
    }
    assert_eq!(
        (sum.resolved, sum.received, sum.lost, sum.late),
        (
            t.packets.sent,
            t.packets.received,
            t.packets.lost,
            t.packets.late
        )
    );
    assert_eq!(
        (sum.duplicated, sum.reordered, sum.bytes_up, sum.bytes_down),
        (
            t.packets.duplicated,
            t.packets.reordered,
            t.bytes_up,
            t.bytes_down
        )
    );
    assert_eq!(sum.jitter.samples(), t.jitter.samples());
    assert_eq!(t.jitter.samples(), t.packets.received - 1);
    assert!(
        sum.jitter.value_ns() > 0.0,
        "the slower packets show as jitter"
    );
    assert!(
        seen.takes.len() > 3,
        "flushed in batches, not only at the end"
    );
    check_invariants(t, &seen.intervals);
    assert_eq!(
        s.take_progress(),
        Progress::default(),
        "all of it was taken"
    );
}

#[test]
fn tick_pacing_keeps_the_rate_when_the_driver_wakes_late() {
    // A timer that fires 3 ms late on a 10 ms tick: `Tick` still sends every tick of the
    // second, `Interval` (wait after each actual send) loses a quarter of them.
    let sent = |pacing| {
        // One stage for the whole session (as the game): no interval boundary wakes the
        // driver closer to a due time.
        let mut c = tick_cfg(pacing);
        c.stage = Stage::Packets(u64::MAX);
        let mut s = Session::new(c);
        let mut link = FakeLink::new(MS, |_| Fate::default());
        drive(&mut s, &mut link, 64, 3 * MS);
        let t = s.totals();
        assert_eq!((t.packets.received, t.packets.lost), (t.packets.sent, 0));
        t.packets.sent
    };
    assert_eq!(sent(Pacing::Tick { every: 10 * MS }), 100);
    // Sends at 0, 13, 26 … 988: 77 of them.
    assert_eq!(sent(Pacing::Interval { every: 10 * MS }), 77);
}

/// `npt serve`'s echo of a sealed frame: checks the client's seal, answers under `key`.
fn sealed_echo(request: &[u8], server: &SessionKey, key: &SessionKey) -> Vec<u8> {
    server
        .open(Dir::ToServer, request)
        .expect("sealed by the session");
    let mut reply = request.to_vec();
    frame::set_kind_status(&mut reply, Kind::EchoReply, 0);
    key.seal(Dir::ToClient, &mut reply).unwrap();
    reply
}

#[test]
fn token_sealed_frames_and_forged_replies() {
    let key = SessionKey::from_bytes(&[7; 32]);
    let other = SessionKey::from_bytes(&[8; 32]);
    let mut c = tick_cfg(Pacing::Tick { every: 10 * MS });
    c.flow = 9;
    let mut s = Session::new(c);
    s.set_auth(key.clone());
    let mut buf = vec![0u8; 2048];
    let n = s.poll_transmit(0, &mut buf).unwrap();
    let h = frame::Header::decode(&buf[..n]).unwrap();
    assert_eq!((h.kind, h.flow), (Kind::Echo, 9));
    assert!(npt_wire::auth::is_sealed(&buf[..n]));
    // A reply under another key, and one not sealed at all: foreign, never measured.
    let forged = sealed_echo(&buf[..n], &key, &other);
    assert_eq!(s.handle_arrival(MS, &forged), Arrival::Ignored);
    let mut clear = buf[..n].to_vec();
    frame::set_kind_status(&mut clear, Kind::EchoReply, 0);
    assert_eq!(s.handle_arrival(MS, &clear), Arrival::Ignored);
    assert_eq!(s.totals().foreign, 2);
    let good = sealed_echo(&buf[..n], &key, &key);
    assert_eq!(
        s.handle_arrival(5 * MS, &good),
        Arrival::OnTime { rtt: 5 * MS }
    );
    assert_eq!(s.handle_arrival(6 * MS, &good), Arrival::Duplicate);
    let p = s.take_progress();
    assert_eq!((p.resolved, p.received, p.duplicated), (1, 1, 1));
    // After the end, replies are stale: counted, not measured.
    s.abort(7 * MS, StopReason::Abort);
    assert_eq!(s.handle_arrival(8 * MS, &good), Arrival::Ignored);
    assert_eq!(s.totals().stale, 1);
}

#[test]
fn without_histograms_every_count_is_the_same() {
    let go = |keep: bool| {
        let mut s = Session::new(tick_cfg(Pacing::Tick { every: 10 * MS }));
        s.keep_histograms(keep);
        let mut link = FakeLink::new(20 * MS, fate);
        let seen = drive(&mut s, &mut link, 16, MS);
        (s.into_totals(), seen)
    };
    let (with, a) = go(true);
    let (without, b) = go(false);
    let counts = |t: &Totals| {
        (
            (
                t.packets.sent,
                t.packets.received,
                t.packets.lost,
                t.packets.late,
                t.packets.duplicated,
                t.packets.reordered,
            ),
            (t.bytes_up, t.bytes_down, t.jitter, t.first_rtt),
        )
    };
    assert_eq!(counts(&with), counts(&without));
    assert_eq!((&a.takes, &a.rtts), (&b.takes, &b.rtts));
    assert_eq!(with.rtt.count(), with.packets.received);
    assert!(with.ipdv.count() > 0 && with.send_lateness.count() > 0);
    for h in [&without.rtt, &without.ipdv, &without.send_lateness] {
        assert!(h.is_empty());
    }
    let iv = |s: &Seen| {
        s.intervals
            .iter()
            .map(|i| {
                (
                    i.packets.sent,
                    i.packets.received,
                    i.packets.lost,
                    i.rtt.count(),
                )
            })
            .collect::<Vec<_>>()
    };
    let (ia, ib) = (iv(&a), iv(&b));
    assert_eq!(ia.len(), ib.len());
    for (x, y) in ia.iter().zip(&ib) {
        assert_eq!((x.0, x.1, x.2, x.3, y.3), (y.0, y.1, y.2, x.1, 0));
    }
}
