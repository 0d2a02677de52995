//! `--metrics` end to end with a real Prometheus: the test starts `npt serve --metrics` and an
//! agent (`npt probe … --metrics`) on loopback, writes a Prometheus config that scrapes both
//! every second, starts Prometheus, and queries its HTTP API until the series appear; their
//! values must equal what the agent's own result document says (and what the server counted).
//! A second test checks the final totals of `npt http` and `npt run` endpoints (no Prometheus).
//! Every endpoint's real scrape (serve, probe, http, run, bulk, monitor) passes
//! `promtool check metrics` but for its note on every OpenMetrics counter.
//! Needs the Debian package `prometheus` (installed by `./test.sh`); skipped with a message
//! when it is missing and this is not root, a failure when it is missing on root (CI).

#![cfg(test)]

use crate::common;

use common::prometheus::{self, get, query, wait_for_value};

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// Reads `child`'s stderr until the "metrics on http://ADDR/metrics" line (bounded in time),
/// and keeps draining it on a thread so the child never writes into a closed pipe.
fn metrics_addr(stderr: impl Read + Send + 'static) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if let Some(rest) = line.split("metrics on http://").nth(1) {
                let _ = tx.send(rest.trim_end_matches("/metrics").to_string());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("a 'metrics on' line")
        .parse()
        .expect("an address")
}

/// `promtool check metrics` over `text`, one scrape of `what`: it must find nothing but the
/// note it makes on every OpenMetrics counter (promtool reads the older text format, where a
/// counter's `# HELP` would be under its sample's name, `_total`; OpenMetrics puts it under the
/// family's). Skipped, visibly, without promtool when not root; a failure on root (CI).
fn assert_promtool_passes(what: &str, text: &str) {
    use std::io::Write;
    let found = std::process::Command::new("sh")
        .args(["-c", "command -v promtool"])
        .output()
        .unwrap();
    if !found.status.success() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            panic!(
                "promtool is not installed (Debian package `prometheus`; ./test.sh installs it)"
            );
        }
        eprintln!("SKIPPED promtool check of {what}: promtool not installed and not root");
        return;
    }
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let problems: Vec<&str> = said
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| {
            let family = l
                .strip_suffix(" no help text")
                .and_then(|n| n.strip_suffix("_total"));
            // The counter note, for a family that does have its help.
            !family.is_some_and(|f| text.contains(&format!("# HELP {f} ")))
        })
        .collect();
    assert!(
        problems.is_empty(),
        "{what}: promtool check metrics says {problems:#?} of\n{text}"
    );
    assert!(
        text.contains("# TYPE "),
        "{what}: an empty scrape proves nothing: {text}"
    );
}

