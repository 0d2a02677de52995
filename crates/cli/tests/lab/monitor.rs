//! `npt monitor` against paths whose truth is known (root, `npt lab`): a monitor in a lab node
//! watches a direct path (20 ms), a path through a socat relay (50 ms) and a 2 %-loss path every
//! second. The stored p50s read back within 0.5 ms of the lab's own figures (through the relay:
//! its links and the relay node's own transit time, both measured by the lab) and the loss is what
//! the link dropped; when `npt lab set` adds 30 ms to the direct link, the first round after the
//! lab's instant reads it, the dashboard's chart shows the step, an alert reaches a webhook
//! receiver within the rule's 3 rounds, and clears within 3 rounds after the change is undone.
//!
//! The issue's version runs 3 minutes (the step at 1.5); CI runs the same test in 45 s (the
//! step at 15 s, undone at 30 s): `NPT_MONITOR_TRUTH_FULL=1` runs the 3-minute one.
//!
//! Prometheus scraping two monitors at two lab vantages is in `monitor_prometheus.rs`.

#![cfg(test)]

use crate::common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::lab::{self, Lab};
use common::monitor::{webhook, Monitor};
use common::*;
use npt_stats::Histogram;
use npt_testkit::chromium::{self, attr, opening_tag};

/// How far a stored p50 may be from the lab's path (ms): the issue's bound. The lab's path is
/// its links' delays plus how late its own wire delivered, plus the transit time of a node that
/// forwards (the relay); what the endpoints add on a loaded box is not in it, so a box running
/// much else at once can miss it.
const TOL: f64 = 0.5;

/// Labs measure time: one at a time in this file.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn wall_ms(t: &str) -> i64 {
    npt_monitor::round::wall_ms(humantime::parse_rfc3339(t).unwrap_or_else(|e| panic!("{t}: {e}")))
}

fn now_ms() -> i64 {
    npt_monitor::round::wall_ms(SystemTime::now())
}

/// What the lab itself says a direction adds: its configured delay plus the median of how
/// late its wire delivered (its own histogram), in ms.
fn direction_ms(status: &serde_json::Value, link: usize, from: &str) -> f64 {
    let d = status["links"][link]["directions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["from"] == from)
        .unwrap_or_else(|| panic!("no direction from {from} on link {link}"));
    let delay = humantime::parse_duration(d["config"]["delay"].as_str().unwrap_or("0ms"))
        .unwrap()
        .as_secs_f64()
        * 1e3;
    let late = serde_json::from_value(d["delay_error"].clone())
        .ok()
        .and_then(|s| Histogram::from_serialized(&s).ok())
        .map_or(0.0, |h| h.quantile_ns(0.5) as f64 / 1e6);
    delay + late
}

/// What the lab says node `node` adds to datagrams it forwards from `from` to `to` (the nodes
/// across its links): the median of its transit times, in ms, and how many it forwarded.
fn transit_ms(status: &serde_json::Value, node: &str, from: &str, to: &str) -> (f64, u64) {
    let n = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == node)
        .unwrap_or_else(|| panic!("no node {node}"));
    let pair = n["transit"]["pairs"]
        .as_array()
        .unwrap_or_else(|| panic!("{node} has no transit figures: {n}"))
        .iter()
        .find(|p| p["from"] == from && p["to"] == to)
        .unwrap_or_else(|| panic!("{node} forwarded nothing from {from} to {to}: {n}"));
    let h = Histogram::from_serialized(&serde_json::from_value(pair["histogram"].clone()).unwrap())
        .unwrap();
    (h.quantile_ns(0.5) as f64 / 1e6, h.count())
}

const TOPOLOGY: &str = r#"
name = "tmtruth"
[[node]]
name = "client"
[[node]]
name = "target"
[[node]]
name = "relay"
[[node]]
name = "lossy"
[[link]]
a = "client"
b = "target"
delay = "10ms"
[[link]]
a = "client"
b = "relay"
delay = "10ms"
[[link]]
a = "relay"
b = "target"
delay = "15ms"
[[link]]
a = "client"
b = "lossy"
delay = "5ms"
[link.a_to_b]
loss = "2%"
[[service]]
name = "serve"
node = "target"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.1.2:7777"
[[service]]
name = "relay"
node = "relay"
cmd = ["socat", "UDP4-LISTEN:9000,fork,reuseaddr", "UDP4:10.0.3.2:7777"]
ready = "udp://10.0.2.2:9000"
[[service]]
name = "lossy"
node = "lossy"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.4.2:7777"
"#;

