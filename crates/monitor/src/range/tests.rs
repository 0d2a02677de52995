//! A range reads back as one document of its kind: counts and the histogram are exactly the
//! sum of its rounds however the range is covered (rounds only, or rollups and rounds), a
//! pruned level moves the start to what is kept, and a probe's rows become its intervals.

use npt_result::stats::{PingMeta, PingStats, ProbeMeta, ProbeStats};
use npt_stats::Histogram;

use super::*;
use crate::kinds::Kind;
use crate::rollup::roll_all;
use crate::round::Status;
use crate::store::memory::Memory;
use crate::store::RoundRow;

const T0: i64 = 1_700_006_400_000; // 2023-11-15T00:00:00Z, a midnight

fn ping_round(i: i64) -> KindStats {
    let mut s = PingStats::default();
    for k in 0..4 {
        s.sent += 1;
        if (i + k) % 17 != 0 {
            s.received += 1;
            s.rtt
                .record(u64::try_from(10_000_000 + (i * 7919 + k * 104_729) % 20_000_000).unwrap());
        }
    }
    KindStats::Ping(s)
}

/// `n` ping rounds `step` ms apart from midnight.
fn store_pings(st: &mut dyn Store, n: i64, step: i64) -> i64 {
    store_pings_at(st, 0, n, step)
}

/// Ping rounds `first..first + n` (each its own samples), `step` ms apart from midnight.
fn store_pings_at(st: &mut dyn Store, first: i64, n: i64, step: i64) -> i64 {
    let t = st.target_id("direct", Kind::Ping).unwrap();
    let meta = KindMeta::Ping(PingMeta {
        target: "tcp://10.0.1.2:7777".into(),
        proto: "tcp".into(),
        addresses: vec!["10.0.1.2:7777".into()],
        measured_from: None,
        answered_by: None,
        setup: None,
    });
    let c = st
        .config_id(t, &serde_json::to_string(&meta).unwrap(), "{\"count\":4}")
        .unwrap();
    let rows: Vec<RoundRow> = (first..first + n)
        .map(|i| {
            let s = ping_round(i);
            let at = T0 + (i - first) * step;
            RoundRow {
                target: t,
                due_ms: at,
                start_ms: at + 5,
                end_ms: at + 900,
                lateness_ns: 5_000_000,
                status: Status::Ok,
                detail: None,
                figures: s.figures(),
                config: Some(c),
                stats: Some(s.encode()),
            }
        })
        .collect();
    st.put_rounds(&rows).unwrap();
    t
}

fn sum(n: i64) -> PingStats {
    let mut s = PingStats::default();
    for i in 0..n {
        if let KindStats::Ping(p) = ping_round(i) {
            s += &p;
        }
    }
    s
}

