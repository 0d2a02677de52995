//! Per-direction arithmetic of the probe session against a fake path whose legs lose,
//! delay, duplicate and reorder on their own, and a fake responder that counts as `npt serve`
//! does: the exact counts each direction must read, on a virtual clock.

use super::fake_far::{check_split, far_cfg, run_path, Path, BUDGET};
use super::fake_link::{Fate, MS};
use super::session::*;

const WALL: i64 = 1_763_000_000_000_000_000;
const MS_I: i64 = 1_000_000;

fn drop_if(p: bool) -> Fate {
    Fate {
        drop: p,
        ..Fate::default()
    }
}

fn run(path: &mut Path, cfg: SessionConfig) -> (Session, Vec<Interval>, u64) {
    let mut s = Session::new(cfg);
    path.far.wall = WALL;
    let (iv, end) = run_path(&mut s, path, WALL);
    (s, iv, end)
}

#[test]
fn loss_up_only_reads_up_only_and_exactly() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| drop_if(seq % 33 == 5));
    let (s, iv, _) = run(&mut path, far_cfg());
    let t = s.totals();
    assert_eq!(
        (
            t.packets.sent,
            t.packets.received,
            t.packets.lost,
            t.refused
        ),
        (1000, 969, 31, 0)
    );
    let d = &t.dir;
    assert_eq!((d.lost_up, d.lost_down, d.unplaced), (31, 0, 0));
    assert_eq!((d.flows.reflected, d.flows.exact), (1, 1));
    assert_eq!(path.far.queries, 1, "one query, answered");
    for i in &iv {
        assert_eq!(
            (i.lost_up, i.lost_down),
            (i.packets.lost, 0),
            "interval {}",
            i.index
        );
    }
    check_split(t, &iv);
}

#[test]
fn loss_both_ways_splits_exactly() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| drop_if(seq % 33 == 5));
    path.down = Box::new(|_, rx| drop_if(rx % 50 == 7));
    let (s, iv, _) = run(&mut path, far_cfg());
    let t = s.totals();
    // 969 replies sent with receive counts 1..=969: 20 of them end in 7 mod 50.
    assert_eq!(
        (t.dir.lost_up, t.dir.lost_down, t.packets.lost),
        (31, 20, 51)
    );
    assert_eq!(t.dir.flows.exact, 1);
    let placed: u64 = iv.iter().map(|i| i.lost_up + i.lost_down).sum();
    assert_eq!(placed, 51, "every loss placed in its interval");
    check_split(t, &iv);
}

#[test]
fn the_losses_after_the_last_reply_are_placed_by_the_report() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| drop_if(seq >= 990));
    path.down = Box::new(|seq, _| drop_if((980..990).contains(&seq)));
    let (s, iv, _) = run(&mut path, far_cfg());
    let t = s.totals();
    assert_eq!(
        (t.dir.lost_up, t.dir.lost_down, t.dir.unplaced),
        (10, 10, 0)
    );
    let last = iv.last().unwrap();
    assert_eq!((last.lost_up, last.lost_down), (10, 10));
    check_split(t, &iv);
}

#[test]
fn without_the_report_the_tail_is_unplaced_and_the_split_inexact() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| drop_if(seq >= 990 || seq == 100));
    path.far.answers = Box::new(|_| false);
    let (s, iv, end) = run(&mut path, far_cfg());
    let t = s.totals();
    assert_eq!((t.packets.lost, t.dir.lost_up, t.dir.unplaced), (11, 1, 10));
    assert_eq!((t.dir.flows.exact, t.dir.flows.no_report), (0, 1));
    assert_eq!(path.far.queries, 5, "a bounded number of queries");
    // Last send at 999 ms, its loss timeout 1 s later, then at most one more for the queries.
    assert!(end <= 999 * MS + 2000 * MS, "ended at {end}");
    check_split(t, &iv);
}

#[test]
fn a_lost_report_is_asked_again() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| drop_if(seq == 999));
    path.far.answers = Box::new(|n| n >= 2);
    let (s, _, _) = run(&mut path, far_cfg());
    assert_eq!(path.far.queries, 3);
    assert_eq!((s.totals().dir.flows.exact, s.totals().dir.lost_up), (1, 1));
}

