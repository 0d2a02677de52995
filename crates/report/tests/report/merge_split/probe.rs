//! A probe's recorded samples: replies, losses, late and duplicate replies, errors, flows'
//! jitter and (TCP) their connect and first packet, in intervals; per part its clients, send
//! rates, health and proxy handshakes.

use npt_result::common::Directions;
use npt_result::directions::FlowsSettled;
use npt_result::interval::{IntervalAcc, Intervals};
use npt_result::probe::hist;
use npt_result::stats::directions::DirStats;
use npt_result::stats::probe::{ProxyStats, SendRates};
use npt_result::stats::{ProbeMeta, ProbeStats};
use npt_stats::JitterMean;
use rand::rngs::SmallRng;
use rand::Rng;

use super::{health, ns, rng, shape, some_hist, under, Rule, Split};

pub fn rule(path: &[&str]) -> Rule {
    let mean = under(path, &["summary", "jitter_ms"])
        || under(path, &["intervals", "*", "jitter_ms"])
        || (under(path, &["summary", "proxy"]) && path.last().is_some_and(|s| s.ends_with("_ms")));
    if mean {
        Rule::Approx
    } else {
        Rule::Exact
    }
}

enum Sample {
    Reply {
        rtt: u64,
        ipdv: u64,
        wait: u64,
    },
    Lost,
    /// Refused by the server (a notice said why).
    Refused,
    /// A loss the server's counts placed up (true) or down.
    LostWay(bool),
    /// What the server saw of a reply: its dwell, the transit's variation and one-way delay
    /// each way.
    Far([u64; 5]),
    /// Late, duplicated, reordered, corrupt, foreign, stale.
    Other(u8),
    Error(&'static str),
    Flow {
        jitter: JitterMean,
        connect: u64,
        echo: Option<u64>,
    },
}

fn draw(r: &mut SmallRng) -> Sample {
    match r.gen_range(0..13) {
        10 => Sample::Refused,
        11 => Sample::LostWay(r.gen_bool(0.5)),
        12 => Sample::Far([ns(r), ns(r), ns(r), ns(r), ns(r)]),
        0..=4 => Sample::Reply {
            rtt: ns(r),
            ipdv: ns(r),
            wait: ns(r) / 100,
        },
        5 => Sample::Lost,
        6 => Sample::Other(r.gen_range(0..6)),
        7 => Sample::Error(["reset", "refused", "timeout"][r.gen_range(0..3)]),
        _ => Sample::Flow {
            jitter: JitterMean::from_value(r.gen_range(1e3..1e6), r.gen_range(1..200)),
            connect: ns(r),
            echo: r.gen_bool(0.8).then(|| ns(r)),
        },
    }
}

/// What the runner counts of a sample.
fn record(s: &mut ProbeStats, x: &Sample, m: &ProbeMeta) {
    match *x {
        Sample::Reply { rtt, ipdv, wait } => {
            s.packets.sent += 1;
            s.packets.received += 1;
            s.errors.attempts += 1;
            s.bytes += &Directions::bytes(64, 64);
            s.histograms.record(hist::RTT, rtt);
            s.histograms.record(hist::IPDV, ipdv);
            if m.open_loop {
                s.histograms.record(hist::RTT_CORRECTED, rtt + wait);
            }
        }
        Sample::Lost => {
            s.packets.sent += 1;
            s.packets.lost += 1;
            s.errors.attempts += 1;
            s.bytes.up += 64.0;
        }
        Sample::Refused => {
            s.packets.sent += 1;
            s.refused += 1;
            *s.refusal_notices.entry("budget".into()).or_default() += 1;
            s.errors.attempts += 1;
            s.bytes.up += 64.0;
        }
        Sample::LostWay(up) => {
            s.packets.sent += 1;
            s.packets.lost += 1;
            s.errors.attempts += 1;
            s.bytes.up += 64.0;
            if let Some(d) = &mut s.directions {
                if up {
                    d.lost_up += 1;
                } else {
                    d.lost_down += 1;
                }
            }
        }
        Sample::Far(v) => {
            for (name, x) in npt_result::directions::hist::ALL.iter().zip(v) {
                s.histograms.record(name, x);
            }
            if let Some(d) = &mut s.directions {
                d.stamped += 1;
            }
        }
        Sample::Other(which) => match which {
            0 => s.packets.late += 1,
            1 => s.packets.duplicated += 1,
            2 => s.packets.reordered += 1,
            3 => s.corrupt += 1,
            4 => s.foreign += 1,
            _ => s.stale += 1,
        },
        Sample::Error(kind) => s.errors.by_kind.record(kind, || kind.to_string()),
        Sample::Flow {
            jitter,
            connect,
            echo,
        } => {
            s.jitter += &jitter;
            if m.protocol == "tcp" {
                s.histograms.record(hist::CONNECT, connect);
                s.histograms.entry(hist::FIRST_PACKET);
                s.histograms.entry(hist::FIRST_ECHO);
                if let Some(e) = echo {
                    s.histograms.record(hist::FIRST_PACKET, connect + e);
                    s.histograms.record(hist::FIRST_ECHO, e);
                }
            }
        }
    }
}

/// What a sample adds to its interval (1 s long: rates are counts).
fn record_iv(a: &mut IntervalAcc, x: &Sample) {
    let inc = |v: &mut Option<u64>| *v = Some(v.unwrap_or(0) + 1);
    let bits = |a: &mut IntervalAcc, up: f64, down: f64| {
        let b = a.bandwidth_bps.get_or_insert_with(Directions::default);
        b.up += up;
        b.down += down;
    };
    match x {
        Sample::Reply { rtt, .. } => {
            inc(&mut a.sent);
            a.rate_per_s += 1.0;
            a.record_completed(*rtt);
            bits(a, 512.0, 512.0);
        }
        Sample::Lost => {
            inc(&mut a.sent);
            inc(&mut a.lost);
            a.rate_per_s += 1.0;
            bits(a, 512.0, 0.0);
        }
        Sample::Refused => {
            inc(&mut a.sent);
            inc(&mut a.refused);
            a.rate_per_s += 1.0;
            bits(a, 512.0, 0.0);
        }
        Sample::LostWay(up) => {
            inc(&mut a.sent);
            inc(&mut a.lost);
            inc(if *up {
                &mut a.lost_up
            } else {
                &mut a.lost_down
            });
            a.rate_per_s += 1.0;
            bits(a, 512.0, 0.0);
        }
        Sample::Other(0) => inc(&mut a.late),
        Sample::Other(1) => inc(&mut a.duplicated),
        Sample::Other(2) => inc(&mut a.reordered),
        Sample::Flow { jitter, .. } => {
            *a.jitter.get_or_insert_with(JitterMean::default) += jitter;
        }
        _ => {}
    }
}

/// An open interval of a probe: every probe field counted.
fn probe_acc(index: usize) -> IntervalAcc {
    IntervalAcc {
        index: index as u32,
        start_s: index as f64,
        end_s: index as f64 + 1.0,
        sent: Some(0),
        lost: Some(0),
        refused: Some(0),
        lost_up: Some(0),
        lost_down: Some(0),
        late: Some(0),
        duplicated: Some(0),
        reordered: Some(0),
        jitter: Some(JitterMean::default()),
        bandwidth_bps: Some(Directions::default()),
        ..IntervalAcc::default()
    }
}

pub fn recorded(seed: u64) -> (Split<ProbeStats>, ProbeMeta) {
    let mut r = rng(seed);
    let (k, n) = shape(&mut r);
    let open_loop = r.gen_bool(0.5);
    let meta = ProbeMeta {
        protocol: if r.gen_bool(0.5) { "tcp" } else { "udp" }.into(),
        target: "127.0.0.1:7777".into(),
        mode: if open_loop { "rate" } else { "interval" }.into(),
        open_loop,
        framing: "framed".into(),
        size: 64,
        loss_timeout_ms: 200.0,
    };
    let m = r.gen_range(1..=4);
    let samples: Vec<(usize, usize, Sample)> = (0..n)
        .map(|_| (r.gen_range(0..k), r.gen_range(0..m), draw(&mut r)))
        .collect();
    let mut split = Split::<ProbeStats>::new(k);
    let proxy = r.gen_bool(0.3);
    for p in 0..k {
        let exact = r.gen_bool(0.8);
        let a = ProbeStats {
            clients: r.gen_range(1..=4),
            rates: SendRates {
                pps: r.gen_range(0.0..1e5),
                pps_received: r.gen_range(0.0..1e5),
                send_duration_s: r.gen_range(0.0..100.0),
                bandwidth_bps: Directions {
                    up: r.gen_range(0.0..1e9),
                    down: r.gen_range(0.0..1e9),
                },
            },
            total_ms: (meta.protocol == "tcp").then(|| r.gen_range(0.0..1e4)),
            total_after_connect_ms: (meta.protocol == "tcp").then(|| r.gen_range(0.0..1e4)),
            proxy: proxy.then(|| ProxyStats {
                via: "socks5://127.0.0.1:1080".into(),
                handshakes: r.gen_range(0..5),
                proxy_connect_ns: r.gen_range(0..10_000_000) as f64,
                auth_ns: r.gen_range(0..10_000_000) as f64,
                reply_ns: r.gen_range(0..10_000_000) as f64,
                handshake_ns: r.gen_range(0..30_000_000) as f64,
            }),
            health: health(&mut r).with_sends(r.gen_range(0..9), 1.0, some_hist(&mut r).summary()),
            directions: Some(DirStats {
                flows: FlowsSettled {
                    reflected: 1,
                    exact: u32::from(exact),
                    no_report: u32::from(!exact),
                    ..FlowsSettled::default()
                },
                clock: "same-host".into(),
                counts: meta.protocol == "udp",
                ..DirStats::default()
            }),
            ..ProbeStats::default()
        };
        split.agent(p, &a);
    }
    let mut accs: Vec<Vec<IntervalAcc>> =
        (0..=k).map(|_| (0..m).map(probe_acc).collect()).collect();
    for (p, iv, x) in &samples {
        split.record(*p, |s| record(s, x, &meta));
        record_iv(&mut accs[*p][*iv], x);
        record_iv(&mut accs[k][*iv], x);
    }
    let records =
        |accs: &[IntervalAcc]| Intervals::of(accs.iter().map(|a| a.to_record()).collect());
    for (part, accs) in split.parts.iter_mut().zip(&accs) {
        part.intervals = records(accs);
    }
    split.whole.intervals = records(&accs[k]);
    (split, meta)
}
