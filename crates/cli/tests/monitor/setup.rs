//! `npt monitor` runs `npt setup` rounds: `https://` against loopback `npt serve --http --tls`,
//! three fresh connections a round, a round every 2 s; every round is stored with its
//! per-layer histograms, and `npt report --from` reads the range back as one setup document
//! whose counts are the stored rounds' added exactly (every connection's sample in each
//! layer's median) and whose text is `npt setup`'s. Beside it, `quic://` with `--resume`
//! against a server that rejects 0-RTT: every round is flagged, and a `flagged` alert fires
//! for that target alone. And a ping target with `--echo --setup`: its setup block is kept
//! across rounds, each round a run of it, every round's connections added.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::monitor::{rounds, Monitor};
use common::*;
use npt_monitor::kinds::KindStats;

const LAYERS: [&str; 3] = ["tcp_connect", "tls", "first_byte"];

#[test]
fn setup_rounds_are_stored_per_layer_and_read_back_added() {
    let (_serve, https, quic, tcp) = serve_setup("reject");
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        r#"
vantage = "test"
store = "m.db"
listen = "127.0.0.1:0"
every = "2s"
[[target]]
name = "tls"
kind = "setup"
target = "https://{https}"
args = ["-c", "3", "--timeout", "500ms"]
[[target]]
name = "zrtt"
kind = "setup"
target = "quic://{quic}"
args = ["--resume", "-c", "2", "--timeout", "500ms"]
[[target]]
name = "echo"
kind = "ping"
target = "tcp://{tcp}"
args = ["--echo", "--setup", "-c", "2", "-i", "100ms"]
[[alert]]
name = "setup-flag"
metric = "flagged"
rounds = 2
"#
    );
    let cfg = write_file(dir.path(), "m.toml", &cfg);
    let store = dir.path().join("m.db");
    let mut m = Monitor::start(cfg.as_ref(), &store, true);
    m.until("two setup rounds", Duration::from_secs(30), |m| {
        m.rounds_total("tls", "ok") >= 2.0 && m.rounds_total("echo", "ok") >= 2.0
    });
    let firing = |m: &Monitor, t: &str| {
        m.metric(
            "npt_monitor_alert_firing",
            &[&format!("target=\"{t}\""), "alert=\"setup-flag\""],
        )
    };
    m.until("the rejected 0-RTT's alert", Duration::from_secs(30), |m| {
        firing(m, "zrtt") == Some(1.0)
    });
    assert_ne!(
        firing(&m, "tls"),
        Some(1.0),
        "nothing flagged the TLS target"
    );
    m.stop();
    for r in rounds(&store, "zrtt") {
        assert_eq!(r.figures.flagged, Some(1), "{:?}", r.detail);
    }
    // What each stored round kept, added by hand: connections and each layer's samples.
    let stored = rounds(&store, "tls");
    assert!(stored.len() >= 2, "{} rounds", stored.len());
    let (mut attempts, mut completed, mut rtts) = (0, 0, 0);
    let mut samples = [0u64; 3];
    for r in &stored {
        let KindStats::Setup(s) = KindStats::decode(r.stats.as_ref().unwrap()).unwrap() else {
            panic!("a setup round keeps a setup value");
        };
        assert_eq!(s.attempts, 3, "{s:?}");
        assert_eq!((r.figures.sent, r.figures.flagged), (3, Some(0)));
        attempts += s.attempts;
        completed += s.completed;
        rtts += s.rtt.count();
        for (n, name) in samples.iter_mut().zip(LAYERS) {
            *n += s
                .layers
                .iter()
                .find(|(l, _)| l.name() == name)
                .map_or(0, |(_, h)| h.count());
        }
    }
    assert_eq!(completed, attempts, "every loopback connection sets up");
    let json = dir.path().join("tls.json");
    let from = [
        "report",
        "--from",
        store.to_str().unwrap(),
        "--target",
        "tls",
    ];
    let to = [
        "--since",
        "1h",
        "--format",
        "json",
        "-o",
        json.to_str().unwrap(),
    ];
    let out = run(&[&from[..], &to[..]].concat(), Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::json(&json);
    assert_valid(&doc, "setup");
    let s = &doc["summary"];
    assert_eq!(u(&doc, "/summary/attempts"), attempts, "{s}");
    assert_eq!(u(&doc, "/summary/completed"), completed, "{s}");
    assert_eq!(u(&doc, "/summary/rtt_samples"), rtts, "{s}");
    assert_eq!(u(&doc, "/summary/runs"), stored.len() as u64, "{s}");
    assert_eq!(u(&doc, "/summary/flagged_runs"), 0, "{s}");
    let layers = doc["layers"].as_array().unwrap();
    let names: Vec<&str> = layers
        .iter()
        .map(|l| l["layer"].as_str().unwrap())
        .collect();
    assert_eq!(names, LAYERS);
    for (l, n) in layers.iter().zip(samples) {
        assert_eq!(l["samples"].as_u64(), Some(n), "{l}");
        assert_eq!(n, attempts, "{l}");
        // The multiple is of the range's base round trip, by the rule one run's is.
        let (p50, rtt) = (f(l, "/p50_ms"), f(&doc, "/summary/rtt_ms"));
        assert!((f(l, "/rtts") - p50 / rtt).abs() < 1e-6, "{l}");
    }
    ping_rounds_keep_their_setup_block(&store, dir.path());
    let out = run(
        &[&from[..], &["--since", "1h"]].concat(),
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("SETUP https://{https}"))
            && text.contains("TLS 1.3")
            && text.contains(&format!("{} rounds", stored.len())),
        "{text}"
    );
}

/// The ping target's range read back: one ping document whose setup block adds every stored
/// round's two connections, each round a run of it.
fn ping_rounds_keep_their_setup_block(store: &std::path::Path, dir: &std::path::Path) {
    let n = rounds(store, "echo").len() as u64;
    assert!(n >= 2, "{n} ping rounds");
    let json = dir.join("echo.json");
    let args = [
        "report",
        "--from",
        store.to_str().unwrap(),
        "--target",
        "echo",
        "--since",
        "1h",
        "--format",
        "json",
        "-o",
        json.to_str().unwrap(),
    ];
    let out = run(&args, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::json(&json);
    assert_valid(&doc, "ping");
    let s = &doc["setup"]["summary"];
    assert_eq!(u(&doc, "/setup/summary/runs"), n, "{s}");
    assert_eq!(u(&doc, "/setup/summary/attempts"), 2 * n, "{s}");
    assert_eq!(u(&doc, "/setup/summary/completed"), 2 * n, "{s}");
    assert_eq!(u(&doc, "/summary/sent"), 2 * n, "{s}");
}
