//! The kept parts' scrape against the registry's render of the same monitor: the code that
//! built every series into one snapshot and encoded it through `prometheus-client`, kept here
//! as the reference ([`snapshot`], [`fresh`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use npt_stats::Snapshot;

use super::*;
use crate::kinds::{Figures, Kind};
use crate::round::{Round, Status};
use crate::store::AlertRow;
use npt_result::marking::{Fate, Tos, Way};

/// What a scrape showed before the kept parts: every series built into one snapshot.
fn snapshot(live: &Live) -> Snapshot {
    let mut s = Snapshot::new();
    let v = live.vantage.as_str();
    for t in live.targets() {
        let kind = t.kind.name();
        let l = [("vantage", v), ("target", t.name.as_str()), ("kind", kind)];
        for (status, n) in &t.rounds {
            let mut ls = l.to_vec();
            ls.push(("status", status.name()));
            s.counter(
                "npt_monitor_rounds_total",
                "Rounds of the target, by how they ended (ok, no_answer, refused, error, timeout, skipped, budget).",
                &ls,
                *n,
            );
        }
        s.merge(&t.latency.labelled(&l));
        s.counter(
            "npt_monitor_sent_total",
            "Attempts, packets or requests the target's rounds sent.",
            &l,
            t.sent,
        );
        s.counter(
            "npt_monitor_lost_total",
            "Of those, the ones without a (good) answer that the server did not refuse.",
            &l,
            t.lost,
        );
        s.counter(
            "npt_monitor_refused_total",
            "Of those, the ones the server said it refused (its budget or token): not loss.",
            &l,
            t.refused,
        );
        s.counter(
            "npt_monitor_errors_total",
            "Errors the target's rounds counted (every kind).",
            &l,
            t.errors,
        );
        s.gauge(
            "npt_monitor_up",
            "1 if the target's last round got an answer, 0 if not (no answer, error, timeout).",
            &l,
            match &t.last {
                Some(x) if x.status.measured() && x.figures.count > 0 => 1.0,
                Some(x) if x.figures.goodput_bps.is_some_and(|g| g > 0.0) => 1.0,
                _ => 0.0,
            },
        );
        let Some(last) = t.last.as_ref().filter(|x| x.status.measured()) else {
            continue;
        };
        let f = &last.figures;
        s.gauge(
            "npt_monitor_last_round_timestamp_seconds",
            "When the target's last round that measured started (Unix time).",
            &l,
            last.start_ms as f64 / 1e3,
        );
        if f.count > 0 {
            // A gauge per percentile, not one with a `quantile` label: that label belongs to
            // summaries (promtool refuses it elsewhere), and these are no summary — exact
            // figures of the last round only, with no sum or count over time.
            for (name, help, ms) in [
                (
                    "npt_monitor_last_p50_seconds",
                    "The last round's headline latency, its median (exact, from its histogram).",
                    f.p50_ms,
                ),
                (
                    "npt_monitor_last_p90_seconds",
                    "The last round's headline latency, its 90th percentile (exact).",
                    f.p90_ms,
                ),
                (
                    "npt_monitor_last_p99_seconds",
                    "The last round's headline latency, its 99th percentile (exact).",
                    f.p99_ms,
                ),
            ] {
                s.gauge(name, help, &l, ms / 1e3);
            }
        }
        if let Some(loss) = f.loss_pct() {
            s.gauge(
                "npt_monitor_last_loss_ratio",
                "The last round's loss: lost / (sent - refused).",
                &l,
                loss / 100.0,
            );
        }
        if let Some(rpm) = f.rpm {
            s.gauge(
                "npt_monitor_last_rpm",
                "The last round's responsiveness under load (round trips per minute).",
                &l,
                rpm,
            );
        }
        if let Some(g) = f.goodput_bps {
            s.gauge(
                "npt_monitor_last_goodput_bps",
                "The last round's goodput, both ways (bits/s).",
                &l,
                g,
            );
        }
        for (direction, w) in f.marking() {
            let Some(w) = w else { continue };
            let mut ls = l.to_vec();
            ls.push(("direction", direction));
            if let Some(ok) = crate::kinds::marking::as_sent(w) {
                s.gauge(
                    "npt_monitor_last_marking_arrived",
                    "1 if the last marked probe round's DSCP and ECN arrived as sent, 0 if bleached, rewritten or mixed, by direction (where the far end said).",
                    &ls,
                    if ok { 1.0 } else { 0.0 },
                );
            }
            if let Some(pct) = crate::kinds::marking::ce_pct(w) {
                s.gauge(
                    "npt_monitor_last_ce_ratio",
                    "The last marked probe round's share of packets that arrived marked CE, by direction (sent ECN-capable).",
                    &ls,
                    pct / 100.0,
                );
            }
        }
        for (direction, size) in [("up", f.mtu_up_bytes), ("down", f.mtu_down_bytes)] {
            if let Some(b) = size {
                let mut ls = l.to_vec();
                ls.push(("direction", direction));
                s.gauge(
                    "npt_monitor_last_mtu_bytes",
                    "The last mtu round's largest datagram that crossed, by direction (bytes of UDP payload).",
                    &ls,
                    b,
                );
            }
        }
    }
    s.merge(&globals(live));
    s
}