/// The rounds of `target` that started in `[from, to)`.
fn rows(store: &Path, target: &str, from: i64, to: i64) -> Vec<npt_monitor::store::RoundRow> {
    common::monitor::rounds(store, target)
        .into_iter()
        .filter(|r| r.start_ms >= from && r.start_ms < to)
        .collect()
}

/// A range of `target` read back as one document (as `npt report --from` reads it).
pub(crate) fn report(store: &Path, target: &str, from: i64, to: i64) -> npt_result::any::AnyResult {
    let st = npt_monitor::store::sqlite::Sqlite::open_read(store).unwrap();
    npt_monitor::range::report(&st, target, from, to).unwrap()
}

#[test]
fn the_monitor_reads_back_the_labs_delays_loss_and_a_step() {
    if lab::skipped(module_path!()) || !npt_testkit::proxies::have("/usr/bin/socat") {
        return;
    }
    let _turn = common::turn(module_path!());
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let full = std::env::var_os("NPT_MONITOR_TRUTH_FULL").is_some_and(|v| v == "1");
    let (run_s, step_s, undo_s) = if full { (180, 90, 135) } else { (45, 15, 30) };
    eprintln!("truth test: {run_s} s, the step at {step_s} s, undone at {undo_s} s");
    let dir = tempfile::tempdir().unwrap();
    let up = Lab::up(dir.path(), "tmtruth", TOPOLOGY);
    let ns = npt_lab::plan::netns_name("tmtruth", "client");
    let (hook, alerts) = webhook(Some(&ns));
    let ping = r#"args = ["-c", "10", "-i", "50ms", "-W", "400ms"]"#;
    let cfg = write_file(
        dir.path(),
        "m.toml",
        &format!(
            r#"
vantage = "lab-client"
store = "{store}"
listen = "127.0.0.1:0"
every = "1s"
[notify]
webhook = "http://{hook}/hook"
[[target]]
name = "direct"
target = "udp://10.0.1.2:7777"
group = "line"
{ping}
[[target]]
name = "relay"
target = "udp://10.0.2.2:9000"
group = "line"
{ping}
[[target]]
name = "lossy"
kind = "probe"
target = "udp://10.0.4.2:7777"
length = "500ms"
args = ["--pps", "400", "--loss-timeout", "300ms"]
[[alert]]
name = "step"
metric = "p50_ms"
above = 15
baseline_rounds = 10
rounds = 3
targets = ["direct"]
"#,
            store = dir.path().join("m.db").display()
        ),
    );
    let before = dir.path().join("lab-before.json");
    std::fs::write(&before, serde_json::to_vec(&up.status()).unwrap()).unwrap();
    let store = dir.path().join("m.db");
    let mut m = Monitor::start_in(Some(&ns), cfg.as_ref(), &store, true);
    let t0 = now_ms();
    let at = |s: u64| t0 + i64::try_from(s).unwrap() * 1000;
    let sleep_until = |ms: i64| {
        let left = ms - now_ms();
        if left > 0 {
            std::thread::sleep(Duration::from_millis(u64::try_from(left).unwrap()));
        }
    };
    sleep_until(at(step_s));
    let lab_before = up.status();
    let set = |delay: &str| -> i64 {
        let out = run(
            &[
                "lab",
                "set",
                "tmtruth",
                "client-target",
                &format!("delay={delay}"),
                "--json",
            ],
            Duration::from_secs(20),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        wall_ms(c[0]["at"].as_str().unwrap())
    };
    let step_at = set("25ms");
    let (_, fired) = alerts
        .recv_timeout(Duration::from_secs(30))
        .expect("the step alert reaches the webhook");
    let fired_ms = now_ms();
    sleep_until(at(undo_s));
    let undo_at = set("10ms");
    let (_, cleared) = alerts
        .recv_timeout(Duration::from_secs(30))
        .expect("the alert clears once the step is undone");
    let cleared_ms = now_ms();
    sleep_until(at(run_s));
    // The dashboard as it is now, saved, then drawn with the monitor gone.
    let (code, page) = m.get("/?range=1h");
    assert_eq!(code, 200);
    m.stop();

    // 1. Before the step: each path's stored p50 is the lab's path, within 0.5 ms.
    let lab_direct =
        direction_ms(&lab_before, 0, "client") + direction_ms(&lab_before, 0, "target");
    // The relay's own forwarding (socat: kernel in, a user-space hop, kernel out; each flow
    // forks a child) is on the user's path once each way: the lab measures it as the relay
    // node's transit time, per way through it.
    let (relay_up, up_n) = transit_ms(&lab_before, "relay", "client", "target");
    let (relay_down, down_n) = transit_ms(&lab_before, "relay", "target", "client");
    eprintln!(
        "relay transit p50: client > target {relay_up:.3} ms ({up_n} datagrams), \
         target > client {relay_down:.3} ms ({down_n})"
    );
    // The endpoints forward nothing: an answer sent back to where its request came from is
    // not transit, even with the request's payload.
    for node in ["client", "target", "lossy"] {
        let n = lab_before["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == node)
            .unwrap();
        assert_eq!(n["transit"]["count"], 0, "{node}: {}", n["transit"]);
    }
    let lab_relay = direction_ms(&lab_before, 1, "client")
        + direction_ms(&lab_before, 1, "relay")
        + direction_ms(&lab_before, 2, "relay")
        + direction_ms(&lab_before, 2, "target")
        + relay_up
        + relay_down;
    let mut misses = Vec::new();
    let lab_lossy = direction_ms(&lab_before, 3, "client") + direction_ms(&lab_before, 3, "lossy");
    for (name, lab_ms) in [
        ("direct", lab_direct),
        ("relay", lab_relay),
        ("lossy", lab_lossy),
    ] {
        let doc = report(&store, name, t0, step_at);
        let p50 = doc.body.view().headline().summary().p50;
        eprintln!("{name}: stored p50 {p50:.3} ms, the lab's path {lab_ms:.3} ms");
        if (p50 - lab_ms).abs() > TOL {
            // Asserted at the end, so that a run on a busy box still reports every figure.
            misses.push(format!("{name}: stored p50 {p50} vs the lab's {lab_ms}"));
        }
    }
    // 2. The loss is 2 ± 0.5 %, and exactly what the link dropped while the monitor ran.
    let lossy = report(&store, "lossy", t0, now_ms() + 1);
    let npt_result::any::AnyBody::Probe(b) = &lossy.body else {
        panic!("a probe")
    };
    let out = run(
        &[
            "lab",
            "status",
            "tmtruth",
            "--json",
            "--since",
            before.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    let run_only: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let up_dir = run_only["links"][3]["directions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["from"] == "client")
        .unwrap()
        .clone();
    eprintln!(
        "lossy: {} sent, {} lost ({:.3} %); the link dropped {}",
        b.summary.packets.sent,
        b.summary.packets.lost,
        b.summary.loss_pct,
        up_dir["applied"]["dropped_loss"]
    );
    assert!(
        (1.5..=2.5).contains(&b.summary.loss_pct),
        "{}",
        b.summary.loss_pct
    );
    // The link also carries each round's final flow query (and its retries when it drops
    // one): every loss is one of the link's drops, and the drops beyond them are queries.
    let (dropped, carried_in) = (
        u(&up_dir, "/applied/dropped_loss"),
        u(&up_dir, "/applied/packets_in"),
    );
    let (sent, lost) = (b.summary.packets.sent, b.summary.packets.lost);
    assert!(carried_in >= sent, "link took {carried_in} < sent {sent}");
    let queries = carried_in - sent;
    assert!(
        lost <= dropped && dropped <= lost + queries,
        "lost {lost}, the link dropped {dropped} of {carried_in} ({queries} queries)"
    );
    // 3. The step: the first round that started after the lab's instant reads +30 ms.
    let after = rows(&store, "direct", step_at, undo_at);
    let first = after.first().expect("rounds after the step");
    eprintln!(
        "step: the first round after it started {} ms later: p50 {:.3} ms (lab {:.3} + 30)",
        first.start_ms - step_at,
        first.figures.p50_ms,
        lab_direct
    );
    assert!(first.start_ms - step_at <= 1_000, "within one round");
    if (first.figures.p50_ms - lab_direct - 30.0).abs() > TOL {
        misses.push(format!(
            "the first round after the step: p50 {} vs the lab's {lab_direct} + 30",
            first.figures.p50_ms
        ));
    }
    // 4. The alert fired within its 3 rounds of the step, and cleared within 3 of the undo.
    assert_eq!(
        (fired["state"].as_str(), fired["target"].as_str()),
        (Some("firing"), Some("direct"))
    );
    let third = after.get(2).expect("3 rounds after the step");
    let fired_at = wall_ms(fired["at"].as_str().unwrap());
    assert!(
        fired_at <= third.end_ms + 50,
        "fired at {fired_at}, the 3rd round ended {}",
        third.end_ms
    );
    assert!(fired_ms - fired_at < 2_000, "delivered at once");
    eprintln!(
        "alert: fired {} ms after the step (the 3rd round after it ended {} ms after it), \
         received {} ms after firing",
        fired_at - step_at,
        third.end_ms - step_at,
        fired_ms - fired_at
    );
    assert_eq!(cleared["state"], "resolved");
    let back = rows(&store, "direct", undo_at, now_ms() + 1);
    let cleared_at = wall_ms(cleared["at"].as_str().unwrap());
    assert!(
        cleared_at <= back[2].end_ms + 50,
        "cleared at {cleared_at}, 3rd round {}",
        back[2].end_ms
    );
    assert!(cleared_ms - cleared_at < 2_000);
    eprintln!(
        "alert: cleared {} ms after the undo (the 3rd round after it ended {} ms after it)",
        cleared_at - undo_at,
        back[2].end_ms - undo_at
    );
    // Packets inside the link when it steps down keep their schedule (the lab reorders
    // nothing), so the round in flight may still read some; within the alert's 3 rounds the
    // path reads its old value again.
    let undone: Vec<f64> = back.iter().take(3).map(|r| r.figures.p50_ms).collect();
    eprintln!("after the undo: the first 3 rounds' p50 {undone:?} ms");
    if !undone.iter().any(|p| (p - lab_direct).abs() <= TOL) {
        misses.push(format!(
            "after the undo: {undone:?} vs the lab's {lab_direct}"
        ));
    }
    // 5. The chart: the direct path's median line goes from ~20 ms to ~50 ms and back.
    if chromium::wanted() {
        let file = dir.path().join("dashboard.html");
        std::fs::write(&file, &page).unwrap();
        let dom = chromium::dump_dom(&file, &dir.path().join("profile"), Duration::from_secs(60));
        let body = &dom[dom.find("<body").unwrap()..];
        assert_eq!(
            attr(&body[..body.find('>').unwrap() + 1], "data-errors"),
            Some("0")
        );
        let i = (0..8)
            .find(|i| {
                opening_tag(&dom, &format!("npt-chart-{i}")).contains("data-chart=\"direct\"")
            })
            .expect("the direct chart");
        let tag = opening_tag(&dom, &format!("npt-chart-{i}"));
        eprintln!("{tag}");
        assert_eq!(
            attr(tag, "data-drawn-median"),
            attr(tag, "data-expected-median")
        );
        let (lo, hi) = attr(tag, "data-median-range")
            .unwrap()
            .split_once('-')
            .unwrap();
        let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
        // The chart's medians are the store's (checked against the lab above), from the
        // path's level before the step to the step's level after it.
        let medians: Vec<f64> = common::monitor::rounds(&store, "direct")
            .iter()
            .filter(|r| r.figures.count > 0)
            .map(|r| r.figures.p50_ms)
            .collect();
        let min = medians.iter().copied().fold(f64::INFINITY, f64::min);
        let max = medians.iter().copied().fold(0.0, f64::max);
        assert!(
            (lo - min).abs() < 0.002 && (hi - max).abs() < 0.002,
            "the chart's {lo}-{hi}, the store's {min}-{max}"
        );
        assert!(
            lo <= lab_direct + TOL && hi >= lab_direct + 30.0 - TOL,
            "the step on the chart: {lo}-{hi}"
        );
    }
    assert!(misses.is_empty(), "{misses:#?}");
}
