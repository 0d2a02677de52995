//! `npt monitor` runs `npt lifetime` rounds: a socat TCP relay with `-T 1` in front of `npt
//! serve` on loopback, a round every 16 s (a round's plan is its ladder and one round inside the
//! bracket, which `every` must exceed); the round is stored, its figure (the lifetime, as the
//! chart and the alerts read it) is scraped, and `npt report --from` reads it back as a valid
//! lifetime document with the relay's cut-off.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::monitor::{rounds, Monitor};
use common::*;

#[test]
fn a_lifetime_round_is_stored_charted_and_read_back() {
    if !npt_testkit::proxies::have("/usr/bin/socat") {
        eprintln!("SKIPPED: socat is not installed");
        return;
    }
    let (_serve, addr) = serve(&[]);
    let port = npt_testkit::process::free_port();
    let child = std::process::Command::new("/usr/bin/socat")
        .args([
            "-T",
            "1",
            &format!("TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr"),
            &format!("TCP:{addr}"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _relay = Guard(child);
    let t0 = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "socat did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        r#"
vantage = "test"
store = "m.db"
listen = "127.0.0.1:0"
every = "16s"
[[target]]
name = "relay"
kind = "lifetime"
target = "tcp://127.0.0.1:{port}"
args = ["--max", "2s", "--resolution", "0.25s"]
"#
    );
    let cfg = write_file(dir.path(), "m.toml", &cfg);
    let store = dir.path().join("m.db");
    let mut m = Monitor::start(cfg.as_ref(), &store, true);
    m.until("a lifetime round", Duration::from_secs(60), |m| {
        m.rounds_total("relay", "ok") >= 1.0
    });
    let p50 = m
        .metric("npt_monitor_last_p50_seconds", &["target=\"relay\""])
        .unwrap();
    m.stop();
    assert!(
        (0.75..1.5).contains(&p50),
        "the chart's figure is the lifetime: {p50}"
    );
    assert_eq!(rounds(&store, "relay").len(), 1);
    let json = dir.path().join("relay.json");
    let out = run(
        &[
            "report",
            "--from",
            store.to_str().unwrap(),
            "--target",
            "relay",
            "--since",
            "1h",
            "--format",
            "json",
            "-o",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::json(&json);
    assert_valid(&doc, "lifetime");
    let l = f(&doc, "/summary/lifetime_s");
    assert!((0.75..1.5).contains(&l), "{}", doc["summary"]);
    assert_eq!(
        doc["summary"]["cut_off"]["how"], "closed",
        "{}",
        doc["summary"]
    );
    let out = run(
        &[
            "report",
            "--from",
            store.to_str().unwrap(),
            "--target",
            "relay",
            "--since",
            "1h",
        ],
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("idle TCP lifetime") && text.contains("closed by the path (FIN)"),
        "{text}"
    );
}
