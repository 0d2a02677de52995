//! `npt http`: the gateway benchmark (seed 003). Parses flags, validates them into
//! [`npt_http::Config`] (usage errors name the flag), runs, prints the text summary and writes
//! the `http` result document with `--json` — also when the run is cut short by Ctrl-C.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use npt_http::client::ColdStartConfig;
use npt_http::{Config, Target};
use npt_report::http::HttpBody;
use npt_report::{text, Document};

use crate::usage;
use crate::usage::parse_duration;

#[derive(Args, Debug, Clone)]
#[command(after_help = "Examples:
  npt http http://127.0.0.1:8080/ -c 50 -d 30s
  npt http http://gw:80/ --host app1.test --host app2.test -c 50 -d 5s
  npt http URL --new-conn -c 50 -d 10s
  npt http URL --http2 --streams 10 -c 4
  npt http URL --rate 5000 -d 30s
  npt http URL --cold-start 'node app.js' --ready-timeout 10s")]
pub struct HttpArgs {
    /// http:// or https:// URL to load (the address connected to; see --host).
    pub url: String,
    /// Concurrent connections (each carries --streams requests with --http2).
    #[arg(short = 'c', long = "connections", default_value_t = 50)]
    pub connections: u32,
    /// How long to send for: 10s, 2m …
    #[arg(short = 'd', long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Open loop: this many requests per second in total, released on time by a precise pacer
    /// thread (sleep, then spin); latency is measured from the intended send time
    /// (coordinated-omission correction, as wrk2) with the figure from the actual send beside.
    #[arg(long)]
    pub rate: Option<f64>,
    /// A new TCP (and TLS) connection for every request, sent with `Connection: close`.
    #[arg(long)]
    pub new_conn: bool,
    /// HTTP/2: h2 by ALPN over https, h2c with prior knowledge over http.
    #[arg(long)]
    pub http2: bool,
    /// Concurrent streams per HTTP/2 connection (needs --http2).
    #[arg(long)]
    pub streams: Option<u32>,
    /// Virtual host sent as Host / :authority; repeat for several (round-robin, per-host results).
    #[arg(long = "host", value_name = "HOST")]
    pub hosts: Vec<String>,
    /// Extra request header, "Name: value"; repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Request method (default GET, or POST when a body is given).
    #[arg(short = 'm', long)]
    pub method: Option<String>,
    /// Request body.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Accept any TLS certificate (self-signed test servers).
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Per-request limit (connect + TLS + whole response); slower requests count as timeouts.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Spawn this command (sh -c, own process group), poll until its first 2xx answer, report
    /// the time to it, then run the warm benchmark; the group is killed at the end.
    #[arg(long, value_name = "CMD")]
    pub cold_start: Option<String>,
    /// How long --cold-start waits for the first 2xx answer.
    #[arg(long, default_value = "10s", value_parser = parse_duration, requires = "cold_start")]
    pub ready_timeout: Duration,
    /// Write the result document (JSON) to this file, atomically.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Client runtime threads. Default: one per CPU when the target is remote (a dedicated
    /// load machine); half the CPUs (at least 1) when it is on this machine (loopback or a
    /// local address), leaving the rest to the server — except with --new-conn, whose
    /// connection setup costs the client as much as the server (one per CPU). The output and
    /// the result's config say which was chosen and why (`threads`, `threads_why`).
    #[arg(long)]
    pub threads: Option<usize>,
    /// No progress line on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    #[command(flatten)]
    pub via: crate::via::ViaArgs,
    #[command(flatten)]
    pub segment: crate::segment::SegmentArgs,
    #[command(flatten)]
    pub metrics: crate::metrics::MetricsArgs,
}

