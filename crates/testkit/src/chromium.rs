//! Headless Chromium for the HTML tests: open a page, dump the DOM after its scripts ran, and
//! check that every chart drew the points it promised (`data-expected-points` written by the
//! renderer against `data-drawn-points` written by the page after uPlot drew). Used by
//! npt-report's `html_chromium.rs` and the cli's `tests/compare/end_to_end.rs`,
//! `tests/cli/report.rs` and `tests/monitor/page.rs`.
//!
//! Needs Debian's `chromium` (CI installs it); `NPT_SKIP_CHROMIUM=1` skips explicitly.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// False (with a visible message) when the caller asked to skip; panics when Chromium is
/// missing, since then nothing would be checked.
pub fn wanted() -> bool {
    if std::env::var_os("NPT_SKIP_CHROMIUM").is_some_and(|v| v == "1") {
        eprintln!("SKIPPED: NPT_SKIP_CHROMIUM=1");
        return false;
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
    true
}

/// Runs headless Chromium on `file` and returns the DOM it dumped; killed after `limit`.
pub fn dump_dom(file: &Path, profile: &Path, limit: Duration) -> String {
    dump_url(&format!("file://{}", file.display()), profile, limit)
}

/// Runs headless Chromium on `file` with the network off — in a network namespace of its own
/// with nothing but a down loopback (`unshare --net`, root) — and returns the DOM it dumped; what
/// a page saved to disk and opened offline shows. `None` (said as `SKIPPED:`) when not root.
pub fn dump_dom_offline(file: &Path, profile: &Path, limit: Duration) -> Option<String> {
    if !crate::raw::is_root() {
        eprintln!("SKIPPED: the network-off Chromium run needs root (unshare --net)");
        return None;
    }
    let mut cmd = Command::new("unshare");
    cmd.args(["--net", "chromium"]);
    Some(dump_with(
        cmd,
        &format!("file://{}", file.display()),
        profile,
        limit,
    ))
}

/// Runs headless Chromium on `url` (a served page: `npt monitor`'s dashboard) and returns the
/// DOM it dumped; killed after `limit`.
pub fn dump_url(url: &str, profile: &Path, limit: Duration) -> String {
    dump_with(Command::new("chromium"), url, profile, limit)
}

/// `cmd` (chromium, or a command that runs it with the arguments that follow) on `url`.
fn dump_with(mut cmd: Command, url: &str, profile: &Path, limit: Duration) -> String {
    let mut child = cmd
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
        .arg(url)
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
pub fn opening_tag<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no element {id} in the DOM"));
    let start = dom[..at].rfind('<').unwrap();
    let end = at + dom[at..].find('>').unwrap();
    &dom[start..=end]
}

pub fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(&tag[at..at + tag[at..].find('"')?])
}

/// Opens `file` (an npt HTML page with `charts` charts) and asserts that the page script ran to
/// the end and that every chart drew all the points it expected on a real canvas. Returns the
/// DOM for further checks.
pub fn assert_every_chart_drew(file: &Path, charts: usize) -> String {
    let profile = tempfile::tempdir().unwrap();
    let dom = dump_dom(file, profile.path(), Duration::from_secs(60));
    assert!(
        opening_tag(&dom, "npt-data").contains("application/json"),
        "no chart data block"
    );
    assert!(
        dom.contains(&format!("data-charts-drawn=\"{charts}\"")),
        "the page script did not run to the end"
    );
    for i in 0..charts {
        let tag = opening_tag(&dom, &format!("npt-chart-{i}"));
        eprintln!("{tag}");
        let expected = attr(tag, "data-expected-points").expect("expected points");
        assert_ne!(expected, "0", "chart {i} has nothing to draw: {tag}");
        assert_eq!(
            attr(tag, "data-drawn-points"),
            Some(expected),
            "chart {i} did not draw all its points: {tag}"
        );
        let canvas = attr(tag, "data-canvas").unwrap_or_else(|| panic!("no canvas: {tag}"));
        let (w, h) = canvas.split_once('x').unwrap();
        let (w, h): (u32, u32) = (w.parse().unwrap(), h.parse().unwrap());
        assert!(w > 100 && h > 100, "chart {i} canvas is {w}x{h}");
    }
    assert_eq!(dom.matches("<canvas").count(), charts);
    dom
}
