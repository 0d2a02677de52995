//! What `npt monitor` shows and tells, on loopback: its dashboard in headless Chromium — served
//! live, and saved to a file then opened with the monitor gone — draws every chart (smoke
//! charts with every median point, a group's overlay, a trace's segments) without a script
//! error, and a marked probe's marking each way; with ten thousand targets its first page (worst first, one page of targets chosen
//! on the server) is drawn within a second; an `unreachable` alert reaches a local webhook and a command when a target dies and
//! clears when it answers again; two monitors scraped by a real Prometheus give each target's
//! p50 through PromQL within the bucket of the value the store holds.
//!
//! Needs Debian's `chromium` and `prometheus` (CI installs both; `NPT_SKIP_CHROMIUM=1` skips
//! the page, a missing prometheus is a skip only when not root).

#![cfg(test)]

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::monitor::Monitor;
use common::*;
use npt_result::marking::Fate;
use npt_testkit::chromium::{self, attr, opening_tag};

fn ok_rounds(m: &Monitor, t: &str, status: &str) -> f64 {
    m.rounds_total(t, status)
}

/// Checks a dumped dashboard: `charts` charts drawn, no script error, every smoke chart drew
/// every median point the data has, every other chart drew something, on real canvases; the
/// marked probe's marking each way in a table of its own (loopback keeps DSCP 46 and ECT(0)).
fn check_page(dom: &str, charts: usize) {
    assert!(
        dom.contains(&format!("data-charts-drawn=\"{charts}\"")),
        "the page script did not draw {charts} charts"
    );
    check_charts(dom, charts, &|tag| tag.contains("data-chart=\"dead\""));
    let marks = opening_tag(dom, "npt-markings");
    assert_eq!(attr(marks, "data-rows"), Some("1"), "{marks}");
    let at = dom.find("id=\"npt-markings\"").unwrap();
    let table = &dom[at..at + dom[at..].find("</table>").unwrap()];
    assert_eq!(
        table
            .matches("<td>DSCP 46 (EF) arrived, ECN ECT(0) arrived (CE 0 of ")
            .count(),
        2,
        "the probe's marking, up and down: {table}"
    );
}

/// No script error, and each of `charts` charts drew what its data has on a real canvas —
/// something, but for the smoke charts `never_answered` says are of a target that never did.
fn check_charts(dom: &str, charts: usize, never_answered: &dyn Fn(&str) -> bool) {
    let body = &dom[dom.find("<body").unwrap()..];
    let body = &body[..body.find('>').unwrap() + 1];
    assert_eq!(
        attr(body, "data-errors"),
        Some("0"),
        "script errors: {body}"
    );
    for i in 0..charts {
        let tag = opening_tag(dom, &format!("npt-chart-{i}"));
        eprintln!("{tag}");
        match attr(tag, "data-expected-median") {
            Some(expected) => {
                assert_eq!(attr(tag, "data-drawn-median"), Some(expected), "{tag}");
                if !never_answered(tag) {
                    assert_ne!(expected, "0", "{tag}");
                }
            }
            None => {
                let drawn: usize = attr(tag, "data-drawn-points").unwrap().parse().unwrap();
                assert!(drawn > 0, "{tag}");
            }
        }
        let (w, h) = attr(tag, "data-canvas").unwrap().split_once('x').unwrap();
        let (w, h): (u32, u32) = (w.parse().unwrap(), h.parse().unwrap());
        assert!(w > 100 && h > 100, "{tag}");
    }
    assert_eq!(dom.matches("<canvas").count(), charts);
}

