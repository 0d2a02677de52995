//! Two `npt monitor`s at two vantages of a lab (root, `npt lab`) scraped by a real Prometheus
//! (its scrape authenticated by the monitors' token): PromQL's p50 per target falls in the
//! bucket of the store's own p50, at each vantage.

#![cfg(test)]

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::lab::{self, Lab};
use common::monitor::Monitor;
use common::*;
use npt_stats::Histogram;

use super::monitor::report;

#[test]
fn prometheus_collects_two_lab_vantages_and_promql_gives_each_p50_in_the_stored_bucket() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let Some(prometheus) = common::prometheus::binary() else {
        panic!("prometheus is not installed (.ci/run installs it)");
    };
    let dir = tempfile::tempdir().unwrap();
    let _up = Lab::up(
        dir.path(),
        "tmprom",
        r#"
name = "tmprom"
[[node]]
name = "client"
[[node]]
name = "relay"
[[node]]
name = "target"
[[link]]
a = "client"
b = "target"
delay = "10ms"
[[link]]
a = "relay"
b = "target"
delay = "15ms"
[[service]]
name = "serve"
node = "target"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.1.2:7777"
"#,
    );
    // One monitor per vantage, each on all its addresses (so with the token).
    let mut monitors = Vec::new();
    for (node, target) in [("client", "10.0.1.2"), ("relay", "10.0.2.2")] {
        let d = dir.path().join(node);
        std::fs::create_dir(&d).unwrap();
        let cfg = write_file(
            &d,
            "m.toml",
            &format!(
                "vantage = \"{node}\"\nstore = \"{}\"\nlisten = \"0.0.0.0:0\"\ntoken = \"T0K\"\n\
                 every = \"1s\"\n[[target]]\nname = \"target\"\ntarget = \"tcp://{target}:7777\"\n\
                 args = [\"-c\", \"5\", \"-i\", \"50ms\", \"-W\", \"400ms\"]\n",
                d.join("m.db").display()
            ),
        );
        let ns = npt_lab::plan::netns_name("tmprom", node);
        monitors.push(Monitor::start_in(
            Some(&ns),
            cfg.as_ref(),
            &d.join("m.db"),
            true,
        ));
    }
    // Prometheus runs in the client node: it reaches its own monitor and the relay's.
    let ports: Vec<u16> = monitors.iter().map(|m| m.addr.unwrap().port()).collect();
    let targets = [
        format!("127.0.0.1:{}", ports[0]),
        format!("10.0.2.1:{}", ports[1]),
    ];
    let ns = npt_lab::plan::netns_name("tmprom", "client");
    let (_prom, prom) =
        common::prometheus::start_in(&prometheus, dir.path(), &targets, Some(&ns), Some("T0K"));
    let expr = "histogram_quantile(0.5, sum by (le, vantage, target) (npt_monitor_latency_seconds_bucket))";
    let start = Instant::now();
    let got = loop {
        let r = common::prometheus::query_in(prom, expr, Some(&ns));
        if r.len() == 2 && r.iter().all(|(_, v)| v.is_finite() && *v > 0.0) {
            break r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "PromQL gave {r:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    for m in &mut monitors {
        m.stop();
    }
    let bucket = |s: f64| {
        npt_metrics::DURATION_BUCKETS_S
            .iter()
            .position(|b| s <= *b)
            .unwrap_or(npt_metrics::DURATION_BUCKETS_S.len())
    };
    let mut seen = Vec::new();
    for (labels, promql) in got {
        let v = labels["vantage"].as_str().unwrap().to_string();
        let doc = report(&dir.path().join(&v).join("m.db"), "target", 0, i64::MAX);
        let stored = doc.body.view().headline().summary().p50 / 1e3;
        eprintln!("{v}: PromQL p50 {promql:.6} s, stored p50 {stored:.6} s");
        assert_eq!(bucket(promql), bucket(stored), "{v}");
        seen.push((v, bucket(stored)));
    }
    seen.sort();
    // 20 ms and 30 ms round trips: two different buckets, each where the store says.
    assert_eq!(seen.len(), 2);
    assert_ne!(seen[0].1, seen[1].1, "{seen:?}");

    // The fleet: both vantages' stores merged by `npt report --from … --from …` give the p50 of
    // every round's samples of both, and each vantage's own figures beside it.
    let stores: Vec<PathBuf> = ["client", "relay"]
        .iter()
        .map(|v| dir.path().join(v).join("m.db"))
        .collect();
    let mut all = Histogram::new();
    let mut rounds = 0;
    for s in &stores {
        for r in common::monitor::rounds(s, "target") {
            let Some(b) = r.stats.as_deref() else {
                continue;
            };
            let stats = npt_monitor::kinds::KindStats::decode(b).unwrap();
            all += stats.headline().unwrap();
            rounds += 1;
        }
    }
    let merged = dir.path().join("merged.json");
    let mut a = vec!["report".to_string()];
    for s in &stores {
        a.extend(["--from".into(), s.display().to_string()]);
    }
    a.extend(
        [
            "--target", "target", "--since", "1h", "--format", "json", "-o",
        ]
        .map(String::from),
    );
    a.push(merged.display().to_string());
    let args: Vec<&str> = a.iter().map(String::as_str).collect();
    let out = common::run(&args, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = npt_result::any::read(&merged).unwrap();
    let got = doc.body.view().headline();
    eprintln!(
        "merged: {} samples of {rounds} rounds, p50 {:.3} ms; all rounds' samples: {} , p50 {:.3} ms",
        got.count(),
        got.summary().p50,
        all.count(),
        all.summary().p50
    );
    assert!(
        got == all,
        "the merge is every round's samples of both vantages"
    );
    assert_eq!(doc.config["monitor"]["rounds"], serde_json::json!(rounds));
    let v = doc.config["monitor"]["vantages"].as_array().unwrap();
    let names: Vec<&str> = v.iter().map(|x| x["vantage"].as_str().unwrap()).collect();
    assert_eq!(names, ["client", "relay"]);
    let text = common::run(&args[..args.len() - 4], Duration::from_secs(30));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("vantages") && text.contains("merged"),
        "{text}"
    );
}