#[test]
fn refusals_are_not_path_loss_and_add_up_per_interval() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.far.refuse = Box::new(|seq, _| (seq % 10 < 7).then_some(BUDGET));
    path.far.notice_every = 10;
    let (s, iv, _) = run(&mut path, far_cfg());
    let t = s.totals();
    assert_eq!(
        (t.packets.received, t.packets.lost, t.refused),
        (300, 0, 700)
    );
    assert_eq!(t.dir.notices.budget, 70);
    assert_eq!(
        (t.dir.lost_up, t.dir.lost_down, t.dir.flows.exact),
        (0, 0, 1)
    );
    assert!(iv.iter().all(|i| i.refused == 70 && i.packets.lost == 0));
    check_split(t, &iv);
}

#[test]
fn refusals_and_loss_both_ways_together() {
    let up_lost = |seq: u64| seq % 33 == 5;
    let refused = |seq: u64| seq % 10 < 7;
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(move |seq| drop_if(up_lost(seq)));
    path.down = Box::new(|_, rx| drop_if(rx % 50 == 7));
    path.far.refuse = Box::new(move |seq, _| refused(seq).then_some(BUDGET));
    path.far.notice_every = 3;
    let (s, iv, _) = run(&mut path, far_cfg());
    let t = s.totals();
    let arrived = (0..1000u64).filter(|&q| !up_lost(q));
    let n_refused = arrived.clone().filter(|&q| refused(q)).count() as u64;
    let accepted = arrived.count() as u64 - n_refused;
    let down = (1..=accepted).filter(|c| c % 50 == 7).count() as u64;
    assert_eq!(t.refused, n_refused);
    assert_eq!((t.dir.lost_up, t.dir.lost_down), (31, down));
    assert_eq!(t.packets.lost, 31 + down);
    assert_eq!(t.dir.flows.exact, 1);
    check_split(t, &iv);
}

#[test]
fn unstamped_frames_take_refusals_from_notices_and_the_report() {
    let mut c = far_cfg();
    c.size = 56; // room for the receive count, none for stamps
    let mut path = Path::new(5 * MS, 5 * MS);
    path.far.refuse = Box::new(|seq, _| (seq % 4 == 1).then_some(BUDGET));
    path.far.notice_every = 2;
    let (s, iv, _) = run(&mut path, c);
    let t = s.totals();
    assert_eq!(
        (t.refused, t.packets.lost, t.dir.lost_up, t.dir.flows.exact),
        (250, 0, 0, 1)
    );
    assert_eq!(t.dir.stamped, 0);
    assert_eq!(
        t.packets.received + t.packets.lost + t.refused,
        t.packets.sent
    );
    let _ = iv;
}

#[test]
fn a_token_refusal_of_everything_is_refused_not_lost() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.far.refuse = Box::new(|_, _| Some(npt_wire::frame::status::TOKEN_REQUIRED));
    path.far.notice_every = 10;
    path.far.answers = Box::new(|_| false);
    let (s, iv, _) = run(&mut path, far_cfg());
    let t = s.totals();
    assert_eq!(
        (t.packets.received, t.refused, t.packets.lost),
        (0, 1000, 0)
    );
    assert_eq!(t.dir.notices.token_required, 100);
    check_split(t, &iv);
}

#[test]
fn duplicates_per_direction() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| Fate {
        copies: if seq % 100 == 3 { 2 } else { 1 },
        ..Fate::default()
    });
    // Down copies of first echoes only (receive counts of the up copies' echoes differ).
    path.down = Box::new(|seq, _| Fate {
        copies: if seq % 100 == 50 { 2 } else { 1 },
        ..Fate::default()
    });
    let (s, iv, _) = run(&mut path, far_cfg());
    let t = s.totals();
    assert_eq!(t.packets.duplicated, 20);
    assert_eq!((t.dir.dup_up, t.dir.dup_down), (10, 10));
    assert_eq!(t.packets.lost, 0);
    check_split(t, &iv);
}

