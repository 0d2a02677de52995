//! Why this exists: `npt report` must render every kind of saved result in every format, and
//! the HTML page of a real result must draw every chart — checked in headless Chromium (Debian
//! `chromium`, installed by .ci/run; `NPT_SKIP_CHROMIUM=1` skips only that part).

#[path = "../../report/tests/chromium/mod.rs"]
mod chromium;
mod common;

use std::time::Duration;

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
        dom.contains("data-charts-drawn=\"5\""),
        "every chart drew:\n{}",
        &dom[..dom.len().min(2000)]
    );
    let drawn = dom.matches("data-drawn-points=\"").count();
    assert_eq!(drawn, 5, "a drawn-points mark per chart");
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
