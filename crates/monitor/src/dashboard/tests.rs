//! The dashboard's data: points from the level the range asks for, gaps where rounds are
//! missing, the state of each target now; and a page that carries it safely.

use std::sync::Arc;
use std::time::Duration;

use npt_result::stats::PingStats;

use super::*;
use crate::config::TargetPlan;
use crate::kinds::Kind;
use crate::kinds::KindStats;
use crate::round::Round;
use crate::store::memory::Memory;
use crate::store::RoundRow;

const T0: i64 = 1_700_006_400_000;

fn plan(name: &str, group: Option<&str>) -> TargetPlan {
    TargetPlan {
        name: name.into(),
        kind: Kind::Ping,
        url: "tcp://h:1".into(),
        every: Duration::from_secs(10),
        jitter: Duration::ZERO,
        timeout: None,
        group: group.map(str::to_string),
        budget: None,
        argv: vec![],
        length: None,
        own_length: false,
        index: 0,
        key: String::new(),
    }
}

fn live() -> Live {
    Live::new("hk-1", T0, Arc::default(), Arc::default())
}

#[test]
fn points_have_gaps_where_rounds_are_missing_and_lost_rounds_show_their_loss() {
    let mut st = Memory::new();
    let t = st.target_id("a <b>", Kind::Ping).unwrap();
    let mut rows = Vec::new();
    for i in 0..60i64 {
        if (20..30).contains(&i) {
            continue; // the monitor was down
        }
        let mut s = PingStats {
            sent: 5,
            received: if i == 40 { 0 } else { 5 },
            ..PingStats::default()
        };
        for _ in 0..s.received {
            s.rtt.record(20_000_000 + u64::try_from(i).unwrap() * 1000);
        }
        let k = KindStats::Ping(s);
        rows.push(RoundRow {
            target: t,
            due_ms: T0 + i * 10_000,
            start_ms: T0 + i * 10_000,
            end_ms: T0 + i * 10_000 + 1000,
            lateness_ns: 0,
            status: if i == 40 {
                Status::NoAnswer
            } else {
                Status::Ok
            },
            detail: None,
            figures: k.figures(),
            config: None,
            stats: None,
        });
    }
    st.put_rounds(&rows).unwrap();
    let lv = live();
    lv.set_targets(&[plan("a <b>", Some("g")), plan("c", Some("g"))]);
    let d = data(&mut st, &lv, Range::H1, &View::default(), T0 + 600_000).unwrap();
    let a = &d.targets[0];
    assert_eq!(a.name, "a <b>");
    assert_eq!(a.t.len(), 51, "50 rounds and one gap point");
    assert_eq!(a.p50.iter().filter(|v| v.is_some()).count(), 49);
    assert_eq!(a.median_points, 49);
    let gap =
        a.t.iter()
            .position(|&x| x == ((T0 + 200_000) as f64 / 1e3))
            .unwrap();
    assert_eq!((a.p50[gap], a.loss[gap]), (None, None), "the gap");
    let lost =
        a.t.iter()
            .position(|&x| x == ((T0 + 400_000) as f64 / 1e3))
            .unwrap();
    assert_eq!((a.p50[lost], a.loss[lost]), (None, Some(100.0)));
    assert_eq!(d.groups.len(), 1);
    assert_eq!(d.groups[0].targets, ["a <b>", "c"]);
    // The page carries the data in a script block no name can close.
    let html = String::from_utf8(page(&d)).unwrap();
    assert!(html.contains("a \\u003cb\\u003e"));
    assert!(!html.contains("a <b>"));
    assert!(html.contains("var uPlot"), "uPlot inlined");
    assert!(!html.contains("src=\"http"));
}

#[test]
fn a_day_reads_minutes_and_the_last_round_is_the_state_now() {
    let mut st = Memory::new();
    let t = st.target_id("x", Kind::Ping).unwrap();
    let rows: Vec<RoundRow> = (0..720)
        .map(|i| {
            let mut s = PingStats {
                sent: 2,
                received: 2,
                ..PingStats::default()
            };
            s.rtt.record(10_000_000);
            s.rtt.record(30_000_000);
            let k = KindStats::Ping(s);
            RoundRow {
                target: t,
                due_ms: T0 + i * 10_000,
                start_ms: T0 + i * 10_000,
                end_ms: T0 + i * 10_000 + 500,
                lateness_ns: 0,
                status: Status::Ok,
                detail: None,
                figures: k.figures(),
                config: None,
                stats: Some(k.encode()),
            }
        })
        .collect();
    st.put_rounds(&rows).unwrap();
    let end = T0 + 7_200_000;
    crate::rollup::roll(&mut st, Level::Minute, end - 600_000, T0).unwrap();
    assert_eq!(
        st.mark(&store::rolled(Level::Minute)).unwrap(),
        Some(end - 600_000)
    );
    let lv = live();
    lv.set_targets(&[plan("x", None)]);
    let mut r = Round::empty("x", Kind::Ping, end - 10_000, Status::Ok, None);
    r.figures = rows[719].figures.clone();
    lv.on_round(&r, None);
    let d = data(&mut st, &lv, Range::D1, &View::default(), end).unwrap();
    let x = &d.targets[0];
    // 110 minutes rolled up, then the last 10 minutes' 60 rounds.
    assert_eq!(x.t.len(), 110 + 60);
    assert_eq!(d.level, "minute");
    assert_eq!(x.status, Some("ok"));
    assert_eq!(x.loss_pct, Some(0.0));
    assert!((x.p50_ms.unwrap() - 10.0).abs() < 0.01);
    assert!(d.groups.is_empty());
}