#[test]
fn the_dashboard_draws_every_chart_live_and_from_a_saved_file_offline() {
    if !chromium::wanted() {
        return;
    }
    let (_t, target) = serve(&[]);
    let allow = target.to_string();
    let (_a, agent) = serve(&["--token", "S", "--hop-agent", "--hop-allow", &allow]);
    let dead = npt_testkit::process::free_port();
    let dir = tempfile::tempdir().unwrap();
    let quick = r#"args = ["-c", "3", "-i", "50ms", "-W", "300ms"]"#;
    let cfg = write_file(
        dir.path(),
        "m.toml",
        &format!(
            r#"
vantage = "page"
store = "m.db"
listen = "127.0.0.1:0"
every = "500ms"
[[target]]
name = "udp"
target = "udp://{target}"
{quick}
[[target]]
name = "tcp"
target = "tcp://{target}"
group = "paths"
{quick}
[[target]]
name = "probe"
kind = "probe"
target = "udp://{target}"
length = "200ms"
args = ["--pps", "100", "--loss-timeout", "150ms", "--dscp", "46", "--ecn", "ect0"]
group = "paths"
[[target]]
name = "chain"
kind = "trace"
target = "tcp://{target}"
hops = ["npt://{agent}"]
through = "tcp://{target}"
token = "S"
{quick}
[[target]]
name = "dead"
target = "udp://127.0.0.1:{dead}"
{quick}
"#
        ),
    );
    let mut m = Monitor::start(cfg.as_ref(), &dir.path().join("m.db"), true);
    m.until(
        "every target measured 3 rounds",
        Duration::from_secs(60),
        |m| {
            ["udp", "tcp", "probe", "chain"]
                .iter()
                .all(|t| ok_rounds(m, t, "ok") >= 3.0)
                && ok_rounds(m, "dead", "no_answer") >= 3.0
        },
    );
    // 5 smoke charts, the group's overlay, the trace's segments.
    let charts = 7;
    let profile = dir.path().join("profile");
    let url = format!("http://{}/?range=1h", m.addr.unwrap());
    let live = chromium::dump_url(&url, &profile, Duration::from_secs(60));
    check_page(&live, charts);
    // Saved to disk, then read with the monitor gone: everything it needs is inside.
    let (code, page) = m.get("/?range=1h");
    assert_eq!(code, 200);
    let file = dir.path().join("dashboard.html");
    std::fs::write(&file, &page).unwrap();
    m.stop();
    // The store keeps each round's marking each way (what a restarted monitor shows).
    let stored = common::monitor::rounds(&dir.path().join("m.db"), "probe");
    assert!(stored.len() >= 3);
    for r in stored.iter().filter(|r| r.figures.count > 0) {
        let fates = [&r.figures.marking_up, &r.figures.marking_down]
            .map(|w| w.map(|w| (w.dscp, w.ecn, w.sent.map(|t| (t.dscp, t.ecn)))));
        let arrived = Some((Fate::Arrived, Fate::Arrived, Some((46, 2))));
        assert_eq!(fates, [arrived, arrived], "{r:?}");
    }
    let saved = chromium::dump_dom(&file, &dir.path().join("profile2"), Duration::from_secs(60));
    check_page(&saved, charts);
    assert!(saved.contains("saved page"));
    // And with the network off altogether (Chromium in a network namespace of its own).
    if let Some(offline) =
        chromium::dump_dom_offline(&file, &dir.path().join("profile3"), Duration::from_secs(60))
    {
        check_page(&offline, charts);
    }
    let text = String::from_utf8_lossy(&page);
    assert!(
        !text.contains("src=\"http") && !text.contains("<link"),
        "self-contained"
    );
}

/// The number in the body's attribute `name`.
fn body_number(dom: &str, name: &str) -> Option<f64> {
    let body = &dom[dom.find("<body")?..];
    attr(&body[..body.find('>')? + 1], name)?.parse().ok()
}