/// Turns flags into the engine's config; every error names its flag.
pub fn config(a: &HttpArgs) -> anyhow::Result<Config> {
    a.metrics.check()?;
    let target = Target::parse(&a.url).map_err(|e| usage!("URL: {e}"))?;
    let mut c = Config::new(target);
    c.connections = a.connections;
    c.duration = a.duration;
    c.rate = a.rate;
    c.new_conn = a.new_conn;
    c.http2 = a.http2;
    if a.streams.is_some() && !a.http2 {
        return Err(usage!(
            "--streams needs --http2 (HTTP/1.1 carries one request at a time per connection)"
        ));
    }
    c.streams = a.streams.unwrap_or(1);
    c.via = a.via.resolve(false)?;
    c.hosts = a.hosts.clone();
    for h in &a.headers {
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| usage!("-H {h:?}: expected \"Name: value\""))?;
        let name = http::header::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| usage!("-H {h:?}: bad header name"))?;
        let value = http::header::HeaderValue::from_str(value.trim())
            .map_err(|_| usage!("-H {h:?}: bad header value"))?;
        if name == http::header::HOST {
            // A Host header is a virtual host: same meaning as --host.
            if a.hosts.is_empty() {
                c.hosts = vec![value
                    .to_str()
                    .map_err(|_| usage!("-H {h:?}: Host must be text"))?
                    .to_string()];
            }
            continue;
        }
        c.headers.push((name, value));
    }
    let body = match (&a.body, &a.body_file) {
        (Some(b), _) => Some(bytes::Bytes::from(b.clone().into_bytes())),
        (None, Some(p)) => Some(bytes::Bytes::from(
            std::fs::read(p).map_err(|e| usage!("--body-file {}: {e}", p.display()))?,
        )),
        (None, None) => None,
    };
    c.method = match &a.method {
        Some(m) => http::Method::from_bytes(m.as_bytes())
            .map_err(|_| usage!("-m/--method {m:?} is not a valid method"))?,
        None if body.is_some() => http::Method::POST,
        None => http::Method::GET,
    };
    c.body = body.unwrap_or_default();
    c.insecure = a.insecure;
    c.timeout = a.timeout;
    c.cold_start = a.cold_start.as_ref().map(|cmd| ColdStartConfig {
        command: cmd.clone(),
        ready_timeout: a.ready_timeout,
    });
    c.threads = a.threads;
    if a.threads == Some(0) {
        return Err(usage!("--threads must be at least 1"));
    }
    c.progress = !a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    c.validate().map_err(|e| usage!("{e}"))?;
    Ok(c)
}

fn config_json(a: &HttpArgs, c: &Config) -> serde_json::Value {
    serde_json::json!({
        "url": a.url,
        "connections": c.connections,
        "duration_s": c.duration.as_secs_f64(),
        "rate": c.rate,
        "new_conn": c.new_conn,
        "http2": c.http2,
        "streams": c.streams,
        "hosts": c.hosts,
        "headers": a.headers,
        "method": c.method.as_str(),
        "body_bytes": c.body.len(),
        "insecure": c.insecure,
        "timeout_s": c.timeout.as_secs_f64(),
        "cold_start": c.cold_start.as_ref().map(|cs| serde_json::json!({
            "command": cs.command,
            "ready_timeout_s": cs.ready_timeout.as_secs_f64(),
        })),
    })
}

