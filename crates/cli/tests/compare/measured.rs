//! Why this exists: a scenario's `{ from, to }` hop is measured by the hop agent at its upstream
//! end (`npt serve --token S --hop-agent`), not pinged from the client, and the table must say
//! so (`theoretical_source: "measured"`, the agent in each hop). Tested on loopback with a real
//! agent and target, with the bad inputs that must fail clearly and never hang: a from/to hop
//! without `hop_token` (exit 2 naming the key), a dead agent and a target outside the agent's
//! allow-list (the hop's error, no theoretical latency, the runs still done).
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{f, json, run, serve};

const LIMIT: Duration = Duration::from_secs(90);

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn write(dir: &Path, text: &str) -> String {
    let p = dir.join("scenarios.toml");
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn from_to_hops_are_measured_by_the_agent_and_marked_measured() {
    let (_target, addr) = serve(&[]);
    let allow = addr.to_string();
    let (_agent, agent) = serve(&["--token", "S", "--hop-agent", "--hop-allow", &allow]);
    let dead = closed_port();
    let outside = format!("127.0.0.1:{}", addr.port() + 1);
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        &format!(
            r#"
hop_pings = 3
hop_token = "S"
[workload]
kind = "probe"
args = ["--ping-pong", "-n", "20"]
[[scenario]]
name = "measured"
target = "tcp://{addr}"
hops = [{{ from = "npt://{agent}", to = "tcp://{addr}" }}, {{ from = "npt://{agent}", to = "udp://{addr}" }}]
[[scenario]]
name = "chain"
target = "tcp://{addr}"
hops = ["tcp://{addr}", {{ from = "npt://{agent}", to = "tcp://{addr}" }}]
[[scenario]]
name = "dead-agent"
target = "tcp://{addr}"
hops = [{{ from = "npt://127.0.0.1:{dead}", to = "tcp://{addr}" }}]
[[scenario]]
name = "not-allowed"
target = "tcp://{addr}"
hops = [{{ from = "npt://{agent}", to = "tcp://{outside}" }}]
"#
        ),
    );
    let j = dir.path().join("cmp.json");
    let md = dir.path().join("cmp.md");
    let html = dir.path().join("cmp.html");
    let started = Instant::now();
    let out = run(
        &[
            "compare",
            &file,
            "--out-dir",
            dir.path().join("out").to_str().unwrap(),
            "--json",
            j.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        LIMIT,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("took {:?}\n{text}\n{err}", started.elapsed());
    // Every scenario ran: a hop that failed costs its theoretical column, not the run.
    assert_eq!(out.status.code(), Some(0), "{err}");
    let t = json(&j);
    let rows = t["scenarios"].as_array().unwrap();
    let m = &rows[0];
    assert_eq!(m["theoretical_source"], "measured", "{m}");
    let sum: f64 = m["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            assert_eq!(h["from"], format!("npt://{agent}").as_str(), "{h}");
            let doc = json(Path::new(h["result"].as_str().unwrap()));
            assert_eq!(doc["measured_from"], format!("npt://{agent}").as_str());
            f(&doc, "/summary/avg_ms")
        })
        .sum();
    assert!((f(m, "/theoretical_ms") - sum).abs() < 1e-9, "{m}");
    // The client's own first segment and an agent's: measured from each upstream end.
    assert_eq!(rows[1]["theoretical_source"], "measured");
    assert!(rows[1]["hops"][0].get("from").is_none(), "pinged from here");
    for (r, why) in [
        (&rows[2], "no answer"),
        (&rows[3], "not within the agent's --hop-allow"),
    ] {
        assert!(r["theoretical_ms"].is_null(), "{r}");
        assert!(
            r["avg_ms"].as_f64().unwrap() > 0.0,
            "the run still ran: {r}"
        );
        let e = r["hops"][0]["error"].as_str().unwrap_or_default();
        assert!(e.contains(why), "{}: {e}", r["name"]);
    }
    assert!(text.contains(" measured "), "{text}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains(" measured |"), "{md}");
    // The HTML table has the same cells: the source and the TCP rows' retransmits.
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains(" measured<"), "no measured cell in the page");
    assert!(
        html.contains("retrans 0 (0.00%)"),
        "no retransmit cell in the page"
    );
}

#[test]
fn a_from_to_hop_without_the_token_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        r#"
[workload]
kind = "probe"
[[scenario]]
name = "chain"
target = "tcp://127.0.0.1:9"
hops = [{ from = "npt://127.0.0.1:9", to = "tcp://127.0.0.1:9" }]
"#,
    );
    let out = run(&["compare", &file], Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("hop_token: missing: scenario[0].hops[0] is measured from the hop agent"),
        "{err}"
    );
}