#[test]
fn a_day_reads_back_exactly_whether_rolled_up_or_not() {
    // 26 hours of rounds every 5 minutes: a whole day, and the start of the next.
    let n = 26 * 12;
    let mut plain = Memory::new();
    store_pings(&mut plain, n, 300_000);
    let mut rolled = Memory::new();
    store_pings(&mut rolled, n, 300_000);
    let end = T0 + n * 300_000;
    roll_all(&mut rolled, end, T0).unwrap();
    assert_eq!(
        rolled.mark(&store::rolled(Level::Day)).unwrap(),
        Some(T0 + 86_400_000)
    );
    let want = sum(n);
    for st in [&plain as &dyn Store, &rolled] {
        let doc = report(st, "direct", T0 - 3_600_000, end + 60_000).unwrap();
        assert_eq!(doc.kind, "ping");
        let AnyBody::Ping(b) = &doc.body else {
            panic!("a ping")
        };
        assert_eq!(
            (b.summary.sent, b.summary.received),
            (want.sent, want.received)
        );
        let h = Histogram::from_serialized(&b.histogram).unwrap();
        assert!(
            h == want.rtt,
            "the range's histogram is the sum of its rounds'"
        );
        assert_eq!(doc.config["monitor"]["rounds"], n);
        assert_eq!(doc.config["round"]["count"], 4);
    }
    // Whole days or rounds, the document spans its first round's start to its last round's end.
    for st in [&plain as &dyn Store, &rolled] {
        let doc = report(st, "direct", T0, end).unwrap();
        assert_eq!(
            doc.started_at, "2023-11-15T00:00:00.005Z",
            "the first round's start"
        );
        assert_eq!(
            doc.ended_at, "2023-11-16T01:55:00.900Z",
            "the last round's end"
        );
    }
    let doc = report(&rolled, "direct", T0, end).unwrap();
    let levels: Vec<&str> = doc.config["monitor"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["day", "hour"], "{levels:?}");
    // A range that starts and ends mid-hour reads minutes and rounds at its edges.
    let doc = report(&rolled, "direct", T0 + 2_000_000, end - 1_000_000).unwrap();
    let levels: Vec<&str> = doc.config["monitor"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["level"].as_str().unwrap())
        .collect();
    assert_eq!(
        levels,
        ["round", "minute", "hour", "minute", "round"],
        "{levels:?}"
    );
    // A part of it: the second hour only, from the hour rollup.
    let doc = report(&rolled, "direct", T0 + 3_600_000, T0 + 7_200_000).unwrap();
    let AnyBody::Ping(b) = &doc.body else {
        panic!()
    };
    let mut hour = PingStats::default();
    for i in 12..24 {
        if let KindStats::Ping(p) = ping_round(i) {
            hour += &p;
        }
    }
    assert_eq!(b.summary.sent, hour.sent);
    assert!(Histogram::from_serialized(&b.histogram).unwrap() == hour.rtt);
}

#[test]
fn a_pruned_level_moves_the_start_to_what_is_kept() {
    let mut st = Memory::new();
    store_pings(&mut st, 3 * 60, 60_000);
    let end = T0 + 3 * 3_600_000;
    roll_all(&mut st, end, T0).unwrap();
    // Rounds and minutes older than 1:30 are gone; hours are kept.
    st.prune(Level::Round, T0 + 5_400_000).unwrap();
    st.prune(Level::Minute, T0 + 5_400_000).unwrap();
    let doc = report(&st, "direct", T0 + 1_800_000, end).unwrap();
    assert_eq!(
        doc.config["monitor"]["from"], "2023-11-15T00:00:00.000Z",
        "the hour that holds 0:30"
    );
    let AnyBody::Ping(b) = &doc.body else {
        panic!()
    };
    assert_eq!(b.summary.sent, sum(3 * 60).sent);
}

