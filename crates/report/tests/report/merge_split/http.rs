//! An http run's recorded samples: responses by host and status, errors, connections with
//! their TLS and proxy phases, in intervals; per part its connections, rates, requests in
//! flight at the end, cold start and health.

use npt_result::common::Directions;
use npt_result::http::{hist, ColdStart};
use npt_result::interval::{IntervalAcc, Intervals};
use npt_result::stats::http::HostCounts;
use npt_result::stats::{HttpMeta, HttpStats};
use rand::rngs::SmallRng;
use rand::Rng;

use super::{health, ns, rng, shape, some_hist, under, Rule, Split};

const HOSTS: [&str; 2] = ["a.test", "b.test"];

pub fn rule(path: &[&str]) -> Rule {
    if under(path, &["hosts", "*", "ttfb_ms"])
        || under(path, &["hosts", "*", "latency_uncorrected_ms"])
    {
        Rule::FirstPart
    } else {
        Rule::Exact
    }
}

enum What {
    Response { code: u16, out: u64, got: u64 },
    Error(&'static str),
    Conn { via: bool },
}

struct Sample {
    host: &'static str,
    /// From the actual send, and from the intended one in open loop.
    actual: u64,
    lat: u64,
    what: What,
}

fn draw(r: &mut SmallRng, open_loop: bool) -> Sample {
    let actual = ns(r);
    let what = match r.gen_range(0..6) {
        0..=3 => What::Response {
            code: [200u16, 200, 204, 404, 503][r.gen_range(0..5)],
            out: r.gen_range(0..1000),
            got: r.gen_range(0..100_000),
        },
        4 => What::Error(["reset", "refused", "timeout", "protocol"][r.gen_range(0..4)]),
        _ => What::Conn {
            via: r.gen_bool(0.2),
        },
    };
    Sample {
        host: HOSTS[r.gen_range(0..HOSTS.len())],
        actual,
        lat: if open_loop {
            actual + ns(r) / 10
        } else {
            actual
        },
        what,
    }
}

/// What the collector counts of a sample.
fn record(s: &mut HttpStats, x: &Sample, m: &HttpMeta) {
    let ttfb = x.actual / 2;
    match x.what {
        What::Response { code, out, got } => {
            s.requests += 1;
            s.errors.attempts += 1;
            let ok = u64::from((200..300).contains(&code));
            s.ok += ok;
            *s.status.entry(code.to_string()).or_default() += 1;
            s.bytes += &Directions::bytes(out, got);
            s.histograms.record(hist::LATENCY, x.lat);
            if m.open_loop {
                s.histograms.record(hist::LATENCY_UNCORRECTED, x.actual);
            }
            s.histograms.record(hist::TTFB, ttfb);
            s.histograms.record(&hist::host(x.host), x.lat);
            let h = s.hosts.entry(x.host.into()).or_default();
            h.requests += 1;
            h.ok += ok;
            *h.status.entry(code.to_string()).or_default() += 1;
            h.bytes_received += got;
            h.latency_uncorrected.record(x.actual);
            h.ttfb.record(ttfb);
        }
        What::Error(kind) => {
            s.errors.attempts += 1;
            s.hosts.entry(x.host.into()).or_default().errors += 1;
            s.errors.by_kind.record(kind, || kind.to_string());
        }
        What::Conn { via } => {
            s.connections_opened += 1;
            s.histograms.record(hist::CONNECT, ttfb);
            if m.tls {
                s.histograms.record(hist::TLS, x.actual);
            }
            if via {
                s.histograms.record(hist::PROXY, ttfb / 2);
            }
        }
    }
}

fn record_iv(a: &mut IntervalAcc, x: &Sample) {
    match x.what {
        What::Response { code, .. } => {
            a.record_completed(x.lat);
            a.record_status(code);
        }
        What::Error(_) => a.errors += 1,
        What::Conn { .. } => {}
    }
}

pub fn recorded(seed: u64) -> (Split<HttpStats>, HttpMeta) {
    let mut r = rng(seed);
    let (k, n) = shape(&mut r);
    let open_loop = r.gen_bool(0.5);
    let meta = HttpMeta {
        url: "http://127.0.0.1:8080/".into(),
        target: "127.0.0.1:8080".into(),
        method: "GET".into(),
        protocol: "http/1.1".into(),
        downgrade: None,
        tls: r.gen_bool(0.5),
        mode: if open_loop { "open" } else { "closed" }.into(),
        open_loop,
        streams: 1,
        new_conn: false,
        setup: None,
    };
    let m = r.gen_range(1..=4);
    let samples: Vec<(usize, usize, Sample)> = (0..n)
        .map(|_| {
            (
                r.gen_range(0..k),
                r.gen_range(0..m),
                draw(&mut r, open_loop),
            )
        })
        .collect();
    let mut split = Split::<HttpStats>::new(k);
    for p in 0..k {
        // Every part reports every host, as the engine does.
        let hosts = HOSTS
            .iter()
            .map(|h| {
                let c = HostCounts {
                    rps: r.gen_range(0.0..1e4),
                    ..HostCounts::default()
                };
                (h.to_string(), c)
            })
            .collect();
        let cold_start = r.gen_bool(0.3).then(|| ColdStart {
            command: "./server".into(),
            ready_ms: r.gen_range(0.0..1e4),
            first_request_ms: r.gen_range(0.0..1e3),
            attempts: r.gen_range(1..50),
            first_status: 200,
            ..ColdStart::default()
        });
        let lateness = some_hist(&mut r).summary();
        let mut h = health(&mut r).with_sends(r.gen_range(0..9), 2.0, lateness);
        h.timer_lateness_ms = open_loop.then(|| some_hist(&mut r).summary());
        let in_flight = r.gen_range(0..4);
        let mut agent = HttpStats {
            connections: r.gen_range(1..10),
            rate: open_loop.then(|| r.gen_range(1.0..1e5)),
            in_flight_at_end: in_flight,
            oldest_in_flight_ms: r.gen_range(0.0..1e4),
            rps: r.gen_range(0.0..1e5),
            duration_s: r.gen_range(1.0..100.0),
            throughput_bps: Directions {
                up: r.gen_range(0.0..1e9),
                down: r.gen_range(0.0..1e9),
            },
            hosts,
            cold_start,
            health: h,
            ..HttpStats::default()
        };
        // Requests still waiting for their answer at the end were started: attempts.
        agent.errors.attempts = in_flight;
        split.agent(p, &agent);
    }
    let mut accs: Vec<Vec<IntervalAcc>> = (0..=k)
        .map(|_| (0..m).map(|_| IntervalAcc::with_status()).collect())
        .collect();
    for (p, iv, x) in &samples {
        split.record(*p, |s| record(s, x, &meta));
        record_iv(&mut accs[*p][*iv], x);
        record_iv(&mut accs[k][*iv], x);
    }
    for (p, accs) in accs.iter_mut().enumerate() {
        let recs = accs
            .iter_mut()
            .enumerate()
            .map(|(i, a)| a.close(i as u32, i as f64, i as f64 + 1.0, 1.0))
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
