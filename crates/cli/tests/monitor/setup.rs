//! `npt monitor` runs `npt setup` rounds: `https://` against loopback `npt serve --http --tls`,
//! three fresh connections a round, a round every 2 s; every round is stored with its
//! per-layer histograms, and `npt report --from` reads the range back as one setup document
//! whose counts are the stored rounds' added exactly (every connection's sample in each
//! layer's median) and whose text is `npt setup`'s.

#![cfg(test)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::monitor::{rounds, Monitor};
use common::*;
use npt_monitor::kinds::KindStats;

/// `npt serve` with HTTPS: the server and its https address.
fn serve_https() -> (Guard, String) {
    let mut child = npt()
        .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .arg("--tls")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("npt serve starts");
    let stdout = child.stdout.take().expect("piped");
    let guard = Guard(child);
    // Bounded: the server prints a handful of ready lines, then nothing until it stops.
    for line in BufReader::new(stdout).lines().take(8) {
        let Ok(line) = line else { break };
        if line.contains("listening on https") {
            let addr = line.rsplit(' ').next().unwrap_or_default().to_string();
            return (guard, addr);
        }
    }
    panic!("npt serve --tls did not report its https address");
}

const LAYERS: [&str; 3] = ["tcp_connect", "tls", "first_byte"];

#[test]
fn setup_rounds_are_stored_per_layer_and_read_back_added() {
    let (_serve, https) = serve_https();
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
"#
    );
    let cfg = write_file(dir.path(), "m.toml", &cfg);
    let store = dir.path().join("m.db");
    let mut m = Monitor::start(cfg.as_ref(), &store, true);
    m.until("two setup rounds", Duration::from_secs(30), |m| {
        m.rounds_total("tls", "ok") >= 2.0
    });
    m.stop();
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
        assert_eq!(r.figures.sent, 3);
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