/// A round of `name` that measured `p50`/`p99` ms with `lost` of 10 lost.
fn round(name: &str, status: Status, p50: f64, p99: f64, lost: u64) -> Round {
    let mut r = Round::empty(name, Kind::Ping, T0, status, None);
    r.figures.sent = 10;
    r.figures.lost = lost;
    r.figures.count = 10 - lost;
    r.figures.p50_ms = p50;
    r.figures.p99_ms = p99;
    r
}

#[test]
fn worst_first_ranks_firing_then_down_then_loss_then_slowdown_and_pages_on_the_server() {
    let lv = live();
    let mut plans: Vec<TargetPlan> = (0..45)
        .map(|i| {
            plan(
                &format!("t{i:02}"),
                Some(if i % 2 == 0 { "even" } else { "odd" }),
            )
        })
        .collect();
    plans.push(plan("relay-hk", None));
    lv.set_targets(&plans);
    for p in &plans {
        // Every target's usual median is 10 ms.
        lv.on_round(&round(&p.name, Status::Ok, 10.0, 12.0, 0), None);
    }
    lv.on_round(&round("t07", Status::Ok, 10.0, 200.0, 0), None); // a tail 20× the usual
    lv.on_round(&round("t03", Status::Ok, 10.0, 30.0, 0), None); // 3×
    lv.on_round(&round("t30", Status::Ok, 10.0, 12.0, 2), None); // 20 % loss
    lv.on_round(&round("t12", Status::NoAnswer, 0.0, 0.0, 10), None); // down
    lv.on_round(&round("t40", Status::Ok, 10.0, 12.0, 0), None);
    lv.set_alerts(vec![crate::store::AlertRow {
        target: "t40".into(),
        rule: "slow".into(),
        firing: true,
        since_ms: T0,
        streak: 3,
        value: Some(1.0),
    }]);
    let mut st = Memory::new();
    let names = |d: &Data| d.targets.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    let d = data(&mut st, &lv, Range::H1, &View::default(), T0).unwrap();
    assert_eq!(
        (d.total, d.matched, d.page, d.pages, d.per),
        (46, 46, 1, 3, 20)
    );
    assert_eq!(names(&d)[..5], ["t40", "t12", "t30", "t07", "t03"]);
    assert_eq!(d.targets[0].firing, ["slow"]);
    assert_eq!(d.down, 1);
    assert_eq!(d.all_groups, ["even", "odd"]);
    // The last page holds what is left; a page past it reads as the last.
    let v = View::parse(|k| (k == "page").then(|| "9".to_string())).unwrap();
    let d = data(&mut st, &lv, Range::H1, &v, T0).unwrap();
    assert_eq!((d.page, d.targets.len()), (3, 6));
    // Search (any case, name or URL or group) and group filter, then paging of what matched.
    let q = |pairs: &'static [(&'static str, &'static str)]| {
        View::parse(|k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
        .unwrap()
    };
    let d = data(&mut st, &lv, Range::H1, &q(&[("q", "RELAY")]), T0).unwrap();
    assert_eq!(names(&d), ["relay-hk"]);
    let d = data(
        &mut st,
        &lv,
        Range::H1,
        &q(&[("group", "odd"), ("per", "5")]),
        T0,
    )
    .unwrap();
    assert_eq!((d.matched, d.pages), (22, 5));
    assert_eq!(names(&d), ["t07", "t03", "t01", "t05", "t09"]);
    let d = data(
        &mut st,
        &lv,
        Range::H1,
        &q(&[("sort", "name"), ("per", "2")]),
        T0,
    )
    .unwrap();
    assert_eq!(names(&d), ["relay-hk", "t00"]);
    // Bad parameters are named.
    for (k, v) in [("page", "0"), ("per", "51"), ("sort", "best")] {
        let e = View::parse(|x| (x == k).then(|| v.to_string())).unwrap_err();
        assert!(e.starts_with(k), "{e}");
    }
}

/// A marked probe's last round says each way in words, as the report does; a target without
/// a marking says nothing of it (and the page draws no markings table for it).
#[test]
fn a_marked_probe_says_each_way_in_words() {
    use npt_result::marking::{Fate, Tos, Way};
    let mut st = Memory::new();
    let lv = live();
    let probe = TargetPlan {
        kind: Kind::Probe,
        ..plan("ef", None)
    };
    lv.set_targets(&[probe, plan("plain", None)]);
    let ef = Some(Tos { dscp: 46, ecn: 0 });
    let way = |dscp: Fate, to: u8| Way {
        sent: ef,
        arrived: Some(Tos { dscp: to, ecn: 0 }),
        dscp,
        ecn: Fate::Arrived,
        packets: 200,
        ce: 0,
    };
    let mut r = Round::empty("ef", Kind::Probe, T0, Status::Ok, None);
    r.figures.marking_up = Some(way(Fate::Bleached, 0));
    r.figures.marking_down = Some(way(Fate::Arrived, 46));
    lv.on_round(&r, None);
    lv.on_round(&round("plain", Status::Ok, 1.0, 2.0, 0), None);
    let d = data(&mut st, &lv, Range::H1, &View::default(), T0 + 60_000).unwrap();
    let by = |n: &str| d.targets.iter().find(|t| t.name == n).unwrap();
    assert_eq!(
        by("ef").marking_up.as_deref(),
        Some("DSCP 46 (EF) bleached to 0, ECN Not-ECT arrived (CE 0 of 200)")
    );
    assert_eq!(
        by("ef").marking_down.as_deref(),
        Some("DSCP 46 (EF) arrived, ECN Not-ECT arrived (CE 0 of 200)")
    );
    assert_eq!(by("plain").marking_up, None);
    let json = serde_json::to_value(by("plain")).unwrap();
    assert!(json.get("marking_up").is_none(), "{json}");
}
