//! Noise is not a finding: `npt compare` on the loopback example (`examples/compare/
//! loopback.toml`: direct, socat, a SOCKS5 proxy; real processes, the file's ports changed to
//! free ones) gives every difference its spread, prints "within noise" with no percentage
//! where the difference is inside it, and a percentage only of a base at least 10 × its
//! spread — in the JSON, the text, the Markdown. The same result compared with itself
//! (files mode) is within noise by construction, so the rule is seen to bite. And two result
//! files written here with known histograms — a direct path and a bimodal forwarder 186 ×
//! slower — give exactly the ± worked out by hand, and a finding, not "within noise".

#![cfg(test)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{json, repo_root, run, serve, write_file};
use npt_testkit::process::free_port;
use npt_testkit::proxies;

/// A row's cell under `column` in a text or Markdown table whose header names the columns.
fn cell(table: &str, row: &str, column: usize, markdown: bool) -> String {
    let line = table
        .lines()
        .find(|l| {
            if markdown {
                l.starts_with(&format!("| {row} |"))
            } else {
                l.starts_with(&format!("{row} "))
            }
        })
        .unwrap_or_else(|| panic!("no row {row} in\n{table}"));
    if markdown {
        return line.split(" | ").nth(column).unwrap().trim().to_string();
    }
    // Text cells are separated by two or more spaces.
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .nth(column)
        .unwrap()
        .to_string()
}

/// The overhead and vs-baseline columns of one row, checked against the noise rule.
fn check_row(r: &serde_json::Value, base: Option<&serde_json::Value>, text: &str, md: &str) {
    let name = r["name"].as_str().unwrap();
    let spread = r["avg_spread_ms"].as_f64().unwrap();
    assert!(spread >= 0.0, "{r}");
    assert!(r["avg_spread_from"].is_string(), "{r}");
    for (col, which, base_fig) in [
        (
            7,
            "overhead",
            r["theoretical_ms"]
                .as_f64()
                .map(|t| (t, r["theoretical_spread_ms"].as_f64().unwrap())),
        ),
        (
            8,
            "vs_baseline",
            base.and_then(|b| Some((b["avg_ms"].as_f64()?, b["avg_spread_ms"].as_f64()?))),
        ),
    ] {
        let (text_cell, md_cell) = (cell(text, name, col, false), cell(md, name, col, true));
        if r[format!("{which}_ms")].is_null() {
            assert_eq!(text_cell, "-", "{name} {which}: {r}");
            continue;
        }
        if which == "vs_baseline" && base.is_some_and(|b| b["name"] == r["name"]) {
            assert_eq!(text_cell, "baseline");
            continue;
        }
        let noise = r[format!("{which}_within_noise")].as_bool().unwrap();
        let pct = &r[format!("{which}_pct")];
        let d = r[format!("{which}_ms")].as_f64().unwrap();
        let s = r[format!("{which}_spread_ms")].as_f64().unwrap();
        assert_eq!(noise, d.abs() <= s, "{name} {which}: {r}");
        if noise {
            assert!(pct.is_null(), "{name} {which}: a % within noise: {r}");
            for c in [&text_cell, &md_cell] {
                assert!(c.starts_with("within noise (±"), "{name} {which}: {c}");
                assert!(!c.contains('%'), "{name} {which}: {c}");
            }
        } else {
            let pm = if s > 0.0 && s < 0.005 {
                "±<0.01".to_string()
            } else {
                format!("±{s:.2}")
            };
            assert!(text_cell.contains(&pm), "{text_cell}");
            let (b, bs) = base_fig.unwrap();
            // A percentage only of a base at least 10 × its spread.
            assert_eq!(pct.is_null(), b < 10.0 * bs, "{name} {which}: {r}");
            assert_eq!(text_cell.contains('%'), !pct.is_null(), "{text_cell}");
        }
        assert_eq!(text_cell, md_cell, "{name} {which}");
    }
}

