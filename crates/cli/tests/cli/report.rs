//! Why this exists: `npt report` must render every kind of saved result in every format, and
//! the HTML page of a real result must draw every chart — checked in headless Chromium (Debian
//! `chromium`, installed by ./test.sh; `NPT_SKIP_CHROMIUM=1` skips only that part).

#![cfg(test)]

use crate::common;

use std::time::Duration;

use npt_testkit::chromium;

use common::*;

fn report(file: &std::path::Path, format: &str) -> String {
    let out = run(
        &["report", file.to_str().unwrap(), "--format", format],
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_kind_in_every_format_and_the_html_draws_in_chromium() {
    let (_srv, addr) = serve(&[]);
    let (_h, http) = serve_http();
    let dir = tempfile::tempdir().unwrap();
    let results = [
        (
            "probe",
            vec![
                "probe".to_string(),
                format!("udp://{addr}"),
                "--pps".into(),
                "500".into(),
                "-d".into(),
                "2s".into(),
                "--report-every".into(),
                "500ms".into(),
                "--loss-timeout".into(),
                "200ms".into(),
            ],
        ),
        (
            "run",
            vec![
                "run".to_string(),
                format!("tcp://{addr}"),
                "--users".into(),
                "4".into(),
                "-d".into(),
                "2s".into(),
                "--mix".into(),
                "web=100".into(),
            ],
        ),
        (
            "http",
            vec![
                "http".to_string(),
                format!("http://{http}/"),
                "-c".into(),
                "2".into(),
                "-d".into(),
                "2s".into(),
            ],
        ),
        (
            "bulk",
            vec![
                "bulk".to_string(),
                format!("udp://{addr}"),
                "--rate".into(),
                "5mbit".into(),
                "--size".into(),
                "1200".into(),
                "-t".into(),
                "2s".into(),
            ],
        ),
        (
            "ping",
            vec![
                "ping".to_string(),
                format!("tcp://{addr}"),
                "-c".into(),
                "5".into(),
                "-i".into(),
                "50ms".into(),
            ],
        ),
    ];
    let mut probe_file = None;
    for (kind, args) in &results {
        let f = dir.path().join(format!("{kind}.json"));
        let mut a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        a.extend(["-q", "--json", f.to_str().unwrap()]);
        let out = run(&a, Duration::from_secs(30));
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let original = json(&f);
        let again: serde_json::Value = serde_json::from_str(&report(&f, "json")).unwrap();
        assert_eq!(again, original, "{kind}: json is the document itself");
        assert!(!report(&f, "text").is_empty(), "{kind}");
        if *kind == "http" {
            // The library renders it: the saved result reads back as the command printed it.
            assert_eq!(
                report(&f, "text"),
                String::from_utf8_lossy(&out.stdout),
                "npt report --format text of an http result is what npt http printed"
            );
        }
        let csv = report(&f, "csv");
        if *kind == "bulk" {
            // Bulk's goodput each way, per interval and over the run; its page charts it and
            // counts its UDP rate in datagrams, not requests.
            assert!(
                csv.lines()
                    .next()
                    .unwrap()
                    .ends_with(",goodput_up_bps,goodput_down_bps"),
                "{csv}"
            );
            let last = csv.lines().last().unwrap();
            let up: f64 = last.split(',').rev().nth(1).unwrap().parse().unwrap();
            let want = original["summary"]["goodput_bps"]["up"].as_f64().unwrap();
            assert!(
                (up - want).abs() <= 1.0,
                "summary goodput {up} against {want}"
            );
            let html = report(&f, "html");
            assert!(html.contains("Goodput per interval"), "bulk page");
            assert!(html.contains("datagrams/s") && !html.contains("requests/s"));
            // Its Markdown row has the goodput it moved up, in Mbit/s, and none down.
            let md = report(&f, "md");
            assert!(
                md.lines()
                    .next()
                    .unwrap()
                    .ends_with("| goodput up (Mbit/s) | goodput down (Mbit/s) |"),
                "{md}"
            );
            let cells: Vec<&str> = md.lines().nth(2).unwrap().split(" | ").collect();
            let md_up: f64 = cells[cells.len() - 2].parse().unwrap();
            assert!((md_up - want / 1e6).abs() <= 0.01, "{md}");
            assert_eq!(cells[cells.len() - 1], "- |", "{md}");
        }
        assert!(csv.starts_with("row,index,start_s,end_s,rate_per_s,p50_ms,p99_ms,errors"));
        assert!(
            csv.lines().last().unwrap().starts_with("summary,"),
            "{kind}: {csv}"
        );
        assert!(
            report(&f, "md").starts_with("| scenario | avg (ms)"),
            "{kind}"
        );
        let html = report(&f, "html");
        assert!(
            html.contains("<html") && !html.contains("src=\"http"),
            "{kind}: self-contained"
        );
        if *kind == "probe" {
            probe_file = Some(f);
        }
    }
    // -o writes the file atomically.
    let probe_file = probe_file.unwrap();
    let page = dir.path().join("probe.html");
    let out = run(
        &[
            "report",
            probe_file.to_str().unwrap(),
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    assert!(out.status.success());
    if !chromium::wanted() {
        return;
    }
    let dom = chromium::dump_dom(&page, &dir.path().join("profile"), Duration::from_secs(60));
    assert!(
        // latency, rate, errors, loss up and down, one-way delay up and down, spectrum, CDF.
        dom.contains("data-charts-drawn=\"7\""),
        "every chart drew:\n{}",
        &dom[..dom.len().min(2000)]
    );
    let drawn = dom.matches("data-drawn-points=\"").count();
    assert_eq!(drawn, 7, "a drawn-points mark per chart");
    assert!(!dom.contains("data-drawn-points=\"0\""), "no empty chart");
}

#[test]
fn bad_files_exit_2_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, "{\"schema\": \"npt.result.v1\", \"kind\": \"pro").unwrap();
    let old = dir.path().join("old.json");
    std::fs::write(&old, "{\"schema\": \"npt.result.v0\"}").unwrap();
    for (f, want) in [
        (&cut, "cut.json: not a result document"),
        (&old, "npt.result.v0"),
    ] {
        let out = run(&["report", f.to_str().unwrap()], Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(want));
    }
}

/// Results written by npt before schema v2 (`crates/report/tests/fixtures/v1`, one per kind in
/// two segments) still work with `npt report` in every format (JSON comes out as v2), with
/// `npt merge`, and with `npt compare`.
#[test]
fn v1_results_still_report_merge_and_compare() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/v1");
    let f = |name: &str| dir.join(name).to_str().unwrap().to_string();
    for kind in ["probe", "run", "http"] {
        let part = dir.join(format!("{kind}-0.json"));
        let v2: serde_json::Value = serde_json::from_str(&report(&part, "json")).unwrap();
        assert_eq!(v2["schema"], "npt.result.v2", "{kind}");
        assert_valid(&v2, kind);
        assert_eq!(
            report(&part, "text"),
            std::fs::read_to_string(dir.join(format!("{kind}-0.txt"))).unwrap(),
            "{kind}: the text a v1 npt printed"
        );
        assert_eq!(
            report(&part, "csv"),
            std::fs::read_to_string(dir.join(format!("{kind}-0.csv"))).unwrap(),
            "{kind}: the CSV a v1 npt printed"
        );
        assert!(report(&part, "md").starts_with("| scenario | avg (ms)"));
        assert!(report(&part, "html").contains("<html"));
        let out = run(
            &[
                "merge",
                &f(&format!("{kind}-0.json")),
                &f(&format!("{kind}-1.json")),
            ],
            Duration::from_secs(10),
        );
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            std::fs::read_to_string(dir.join(format!("{kind}-merged.txt"))).unwrap(),
            "{kind}: the merged text a v1 npt printed"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("cmp.html");
    let out = run(
        &[
            "compare",
            &format!("probe={}", f("probe-0.json")),
            &format!("run={}", f("run-0.json")),
            &format!("http={}", f("http-0.json")),
            "--baseline",
            "probe",
            "--html",
            page.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    for name in ["probe", "run", "http"] {
        assert!(table.contains(name), "{table}");
    }
    let html = std::fs::read_to_string(&page).unwrap();
    for chart in ["latency", "spectrum", "cdf"] {
        assert!(html.contains(&format!("data-chart=\"{chart}\"")), "{chart}");
    }
    assert!(
        !html.contains("data-expected-points=\"0\""),
        "every chart has points"
    );
}