#[test]
fn ten_thousand_targets_the_first_page_is_the_worst_and_draws_within_a_second() {
    if !chromium::wanted() {
        return;
    }
    // A real monitor of 10,000 ping targets on a loopback `npt serve`, one round each a minute
    // (167 rounds a second); every tenth target's port has nothing behind it, so those go down.
    let (_t, target) = serve(&[]);
    let dead = npt_testkit::process::free_port();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = String::from(
        "vantage = \"ten-k\"\nstore = \"m.db\"\nlisten = \"127.0.0.1:0\"\nevery = \"1m\"\n",
    );
    for i in 0..10_000 {
        let (proto, at) = match i % 10 {
            0 => ("udp", format!("127.0.0.1:{dead}")),
            n if n % 2 == 1 => ("udp", target.to_string()),
            _ => ("tcp", target.to_string()),
        };
        cfg.push_str(&format!(
            "[[target]]\nname = \"t{i:05}\"\ntarget = \"{proto}://{at}\"\ngroup = \"g{}\"\n\
             args = [\"-c\", \"1\", \"-W\", \"1s\"]\n",
            i % 50
        ));
    }
    let cfg = write_file(dir.path(), "m.toml", &cfg);
    let m = Monitor::start(cfg.as_ref(), &dir.path().join("m.db"), true);
    let data = |q: &str| -> serde_json::Value {
        let (code, body) = m.get(&format!("/api/data?{q}"));
        assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap()
    };
    // Enough rounds for a first page of down targets (every one of them ran its round).
    m.until("20 targets down", Duration::from_secs(60), |_| {
        data("per=1")["down"].as_u64().unwrap_or(0) >= 20
    });
    // The server sends one page, worst first: the down targets.
    let t0 = Instant::now();
    let d = data("range=1h");
    let took = t0.elapsed();
    assert_eq!(
        (d["total"].as_u64(), d["per"].as_u64()),
        (Some(10_000), Some(20))
    );
    let rows = d["targets"].as_array().unwrap();
    assert_eq!(rows.len(), 20);
    for t in rows {
        let n: u32 = t["name"].as_str().unwrap()[1..].parse().unwrap();
        assert_eq!(
            (n % 10, t["status"].as_str()),
            (0, Some("no_answer")),
            "{t}"
        );
    }
    eprintln!("/api/data, first page of 10,000 targets: {took:?}");
    // Search and group filters, on the server.
    let one = data("q=T09999");
    assert_eq!(one["matched"], 1);
    assert_eq!(one["targets"][0]["name"], "t09999");
    let g = data("group=g7&per=50&page=4");
    assert_eq!(
        (
            g["matched"].as_u64(),
            g["pages"].as_u64(),
            g["page"].as_u64()
        ),
        (Some(200), Some(4), Some(4))
    );
    assert!(g["targets"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["group"] == "g7"));
    // The page in Chromium: the first page drawn, its charts complete, within a second of the
    // navigation's start (the request to the monitor included).
    let profile = dir.path().join("profile");
    let url = format!("http://{}/?range=1h", m.addr.unwrap());
    let dom = chromium::dump_url(&url, &profile, Duration::from_secs(60));
    let drawn_ms = body_number(&dom, "data-drawn-ms").expect("data-drawn-ms");
    let fcp = body_number(&dom, "data-first-paint-ms");
    let response = body_number(&dom, "data-response-ms");
    let all = body_number(&dom, "data-all-drawn-ms");
    eprintln!(
        "Chromium, 10,000 targets: the page's response ended at {response:?} ms, its first page \
         ready to paint at {drawn_ms} ms (first contentful paint {fcp:?} ms), its last chart \
         drawn at {all:?} ms; script start, data parsed: {:?}",
        attr(&dom[dom.find("<body").unwrap()..], "data-script-ms")
    );
    let body = &dom[dom.find("<body").unwrap()..];
    let charts: usize = attr(&body[..body.find('>').unwrap() + 1], "data-charts-drawn")
        .and_then(|c| c.parse().ok())
        .expect("the page drew its charts");
    assert!(charts >= 20, "{charts} charts");
    // Worst first: the page's targets are down, their charts rightly empty (each drew what
    // its data has, checked all the same).
    check_charts(&dom, charts, &|_| true);
    let form = opening_tag(&dom, "npt-find");
    assert_eq!(attr(form, "data-total"), Some("10000"), "{form}");
    assert_eq!(attr(opening_tag(&dom, "npt-now"), "data-rows"), Some("20"));
    assert!(drawn_ms <= 1000.0, "the first page took {drawn_ms} ms");
    assert!(
        fcp.is_none_or(|f| f <= 1000.0),
        "first contentful paint {fcp:?} ms"
    );
}

