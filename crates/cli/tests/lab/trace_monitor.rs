//! `npt monitor` keeps a trace's per-segment path MTU and marking (root): the chain of
//! `trace_mtu.rs` (client — r1 — r2 — server, the r1–r2 link 1400 bytes, a hop agent on r1 and
//! r2) with `trace_marking.rs`'s rule on r1 that sets DSCP 0 on what it sends toward r2. A
//! monitor in the client node runs two trace targets of the chain: one with `--mtu`, one with
//! `--dscp 46 --ecn ect0`. Each round's segments are stored; `npt report --from` reads the
//! range back as one trace whose segments say 1372 bytes each way on r1 → r2 and 1472 on the
//! others, and "bleached" up on r1 → r2 only — each segment's counts the stored rounds' own,
//! added — and `npt compare` shows both ranges segment by segment. The round's mtu figures (the
//! gauge an `mtu_*_bytes` alert reads) are the smallest segment's. No turn: sizes and
//! markings are counted, not timed.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::lab::{self, Lab};
use common::monitor::{rounds, Monitor};
use common::*;
use npt_monitor::kinds::KindStats;

/// The rounds each target must have ended (the last may be cut short by the stop).
const ROUNDS: f64 = 3.0;

#[test]
fn a_monitor_keeps_each_segments_mtu_and_marking_and_reads_them_back() {
    if lab::skipped(module_path!()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let topology = super::trace_mtu::TOPOLOGY.replacen("name = \"tmtu\"", "name = \"tmmon\"", 1);
    let l = Lab::up(dir.path(), "tmmon", &topology);
    let rule = dir.path().join("tmmon-bleach.nft");
    std::fs::write(&rule, super::trace_marking::bleach_toward("r2")).unwrap();
    l.exec_ok("r1", &["nft", "-f", rule.to_str().unwrap()]);

    let store = dir.path().join("m.db");
    let chain = r#"kind = "trace"
target = "tcp://10.0.3.2:7777"
hops = ["npt://10.0.1.2:7777", "npt://10.0.2.2:7777"]
token = "tm""#;
    let cfg = write_file(
        dir.path(),
        "m.toml",
        &format!(
            r#"
vantage = "lab-client"
store = "{store}"
listen = "127.0.0.1:0"
[[target]]
name = "mtu"
{chain}
every = "3s"
args = ["-c", "2", "-i", "100ms", "-W", "500ms", "--mtu", "--mtu-timeout", "2s"]
[[target]]
name = "marks"
{chain}
every = "5s"
args = ["-c", "2", "-i", "100ms", "-W", "500ms", "--dscp", "46", "--ecn", "ect0"]
"#,
            store = store.display()
        ),
    );
    let ns = npt_lab::plan::netns_name("tmmon", "client");
    let mut m = Monitor::start_in(Some(&ns), cfg.as_ref(), &store, true);
    m.until("3 rounds of each target", Duration::from_secs(25), |m| {
        m.rounds_total("mtu", "ok") >= ROUNDS && m.rounds_total("marks", "ok") >= ROUNDS
    });
    let gauge = |dir: &str| {
        m.metric(
            "npt_monitor_last_mtu_bytes",
            &["target=\"mtu\"", &format!("direction=\"{dir}\"")],
        )
    };
    let (up, down) = (gauge("up"), gauge("down"));
    m.stop();
    assert_eq!(
        (up, down),
        (Some(1372.0), Some(1372.0)),
        "the smallest segment's"
    );

    // The rounds that ran to their end: all but the last of each target, which Ctrl-C may
    // have cut short. What they say, added here, is what their range must say.
    let done = |target: &str| {
        let mut rs: Vec<_> = rounds(&store, target)
            .into_iter()
            .filter(|r| r.stats.is_some())
            .collect();
        let last = rs.pop().expect("rounds").start_ms;
        let sums: Vec<npt_monitor::kinds::TraceSum> = rs
            .iter()
            .map(|r| match KindStats::decode(r.stats.as_deref().unwrap()) {
                Ok(KindStats::Trace(t)) => t,
                other => panic!("a trace round: {other:?}"),
            })
            .collect();
        for (r, t) in rs.iter().zip(&sums) {
            let mtu = t.segments[1].mtu.is_some();
            let want = mtu.then_some(1372.0);
            assert_eq!(
                (r.figures.mtu_up_bytes, r.figures.mtu_down_bytes),
                (want, want)
            );
        }
        eprintln!("{target}: {} rounds ran to their end", sums.len());
        (sums, last)
    };
    let (mtu_rounds, mtu_until) = done("mtu");
    let (mark_rounds, marks_until) = done("marks");
    let mtu_sent: u64 = mtu_rounds
        .iter()
        .map(|t| t.segments[1].mtu.as_ref().unwrap().searched.up.sent)
        .sum();
    // Each segment's packets read up and down, over the rounds.
    let echoes: Vec<(u64, u64)> = (0..3)
        .map(|i| {
            let m = |t: &npt_monitor::kinds::TraceSum| t.segments[i].marking.clone().unwrap();
            let up = mark_rounds.iter().map(|t| m(t).up.way().packets).sum();
            let down = mark_rounds.iter().map(|t| m(t).down.way().packets).sum();
            (up, down)
        })
        .collect();

    let report = |target: &str, until: i64| {
        let file = dir.path().join(format!("{target}.json"));
        let until = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(until).unwrap());
        let until = humantime::format_rfc3339_millis(until).to_string();
        let out = run(
            &[
                "report",
                "--from",
                store.to_str().unwrap(),
                "--target",
                target,
                "--since",
                "1h",
                "--until",
                &until,
                "--format",
                "json",
                "-o",
                file.to_str().unwrap(),
            ],
            Duration::from_secs(20),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = run(&["report", file.to_str().unwrap()], Duration::from_secs(10));
        let text = String::from_utf8_lossy(&text.stdout).into_owned();
        eprintln!("{target}:\n{text}");
        let doc = common::json(&file);
        assert_valid(&doc, "trace");
        (file, doc, text)
    };

    let (mtu_file, doc, text) = report("mtu", mtu_until);
    let seg = &doc["segments"];
    for d in ["up", "down"] {
        for (i, size, verdict) in [
            (0, 1472, "max_crossed"),
            (1, 1372, "local"),
            (2, 1472, "max_crossed"),
        ] {
            let w = &seg[i]["mtu"][d];
            assert_eq!(
                (&w["largest_datagram"], &w["verdict"]),
                (&size.into(), &verdict.into()),
                "segment {} {d}: {w}",
                i + 1
            );
            assert!(seg[i]["mtu"]["error"].is_null(), "{}", seg[i]);
        }
    }
    assert_eq!(
        seg[1]["mtu"]["up"]["sent"], mtu_sent,
        "the rounds' probes added"
    );
    assert!(text.contains("1372 B (local interface MTU 1400)"), "{text}");

    let (marks_file, doc, text) = report("marks", marks_until);
    let seg = &doc["segments"];
    for (i, up) in [(0, "arrived"), (1, "bleached"), (2, "arrived")] {
        let w = &seg[i]["marking"];
        assert_eq!(w["up"]["dscp"], up, "segment {}: {w}", i + 1);
        assert_eq!(w["up"]["ecn"], "arrived", "{w}");
        assert_eq!(w["down"]["dscp"], "arrived", "segment {}: {w}", i + 1);
        let (up_n, down_n) = echoes[i];
        assert_eq!(w["up"]["packets"], up_n, "the rounds' echoes added: {w}");
        assert_eq!(
            w["down"]["packets"], down_n,
            "the rounds' replies added: {w}"
        );
        assert!(up_n >= 20 * 2, "{echoes:?}");
    }
    assert_eq!(seg[1]["marking"]["up"]["arrived"]["dscp"], 0);
    assert!(text.contains("bleached to 0"), "{text}");

    let out = run(
        &[
            "compare",
            mtu_file.to_str().unwrap(),
            marks_file.to_str().unwrap(),
        ],
        Duration::from_secs(20),
    );
    let table = String::from_utf8_lossy(&out.stdout);
    eprintln!("{table}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(table.contains("Trace segments"), "{table}");
    // The r1 → r2 segment in each row: the mtu row's sizes, the marks row's marking.
    let r1r2: Vec<String> = table
        .lines()
        .filter(|l| l.contains("2 npt://10.0.1.2:7777 → tcp://10.0.2.2:7777"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(r1r2.len(), 2, "{table}");
    assert!(r1r2[0].ends_with("1372 local 1372 local - -"), "{table}");
    let (up, down) = echoes[1];
    assert!(
        r1r2[1].ends_with(&format!("- - bleached 0 CE 0/{up} arrived CE 0/{down}")),
        "{table}"
    );
}