#[test]
fn reordering_up_is_the_far_ends_and_down_is_by_receive_count() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| Fate {
        extra_delay: if seq % 100 == 10 { 2 * MS + MS / 2 } else { 0 },
        ..Fate::default()
    });
    let (s, _, _) = run(&mut path, far_cfg());
    let t = s.totals();
    assert_eq!(
        (t.packets.reordered, t.dir.reorder_up, t.dir.reorder_down),
        (10, 10, 0)
    );

    let mut path = Path::new(5 * MS, 5 * MS);
    path.down = Box::new(|_, rx| Fate {
        extra_delay: if rx % 100 == 20 { 2 * MS + MS / 2 } else { 0 },
        ..Fate::default()
    });
    let (s, _, _) = run(&mut path, far_cfg());
    let t = s.totals();
    assert_eq!(
        (t.packets.reordered, t.dir.reorder_up, t.dir.reorder_down),
        (10, 0, 10)
    );
}

#[test]
fn one_way_delay_each_way_on_one_clock() {
    let mut path = Path::new(30 * MS, 10 * MS);
    path.far.dwell = 50_000;
    let (s, _, _) = run(&mut path, far_cfg());
    let d = &s.totals().dir;
    let (up, down) = (d.owd_up.summary(), d.owd_down.summary());
    assert!(
        (up.p50 - 30.0).abs() < 0.05 && (up.max - 30.0).abs() < 0.05,
        "{up:?}"
    );
    assert!((down.p50 - 10.0).abs() < 0.05, "{down:?}");
    assert!((d.dwell.summary().p50 - 0.05).abs() < 0.001);
    let rtt = s.totals().rtt.summary();
    assert!((rtt.p50 - 40.05).abs() < 0.05, "{rtt:?}");
    assert_eq!((d.owd_negative, d.stamped), (0, 1000));
    assert_eq!(d.ipdv_up.summary().max, 0.0);
}

#[test]
fn no_clock_assumption_no_one_way_delay_but_ipdv() {
    let mut c = far_cfg();
    c.clock = ClockSync::None;
    let mut path = Path::new(30 * MS, 10 * MS);
    let (s, _, _) = run(&mut path, c);
    let d = &s.totals().dir;
    assert!(d.owd_up.is_empty() && d.owd_down.is_empty());
    assert_eq!(d.ipdv_up.count(), 999);
}

#[test]
fn clocks_that_are_not_one_read_negative_and_say_so() {
    let mut s = Session::new(far_cfg());
    let mut path = Path::new(30 * MS, 10 * MS);
    // The far end's clock is 50 ms behind ours: up reads -20 ms.
    path.far.wall = WALL - 50 * MS_I;
    run_path(&mut s, &mut path, WALL);
    let d = &s.totals().dir;
    assert_eq!(d.owd_negative, 1000);
    assert!(d.owd_min_ns.unwrap() <= -19 * MS_I);
    assert_eq!(d.ipdv_up.summary().max, 0.0, "IPDV needs no sync");
}

#[test]
fn jitter_on_one_direction_shows_on_that_direction_only() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| Fate {
        extra_delay: (seq * 7919 % 11) * 100_000,
        ..Fate::default()
    });
    let (s, _, _) = run(&mut path, far_cfg());
    let d = &s.totals().dir;
    assert!(d.ipdv_up.summary().p50 > 0.1, "{:?}", d.ipdv_up.summary());
    assert_eq!(d.ipdv_down.summary().max, 0.0);
}

#[test]
fn loss_is_placed_in_the_interval_it_was_sent_in() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| drop_if((150..160).contains(&seq)));
    path.down = Box::new(|seq, _| drop_if((520..530).contains(&seq)));
    let (s, iv, _) = run(&mut path, far_cfg());
    let by = |k: usize| (iv[k].packets.lost, iv[k].lost_up, iv[k].lost_down);
    assert_eq!(by(1), (10, 10, 0));
    assert_eq!(by(5), (10, 0, 10));
    assert_eq!(s.totals().packets.lost, 20);
    check_split(s.totals(), &iv);
}

