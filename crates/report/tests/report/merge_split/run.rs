//! A run's recorded samples: requests and errors by activity (and so by protocol), connects
//! and their phases, sessions, time to first byte, timer wakeups and game packets, in
//! intervals; per part its users, rates, gauges, transfers' throughput and health.

use std::collections::BTreeSet;

use npt_result::common::Directions;
use npt_result::interval::{Interval, IntervalAcc, Intervals};
use npt_result::run::hist;
use npt_result::stats::run::{ActivityCounts, GameTotals, ProtocolCounts};
use npt_result::stats::{RunMeta, RunStats, WeightedMean};
use npt_result::Health;
use npt_stats::JitterMean;
use rand::rngs::SmallRng;
use rand::Rng;

use super::{health, ns, rng, shape, under, Rule, Split};

const ACTIVITIES: [(&str, &str); 5] = [
    ("web", "tcp"),
    ("quic", "quic"),
    ("download", "tcp"),
    ("upload", "tcp"),
    ("game", "udp"),
];

pub fn rule(path: &[&str]) -> Rule {
    if under(path, &["activities", "game", "game", "jitter_ms"]) {
        Rule::Approx
    } else {
        Rule::Exact
    }
}

enum What {
    Request { up: u64, down: u64 },
    Error(&'static str),
    Connect { via: bool, extra: u64 },
    Session { done: bool },
    Wakeup,
    Game(GameTotals),
}

struct Sample {
    act: &'static str,
    proto: &'static str,
    ns: u64,
    what: What,
}

fn draw(r: &mut SmallRng) -> Sample {
    let (act, proto) = ACTIVITIES[r.gen_range(0..ACTIVITIES.len())];
    let what = match r.gen_range(0..9) {
        0..=3 => What::Request {
            up: r.gen_range(0..10_000),
            down: r.gen_range(0..100_000),
        },
        4 => What::Error(["reset", "timeout", "closed"][r.gen_range(0..3)]),
        5 => What::Connect {
            via: r.gen_bool(0.3),
            extra: r.gen_range(0..10_000),
        },
        6 => What::Session {
            done: r.gen_bool(0.7),
        },
        7 => What::Wakeup,
        _ => {
            let sent = r.gen_range(1..100);
            let lost = r.gen_range(0..=sent);
            let refused = r.gen_range(0..=sent - lost);
            What::Game(GameTotals {
                packets: npt_stats::PacketCounts {
                    sent,
                    received: sent - lost - refused,
                    lost,
                    late: r.gen_range(0..3),
                    duplicated: r.gen_range(0..3),
                    reordered: r.gen_range(0..3),
                },
                refused,
                jitter: JitterMean::from_value(r.gen_range(1e3..1e6), sent - lost - refused),
                jitter_inexact: false,
                loss_timeout_ms: 1000.0,
            })
        }
    };
    Sample {
        act,
        proto,
        ns: ns(r),
        what,
    }
}

fn activity<'a>(s: &'a mut RunStats, x: &Sample) -> &'a mut ActivityCounts {
    let a = s.activities.entry(x.act.into()).or_default();
    a.protocol = x.proto.into();
    a
}

/// What the collector counts of a sample.
fn record(s: &mut RunStats, x: &Sample) {
    match &x.what {
        What::Request { up, down } => {
            let b = Directions::bytes(*up, *down);
            s.requests += 1;
            s.errors.attempts += 1;
            s.bytes += &b;
            let c = s.protocols.entry(x.proto.into()).or_default();
            c.requests += 1;
            c.bytes += &b;
            let a = activity(s, x);
            a.requests += 1;
            a.bytes += &b;
            s.histograms
                .record(&hist::proto(x.proto, hist::LATENCY), x.ns);
            s.histograms
                .record(&hist::activity(x.act, hist::LATENCY), x.ns);
        }
        What::Error(kind) => {
            s.errors.attempts += 1;
            s.protocols.entry(x.proto.into()).or_default().errors += 1;
            activity(s, x).errors += 1;
            s.errors.by_kind.record(kind, || kind.to_string());
        }
        What::Connect { via, extra } => {
            s.protocols.entry(x.proto.into()).or_default().connections += 1;
            for (phase, v) in [
                (hist::CONNECT, x.ns),
                (hist::HANDSHAKE, x.ns + 1_000),
                (hist::FIRST_REQUEST, x.ns + extra),
            ] {
                s.histograms.record(&hist::proto(x.proto, phase), v);
            }
            if *via {
                s.histograms
                    .record(&hist::proto(x.proto, hist::PROXY), x.ns / 3);
            }
        }
        What::Session { done } => {
            s.sessions_started += 1;
            s.sessions_completed += u64::from(*done);
            activity(s, x).sessions += 1;
            if x.act == "download" || x.act == "upload" {
                s.histograms
                    .record(&hist::activity(x.act, hist::TTFB), x.ns);
            }
        }
        What::Wakeup => {
            let late = x.ns / 100;
            s.histograms.record(hist::TIMER_LATENESS, late);
            if late > 10_000_000 {
                *s.health.late_wakeups.get_or_insert(0) += 1;
            }
        }
        What::Game(g) => {
            let a = s.activities.entry("game".into()).or_default();
            a.protocol = "udp".into();
            match &mut a.game {
                Some(t) => *t += g,
                None => a.game = Some(g.clone()),
            }
        }
    }
}