#[test]
fn unknown_targets_and_empty_ranges_are_errors_that_say_so() {
    let mut st = Memory::new();
    store_pings(&mut st, 10, 10_000);
    let e = report(&st, "nope", T0, T0 + 1).unwrap_err().to_string();
    assert!(
        e.contains("no target \"nope\"") && e.contains("direct"),
        "{e}"
    );
    let e = report(&st, "direct", T0 - 10_000, T0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no round that measured"), "{e}");
}

#[test]
fn a_probe_range_has_an_interval_per_row_and_rates_over_its_time() {
    let mut st = Memory::new();
    let t = st.target_id("relay", Kind::Probe).unwrap();
    let meta = KindMeta::Probe(ProbeMeta {
        protocol: "udp".into(),
        target: "udp://10.0.2.2:7777".into(),
        mode: "rate".into(),
        open_loop: true,
        framing: "framed".into(),
        size: 64,
        loss_timeout_ms: 300.0,
    });
    let c = st
        .config_id(t, &serde_json::to_string(&meta).unwrap(), "{}")
        .unwrap();
    let rows: Vec<RoundRow> = (0..30)
        .map(|i| {
            let mut p = ProbeStats {
                clients: 1,
                packets: npt_stats::PacketCounts {
                    sent: 100,
                    received: 98,
                    lost: 2,
                    ..Default::default()
                },
                ..ProbeStats::default()
            };
            p.rates.pps = 200.0;
            p.rates.send_duration_s = 0.5;
            for k in 0..98 {
                p.histograms
                    .record(npt_result::probe::hist::RTT, 20_000_000 + k * 1000);
            }
            let s = KindStats::Probe(Box::new(p));
            RoundRow {
                target: t,
                due_ms: T0 + i * 1000,
                start_ms: T0 + i * 1000,
                end_ms: T0 + i * 1000 + 800,
                lateness_ns: 0,
                status: Status::Ok,
                detail: None,
                figures: s.figures(),
                config: Some(c),
                stats: Some(s.encode()),
            }
        })
        .collect();
    st.put_rounds(&rows).unwrap();
    let doc = report(&st, "relay", T0, T0 + 60_000).unwrap();
    let AnyBody::Probe(b) = &doc.body else {
        panic!()
    };
    assert_eq!((b.summary.packets.sent, b.summary.packets.lost), (3000, 60));
    assert!((b.summary.loss_pct - 2.0).abs() < 1e-9);
    assert_eq!(
        b.summary.pps, 200.0,
        "the rate over 15 s of sending, not 30 rounds' sum"
    );
    assert_eq!(b.summary.send_duration_s, 15.0);
    assert_eq!(b.intervals.len(), 30);
    assert_eq!(b.intervals[3].start_s, 3.0);
    assert_eq!(b.intervals[3].sent, Some(100));
    // It renders as any probe does.
    let (ctype, html) = render(&doc, "html", "relay").unwrap();
    assert!(ctype.starts_with("text/html"));
    assert!(String::from_utf8(html).unwrap().contains("npt-chart-0"));
    let (_, text) = render(&doc, "text", "relay").unwrap();
    assert!(String::from_utf8(text).unwrap().contains("sent 3000"));
}

/// Two vantages' stores of one target merge into the document of all their rounds: the counts
/// and the histogram are those of every round of both (whether rolled up or not), each store's
/// own figures are listed, and a target of another kind in one store is refused by name.
#[test]
fn stores_of_two_vantages_merge_into_every_round_of_both() {
    let (na, nb) = (200, 150);
    let mut a = Memory::new();
    store_pings_at(&mut a, 0, na, 300_000);
    a.set_meta("vantage", "hk").unwrap();
    roll_all(&mut a, T0 + 30 * 3_600_000, T0).unwrap();
    let mut b = Memory::new();
    store_pings_at(&mut b, 10_000, nb, 300_000);
    let sources = [
        fleet::Source {
            label: "hk.db".into(),
            store: &a,
        },
        fleet::Source {
            label: "fra.db".into(),
            store: &b,
        },
    ];
    let doc = fleet::report_many(&sources, "direct", T0, T0 + 2 * 86_400_000).unwrap();
    let mut all = PingStats::default();
    for i in (0..na).chain(10_000..10_000 + nb) {
        if let KindStats::Ping(p) = ping_round(i) {
            all += &p;
        }
    }
    let AnyBody::Ping(body) = &doc.body else {
        panic!("a ping document")
    };
    assert_eq!(body.summary.sent, all.sent);
    assert_eq!(body.summary.received, all.received);
    let h = Histogram::from_serialized(&body.histogram).unwrap();
    assert_eq!(
        h, all.rtt,
        "the merged histogram is every sample of both stores"
    );
    let m = &doc.config["monitor"];
    assert_eq!(m["rounds"], serde_json::json!(na + nb));
    let v = m["vantages"].as_array().unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0]["store"], "hk.db");
    assert_eq!(v[0]["vantage"], "hk");
    assert_eq!(v[0]["rounds"], serde_json::json!(na));
    assert_eq!(v[1]["rounds"], serde_json::json!(nb));
    assert_eq!(
        m["figures"]["p50_ms"].as_f64().unwrap(),
        KindStats::Ping(all.clone()).figures().p50_ms
    );
    // One store alone reads as before: no vantages block.
    let one = fleet::report_many(&sources[..1], "direct", T0, T0 + 2 * 86_400_000).unwrap();
    assert!(one.config["monitor"].get("vantages").is_none());

    let mut c = Memory::new();
    let t = c.target_id("direct", Kind::Probe).unwrap();
    assert!(t > 0);
    let err = fleet::report_many(
        &[
            fleet::Source {
                label: "hk.db".into(),
                store: &a,
            },
            fleet::Source {
                label: "probe.db".into(),
                store: &c,
            },
        ],
        "direct",
        T0,
        T0 + 86_400_000,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("probe.db"), "{err}");
}