pub fn run(args: HttpArgs) -> anyhow::Result<ExitCode> {
    let mut cfg = config(&args)?;
    let segment = args.segment.resolve(&config_json(&args, &cfg))?;
    if let Some((seg, _)) = &segment {
        seg.apply_http(&mut cfg)?;
    }
    if let Some(n) = args.segment.wait_for_start()? {
        eprintln!("npt http: {n}");
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let protocol = if cfg.http2 { "h2" } else { "http/1.1" };
    let metrics = args.metrics.start(
        "http",
        &[("protocol", protocol), ("target", &cfg.target.url)],
    )?;
    cfg.metrics = metrics.as_ref().map(|m| m.for_engine());
    let live = if crate::live::wanted(args.quiet) && cfg.cold_start.is_none() {
        let s = stop.clone();
        let spec = crate::live::Spec {
            title: format!("npt http {} {}", cfg.method, cfg.target.url),
            rate_unit: "req/s",
            duration: Some(cfg.duration),
        };
        cfg.progress = false;
        Some(crate::live::Live::start(spec, move || {
            s.store(true, Ordering::SeqCst)
        })?)
    } else {
        None
    };
    let mut errors_before = 0;
    let result = npt_http::run_with_progress(&cfg, stop, |p, elapsed| match &live {
        Some(l) => {
            l.sample(crate::live::Sample {
                t_s: elapsed.as_secs_f64(),
                rate: p.rps,
                p50_ms: p.p50_ms,
                p99_ms: p.p99_ms,
                errors: p.errors - errors_before,
                loss_pct: None,
            });
            errors_before = p.errors;
        }
        None if cfg.progress => eprint!("\r{}", p.line(elapsed)),
        None => {}
    });
    if let Some(l) = live {
        l.finish()?;
    }
    let result = result.map_err(|e| match e {
        npt_http::Error::Url(..) | npt_http::Error::Config(_) => usage!("{e}"),
        e => anyhow::Error::new(e),
    })?;
    let mut config = config_json(&args, &cfg);
    if let Some((_, info)) = &segment {
        crate::segment::label(&mut config, info)?;
    }
    let threads = result.threads.clone();
    config["threads"] = threads.threads.into();
    config["threads_why"] = threads.why.clone().into();
    let doc = Document::new(
        "http",
        result.started,
        result.ended,
        result.stopped_by,
        config,
        result.body,
    );
    // The report first: a closed stdout must not cost the user their result file.
    if let Some(path) = &args.json {
        npt_report::write_atomic(path, &doc.to_json_pretty())
            .with_context(|| format!("writing --json {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    render(&mut out, &doc.body, &doc.stopped_by)?;
    writeln!(out, "  threads     {} ({})", threads.threads, threads.why)?;
    out.flush()?;
    drop(out);
    if let Some(m) = metrics {
        m.linger_until_signal()?;
    }
    Ok(if doc.body.summary.requests == 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn lat(s: &npt_report::Summary) -> String {
    format!(
        "min {}  mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (ms)",
        text::ms(s.min),
        text::ms(s.mean),
        text::ms(s.p50),
        text::ms(s.p90),
        text::ms(s.p99),
        text::ms(s.p999),
        text::ms(s.max)
    )
}

/// The text summary.
pub fn render(w: &mut impl std::io::Write, b: &HttpBody, stopped_by: &str) -> std::io::Result<()> {
    let s = &b.summary;
    let shape = if s.new_conn {
        "new connection per request".to_string()
    } else if s.protocol == "h2" {
        format!("{} connections × {} streams", s.connections, s.streams)
    } else {
        format!("{} keep-alive connections", s.connections)
    };
    let mode = match s.rate {
        Some(r) => format!("open loop at {r} req/s"),
        None => format!("closed loop, {} concurrent", s.connections * s.streams),
    };
    writeln!(
        w,
        "npt http {} {}{} → {}: {}, {}",
        s.method,
        s.url,
        if s.tls { " (TLS)" } else { "" },
        s.target,
        s.protocol,
        shape
    )?;
    writeln!(
        w,
        "  mode        {mode}; {:.2} s, stopped by {stopped_by}",
        s.duration_s
    )?;
    if let Some(cs) = &b.cold_start {
        writeln!(
            w,
            "  cold start  ready after {} ms, first good request {} ms (status {}, {} attempts): `{}`",
            text::ms(cs.ready_ms),
            text::ms(cs.first_request_ms),
            cs.first_status,
            cs.attempts,
            cs.command
        )?;
    }
    writeln!(
        w,
        "  requests    {}  ({:.1} req/s)   2xx {}   errors {}",
        s.requests, s.rps, s.ok, s.errors
    )?;
    if s.in_flight_at_end > 0 {
        writeln!(
            w,
            "  in flight   {} at the end, the oldest {:.1} ms (not in the latencies)",
            s.in_flight_at_end, s.oldest_in_flight_ms
        )?;
    }
    let codes: Vec<String> = s.status.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    writeln!(
        w,
        "  status      {}",
        if codes.is_empty() {
            "-".into()
        } else {
            codes.join("  ")
        }
    )?;
    if let Some(u) = &s.latency_uncorrected_ms {
        writeln!(
            w,
            "  latency     {}   (from intended send time)",
            lat(&s.latency_ms)
        )?;
        writeln!(w, "  uncorrected {}   (from actual send)", lat(u))?;
        let timer = match &b.health.timer_lateness_ms {
            Some(t) => format!(
                "; pacer timer late p50 {:.1} p99 {:.1} max {:.1} µs",
                t.p50 * 1e3,
                t.p99 * 1e3,
                t.max * 1e3
            ),
            None => String::new(),
        };
        writeln!(
            w,
            "  schedule    {} sends more than {} ms behind schedule{timer}",
            b.health.sends_behind_schedule, b.health.behind_threshold_ms
        )?;
    } else {
        writeln!(w, "  latency     {}", lat(&s.latency_ms))?;
    }
    let p = &s.phases_ms;
    let mut phases = format!(
        "connect p50 {} p99 {} ({} conns)",
        text::ms(p.connect.p50),
        text::ms(p.connect.p99),
        s.connections_opened
    );
    if let Some(t) = &p.tls {
        phases += &format!("   tls p50 {} p99 {}", text::ms(t.p50), text::ms(t.p99));
    }
    phases += &format!(
        "   ttfb p50 {} p99 {}   complete p50 {} p99 {}  (ms)",
        text::ms(p.ttfb.p50),
        text::ms(p.ttfb.p99),
        text::ms(p.complete.p50),
        text::ms(p.complete.p99)
    );
    writeln!(w, "  phases      {phases}")?;
    if b.hosts.len() > 1 {
        writeln!(w, "  hosts")?;
        for (name, h) in &b.hosts {
            writeln!(
                w,
                "    {name:<20} {:>9} req  {:>10.1} req/s  p50 {}  p99 {} ms  errors {}",
                h.requests,
                h.rps,
                text::ms(h.latency_ms.p50),
                text::ms(h.latency_ms.p99),
                h.errors
            )?;
        }
    }
    for (kind, k) in b.errors.by_kind.iter() {
        writeln!(
            w,
            "  error       {kind}: {}  e.g. {}",
            k.count,
            k.examples.first().map_or("", |s| s.as_str())
        )?;
    }
    writeln!(
        w,
        "  bodies      sent {}  received {}  (headers excluded)",
        text::bits(s.throughput_bps.up),
        text::bits(s.throughput_bps.down)
    )?;
    writeln!(
        w,
        "  client      cpu {:.0}%  max rss {} MiB",
        b.health.cpu_pct,
        b.health.max_rss_bytes / (1 << 20)
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: HttpArgs,
    }

    fn parse(args: &[&str]) -> anyhow::Result<Config> {
        let mut v = vec!["npt"];
        v.extend_from_slice(args);
        let t = T::try_parse_from(v).map_err(|e| anyhow::anyhow!("{e}"))?;
        config(&t.a)
    }

    fn usage_msg(args: &[&str]) -> String {
        let e = parse(args).unwrap_err();
        assert!(e.downcast_ref::<crate::UsageError>().is_some(), "{e}");
        e.to_string()
    }

    #[test]
    fn bad_input_names_the_flag() {
        assert!(usage_msg(&["ftp://x/"]).contains("scheme"));
        assert!(usage_msg(&["nonsense"]).contains("URL"));
        assert!(usage_msg(&["http://127.0.0.1/", "--streams", "4"]).contains("--http2"));
        assert!(usage_msg(&["http://127.0.0.1/", "-H", "novalue"]).contains("-H"));
        assert!(usage_msg(&["http://127.0.0.1/", "--rate=-5"]).contains("--rate"));
        assert!(usage_msg(&["http://127.0.0.1/", "-c", "0"]).contains("-c"));
        assert!(
            usage_msg(&["http://127.0.0.1/", "--body-file", "/nonexistent/x"])
                .contains("--body-file")
        );
        let e = usage_msg(&[
            "http://127.0.0.1/",
            "--http2",
            "--new-conn",
            "--streams",
            "2",
        ]);
        assert!(e.contains("--new-conn"));
    }

    #[test]
    fn body_implies_post_and_host_header_is_a_vhost() {
        let c = parse(&[
            "http://127.0.0.1/",
            "--body",
            "hi",
            "-H",
            "Host: a.test",
            "-H",
            "X-A: 1",
        ])
        .unwrap();
        assert_eq!(c.method, http::Method::POST);
        assert_eq!(c.hosts, vec!["a.test".to_string()]);
        assert_eq!(c.headers.len(), 1);
        let c = parse(&[
            "http://127.0.0.1/",
            "-m",
            "PUT",
            "--http2",
            "--streams",
            "8",
            "-c",
            "2",
        ])
        .unwrap();
        assert_eq!((c.method.as_str(), c.streams, c.connections), ("PUT", 8, 2));
    }

    fn body(open_loop: bool, hosts: &[&str]) -> HttpBody {
        use npt_http::collect::{Collector, Event, Outcome, Record};
        let names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        let mut c = Collector::new(&names, open_loop, 1_000_000_000);
        for i in 0..10u64 {
            c.add(&Record::Request(Event {
                host: (i % hosts.len() as u64) as u16,
                outcome: Outcome::Response(if i == 0 { 503 } else { 200 }),
                intended_ns: open_loop.then_some(i * 1_000_000),
                sent_ns: i * 1_000_000,
                head_ns: i * 1_000_000 + 100_000,
                done_ns: i * 1_000_000 + 200_000,
                bytes_out: 0,
                bytes_in: 3,
            }));
        }
        c.add(&Record::Request(Event {
            host: 0,
            outcome: Outcome::Error("refused", "connection refused".into()),
            intended_ns: None,
            sent_ns: 0,
            head_ns: 0,
            done_ns: 0,
            bytes_out: 0,
            bytes_in: 0,
        }));
        let summary = npt_report::http::HttpSummary {
            url: "http://127.0.0.1:1/".into(),
            method: "GET".into(),
            protocol: "http/1.1".into(),
            connections: 2,
            streams: 1,
            rate: open_loop.then_some(1000.0),
            ..Default::default()
        };
        c.finish(summary, 1_000_000_000, Default::default())
    }

    fn rendered(b: &HttpBody) -> String {
        let mut out = Vec::new();
        render(&mut out, b, "duration").unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn summary_text_closed_loop_one_host() {
        let t = rendered(&body(false, &["a.test"]));
        assert!(t.contains("closed loop, 2 concurrent"), "{t}");
        assert!(
            t.contains("requests    10  (10.0 req/s)   2xx 9   errors 1"),
            "{t}"
        );
        assert!(t.contains("status      200: 9  503: 1"), "{t}");
        assert!(
            t.contains("error       refused: 1  e.g. connection refused"),
            "{t}"
        );
        assert!(!t.contains("uncorrected"), "{t}");
        assert!(
            !t.contains("hosts"),
            "one host needs no per-host table: {t}"
        );
    }

    #[test]
    fn summary_text_open_loop_hosts_and_cold_start() {
        let mut b = body(true, &["app1.test", "app2.test"]);
        b.cold_start = Some(npt_report::http::ColdStart {
            command: "node app.js".into(),
            ready_ms: 201.0,
            first_request_ms: 11.7,
            attempts: 5,
            first_status: 200,
        });
        let t = rendered(&b);
        assert!(t.contains("open loop at 1000 req/s"), "{t}");
        assert!(t.contains("(from intended send time)"), "{t}");
        assert!(t.contains("uncorrected min"), "{t}");
        assert!(t.contains("app1.test") && t.contains("app2.test"), "{t}");
        assert!(t.contains("cold start  ready after 201"), "{t}");
        assert!(t.contains("`node app.js`"), "{t}");
    }
}