fn record_iv(a: &mut IntervalAcc, x: &Sample) {
    match &x.what {
        What::Request { up, down } => {
            a.record_completed(x.ns);
            a.record_bytes(*up, *down);
        }
        What::Error(_) => a.errors += 1,
        _ => {}
    }
}

pub fn recorded(seed: u64) -> (Split<RunStats>, RunMeta) {
    let mut r = rng(seed);
    let (k, n) = shape(&mut r);
    let meta = RunMeta {
        model: "closed".into(),
        targets: vec!["tcp://127.0.0.1:7777".into()],
        quic_target: Some("127.0.0.1:7778".into()),
        mix: "web=3,quic=1,download=1,upload=1,game=1".into(),
        seed,
        ramp_up_s: 1.0,
        setup: Default::default(),
    };
    let m = r.gen_range(1..=4);
    let samples: Vec<(usize, usize, Sample)> = (0..n)
        .map(|_| (r.gen_range(0..k), r.gen_range(0..m), draw(&mut r)))
        .collect();
    let mut split = Split::<RunStats>::new(k);
    let mut gauges: Vec<Vec<(u64, u64)>> = Vec::new();
    for p in 0..k {
        let mine = || samples.iter().filter(move |(q, _, _)| *q == p);
        let protos: BTreeSet<&str> = mine()
            .filter(|(_, _, x)| {
                matches!(
                    x.what,
                    What::Request { .. } | What::Error(_) | What::Connect { .. }
                )
            })
            .map(|(_, _, x)| x.proto)
            .collect();
        let protocols = protos
            .into_iter()
            .map(|name| {
                let bps = Directions {
                    up: r.gen_range(0.0..1e9),
                    down: r.gen_range(0.0..1e9),
                };
                let c = ProtocolCounts {
                    throughput_bps: bps,
                    ..ProtocolCounts::default()
                };
                (name.to_string(), c)
            })
            .collect();
        // A transfer's throughput is weighted by the activity's requests in this part.
        let activities = ["download", "upload"]
            .into_iter()
            .filter_map(|act| {
                let requests = mine()
                    .filter(|(_, _, x)| x.act == act && matches!(x.what, What::Request { .. }))
                    .count();
                let t = WeightedMean::of(r.gen_range(1e3..1e9), requests as f64);
                let c = ActivityCounts {
                    transfer_bps: Some(t),
                    ..ActivityCounts::default()
                };
                (requests > 0).then(|| (act.to_string(), c))
            })
            .collect();
        let in_flight = r.gen_range(0..4);
        let mut agent = RunStats {
            users: r.gen_range(1..10),
            duration_s: r.gen_range(1.0..100.0),
            requests_per_s: r.gen_range(0.0..1e4),
            throughput_bps: Directions {
                up: r.gen_range(0.0..1e9),
                down: r.gen_range(0.0..1e9),
            },
            max_active_users: r.gen_range(0..100),
            max_active_connections: r.gen_range(0..100),
            arrivals_dropped: r.gen_range(0..3),
            in_flight_at_end: in_flight,
            oldest_in_flight_ms: r.gen_range(0.0..1e4),
            protocols,
            activities,
            health: Health {
                late_wakeups: Some(0),
                late_threshold_ms: Some(10.0),
                ..health(&mut r)
            },
            ..RunStats::default()
        };
        // Requests still in flight at the end were started: attempts.
        agent.errors.attempts = in_flight;
        split.agent(p, &agent);
        gauges.push(
            (0..m)
                .map(|_| (r.gen_range(0..50), r.gen_range(0..50)))
                .collect(),
        );
    }
    let mut accs: Vec<Vec<IntervalAcc>> = (0..=k)
        .map(|_| (0..m).map(|_| IntervalAcc::with_bytes()).collect())
        .collect();
    for (p, iv, x) in &samples {
        split.record(*p, |s| record(s, x));
        record_iv(&mut accs[*p][*iv], x);
        record_iv(&mut accs[k][*iv], x);
    }
    // The whole's gauges are the parts' added.
    gauges.push(
        (0..m)
            .map(|i| {
                gauges
                    .iter()
                    .fold((0, 0), |(u, c), g| (u + g[i].0, c + g[i].1))
            })
            .collect(),
    );
    for (p, accs) in accs.iter_mut().enumerate() {
        let recs: Vec<Interval> = accs
            .iter_mut()
            .enumerate()
            .map(|(i, a)| Interval {
                active_users: Some(gauges[p][i].0),
                active_connections: Some(gauges[p][i].1),
                ..a.close(i as u32, i as f64, i as f64 + 1.0, 1.0)
            })
            .collect();
        let target = if p < k {
            &mut split.parts[p]
        } else {
            &mut split.whole
        };
        target.intervals = Intervals::of(recs);
    }
    (split, meta)
}