#[test]
fn prometheus_scrapes_serve_and_an_agent() {
    let Some(prometheus) = prometheus::binary() else {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            panic!(
                "prometheus is not installed (Debian package `prometheus`; ./test.sh installs it)"
            );
        }
        eprintln!(
            "SKIPPED prometheus_scrapes_serve_and_an_agent: prometheus not installed and not root"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();

    // The responder, with its metrics on a port of its own.
    let mut serve = npt()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("npt serve starts");
    let serve_metrics = metrics_addr(serve.stderr.take().unwrap());
    let ready = BufReader::new(serve.stdout.take().unwrap())
        .lines()
        .next()
        .expect("ready line")
        .unwrap();
    let serve_addr: SocketAddr = ready.rsplit(' ').next().unwrap().parse().unwrap();
    let _serve = Guard(serve);

    // The agent: 1,000 packets at 250/s, its endpoint kept up after the run.
    let json = dir.path().join("probe.json");
    let mut probe = npt()
        .args(["probe", &format!("udp://{serve_addr}")])
        .args(["--count", "1000", "--pps", "250", "-q"])
        .args(["--metrics", "127.0.0.1:0", "--metrics-linger", "120s"])
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("npt probe starts");
    let probe_metrics = metrics_addr(probe.stderr.take().unwrap());
    let _probe = Guard(probe);

    // Prometheus on a free loopback port, scraping both every second.
    let (_prom, prom) = prometheus::start(&prometheus, dir.path(), &[serve_metrics, probe_metrics]);

    // Live: the agent's series appear while it runs.
    let start = Instant::now();
    while query(prom, "npt_packets_sent_total").is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "npt_packets_sent_total never appeared"
        );
        std::thread::sleep(Duration::from_millis(250));
    }

    // Final: once the agent wrote its report, Prometheus must hold the same figures.
    let start = Instant::now();
    while !json.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "probe never finished"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let doc = common::json(&json);
    let sent = u(&doc, "/summary/sent");
    let received = u(&doc, "/summary/received");
    let lost = u(&doc, "/summary/lost");
    assert_eq!(sent, 1000);
    let target = serve_addr.to_string();
    let agent = [("protocol", "udp"), ("target", target.as_str())];
    let limit = Duration::from_secs(30);
    wait_for_value(prom, "npt_packets_sent_total", &agent, sent as f64, limit);
    wait_for_value(
        prom,
        "npt_packets_received_total",
        &agent,
        received as f64,
        limit,
    );
    wait_for_value(prom, "npt_packets_lost_total", &agent, lost as f64, limit);
    wait_for_value(
        prom,
        "npt_packet_rtt_seconds_count",
        &agent,
        received as f64,
        limit,
    );
    // Every on-time reply of a loopback echo is under 10 s: the le="10.0" bucket holds them
    // all, and the +Inf bucket equals the count.
    wait_for_value(
        prom,
        "npt_packet_rtt_seconds_bucket",
        &[("le", "+Inf"), ("target", target.as_str())],
        received as f64,
        limit,
    );
    // The server saw every datagram the agent sent (loopback) and answered each, and the
    // probe's flow query at the end (at least one per flow the probe settled exactly; a
    // retried query is counted in both): received = sent + queries answered, and the same out.
    let flows = u(&doc, "/summary/directions/flows/exact");
    assert!(flows >= 1, "the loopback flow was settled by its query");
    let udp = |name: &str| {
        query(prom, name)
            .into_iter()
            .find(|(l, _)| l["transport"] == "udp")
            .map(|(_, v)| v)
    };
    let start = Instant::now();
    loop {
        let reports = udp("npt_serve_flow_reports_total");
        let rx = udp("npt_serve_packets_received_total");
        let tx = udp("npt_serve_packets_sent_total");
        if let (Some(q), Some(rx), Some(tx)) = (reports, rx, tx) {
            if q >= flows as f64 && rx == sent as f64 + q && tx == sent as f64 + q {
                break;
            }
        }
        assert!(
            start.elapsed() < limit,
            "serve's udp counters never read sent {sent} + flow reports: reports {reports:?} received {rx:?} sent {tx:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let up = query(prom, "up");
    assert_eq!(up.len(), 2, "both targets scraped: {up:?}");
    assert!(up.iter().all(|(_, v)| *v == 1.0), "both targets up: {up:?}");
    for (what, addr) in [("npt serve", serve_metrics), ("npt probe", probe_metrics)] {
        let (status, text) = get(addr, "/metrics").expect("the endpoint answers");
        assert!(status.contains("200"), "{status}");
        assert_promtool_passes(what, &text);
    }
}

/// Starts `npt ARGS --metrics 127.0.0.1:0 --metrics-linger 60s --json FILE`, waits for the
/// result file, then scrapes the lingering endpoint once: (result document, OpenMetrics text).
fn run_and_scrape(args: &[&str]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = npt()
        .args(args)
        .args(["-q", "--metrics", "127.0.0.1:0", "--metrics-linger", "60s"])
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("npt starts");
    let addr = metrics_addr(child.stderr.take().unwrap());
    let _child = Guard(child);
    let start = Instant::now();
    while !json.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "run never finished"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, text) = get(addr, "/metrics").expect("the endpoint lingers");
    assert!(status.contains("200"), "{status}");
    assert_promtool_passes(&format!("npt {}", args[0]), &text);
    (common::json(&json), text)
}

