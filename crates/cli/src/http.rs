//! `npt http`: the gateway benchmark (as DynaPM's gateway benchmark measured). Parses flags, validates them into
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
use npt_result::Document;

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
        npt_result::write_atomic(path, &doc.to_json_pretty())
            .with_context(|| format!("writing --json {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    npt_report::text::write_http(&mut out, &doc)?;
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
}
