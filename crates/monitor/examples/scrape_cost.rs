//! What one `/metrics` scrape costs in the process, apart from the socket and the client:
//! `TARGETS` targets (default 10,000; one in 20 a probe, the rest pings, as
//! `bench/monitor.sh` runs them) each given three rounds through `Live::on_round` — the
//! driver's own call, which now renders the target's kept text — then 15 scrapes. Prints the
//! time per round and the scrapes' median, fastest and slowest; with `OUT=FILE` it writes the
//! last scrape there (its bytes are a function of the rounds only, so two versions' files can
//! be compared with `cmp`).
//!
//!   cargo run --release -p npt-monitor --example scrape_cost -- [TARGETS]

use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_monitor::config::TargetPlan;
use npt_monitor::kinds::{Figures, Kind};
use npt_monitor::live::Live;
use npt_monitor::round::{Round, Status};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map_or(Ok(10_000), |s| s.parse())?;
    let live = Live::new("bench", 0, Arc::default(), Arc::default());
    let plans: Vec<TargetPlan> = (0..n)
        .map(|i| TargetPlan {
            name: format!("t{i:05}"),
            kind: if i % 20 == 19 {
                Kind::Probe
            } else {
                Kind::Ping
            },
            url: "udp://127.0.0.1:9".into(),
            every: Duration::from_secs(10),
            jitter: Duration::ZERO,
            timeout: None,
            group: Some(format!("g{}", i % 100)),
            budget: None,
            argv: vec![],
            length: None,
            own_length: false,
            index: i,
            key: String::new(),
        })
        .collect();
    live.set_targets(&plans);
    let mut h = npt_stats::Histogram::new();
    for us in [40, 45, 50, 60, 70] {
        h.record(us * 1000);
    }
    let t = Instant::now();
    for _ in 0..3 {
        for p in &plans {
            let mut r = Round::empty(&p.name, p.kind, 1_764_400_000_000, Status::Ok, None);
            r.figures = Figures {
                count: 5,
                sent: 5,
                p50_ms: 0.05,
                p90_ms: 0.06,
                p99_ms: 0.07,
                ..Figures::default()
            };
            live.on_round(&r, Some(&h));
        }
    }
    let per_round = t.elapsed().as_secs_f64() / (3 * n.max(1)) as f64;
    let mut ms = Vec::new();
    let mut text = String::new();
    for _ in 0..15 {
        let t = Instant::now();
        text = npt_monitor::metrics::scrape(&live);
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    let at = |i: usize| ms.get(i).copied().unwrap_or(f64::NAN);
    println!(
        "{n} targets: a round into the live view {:.1} µs; a scrape {} B, median {:.1} ms \
         (fastest {:.1}, slowest {:.1}, 15 scrapes)",
        per_round * 1e6,
        text.len(),
        at(7),
        at(0),
        at(14)
    );
    if let Ok(out) = std::env::var("OUT") {
        std::fs::write(out, &text)?;
    }
    Ok(())
}