/// The value of the one sample line that starts with `series` (name and labels).
fn sample(text: &str, series: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(series))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn http_and_run_agents_export_their_final_totals() {
    let (_serve, addr) = serve(&[]);
    let (_http_serve, http) = serve_http();
    let url = format!("http://{http}/");
    let (doc, text) = run_and_scrape(&["http", &url, "--rate", "300", "-c", "4", "-d", "2s"]);
    let labels = format!("{{protocol=\"http/1.1\",target=\"{url}\",host=\"{http}\"}}");
    assert_eq!(
        sample(&text, &format!("npt_requests_total{labels}")),
        f(&doc, "/summary/requests")
    );
    assert_eq!(
        sample(
            &text,
            &format!("npt_request_duration_seconds_count{labels}")
        ),
        f(&doc, "/summary/requests")
    );
    assert!(text.contains("npt_request_duration_uncorrected_seconds_bucket"));

    let target = format!("tcp://{addr}");
    let (doc, text) = run_and_scrape(&["run", &target, "--users", "5", "--duration", "2s"]);
    let web = format!("{{target=\"{target}\",activity=\"web\"}}");
    assert_eq!(
        sample(&text, &format!("npt_requests_total{web}")),
        f(&doc, "/summary/requests")
    );
    assert!(f(&doc, "/summary/requests") > 0.0);
}

#[test]
fn bulk_exports_its_final_totals() {
    let (_serve, addr) = serve(&[]);
    let target = format!("tcp://{addr}");
    let (doc, text) = run_and_scrape(&["bulk", &target, "-t", "1s", "-P", "2"]);
    let down = format!("{{protocol=\"tcp\",target=\"{target}\",direction=\"down\"}}");
    let bytes = f(&doc, "/summary/bytes/down");
    assert!(bytes > 0.0);
    assert_eq!(sample(&text, &format!("npt_bulk_bytes_total{down}")), bytes);
    assert!(sample(&text, &format!("npt_bulk_goodput_bps{down}")) > 0.0);
    let rtt = format!("npt_bulk_rtt_seconds_count{{protocol=\"tcp\",target=\"{target}\"}}");
    assert_eq!(sample(&text, &rtt), f(&doc, "/summary/rtt_ms/count"));
}

#[test]
fn the_monitor_s_scrape_passes_promtool() {
    let (_serve, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    // Every family a monitor may show but RPM and goodput (an --under-load probe's, a bulk's):
    // a ping and a marked probe target, and a rule that fires at the first round.
    let cfg = write_file(
        dir.path(),
        "m.toml",
        &format!(
            r#"
vantage = "test"
store = "m.db"
listen = "127.0.0.1:0"
every = "500ms"
[[target]]
name = "udp"
target = "udp://{addr}"
args = ["-c", "3", "-i", "20ms", "-W", "200ms"]
[[target]]
name = "probe"
kind = "probe"
target = "udp://{addr}"
length = "200ms"
args = ["--pps", "100", "--loss-timeout", "100ms", "--dscp", "46", "--ecn", "ect0"]
[[alert]]
name = "any"
metric = "p50_ms"
above = 0
rounds = 1
"#
        ),
    );
    let m = common::monitor::Monitor::start(cfg.as_ref(), &dir.path().join("m.db"), true);
    m.until(
        "both targets measured, the rule firing",
        Duration::from_secs(30),
        |m| {
            m.metric("npt_monitor_alert_firing", &["target=\"probe\""]) == Some(1.0)
                && m.metric("npt_monitor_up", &["target=\"udp\""]) == Some(1.0)
        },
    );
    let (status, body) = m.get("/metrics");
    assert_eq!(status, 200);
    let text = String::from_utf8(body).unwrap();
    for family in npt_monitor::metrics::NAMES
        .iter()
        // The families only a kind's own figures fill: probe's under load, bulk's, mtu's.
        .filter(|n| !n.contains("rpm") && !n.contains("goodput") && !n.contains("mtu"))
    {
        let family = family.trim_end_matches("_total");
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "{family}: {text}"
        );
    }
    assert_promtool_passes("npt monitor", &text);
}
