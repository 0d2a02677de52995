//! DSCP and ECN markings through the lab (root).
//!
//! One link: `npt probe udp://… --dscp 46` arrives marked 46 — the server's own count of what
//! it received says so (its periodic marking line, read from the lab's service log) — and the
//! client's result says what it sent, what the server saw (46, up arrived) and what its replies
//! came back with (46: the server marks its replies as asked, by default as the probe sends).
//!
//! Three nodes, client — middle — server: an nftables rule on the middle node rewrites DSCP
//! to 0 (`ip dscp set cs0`) on one direction only, and the result says "DSCP 46 (EF) bleached
//! to 0 up, arrived down" (and the mirror). Links that mark ECN (`ecn = "100ms"`, a rate the
//! probe's burst overruns, one marking link each way): the CE counts the probe reads each way
//! are the lab's own mark counts of those directions (`npt lab status --json`, `ce_marked`).
//!
//! A monitor of a marked probe across the same three nodes: the `bleached` alert fires after
//! its 2 rounds while the middle node bleaches DSCP up, the store reads the range back
//! "bleached to 0 up, arrived down", and the alert clears after 2 rounds once the rule is gone;
//! a monitor of the burst stores each round's CE counts, which add up to the lab's own marks,
//! and a `ce_pct` alert fires on them.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use common::lab::Lab;
use common::monitor::{rounds, Monitor};
use common::{lab, run, scratch, u};
use npt_result::marking::Fate;

const NAME: &str = "npt-dscp";

fn topology() -> String {
    format!(
        "name = \"{NAME}\"\n[[node]]\nname = \"client\"\n[[node]]\nname = \"server\"\n\
         [[link]]\na = \"client\"\nb = \"server\"\ndelay = \"5ms\"\n\
         [[service]]\nname = \"serve\"\nnode = \"server\"\n\
         cmd = [\"npt\", \"serve\", \"--listen\", \"0.0.0.0:7777\", \"--log-every\", \"200ms\"]\n\
         ready = \"tcp://10.0.1.2:7777\"\n"
    )
}

/// The serve service's log: a lab that is up keeps one file per service in its state
/// directory (`/run/npt-lab/NAME/`).
fn serve_log() -> PathBuf {
    PathBuf::from("/run/npt-lab").join(NAME).join("serve.log")
}

