//! End to end check of the HTML report: render a page with several charts (linear, log-log with
//! gaps, many series), open it in headless Chromium, and read back from the dumped DOM that every
//! chart drew a non-empty canvas with exactly the points we gave it. A file that merely exists, or
//! a script error that leaves the charts blank, fails here.
//!
//! Needs Debian's `chromium` (CI installs it); set `NPT_SKIP_CHROMIUM=1` to skip explicitly.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use npt_report::html::{render, Chart, Page, Series, Table};

fn sample_page() -> Page {
    let secs: Vec<f64> = (1..=60).map(f64::from).collect();
    let wave = |k: f64| -> Vec<Option<f64>> {
        secs.iter()
            .map(|s| {
                // a gap every 13th interval, as a lost interval would leave
                if (*s as u32).is_multiple_of(13) {
                    None
                } else {
                    Some(k + (s / 7.0).sin().abs() * k)
                }
            })
            .collect()
    };
    let pct: Vec<f64> = vec![50.0, 90.0, 99.0, 99.9, 99.99];
    let spectrum_x: Vec<f64> = pct.iter().map(|p| 100.0 / (100.0 - p)).collect();
    let cdf_x: Vec<f64> = (1..=200).map(|i| f64::from(i) * 0.05).collect();
    Page {
        title: "npt compare: direct vs realm </script>".into(),
        subtitle: "3 scenarios, probe 20 pps".into(),
        tables: vec![Table {
            caption: "summary".into(),
            header: vec!["scenario".into(), "p50 ms".into(), "p99 ms".into()],
            rows: vec![
                vec!["direct".into(), "0.20".into(), "0.51".into()],
                vec!["realm <chain>".into(), "0.41".into(), "1.20".into()],
            ],
        }],
        charts: vec![
            Chart {
                id: "latency".into(),
                title: "latency over time".into(),
                x_label: "elapsed s".into(),
                y_label: "ms".into(),
                x: secs.clone(),
                series: vec![
                    Series {
                        label: "p50".into(),
                        values: wave(1.0),
                    },
                    Series {
                        label: "p99".into(),
                        values: wave(3.0),
                    },
                ],
                ..Chart::default()
            },
            Chart {
                id: "spectrum".into(),
                title: "percentile spectrum".into(),
                x_label: "1/(1-p)".into(),
                y_label: "ms".into(),
                x_log: true,
                y_log: true,
                x: spectrum_x,
                series: vec![
                    Series {
                        label: "direct".into(),
                        values: vec![Some(0.2), Some(0.3), Some(0.5), Some(0.9), Some(2.0)],
                    },
                    Series {
                        label: "realm".into(),
                        values: vec![Some(0.4), Some(0.6), None, Some(1.5), Some(3.0)],
                    },
                ],
            },
            Chart {
                id: "cdf".into(),
                title: "CDF".into(),
                x_label: "ms".into(),
                y_label: "fraction".into(),
                x: cdf_x.clone(),
                series: vec![Series {
                    label: "direct".into(),
                    values: cdf_x.iter().map(|x| Some(1.0 - (-x).exp())).collect(),
                }],
                ..Chart::default()
            },
        ],
    }
}

/// Runs headless Chromium on `file` and returns the DOM it dumped; killed after `limit`.
fn dump_dom(file: &std::path::Path, profile: &std::path::Path, limit: Duration) -> String {
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1000,1200",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn chromium");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait().expect("wait for chromium") {
            Some(status) => {
                assert!(status.success(), "chromium exited with {status}");
                break;
            }
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within {limit:?}");
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    reader.join().unwrap()
}

/// The opening tag of the element with `id`, from a serialized DOM.
fn opening_tag<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no element {id} in the DOM"));
    let start = dom[..at].rfind('<').unwrap();
    let end = at + dom[at..].find('>').unwrap();
    &dom[start..=end]
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(&tag[at..at + tag[at..].find('"')?])
}

#[test]
fn every_chart_draws_in_headless_chromium() {
    if std::env::var_os("NPT_SKIP_CHROMIUM").is_some_and(|v| v == "1") {
        eprintln!("SKIPPED: NPT_SKIP_CHROMIUM=1");
        return;
    }
    let found = Command::new("chromium")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    assert!(
        found.is_ok_and(|s| s.success()),
        "headless Chromium is needed for this test: install Debian's `chromium` \
         (apt-get install chromium) or set NPT_SKIP_CHROMIUM=1 to skip it"
    );

    let page = sample_page();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    let mut bytes = Vec::new();
    render(&page, &mut bytes).unwrap();
    std::fs::write(&file, &bytes).unwrap();
    eprintln!("rendered {} bytes", bytes.len());
    if let Some(keep) = std::env::var_os("NPT_HTML_KEEP") {
        std::fs::write(keep, &bytes).unwrap();
    }
    let profile = dir.path().join("profile");

    let dom = dump_dom(&file, &profile, Duration::from_secs(60));

    let body = opening_tag(&dom, "npt-data");
    assert!(body.contains("application/json"), "{body}");
    assert!(
        dom.contains(&format!("data-charts-drawn=\"{}\"", page.charts.len())),
        "the page script did not run to the end"
    );
    for (i, chart) in page.charts.iter().enumerate() {
        let tag = opening_tag(&dom, &format!("npt-chart-{i}"));
        let expected = chart.drawable_points();
        eprintln!("{tag}");
        assert!(expected > 0);
        assert_eq!(
            attr(tag, "data-drawn-points"),
            Some(expected.to_string().as_str()),
            "chart {} did not draw all its points: {tag}",
            chart.id
        );
        let canvas = attr(tag, "data-canvas").unwrap_or_else(|| panic!("no canvas: {tag}"));
        let (w, h) = canvas.split_once('x').unwrap();
        let (w, h): (u32, u32) = (w.parse().unwrap(), h.parse().unwrap());
        assert!(w > 100 && h > 100, "chart {} canvas is {w}x{h}", chart.id);
    }
    assert_eq!(dom.matches("<canvas").count(), page.charts.len());
    assert!(dom.contains("u-legend"), "legends drawn");
    assert!(dom.contains("realm &lt;chain&gt;"), "table text escaped");
}
