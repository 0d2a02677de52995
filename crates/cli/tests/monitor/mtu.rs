//! `npt monitor` runs `npt mtu` rounds against `npt serve` on loopback (1472-byte datagrams
//! cross both ways: loopback's MTU is 65536 and the search stops at a 1500-byte packet's
//! payload), a round every 2 s bounded by `--timeout 1s`; the rounds are stored with their
//! sizes as figures (scraped as gauges), `npt report --from` reads them back as one valid mtu
//! document whose counts are the rounds' own added, and `npt compare` shows the range's sizes
//! beside a single run's.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::monitor::{rounds, Monitor};
use common::*;
use npt_monitor::kinds::KindStats;

#[test]
fn mtu_rounds_are_stored_read_back_and_compared() {
    let (_serve, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        r#"
vantage = "test"
store = "m.db"
listen = "127.0.0.1:0"
every = "2s"
[[target]]
name = "lo"
kind = "mtu"
target = "udp://{addr}"
args = ["--timeout", "1s"]
"#
    );
    let cfg = write_file(dir.path(), "m.toml", &cfg);
    let store = dir.path().join("m.db");
    let mut m = Monitor::start(cfg.as_ref(), &store, true);
    m.until("3 mtu rounds", Duration::from_secs(30), |m| {
        m.rounds_total("lo", "ok") >= 3.0
    });
    let up = m.metric(
        "npt_monitor_last_mtu_bytes",
        &["target=\"lo\"", "direction=\"up\""],
    );
    let down = m.metric(
        "npt_monitor_last_mtu_bytes",
        &["target=\"lo\"", "direction=\"down\""],
    );
    m.stop();
    assert_eq!((up, down), (Some(1472.0), Some(1472.0)));
    let stored = rounds(&store, "lo");
    assert!(stored.len() >= 3, "{}", stored.len());
    // Each round's figures are its sizes; its stats, added here, are what the range must say.
    let (mut sent_up, mut sent_down) = (0, 0);
    for r in &stored {
        assert_eq!(
            (r.figures.mtu_up_bytes, r.figures.mtu_down_bytes),
            (Some(1472.0), Some(1472.0)),
            "{r:?}"
        );
        let Ok(KindStats::Mtu(s)) = KindStats::decode(r.stats.as_deref().unwrap()) else {
            panic!("an mtu round's stats: {r:?}");
        };
        sent_up += s.up.sent;
        sent_down += s.down.sent;
    }
    let n = stored.len() as u64;
    let json = dir.path().join("lo.json");
    let from = |extra: &[&str]| {
        let mut a = vec![
            "report",
            "--from",
            store.to_str().unwrap(),
            "--target",
            "lo",
            "--since",
            "1h",
        ];
        a.extend_from_slice(extra);
        let out = run(&a, Duration::from_secs(30));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    from(&["--format", "json", "-o", json.to_str().unwrap()]);
    let doc = common::json(&json);
    assert_valid(&doc, "mtu");
    let s = &doc["summary"];
    for way in ["up", "down"] {
        let d = &s[way];
        assert_eq!(d["largest_datagram"], 1472, "{way}: {d}");
        assert_eq!(d["largest_packet"], 1500, "{way}: {d}");
        assert_eq!(d["verdict"], "max_crossed", "{way}: {d}");
        assert!(d.get("smallest_lost").is_none(), "{way}: {d}");
        let r = &s["rounds"][way];
        assert_eq!(r["verdicts"], serde_json::json!({"max_crossed": n}), "{r}");
        assert_eq!(
            (&r["smallest"], &r["largest"]),
            (&1472.into(), &1472.into())
        );
    }
    assert_eq!(
        (&s["up"]["sent"], &s["down"]["sent"]),
        (&sent_up.into(), &sent_down.into())
    );
    assert_eq!(s["rounds"]["rounds"], n, "{s}");
    assert_eq!(s["rounds"]["changed"], 0, "{s}");
    let text = from(&[]);
    eprintln!("{text}");
    assert!(
        text.contains(&format!("{n} rounds, 0 changed"))
            && text.contains(&format!("up: max_crossed {n}, 1472 bytes in every round"))
            && text.contains("up: 1472 bytes (IP 1500) crossed"),
        "{text}"
    );
    // The range beside one run capped lower: each row's sizes in the mtu column.
    let one = dir.path().join("one.json");
    let out = run(
        &[
            "mtu",
            &format!("udp://{addr}"),
            "--max",
            "1200",
            "--timeout",
            "2s",
            "--json",
            one.to_str().unwrap(),
            "-q",
        ],
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(
        &[
            "compare",
            &format!("monitor={}", json.display()),
            &format!("capped={}", one.display()),
        ],
        Duration::from_secs(30),
    );
    let table = String::from_utf8_lossy(&out.stdout);
    eprintln!("{table}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}: {table}"))
            .to_string()
    };
    assert!(table.contains("mtu up/down"), "{table}");
    assert!(row("monitor").contains("1472 / 1472"), "{table}");
    assert!(row("capped").contains("1200 / 1200"), "{table}");
}