#[test]
fn the_loopback_example_calls_noise_noise() {
    if !proxies::have("/usr/bin/socat") || !proxies::have("/usr/bin/microsocks") {
        return;
    }
    let (_srv, addr) = serve(&[]);
    let (fwd, socks) = (free_port(), free_port());
    let _relay = proxies::socat(fwd, addr);
    let _proxy = proxies::microsocks(socks, None);
    let example =
        std::fs::read_to_string(repo_root().join("examples/compare/loopback.toml")).unwrap();
    let file_text = example
        .replace("127.0.0.1:7777", &addr.to_string())
        .replace("127.0.0.1:7778", &format!("127.0.0.1:{fwd}"))
        .replace("127.0.0.1:1080", &format!("127.0.0.1:{socks}"));
    assert_ne!(file_text, example);
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(dir.path(), "loopback.toml", &file_text);
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let out = run(
        &[
            "compare",
            &file,
            "--out-dir",
            &p("out"),
            "--json",
            &p("cmp.json"),
            "--markdown",
            &p("cmp.md"),
        ],
        Duration::from_secs(180),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{text}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(p("cmp.md")).unwrap();
    let t = json(Path::new(&p("cmp.json")));
    let rows = t["scenarios"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let base = rows.iter().find(|r| r["name"] == "direct");
    for r in rows {
        check_row(r, base, &text, &md);
    }
    assert!(
        text.contains("±: ci = one run's 95 % confidence interval"),
        "{text}"
    );
    // The pinged hops carry their spreads, and the theoretical latency theirs combined.
    let socat = &rows[1];
    let hops = socat["hops"].as_array().unwrap();
    let combined = hops
        .iter()
        .map(|h| h["spread_ms"].as_f64().unwrap().powi(2))
        .sum::<f64>()
        .sqrt();
    assert!((socat["theoretical_spread_ms"].as_f64().unwrap() - combined).abs() < 1e-9);

    // The direct run's result against itself: a difference of 0 is within noise, no %.
    let direct = rows[0]["result"].as_str().unwrap();
    let out = run(
        &[
            "compare",
            &format!("a={direct}"),
            &format!("b={direct}"),
            "--baseline",
            "a",
            "--json",
            &p("same.json"),
        ],
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    let same = json(Path::new(&p("same.json")));
    let b = &same["scenarios"][1];
    assert_eq!(b["vs_baseline_within_noise"], true, "{b}");
    assert!(b["vs_baseline_pct"].is_null(), "{b}");
    assert!(
        cell(&text, "b", 8, false).starts_with("within noise (±"),
        "{text}"
    );
}

/// A probe result file of `modes` (RTT ns, count), each value at its HDR bucket's middle so
/// nothing is rounded.
fn probe_file(dir: &Path, name: &str, modes: &[(u64, u64)]) -> String {
    use npt_result::stats::{ProbeMeta, ProbeStats, Stats};
    let mut s = ProbeStats {
        clients: 1,
        ..ProbeStats::default()
    };
    let n: u64 = modes.iter().map(|m| m.1).sum();
    (s.packets.sent, s.packets.received) = (n, n);
    for &(v, k) in modes {
        s.histograms
            .entry(npt_result::probe::hist::RTT)
            .record_n(v, k);
    }
    let meta = ProbeMeta {
        protocol: "tcp".into(),
        target: format!("tcp://{name}:7777"),
        mode: "relay".into(),
        framing: "framed".into(),
        size: 64,
        loss_timeout_ms: 1000.0,
        ..ProbeMeta::default()
    };
    let now = std::time::SystemTime::now();
    let doc = npt_result::Document::new(
        "probe",
        now,
        now,
        npt_result::StopReason::Count,
        serde_json::json!({"target": meta.target}),
        s.summarize(&meta),
    );
    write_file(
        dir,
        &format!("{name}.json"),
        &serde_json::to_string(&doc).unwrap(),
    )
}

/// The bimodal forwarder, one run each, as result files whose answer is known: direct 3,000
/// echoes at 0.149952 and 0.170048 ms (avg 0.16, stddev 0.010048); socat 3,000 at 0.2, 41.402368
/// and 85.03296 ms (40.9 / 47.1 / 12 %: avg 29.786271, p50 41.4). By hand, each avg's ± is
/// t(2999) · stddev / √3000 (t = 1.9607), the difference's the two in quadrature: +29.63
/// ±1.00 ci, and 0.16 ms known to ±0.0004 gets its percentage. Half socat's p10–p90 range
/// (±42.4 ms, the rule this replaced) would have called it "within noise".
#[test]
fn a_bimodal_forwarder_is_a_finding_with_the_avgs_own_interval() {
    let dir = tempfile::tempdir().unwrap();
    let direct_modes = [(149_952, 1_500), (170_048, 1_500)];
    let socat_modes = [(200_000, 1_227), (41_402_368, 1_413), (85_032_960, 360)];
    let direct = probe_file(dir.path(), "direct", &direct_modes);
    let socat = probe_file(dir.path(), "socat", &socat_modes);
    // The figures by hand, in ms.
    let by_hand = |modes: &[(u64, u64)]| {
        let ms = |v: u64| v as f64 / 1e6;
        let n = modes.iter().map(|m| m.1 as f64).sum::<f64>();
        let mean = modes.iter().map(|&(v, k)| ms(v) * k as f64).sum::<f64>() / n;
        let var = modes
            .iter()
            .map(|&(v, k)| k as f64 * (ms(v) - mean).powi(2))
            .sum::<f64>()
            / n;
        (mean, 1.9607 * var.sqrt() / n.sqrt())
    };
    let (dm, du) = by_hand(&direct_modes);
    let (sm, su) = by_hand(&socat_modes);
    assert!((dm - 0.16).abs() < 1e-12 && (sm - 29.786_270_528).abs() < 1e-9);
    let cmp = dir.path().join("cmp.json");
    let out = run(
        &[
            "compare",
            &format!("direct={direct}"),
            &format!("socat={socat}"),
            "--baseline",
            "direct",
            "--json",
            cmp.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    let t = json(&cmp);
    let r = &t["scenarios"][1];
    let f = |k: &str| r[k].as_f64().unwrap();
    // t(2999) is 1.96074; the table's 1e-4 relative slack is for that rounding only.
    assert!((f("avg_spread_ms") - su).abs() < su * 1e-4, "{r}");
    assert!((0.99..1.01).contains(&f("avg_spread_ms")), "{r}");
    assert!((t["scenarios"][0]["avg_spread_ms"].as_f64().unwrap() - du).abs() < du * 1e-4);
    assert_eq!(r["avg_spread_from"], "ci");
    assert!((f("vs_baseline_ms") - (sm - dm)).abs() < 1e-9, "{r}");
    let both = (su * su + du * du).sqrt();
    assert!(
        (f("vs_baseline_spread_ms") - both).abs() < both * 1e-4,
        "{r}"
    );
    assert_eq!(r["vs_baseline_within_noise"], false, "{r}");
    assert_eq!(r["vs_baseline_spread_from"], "ci");
    assert!(
        (f("vs_baseline_pct") - (sm - dm) / dm * 100.0).abs() < 1e-6,
        "{r}"
    );
    assert_eq!(
        cell(&text, "socat", 8, false),
        format!("+29.63 ±1.00 ci ({:+.1}%)", (sm - dm) / dm * 100.0),
        "{text}"
    );
}