/// The server's last marking line once it counts at least `want` datagrams: `(dscp, count)`
/// pairs. Waits at most 10 s (the line comes every 200 ms while marked traffic arrives).
fn server_counts(want: u64) -> Vec<(u64, u64)> {
    let log = serve_log();
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let last = text
            .lines()
            .rev()
            .find_map(|l| l.split_once("udp marking so far: dscp "))
            .map(|(_, rest)| rest.split(';').next().unwrap_or(rest).to_string());
        if let Some(line) = last {
            let counts: Vec<(u64, u64)> = line
                .split(", ")
                .filter_map(|p| p.split_once(": "))
                .map(|(d, n)| (d.trim().parse().unwrap(), n.trim().parse().unwrap()))
                .collect();
            if counts.iter().map(|c| c.1).sum::<u64>() >= want || Instant::now() > until {
                return counts;
            }
        } else if Instant::now() > until {
            panic!("no marking line in {}:\n{text}", log.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn dscp_46_is_seen_by_the_server_across_a_lab_link() {
    if lab::skipped("lab_marking") {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let l = lab::Lab::up(dir.path(), NAME, &topology());
    let before = l.settled_counts(0, "client", "server").0;
    let doc = l.npt_json(
        "client",
        &[
            "probe",
            "udp://10.0.1.2:7777",
            "-n",
            "200",
            "--pps",
            "100",
            "--dscp",
            "46",
            "-q",
        ],
        &dir.path().join("probe.json"),
        "probe",
    );
    let crossed = l.settled_counts(0, "client", "server").0 - before;
    let sent = u(&doc, "/summary/sent");
    let received = u(&doc, "/summary/received");
    let m = &doc["summary"]["marking"];
    eprintln!("client: sent {sent}, received {received}, marking {m}; link carried {crossed}");
    assert_eq!(sent, 200);
    assert_eq!(m["sent"], serde_json::json!({"dscp": 46, "ecn": 0}), "{m}");
    // What came back, as the client's kernel told: every reply (and the flow report) counted;
    // the replies marked 46 as the probe asked, the flow report (which asks nothing) not.
    let back = m["received"].as_array().expect("replies counted");
    let back_total: u64 = back.iter().map(|c| u(c, "/packets")).sum();
    assert!(back_total >= received, "{back:?} vs {received} replies");
    let replies = m["replies"].as_array().expect("on-time replies counted");
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(
        (u(&replies[0], "/dscp"), u(&replies[0], "/packets")),
        (46, received)
    );
    assert_eq!(m["up"]["dscp"], "arrived", "{m}");
    assert_eq!(m["down"]["dscp"], "arrived", "{m}");
    // The server's own count: every datagram that crossed the link arrived with DSCP 46 and
    // none with another value (the probe's packets and its flow query).
    let counts = server_counts(crossed);
    eprintln!("server: {counts:?}");
    assert_eq!(counts.len(), 1, "one DSCP value only: {counts:?}");
    assert_eq!(counts[0].0, 46, "{counts:?}");
    assert!(
        counts[0].1 >= sent && counts[0].1 <= crossed,
        "the server counted {} at DSCP 46; the probe sent {sent}, the link carried {crossed}",
        counts[0].1
    );
}

const CHAIN: &str = "npt-mark";

/// client — middle — server. The client → middle direction marks ECN past 100 ms of queue and
/// the server → middle direction past 20 ms, at rates a 1,000 packet/s burst of 250-byte
/// packets overruns (1 Mbit/s up: 2.2 ms a packet, the queue grows 1.2 ms a packet; 800 kbit/s
/// down: 2.8 ms, growing 0.6 ms a packet): about the first 80 up and 35 down pass unmarked.
/// The default queue (1,000 packets) never drops them.
const CHAIN_TOPOLOGY: &str = r#"name = "npt-mark"
[[node]]
name = "client"
[[node]]
name = "middle"
[[node]]
name = "server"
[[link]]
a = "client"
b = "middle"
[link.a_to_b]
rate = "1mbit"
ecn = "100ms"
[[link]]
a = "middle"
b = "server"
[link.b_to_a]
rate = "800kbit"
ecn = "20ms"
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.2.2:7777"
"#;

/// An nftables rule on the middle node that sets DSCP 0 on what arrives from `from` (the
/// middle node's interface toward a node is named after it): one direction only.
fn bleach_from(from: &str) -> String {
    format!(
        "table inet npt_mark {{\n\tchain bleach {{\n\t\ttype filter hook forward priority filter; \
         policy accept;\n\t\tiifname \"{from}\" ip dscp set cs0\n\t}}\n}}\n"
    )
}

/// `nft ARGS` on the middle node, which must succeed.
fn nft(l: &Lab, args: &[&str]) {
    l.exec_ok("middle", &[&["nft"], args].concat());
}

/// A probe from the client to the server, its document and its text (`npt report`).
fn probe(l: &Lab, args: &[&str], name: &str) -> (serde_json::Value, String) {
    let file = scratch().join(format!("lab-marking-{name}.json"));
    let mut a = vec!["probe", "udp://10.0.2.2:7777", "-q"];
    a.extend_from_slice(args);
    let doc = l.npt_json("client", &a, &file, "probe");
    let out = run(&["report", file.to_str().unwrap()], Duration::from_secs(10));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{name}: {}", doc["summary"]["marking"]);
    let line = text
        .lines()
        .skip_while(|l| !l.starts_with("marking"))
        .take(3);
    eprintln!("{}", line.collect::<Vec<_>>().join("\n"));
    (doc, text)
}

/// The lab's own CE mark count of link `link`'s direction from `from` to `to`, settled.
fn ce_marked(l: &Lab, link: usize, from: &str, to: &str) -> u64 {
    u(&l.settled(link, from, to), "/applied/ce_marked")
}

#[test]
fn bleached_one_way_and_ce_marks_each_way_read_as_the_lab_made_them() {
    if lab::skipped(module_path!()) {
        return;
    }
    // No turn: no delay here, and what is compared — the DSCP a rule wrote, the marks the
    // lab's links made — does not depend on when a packet is released.
    let dir = scratch();
    let l = Lab::up(&dir, CHAIN, CHAIN_TOPOLOGY);
    let plain = ["-n", "200", "--pps", "200", "--dscp", "46"];

    let up_rule = dir.join("mark-up.nft");
    std::fs::write(&up_rule, bleach_from("client")).unwrap();
    nft(&l, &["-f", up_rule.to_str().unwrap()]);
    let (doc, text) = probe(&l, &plain, "bleached-up");
    let m = &doc["summary"]["marking"];
    assert_eq!(
        (&m["up"]["dscp"], &m["down"]["dscp"]),
        (&"bleached".into(), &"arrived".into())
    );
    assert_eq!(u(m, "/up/arrived/dscp"), 0);
    assert_eq!(u(m, "/up/packets"), u(&doc, "/summary/received"));
    assert!(
        text.contains("DSCP 46 (EF) bleached to 0 up, arrived down"),
        "{text}"
    );

    nft(&l, &["delete", "table", "inet", "npt_mark"]);
    let down_rule = dir.join("mark-down.nft");
    std::fs::write(&down_rule, bleach_from("server")).unwrap();
    nft(&l, &["-f", down_rule.to_str().unwrap()]);
    let (doc, text) = probe(&l, &plain, "bleached-down");
    let m = &doc["summary"]["marking"];
    assert_eq!(
        (&m["up"]["dscp"], &m["down"]["dscp"]),
        (&"arrived".into(), &"bleached".into())
    );
    assert_eq!(u(m, "/down/arrived/dscp"), 0);
    assert!(
        text.contains("DSCP 46 (EF) arrived up, bleached to 0 down"),
        "{text}"
    );
    nft(&l, &["delete", "table", "inet", "npt_mark"]);

    // ECN: a burst that fills both marking queues.
    let (up0, down0) = (
        ce_marked(&l, 0, "client", "middle"),
        ce_marked(&l, 1, "server", "middle"),
    );
    let burst = [
        "-n",
        "400",
        "--pps",
        "1000",
        "-s",
        "250",
        "--dscp",
        "46",
        "--ecn",
        "ect0",
        "--loss-timeout",
        "3s",
    ];
    let (doc, text) = probe(&l, &burst, "ce");
    let (up1, down1) = (
        ce_marked(&l, 0, "client", "middle"),
        ce_marked(&l, 1, "server", "middle"),
    );
    let m = &doc["summary"]["marking"];
    let (lab_up, lab_down) = (up1 - up0, down1 - down0);
    eprintln!("lab: CE marked up {lab_up}, down {lab_down}");
    assert_eq!(
        u(&doc, "/summary/received"),
        400,
        "the queues hold the burst"
    );
    assert!(
        lab_up > 0 && lab_down > 0,
        "both queues passed 5 ms: {lab_up} {lab_down}"
    );
    assert_eq!(u(m, "/up/ce"), lab_up, "{m}");
    assert_eq!(u(m, "/down/ce"), lab_down, "{m}");
    assert_eq!(
        (&m["up"]["ecn"], &m["down"]["ecn"]),
        (&"arrived".into(), &"arrived".into())
    );
    let want =
        format!("ECN ECT(0) arrived up (CE {lab_up} of 400), arrived down (CE {lab_down} of 400)");
    assert!(text.contains(&want), "{text}");
}

/// `npt report --from STORE --target ef --since SINCE` in `format`: what it wrote.
fn range(store: &Path, since: &str, format: &str) -> String {
    let out = run(
        &[
            "report",
            "--from",
            store.to_str().unwrap(),
            "--target",
            "ef",
            "--since",
            since,
            "--format",
            format,
        ],
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn rfc3339(ms: i64) -> String {
    let t = SystemTime::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap());
    humantime::format_rfc3339_millis(t).to_string()
}

fn wall_ms() -> i64 {
    npt_monitor::round::wall_ms(SystemTime::now())
}

/// A monitor on the client of the same three nodes watches a probe marked DSCP 46 / ECT(0)
/// every second, with a `bleached` alert of 2 rounds to fire and 2 to clear. With the
/// middle node bleaching DSCP from the client, every round stores "bleached" up and
/// "arrived" down, the alert fires at the second round (its gauge and the scrape say so), and
/// the range reads back "DSCP 46 (EF) bleached to 0 up, arrived down" in text and on the HTML
/// page; once the rule is deleted, the second round that arrived as sent clears it, the range
/// since then reads "arrived up, arrived down", and the whole range "mixed" up.
#[test]
fn a_monitor_alerts_on_a_bleached_marking_and_clears_when_it_arrives_again() {
    if lab::skipped(module_path!()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let l = Lab::up(
        dir.path(),
        "npt-markmon",
        &CHAIN_TOPOLOGY.replace("name = \"npt-mark\"", "name = \"npt-markmon\""),
    );
    let rule = dir.path().join("bleach-up.nft");
    std::fs::write(&rule, bleach_from("client")).unwrap();
    nft(&l, &["-f", rule.to_str().unwrap()]);
    let store = dir.path().join("m.db");
    let cfg = dir.path().join("m.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"vantage = "lab"
store = "{}"
listen = "127.0.0.1:0"
every = "1s"
[[target]]
name = "ef"
kind = "probe"
target = "udp://10.0.2.2:7777"
length = "300ms"
args = ["--pps", "100", "--dscp", "46", "--ecn", "ect0", "--loss-timeout", "200ms"]
[[alert]]
name = "marking"
metric = "bleached"
rounds = 2
clear_rounds = 2
"#,
            store.display()
        ),
    )
    .unwrap();
    let ns = npt_lab::plan::netns_name("npt-markmon", "client");
    let mut m = Monitor::start_in(Some(&ns), &cfg, &store, true);
    let firing = |m: &Monitor| {
        m.metric(
            "npt_monitor_alert_firing",
            &["target=\"ef\"", "alert=\"marking\""],
        )
    };
    m.until("the alert fires", Duration::from_secs(20), |m| {
        firing(m) == Some(1.0)
    });
    let way = |m: &Monitor, d: &str| {
        m.metric(
            "npt_monitor_last_marking_arrived",
            &["target=\"ef\"", &format!("direction=\"{d}\"")],
        )
    };
    assert_eq!((way(&m, "up"), way(&m, "down")), (Some(0.0), Some(1.0)));
    let (_, scrape) = m.get("/metrics");
    for line in String::from_utf8_lossy(&scrape).lines() {
        if line.starts_with("npt_monitor_last_marking") || line.starts_with("npt_monitor_last_ce") {
            eprintln!("{line}");
        }
    }
    // What the store holds so far: bleached rounds only.
    let text = range(&store, "1h", "text");
    eprintln!("{text}");
    assert!(
        text.contains(
            "DSCP 46 (EF) bleached to 0 up, arrived down; ECN ECT(0) arrived up (CE 0 of"
        ),
        "{text}"
    );
    let html = range(&store, "1h", "html");
    assert!(
        html.contains(
            "<td>marking up</td><td>DSCP 46 (EF) bleached to 0, ECN ECT(0) arrived (CE 0 of"
        ),
        "the page's summary says it"
    );

    let before = wall_ms();
    nft(&l, &["delete", "table", "inet", "npt_mark"]);
    let removed = wall_ms();
    m.until("the alert clears", Duration::from_secs(20), |m| {
        firing(m) == Some(0.0)
    });
    assert_eq!((way(&m, "up"), way(&m, "down")), (Some(1.0), Some(1.0)));
    m.stop();
    for line in m.lines().iter().filter(|l| l.contains("marking")) {
        eprintln!("{line}");
    }

    let stored = rounds(&store, "ef");
    let st = npt_monitor::store::sqlite::Sqlite::open_read(&store).unwrap();
    let events = npt_monitor::store::Store::events(&st, i64::MIN, i64::MAX, 100).unwrap();
    let at = |kind: &str| {
        events
            .iter()
            .find(|e| e.kind == kind && e.rule.as_deref() == Some("marking"))
            .unwrap_or_else(|| panic!("no {kind}: {events:#?}"))
            .ts_ms
    };
    let (fired, cleared) = (at("alert_firing"), at("alert_resolved"));
    let fate = |r: &npt_monitor::store::RoundRow| {
        let f = &r.figures;
        let dscp = |w: &Option<npt_result::marking::Way>| w.map(|w| w.dscp);
        (f.bleached(), dscp(&f.marking_up), dscp(&f.marking_down))
    };
    for r in &stored {
        eprintln!(
            "round {}..{} {:?}: {:?}",
            r.start_ms - stored[0].start_ms,
            r.end_ms - stored[0].start_ms,
            r.status,
            fate(r)
        );
    }
    let bleached = (Some(1.0), Some(Fate::Bleached), Some(Fate::Arrived));
    let arrived = (Some(0.0), Some(Fate::Arrived), Some(Fate::Arrived));
    // The rounds the alert counts: those with a marking (a round due while the one before
    // still ran on a busy box is skipped, and counts neither way).
    let stored: Vec<_> = stored
        .iter()
        .filter(|r| r.figures.bleached().is_some())
        .collect();
    // Fired by the second round, both bleached up and arrived down.
    let first: Vec<_> = stored.iter().filter(|r| r.end_ms <= fired).collect();
    assert_eq!(first.len(), 2, "{stored:#?}");
    assert!(first.iter().all(|r| fate(r) == bleached), "{first:#?}");
    // Every round that ended before the rule went: bleached; every one that started after it:
    // arrived.
    for &r in &stored {
        if r.end_ms < before {
            assert_eq!(fate(r), bleached, "{r:?}");
        } else if r.start_ms > removed {
            assert_eq!(fate(r), arrived, "{r:?}");
        }
    }
    // Cleared by the second round in a row that arrived as sent: the round before those two
    // did not.
    let upto: Vec<_> = stored
        .iter()
        .copied()
        .filter(|r| r.end_ms <= cleared)
        .collect();
    let n = upto.len();
    assert!(n >= 4, "{upto:#?}");
    assert_eq!((fate(upto[n - 1]), fate(upto[n - 2])), (arrived, arrived));
    assert_ne!(fate(upto[n - 3]).0, Some(0.0), "{upto:#?}");
    // The range since the rule went reads it arrived each way; the whole range, mixed up.
    let text = range(&store, &rfc3339(removed), "text");
    eprintln!("{text}");
    assert!(
        text.contains("DSCP 46 (EF) arrived up, arrived down; ECN ECT(0) arrived up (CE 0 of"),
        "{text}"
    );
    let text = range(&store, "1h", "text");
    eprintln!("{text}");
    assert!(text.contains("DSCP 46 (EF) mixed (mostly "), "{text}");
}

/// A monitor of a burst of ECT(0) packets across the same three nodes' marking links (the
/// burst test's above, 400 packets a round every 4 s): each stored round's CE counts are the
/// lab's own marks of that round's packets — their sums over the rounds equal the lab's counts
/// each way, read with no round in flight — and a `ce_pct` alert above 50 % fires after its 2
/// rounds.
#[test]
fn a_monitor_counts_the_ce_marks_the_lab_made_and_alerts_on_their_share() {
    if lab::skipped(module_path!()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let l = Lab::up(
        dir.path(),
        "npt-cemon",
        &CHAIN_TOPOLOGY.replace("name = \"npt-mark\"", "name = \"npt-cemon\""),
    );
    let store = dir.path().join("m.db");
    let cfg = dir.path().join("m.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"vantage = "lab"
store = "{}"
listen = "127.0.0.1:0"
every = "4s"
[[target]]
name = "burst"
kind = "probe"
target = "udp://10.0.2.2:7777"
length = "400ms"
args = ["--pps", "1000", "-s", "250", "--dscp", "46", "--ecn", "ect0", "--loss-timeout", "2s"]
[[alert]]
name = "congested"
metric = "ce_pct"
above = 50
rounds = 2
"#,
            store.display()
        ),
    )
    .unwrap();
    let ns = npt_lab::plan::netns_name("npt-cemon", "client");
    let mut m = Monitor::start_in(Some(&ns), &cfg, &store, true);
    m.until("the alert fires", Duration::from_secs(30), |m| {
        m.metric("npt_monitor_alert_firing", &["alert=\"congested\""]) == Some(1.0)
    });
    // Stopped just after a round ends, seconds before the next starts: none in flight.
    let n = m.rounds_total("burst", "ok");
    m.until("one more round", Duration::from_secs(10), |m| {
        m.rounds_total("burst", "ok") > n
    });
    m.stop();
    let (lab_up, lab_down) = (
        ce_marked(&l, 0, "client", "middle"),
        ce_marked(&l, 1, "server", "middle"),
    );
    let stored = rounds(&store, "burst");
    let ce = |w: Option<npt_result::marking::Way>| w.map_or(0, |w| w.ce);
    for r in &stored {
        let f = &r.figures;
        eprintln!(
            "round {:?}: sent {}, CE up {}, down {}, ce_pct {:?}",
            r.status,
            f.sent,
            ce(f.marking_up),
            ce(f.marking_down),
            f.ce_pct()
        );
    }
    let up: u64 = stored.iter().map(|r| ce(r.figures.marking_up)).sum();
    let down: u64 = stored.iter().map(|r| ce(r.figures.marking_down)).sum();
    eprintln!("lab: CE marked up {lab_up}, down {lab_down}; the rounds: {up}, {down}");
    assert_eq!((up, down), (lab_up, lab_down));
    // The rounds that read packets (on a busy box a round may start too late to send any:
    // it has no share, and counts neither way).
    let read: Vec<_> = stored.iter().filter(|r| r.figures.count > 0).collect();
    assert!(read.len() >= 3, "{stored:#?}");
    assert!(
        read.iter()
            .all(|r| r.figures.ce_pct().is_some_and(|p| p > 50.0)),
        "{stored:#?}"
    );
    let st = npt_monitor::store::sqlite::Sqlite::open_read(&store).unwrap();
    let events = npt_monitor::store::Store::events(&st, i64::MIN, i64::MAX, 100).unwrap();
    let fired = events
        .iter()
        .find(|e| e.kind == "alert_firing")
        .unwrap_or_else(|| panic!("{events:#?}"))
        .ts_ms;
    assert_eq!(
        read.iter().filter(|r| r.end_ms <= fired).count(),
        2,
        "{stored:#?}"
    );
}