#[test]
fn an_outage_longer_than_the_loss_timeout_is_settled_in_the_totals() {
    let mut c = far_cfg();
    c.count = Some(3000);
    let mut path = Path::new(5 * MS, 5 * MS);
    // Up dead for 1.5 s, then down dead for 0.5 s.
    path.up = Box::new(|seq| drop_if((500..2000).contains(&seq)));
    path.down = Box::new(|seq, _| drop_if((2000..2500).contains(&seq)));
    let (s, iv, _) = run(&mut path, c);
    let t = s.totals();
    assert_eq!(
        (t.dir.lost_up, t.dir.lost_down, t.dir.flows.exact),
        (1500, 500, 1)
    );
    // Intervals that closed inside the outage say loss, direction unknown.
    let placed: u64 = iv.iter().map(|i| i.lost_up + i.lost_down).sum();
    assert!(placed < 2000);
    check_split(t, &iv);
}

#[test]
fn an_older_responder_reads_round_trips_only_and_is_not_asked() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| drop_if(seq % 100 == 1));
    path.far.old = true;
    let (s, iv, _) = run(&mut path, far_cfg());
    let t = s.totals();
    assert_eq!(
        (t.packets.lost, t.dir.flows.reflected, t.dir.unplaced),
        (10, 0, 10)
    );
    assert_eq!(path.far.queries, 0);
    check_split(t, &iv);
}

#[test]
fn a_forgotten_flow_is_inexact() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| drop_if(seq == 999));
    path.far.forgot = true;
    let (s, _, _) = run(&mut path, far_cfg());
    let d = &s.totals().dir;
    assert_eq!((d.flows.exact, d.flows.unknown_flow, d.unplaced), (0, 1, 1));
}

#[test]
fn progress_takes_add_up_with_refusals() {
    let mut s = Session::new(far_cfg());
    let mut path = Path::new(5 * MS, 5 * MS);
    path.far.refuse = Box::new(|seq, _| (seq % 3 == 0).then_some(BUDGET));
    path.up = Box::new(|seq| drop_if(seq % 50 == 1));
    run_path(&mut s, &mut path, WALL);
    let p = s.take_progress();
    let t = s.totals();
    assert_eq!(
        (p.resolved, p.lost, p.refused),
        (t.packets.sent, t.packets.lost, t.refused)
    );
    let refused = (0..1000u64).filter(|q| q % 3 == 0 && q % 50 != 1).count() as u64;
    assert_eq!((t.refused, t.dir.lost_up), (refused, 20));
}

#[test]
fn under_token_the_query_is_sealed_and_only_a_sealed_report_counts() {
    use npt_wire::auth::{is_sealed, Dir, SessionKey};
    use npt_wire::frame::{self, Header, Kind};
    use npt_wire::reflect::{self, FlowReport, Stamps};
    let key = SessionKey::from_bytes(&[7; 32]);
    let mut c = far_cfg();
    c.count = Some(1);
    let mut s = Session::new(c);
    s.set_auth(key.clone());
    let mut buf = vec![0u8; 2048];
    let n = s.poll_transmit(0, &mut buf).unwrap();
    key.open(Dir::ToServer, &buf[..n]).unwrap();
    let mut reply = buf[..n].to_vec();
    frame::set_kind_status(&mut reply, Kind::EchoReply, 0);
    let h = Header::decode(&reply).unwrap();
    assert!(reflect::wants_reflect(&h));
    reflect::write_reply(&mut reply, &h, 1, &Stamps::default()).unwrap();
    key.seal(Dir::ToClient, &mut reply).unwrap();
    assert!(matches!(
        s.handle_arrival(MS, &reply),
        Arrival::OnTime { .. }
    ));
    assert_eq!(
        s.poll_transmit(2 * MS, &mut buf),
        None,
        "count reached: drain"
    );
    let q = s.poll_transmit(2 * MS, &mut buf).expect("the flow query");
    assert_eq!(q, reflect::FLOW_QUERY_LEN);
    assert!(is_sealed(&buf[..q]));
    key.open(Dir::ToServer, &buf[..q]).unwrap();
    let qh = Header::decode(&buf[..q]).unwrap();
    assert_eq!(
        qh.seq, 1,
        "past the packets' numbers (a server's replay window)"
    );
    let mut report = buf[..q].to_vec();
    let rep = FlowReport {
        received: 1,
        ..FlowReport::default()
    };
    reflect::write_report(&mut report, &qh, Some(&rep)).unwrap();
    s.handle_arrival(3 * MS, &report);
    assert!(!s.is_done(), "an unsealed report is not the far end's word");
    assert_eq!(s.totals().foreign, 1);
    key.seal(Dir::ToClient, &mut report).unwrap();
    s.handle_arrival(3 * MS, &report);
    assert!(s.is_done());
    assert_eq!(s.totals().dir.flows.exact, 1);
}