/// The registry's text of [`snapshot`].
fn fresh(live: &Live) -> String {
    let snap = snapshot(live);
    let source: npt_metrics::Source = Arc::new(move |s: &mut Snapshot| s.merge(&snap));
    npt_metrics::encode(&source)
}

fn plan(name: &str, kind: Kind) -> crate::config::TargetPlan {
    crate::config::TargetPlan {
        name: name.into(),
        kind,
        url: "udp://h:1".into(),
        every: std::time::Duration::from_secs(1),
        jitter: std::time::Duration::ZERO,
        timeout: None,
        group: None,
        budget: None,
        argv: vec![],
        length: None,
        own_length: false,
        index: 0,
        key: String::new(),
    }
}

#[test]
fn a_scrape_shows_every_family_it_names_and_no_other() {
    let live = Live::new("v", 0, Arc::default(), Arc::default());
    live.set_targets(&[plan("loaded", Kind::Probe), plan("tunnel", Kind::Mtu)]);
    let mut r = Round::empty("loaded", Kind::Probe, 1, Status::Ok, None);
    r.figures = Figures {
        count: 10,
        sent: 10,
        p50_ms: 20.0,
        rpm: Some(600.0),
        goodput_bps: Some(1e7),
        ..marked(Fate::Bleached, 3)
    };
    let mut h = npt_stats::Histogram::new();
    h.record(20_000_000);
    live.on_round(&r, Some(&h));
    let mut r = Round::empty("tunnel", Kind::Mtu, 1, Status::Ok, None);
    r.figures = Figures {
        mtu_up_bytes: Some(1372.0),
        mtu_down_bytes: Some(1472.0),
        ..Figures::default()
    };
    live.on_round(&r, None);
    live.set_alerts(vec![AlertRow {
        target: "loaded".into(),
        rule: "r".into(),
        firing: true,
        since_ms: 0,
        streak: 0,
        value: None,
    }]);
    let s = snapshot(&live);
    let names: Vec<&str> = s.families().map(|(n, _)| n).collect();
    let mut want = NAMES.to_vec();
    want.sort_unstable();
    assert_eq!(names, want);
    let text = scrape(&live);
    assert!(
        text.contains("npt_monitor_last_rpm{vantage=\"v\",target=\"loaded\",kind=\"probe\"} 600.0"),
        "{text}"
    );
    assert!(
        text.contains(
            "npt_monitor_last_p50_seconds{vantage=\"v\",target=\"loaded\",kind=\"probe\"} 0.02\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "npt_monitor_last_mtu_bytes{vantage=\"v\",target=\"tunnel\",kind=\"mtu\",direction=\"up\"} 1372.0"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "npt_monitor_last_marking_arrived{vantage=\"v\",target=\"loaded\",kind=\"probe\",direction=\"up\"} 0.0\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "npt_monitor_last_ce_ratio{vantage=\"v\",target=\"loaded\",kind=\"probe\",direction=\"up\"} 0.15\n"
        ),
        "{text}"
    );
    assert_eq!(
        text,
        fresh(&live),
        "kept parts, with an mtu round's sizes and a probe's marking"
    );
    assert!(
        !text.contains("quantile="),
        "only summaries carry it: {text}"
    );
    assert!(text.ends_with("# EOF\n"));
}

/// A probe round's figures with a marking each way: DSCP 46 and ECT(0) sent, up `fate`
/// (arrived, or bleached to 0) with `ce` of 20 packets marked CE, down arrived.
fn marked(up: Fate, ce: u64) -> Figures {
    let ef0 = Some(Tos { dscp: 46, ecn: 2 });
    let way = |dscp: Fate, ce: u64| Way {
        sent: ef0,
        arrived: Some(Tos {
            dscp: if dscp == Fate::Arrived { 46 } else { 0 },
            ecn: 2,
        }),
        dscp,
        ecn: Fate::Arrived,
        packets: 20,
        ce,
    };
    Figures {
        marking_up: Some(way(up, ce)),
        marking_down: Some(way(Fate::Arrived, 0)),
        ..Figures::default()
    }
}

/// A round of `target` ending `status`, with `figures` and a headline of `samples_us`.
fn round(
    live: &Live,
    target: &str,
    kind: Kind,
    status: Status,
    figures: Figures,
    samples_us: &[u64],
) {
    let mut r = Round::empty(target, kind, 1_764_400_000_123, status, None);
    r.start_ms += 7;
    r.lateness_ns = 1_500_000 + 10_000 * samples_us.len() as u64;
    r.figures = figures;
    let mut h = npt_stats::Histogram::new();
    for us in samples_us {
        h.record(us * 1000);
    }
    live.on_round(&r, (!samples_us.is_empty()).then_some(&h));
}

#[test]
fn kept_parts_scrape_as_a_fresh_render_after_rounds_of_every_kind_and_status() {
    let live = Live::new("hk-1", 0, Arc::default(), Arc::default());
    let targets = [
        ("a-ping", Kind::Ping),
        ("a", Kind::Ping),
        ("a0", Kind::Probe),
        ("ef", Kind::Probe),
        ("bulk", Kind::Bulk),
        ("web", Kind::Http),
        ("chain", Kind::Trace),
        ("idle", Kind::Lifetime),
        ("tunnel", Kind::Mtu),
        ("layers", Kind::Setup),
    ];
    let plans: Vec<_> = targets.iter().map(|(n, k)| plan(n, *k)).collect();
    live.set_targets(&plans);
    let same = |step: &str| assert_eq!(scrape(&live), fresh(&live), "after {step}");
    same("the start (no round yet)");
    let ok = |count, sent, p50_ms| Figures {
        count,
        sent,
        p50_ms,
        p90_ms: p50_ms * 1.5,
        p99_ms: p50_ms * 3.25,
        ..Figures::default()
    };
    round(
        &live,
        "a-ping",
        Kind::Ping,
        Status::Ok,
        ok(5, 5, 0.12),
        &[90, 120, 130, 400, 2_600],
    );
    same("an answered ping");
    let lost = Figures {
        sent: 5,
        lost: 5,
        ..Figures::default()
    };
    round(&live, "a-ping", Kind::Ping, Status::NoAnswer, lost, &[]);
    round(
        &live,
        "a",
        Kind::Ping,
        Status::Skipped,
        Figures::default(),
        &[],
    );
    same("a ping without an answer and a skipped one");
    let refused = Figures {
        sent: 5,
        refused: 5,
        ..Figures::default()
    };
    round(&live, "a", Kind::Ping, Status::Refused, refused, &[]);
    let loaded = Figures {
        lost: 3,
        rpm: Some(612.5),
        goodput_bps: Some(93_456_789.25),
        ..ok(497, 500, 21.375)
    };
    let samples: Vec<u64> = (0..497).map(|i| 20_000 + 37 * i).collect();
    round(&live, "a0", Kind::Probe, Status::Ok, loaded, &samples);
    same("a refused ping and a loaded probe");
    let with = |m: Figures| Figures {
        marking_up: m.marking_up,
        marking_down: m.marking_down,
        ..ok(20, 20, 0.3)
    };
    let ef = [300; 20];
    round(
        &live,
        "ef",
        Kind::Probe,
        Status::Ok,
        with(marked(Fate::Bleached, 0)),
        &ef,
    );
    same("a probe whose marking was bleached up");
    let mut unknown = marked(Fate::Arrived, 7);
    if let Some(w) = unknown.marking_up.as_mut() {
        (w.dscp, w.ecn, w.packets, w.ce) = (Fate::Unknown, Fate::Unknown, 0, 0);
    }
    round(&live, "ef", Kind::Probe, Status::Ok, with(unknown), &ef);
    same("a probe whose far end did not say up");
    let bulk = Figures {
        goodput_bps: Some(1e9),
        bytes: 1 << 30,
        ..Figures::default()
    };
    round(&live, "bulk", Kind::Bulk, Status::Ok, bulk, &[]);
    let failed = Figures {
        sent: 3,
        lost: 3,
        errors: 3,
        ..Figures::default()
    };
    round(&live, "web", Kind::Http, Status::Error, failed, &[]);
    round(
        &live,
        "web",
        Kind::Http,
        Status::Timeout,
        Figures::default(),
        &[],
    );
    round(
        &live,
        "chain",
        Kind::Trace,
        Status::Budget,
        Figures::default(),
        &[],
    );
    round(
        &live,
        "chain",
        Kind::Trace,
        Status::Ok,
        ok(12, 12, 48.0),
        &[48_000; 12],
    );
    round(
        &live,
        "tunnel",
        Kind::Mtu,
        Status::Ok,
        Figures {
            mtu_up_bytes: Some(1172.0),
            mtu_down_bytes: Some(1372.0),
            ..ok(3, 3, 0.4)
        },
        &[400; 3],
    );
    round(
        &live,
        "layers",
        Kind::Setup,
        Status::Ok,
        ok(5, 5, 50.5),
        &[50_500; 5],
    );
    same("bulk, http, trace, mtu and setup rounds, a budget held one back");
    live.set_alerts(vec![
        AlertRow {
            target: "web".into(),
            rule: "down".into(),
            firing: true,
            since_ms: 0,
            streak: 2,
            value: None,
        },
        AlertRow {
            target: "a-ping".into(),
            rule: "p99".into(),
            firing: false,
            since_ms: 0,
            streak: 0,
            value: Some(3.0),
        },
    ]);
    live.writer.stored.store(11, Ordering::Relaxed);
    live.writer.backlog.store(2, Ordering::Relaxed);
    live.notify.sent.store(1, Ordering::Relaxed);
    same("alerts and the store's counts");
    // Every family is in the comparison.
    let text = scrape(&live);
    for name in NAMES {
        let base = name.strip_suffix("_total").unwrap_or(name);
        assert!(text.contains(&format!("# TYPE {base} ")), "{name} shown");
    }
    // A reload: `web` removed (its figures stay), `a0` now a ping.
    let kept: Vec<_> = [
        ("a-ping", Kind::Ping),
        ("a", Kind::Ping),
        ("a0", Kind::Ping),
    ]
    .iter()
    .map(|(n, k)| plan(n, *k))
    .collect();
    live.set_targets(&kept);
    same("a reload");
    round(
        &live,
        "a0",
        Kind::Ping,
        Status::Ok,
        ok(4, 5, 0.5),
        &[500, 510, 520, 9_000_000],
    );
    round(
        &live,
        "a-ping",
        Kind::Ping,
        Status::Ok,
        ok(1, 1, 0.1),
        &[100],
    );
    same("rounds after the reload");
}