#[test]
fn an_alert_reaches_a_webhook_and_a_command_and_clears_when_the_path_answers() {
    let (hook, got) = common::monitor::webhook(None);
    let port = npt_testkit::process::free_port();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("alerts.log");
    let cfg = write_file(
        dir.path(),
        "m.toml",
        &format!(
            r#"
vantage = "alerts"
store = "m.db"
listen = "127.0.0.1:0"
every = "500ms"
[notify]
webhook = "http://{hook}/hook"
headers = {{ Authorization = "Bearer s3cret" }}
command = ["sh", "-c", "cat >> '{}'; echo >> '{}'"]
[[target]]
name = "relay"
target = "udp://127.0.0.1:{port}"
args = ["-c", "2", "-i", "50ms", "-W", "200ms"]
[[alert]]
name = "down"
metric = "unreachable"
rounds = 2
clear_rounds = 2
"#,
            log.display(),
            log.display()
        ),
    );
    let mut m = Monitor::start(cfg.as_ref(), &dir.path().join("m.db"), true);
    // Nothing listens: the second round without an answer fires the rule.
    let (head, fired) = got
        .recv_timeout(Duration::from_secs(60))
        .expect("a webhook POST");
    assert!(head.starts_with("POST /hook HTTP/1.1"), "{head}");
    assert!(head.contains("Bearer s3cret"), "{head}");
    assert_eq!(fired["state"], "firing");
    assert_eq!(fired["alert"], "down");
    assert_eq!(fired["target"], "relay");
    assert_eq!(fired["monitor"], "alerts");
    assert!(
        fired["text"]
            .as_str()
            .unwrap()
            .contains("down firing for relay"),
        "{fired}"
    );
    // The path comes back (an npt serve on that port): two answered rounds clear it.
    let mut back = npt()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    npt_testkit::process::wait_listening(&mut back, port, Duration::from_secs(30));
    let _back = Guard(back);
    let (_, cleared) = got
        .recv_timeout(Duration::from_secs(60))
        .expect("the resolved POST");
    assert_eq!(cleared["state"], "resolved");
    assert_eq!(cleared["rounds"], 2);
    // The command heard both, one JSON per line.
    m.until("the command ran twice", Duration::from_secs(30), |_| {
        std::fs::read_to_string(&log)
            .is_ok_and(|t| t.lines().filter(|l| !l.is_empty()).count() >= 2)
    });
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        (lines[0]["state"].as_str(), lines[1]["state"].as_str()),
        (Some("firing"), Some("resolved"))
    );
    // The page's data has the history; the scrape, the state and the deliveries.
    let (_, data) = m.get("/api/data?range=1h");
    let data: serde_json::Value = serde_json::from_slice(&data).unwrap();
    let kinds: Vec<&str> = data["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"alert_firing") && kinds.contains(&"alert_resolved"),
        "{kinds:?}"
    );
    assert_eq!(
        m.metric(
            "npt_monitor_alert_firing",
            &["target=\"relay\"", "alert=\"down\""]
        ),
        Some(0.0)
    );
    assert_eq!(
        m.metric("npt_monitor_notifications_total", &["result=\"sent\""]),
        Some(4.0)
    );
    m.stop();
}

/// The bucket of `DURATION_BUCKETS_S` a value in seconds falls in (its upper bound's index).
fn bucket(s: f64) -> usize {
    npt_metrics::DURATION_BUCKETS_S
        .iter()
        .position(|b| s <= *b)
        .unwrap_or(npt_metrics::DURATION_BUCKETS_S.len())
}