/// A far end that lies: random receive and refused counts (wrapping, falling, far ahead),
/// random stamps, notices for packets never sent, reports that cannot add up, duplicates of
/// everything. The session must not panic, must keep `received + lost + refused == sent`, and
/// may call the split exact only when the counts fit.
#[test]
#[allow(clippy::cast_possible_truncation)] // random draws below the bounds they are cast to
fn a_lying_far_end_never_breaks_the_counts() {
    use npt_wire::frame::{self, status, Header, Kind, HEADER_LEN};
    use npt_wire::reflect::{self, FlowReport, Stamps};
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n.max(1)
    };
    for round in 0..40 {
        let mut c = far_cfg();
        c.count = Some(300);
        c.loss_timeout = 50 * MS;
        let mut s = Session::new(c);
        let mut buf = vec![0u8; 2048];
        let mut now = 0u64;
        let mut sent: Vec<Vec<u8>> = Vec::new();
        for _ in 0..100_000 {
            while let Some(n) = s.poll_transmit(now, &mut buf) {
                sent.push(buf[..n].to_vec());
            }
            // Answer a random earlier frame, a notice, a report, or nothing.
            if let Some(req) = sent.get(rnd(sent.len() as u64 + 3) as usize).cloned() {
                let h = Header::decode(&req).unwrap();
                match rnd(6) {
                    0 if h.kind == Kind::FlowQuery => {
                        let mut out = req.clone();
                        let r = FlowReport {
                            received: rnd(1000),
                            refused: rnd(400),
                            duplicated: rnd(50),
                            reordered: rnd(50),
                        };
                        reflect::write_report(&mut out, &h, (rnd(4) > 0).then_some(&r)).unwrap();
                        s.handle_reply(now, &out);
                    }
                    1 => {
                        let mut out = [0u8; HEADER_LEN];
                        let why = [status::BUDGET, status::TOKEN_REQUIRED, 99][rnd(3) as usize];
                        let count = (rnd(2) == 0).then(|| rnd(u64::from(u32::MAX)) as u32);
                        if reflect::write_notice(&req, why, count, &mut out).is_some() {
                            s.handle_reply(now, &out);
                        }
                    }
                    _ if h.kind == Kind::Echo => {
                        let mut out = req.clone();
                        frame::set_kind_status(&mut out, Kind::EchoReply, 0);
                        let rh = Header::decode(&out).unwrap();
                        let stamps = Stamps {
                            rx_wall_ns: rnd(u64::MAX),
                            dwell_ns: rnd(u64::from(u32::MAX)) as u32,
                            refused: rnd(u64::from(u32::MAX)) as u32,
                        };
                        let rx = rnd(u64::from(u32::MAX)) as u32;
                        reflect::write_reply(&mut out, &rh, rx, &stamps).unwrap();
                        for _ in 0..=rnd(2) {
                            s.handle_reply(now, &out);
                        }
                    }
                    _ => {}
                }
            }
            s.handle_timeout(now);
            while s.poll_interval().is_some() {}
            if s.is_done() {
                break;
            }
            now += rnd(3 * MS) + 1;
        }
        assert!(s.is_done(), "round {round}");
        let t = s.totals();
        assert_eq!(
            t.packets.received + t.packets.lost + t.refused,
            t.packets.sent,
            "round {round}"
        );
        let d = &t.dir;
        assert_eq!(
            d.lost_up + d.lost_down + d.unplaced,
            t.packets.lost,
            "round {round}: every path loss placed once"
        );
        assert!(d.flows.exact + d.flows.disagree <= d.flows.reflected);
    }
}