#[test]
fn prometheus_collects_two_monitors_and_promql_gives_each_targets_p50() {
    let Some(prometheus) = common::prometheus::binary() else {
        // SAFETY: geteuid has no preconditions.
        assert!(
            unsafe { libc::geteuid() } != 0,
            "prometheus is not installed (.ci/run installs it)"
        );
        eprintln!("SKIPPED: prometheus not installed and not root");
        return;
    };
    let (_serve, target) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let mut monitors = Vec::new();
    for v in ["vantage-a", "vantage-b"] {
        let d = dir.path().join(v);
        std::fs::create_dir(&d).unwrap();
        let cfg = write_file(
            &d,
            "m.toml",
            &format!(
                "vantage = \"{v}\"\nstore = \"m.db\"\nlisten = \"127.0.0.1:0\"\nevery = \"500ms\"\n\
                 [[target]]\nname = \"relay\"\ntarget = \"tcp://{target}\"\n\
                 args = [\"-c\", \"4\", \"-i\", \"20ms\", \"-W\", \"200ms\"]\n"
            ),
        );
        monitors.push(Monitor::start(cfg.as_ref(), &d.join("m.db"), true));
    }
    let addrs: Vec<SocketAddr> = monitors.iter().map(|m| m.addr.unwrap()).collect();
    let (_prom, prom) = common::prometheus::start(&prometheus, dir.path(), &addrs);
    let expr = "histogram_quantile(0.5, sum by (le, vantage, target) (npt_monitor_latency_seconds_bucket))";
    let start = Instant::now();
    // The samples Prometheus holds per vantage, read before and after the quantile so that
    // the quantile is known to be of exactly that many (no scrape landed in between).
    let counts = || {
        let mut c: Vec<(String, f64)> =
            common::prometheus::query(prom, "sum by (vantage) (npt_monitor_latency_seconds_count)")
                .into_iter()
                .map(|(l, v)| (l["vantage"].as_str().unwrap_or("").to_string(), v))
                .collect();
        c.sort_by(|a, b| a.0.cmp(&b.0));
        c
    };
    let (got, seen) = loop {
        let before = counts();
        let r = common::prometheus::query(prom, expr);
        if r.len() == 2
            && r.iter().all(|(_, v)| v.is_finite() && *v > 0.0)
            && before.len() == 2
            && counts() == before
        {
            break (r, before);
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "PromQL gave {r:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    // The Grafana dashboard in deploy/: every metric it names is one the monitors export, and
    // every query it makes is valid PromQL that this Prometheus answers (with data, but for
    // the panels of kinds these monitors do not run and of alerts that do not fire).
    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("deploy/grafana/npt-monitor.json")).unwrap(),
    )
    .unwrap();
    let exprs: Vec<String> = dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect();
    assert!(exprs.len() >= 9);
    for e in &exprs {
        let mut rest = e.as_str();
        while let Some(at) = rest.find("npt_monitor_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|x| name.strip_suffix(x))
                .unwrap_or(&name);
            assert!(
                npt_monitor::metrics::NAMES.contains(&base),
                "{name} (in {e}) is not one the monitor exports"
            );
            rest = &rest[at + name.len()..];
        }
    }
    // Two scrapes at least in the rate windows.
    std::thread::sleep(Duration::from_secs(3));
    for e in &exprs {
        let q = e
            .replace("$vantage", ".*")
            .replace("$target", ".*")
            .replace("$__rate_interval", "1m");
        let a = common::prometheus::answer(prom, &q, None);
        assert_eq!(a["status"], "success", "{q}: {a}");
        let empty_ok = ["rpm", "goodput", "alert_firing", "store_errors"]
            .iter()
            .any(|k| q.contains(k));
        let n = a["data"]["result"].as_array().map_or(0, Vec::len);
        assert!(empty_ok || n > 0, "{q}: no data: {a}");
    }
    for mut m in monitors {
        m.stop();
    }
    for (labels, promql) in got {
        let v = labels["vantage"].as_str().unwrap();
        assert_eq!(labels["target"], "relay");
        let store = dir.path().join(v).join("m.db");
        let st = npt_monitor::store::sqlite::Sqlite::open_read(&store).unwrap();
        // The same samples from the store: its first rounds, in order, whose headline counts
        // add up to what Prometheus held when it answered (a quantile of later rounds too may
        // fall in the next bucket when the p50 sits near an edge).
        let want = seen
            .iter()
            .find(|(n, _)| n == v)
            .and_then(|(_, c)| format!("{c}").parse::<u64>().ok());
        let mut rows = common::monitor::rounds(&store, "relay");
        rows.sort_by_key(|r| r.start_ms);
        let (mut sum, mut end) = (0u64, None);
        for (i, r) in rows.iter().enumerate() {
            if Some(sum) == want {
                end = Some(r.start_ms);
                break;
            }
            sum += r.figures.count;
            if i + 1 == rows.len() && Some(sum) == want {
                end = Some(i64::MAX);
            }
        }
        let end = end.unwrap_or_else(|| {
            panic!("{v}: no first rounds of the store add up to Prometheus's {want:?} samples")
        });
        let doc = npt_monitor::range::report(&st, "relay", 0, end).unwrap();
        let stored = doc.body.view().headline().summary().p50 / 1e3;
        eprintln!("{v}: PromQL p50 {promql} s, stored p50 {stored} s (the same {want:?} samples)");
        assert_eq!(bucket(promql), bucket(stored), "{v}: {promql} vs {stored}");
    }
}
