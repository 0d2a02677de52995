//! `npt http`: the gateway benchmark (as DynaPM's gateway benchmark measured). Parses flags,
//! validates them into [`npt_http::Config`] (usage errors name the flag) and says how a
//! benchmark is shown (status line, live view, text summary); [`execute`] runs it and writes
//! the `http` result document with `--json` — also when the run is cut short by Ctrl-C.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use npt_http::client::ColdStartConfig;
use npt_http::{Config, Target};
use npt_result::http::HttpBody;
use npt_result::workload::Progress;
use npt_result::Document;

use crate::execute::{execute, Lines, Options, RunCommand};
use crate::flags::duration::{self, DurationArgs};
use crate::flags::segment::Segment;
use crate::usage;
use crate::usage::parse_duration;

#[derive(Args, Debug, Clone)]
#[command(after_help = "Examples:
  npt http http://127.0.0.1:8080/ -c 50 -d 30s
  npt http http://gw:80/ --host app1.test --host app2.test -c 50 -d 5s
  npt http http://gw:80/ --host app1.test=50 --host app2.test=50 -d 5s
  npt http http://gw:80/ --host app1.test=200/s --host app2.test=200/s -c 20
  npt http URL --new-conn -c 50 -d 10s
  npt http URL --http2 --streams 10 -c 4
  npt http URL --http2-fallback -c 50
  npt http URL --rate 5000 -d 30s
  npt http URL --cold-start 'node app.js' --ready-timeout 10s")]
#[command(mut_args(duration::says("How long to send for: 10s, 2m …", Some("10s"))))]
pub struct HttpArgs {
    /// http:// or https:// URL to load (the address connected to; see --host).
    pub url: String,
    /// Concurrent connections (each carries --streams requests with --http2) [default: 50];
    /// with per-host rates (--host NAME=R/s), each host's own.
    #[arg(short = 'c', long = "connections")]
    pub connections: Option<u32>,
    #[command(flatten)]
    pub duration: DurationArgs,
    /// Open loop: this many requests per second in total, released on time by a precise pacer
    /// thread (sleep, then spin); latency is measured from the intended send time
    /// (coordinated-omission correction, as wrk2) with the figure from the actual send beside.
    #[arg(long)]
    pub rate: Option<f64>,
    /// A new TCP (and TLS) connection for every request, sent with `Connection: close`.
    #[arg(long)]
    pub new_conn: bool,
    /// HTTP/2: h2 by ALPN over https (h2 and http/1.1 offered), h2c with prior knowledge over
    /// http. Asked once before the run: a server without HTTP/2 fails the run in one line
    /// (exit 1).
    #[arg(long)]
    pub http2: bool,
    /// HTTP/2 when the server speaks it, else HTTP/1.1 (--streams then 1): the result's
    /// summary.protocol says which ran, summary.downgrade why it fell back.
    #[arg(long)]
    pub http2_fallback: bool,
    /// Concurrent streams per HTTP/2 connection (needs --http2).
    #[arg(long)]
    pub streams: Option<u32>,
    /// Virtual host sent as Host / :authority; repeat for several. Plain HOST: the hosts share
    /// the -c connections round-robin (every host gets the same request rate). HOST=N: N
    /// connections of its own (closed loop); HOST=R/s: R requests/s of its own on -c connections
    /// (open loop) — each host loaded as by a separate client, its rate and latency its own.
    #[arg(long = "host", value_name = "HOST[=N|=R/s]")]
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
    /// With --cold-start through a gateway: the started command's own port ([HOST:]PORT, HOST
    /// the URL's by default). The cold start is then also split at the command's first 2xx
    /// on that port, asked directly (plain HTTP/1.1): the service's part and the gateway's.
    #[arg(long, value_name = "[HOST:]PORT", requires = "cold_start")]
    pub cold_start_port: Option<String>,
    /// How long --cold-start waits for the first 2xx answer.
    #[arg(long, default_value = "10s", value_parser = parse_duration, requires = "cold_start")]
    pub ready_timeout: Duration,
    /// Client runtime threads. Default: one per CPU when the target is remote (a dedicated
    /// load machine); half the CPUs (at least 1) when it is on this machine (loopback or a
    /// local address), leaving the rest to the server — except with --new-conn, whose
    /// connection setup costs the client as much as the server (one per CPU). The output and
    /// the result's config say which was chosen and why (`threads`, `threads_why`).
    #[arg(long)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub output: crate::flags::output::OutputArgs,
    #[command(flatten)]
    pub source: crate::flags::source::SourceArgs,
    #[command(flatten)]
    pub via: crate::flags::via::ViaArgs,
    #[command(flatten)]
    pub segment: crate::flags::segment::SegmentArgs,
    #[command(flatten)]
    pub metrics: crate::flags::metrics::MetricsArgs,
}

/// Turns flags into the engine's config; every error names its flag.
pub fn config(a: &HttpArgs) -> anyhow::Result<Config> {
    a.metrics.check()?;
    let target = Target::parse(&a.url).map_err(|e| usage!("URL: {e}"))?;
    let mut c = Config::new(target);
    let (hosts, loads) = host_loads(&a.hosts)?;
    if a.connections.is_some()
        && loads
            .iter()
            .any(|l| matches!(l, npt_http::client::HostLoad::Connections(_)))
    {
        return Err(usage!(
            "-c/--connections cannot be combined with --host NAME=N (each host's connections are its own)"
        ));
    }
    c.connections = a.connections.unwrap_or(50);
    c.duration = a.duration.get();
    c.rate = a.rate;
    c.new_conn = a.new_conn;
    c.http2 = a.http2 || a.http2_fallback;
    c.http2_fallback = a.http2_fallback;
    if a.streams.is_some() && !c.http2 {
        return Err(usage!(
            "--streams needs --http2 (HTTP/1.1 carries one request at a time per connection)"
        ));
    }
    c.streams = a.streams.unwrap_or(1);
    c.via = a.via.resolve(false)?;
    c.source = a
        .source
        .for_target("http", &c.target.host, false, c.via.is_some())?;
    c.hosts = hosts;
    c.host_loads = loads;
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
            if c.hosts.is_empty() {
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
    let service = match &a.cold_start_port {
        None => None,
        Some(p) => Some(service_port(p, &c.target.host)?),
    };
    c.cold_start = a.cold_start.as_ref().map(|cmd| ColdStartConfig {
        command: cmd.clone(),
        ready_timeout: a.ready_timeout,
        service,
    });
    c.threads = a.threads;
    if a.threads == Some(0) {
        return Err(usage!("--threads must be at least 1"));
    }
    c.header_lines = a.headers.clone();
    c.validate().map_err(|e| usage!("{e}"))?;
    Ok(c)
}

/// `--cold-start-port PORT`, `HOST:PORT` or `[V6]:PORT`; the URL's host when none is given.
fn service_port(given: &str, url_host: &str) -> anyhow::Result<(String, u16)> {
    let bad = || usage!("--cold-start-port {given:?}: expected PORT or HOST:PORT, e.g. 3000");
    let (host, port) = match given.rsplit_once(':') {
        None => (url_host, given),
        Some((h, p)) => (h.trim_start_matches('[').trim_end_matches(']'), p),
    };
    let port: u16 = port.parse().map_err(|_| bad())?;
    if port == 0 || host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

/// `--host NAME`, `NAME=N` (connections of its own) or `NAME=R/s` (a rate of its own). The
/// `=` cannot be confused with `NAME:PORT`; a load on some hosts only is refused by
/// [`Config::validate`].
fn host_loads(given: &[String]) -> anyhow::Result<(Vec<String>, Vec<npt_http::client::HostLoad>)> {
    use npt_http::client::HostLoad;
    let mut hosts = Vec::new();
    let mut loads = Vec::new();
    for g in given {
        let Some((name, load)) = g.split_once('=') else {
            hosts.push(g.clone());
            continue;
        };
        let bad = |why: &str| {
            usage!("--host {g:?}: {why}; expected HOST, HOST=N (connections) or HOST=R/s (requests per second)")
        };
        if name.is_empty() {
            return Err(bad("no host name before '='"));
        }
        if hosts.iter().any(|h: &String| h.eq_ignore_ascii_case(name)) {
            return Err(bad("host given twice"));
        }
        let l = match load.strip_suffix("/s") {
            Some(r) => match r.parse::<f64>() {
                Ok(r) if r.is_finite() && r > 0.0 => HostLoad::Rate(r),
                _ => return Err(bad("the rate must be a positive number")),
            },
            None => match load.parse::<u32>() {
                Ok(n) if n > 0 => HostLoad::Connections(n),
                _ => return Err(bad("the connections must be a whole number of at least 1")),
            },
        };
        hosts.push(name.to_string());
        loads.push(l);
    }
    if !loads.is_empty() && loads.len() != hosts.len() {
        return Err(usage!(
            "--host: give every host its own load (HOST=N or HOST=R/s) or none"
        ));
    }
    Ok((hosts, loads))
}

pub fn run(args: HttpArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&args)?;
    let protocol = match (cfg.http2, cfg.http2_fallback) {
        (true, false) => "h2",
        (true, true) => "h2 or http/1.1",
        _ => "http/1.1",
    };
    let labels = vec![
        ("protocol", protocol.to_string()),
        ("target", cfg.target.url.clone()),
    ];
    let mut o = Options::new(&args.output);
    o.segment = &args.segment;
    o.metrics = &args.metrics;
    o.labels = labels;
    execute(cfg, o)
}

impl RunCommand for Config {
    const LINES: Lines = Lines::Status {
        off_tty: false,
        wipe: true,
    };

    fn split(&mut self, seg: &Segment) -> anyhow::Result<()> {
        seg.apply_http(self)
    }

    /// None while a cold start runs: its wait is not a run to watch.
    fn live(&self) -> Option<crate::execute::live::Spec> {
        self.cold_start
            .is_none()
            .then(|| crate::execute::live::Spec {
                title: format!("npt http {} {}", self.method, self.target.url),
                rate_unit: "req/s",
                duration: Some(self.duration),
            })
    }

    fn line(p: &Progress<'_>) -> String {
        format!(
            "{:>4.0}s  {} requests  {:.0} req/s  p99 {:.2} ms  {} errors   ",
            p.elapsed.as_secs_f64(),
            p.completed,
            p.interval.rate_per_s,
            p.interval.latency_ms.p99,
            p.errors
        )
    }

    fn render(out: &mut dyn Write, doc: &Document<HttpBody>) -> std::io::Result<()> {
        npt_report::text::write_http(out, doc)
    }

    /// The report says it (0 requests): no message.
    fn failed(body: &HttpBody) -> Option<&'static str> {
        (body.summary.requests == 0).then_some("")
    }

    fn is_usage(e: &npt_http::Error) -> bool {
        matches!(e, npt_http::Error::Url(..) | npt_http::Error::Config(_))
    }
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
    fn cold_start_port_takes_a_port_or_an_address() {
        let cs = |p: &str| {
            parse(&[
                "http://gw.test:8080/",
                "--cold-start",
                "x",
                "--cold-start-port",
                p,
            ])
            .map(|c| c.cold_start.unwrap().service.unwrap())
        };
        assert_eq!(cs("3000").unwrap(), ("gw.test".to_string(), 3000));
        assert_eq!(
            cs("127.0.0.1:3000").unwrap(),
            ("127.0.0.1".to_string(), 3000)
        );
        assert_eq!(cs("[::1]:3000").unwrap(), ("::1".to_string(), 3000));
        for bad in ["0", "x", "h:", "70000"] {
            let e = cs(bad).unwrap_err();
            assert!(e.to_string().contains("--cold-start-port"), "{bad}: {e}");
        }
    }

    #[test]
    fn per_host_loads_parse_and_bad_ones_name_the_flag() {
        use npt_http::client::HostLoad;
        let c = parse(&[
            "http://127.0.0.1/",
            "--host",
            "a.test=50",
            "--host",
            "b.test:8080=3",
        ])
        .unwrap();
        assert_eq!(c.hosts, ["a.test", "b.test:8080"]);
        assert_eq!(
            c.host_loads,
            [HostLoad::Connections(50), HostLoad::Connections(3)]
        );
        let c = parse(&[
            "http://127.0.0.1/",
            "--host",
            "a=200/s",
            "--host",
            "b=2.5/s",
            "-c",
            "4",
        ])
        .unwrap();
        assert_eq!(c.host_loads, [HostLoad::Rate(200.0), HostLoad::Rate(2.5)]);
        assert_eq!(c.connections, 4);
        // Plain hosts keep sharing the connections.
        let c = parse(&["http://127.0.0.1/", "--host", "a:81", "--host", "b"]).unwrap();
        assert!(c.host_loads.is_empty());
        for (args, needle) in [
            (&["--host", "a=0"][..], "--host"),
            (&["--host", "a=x"][..], "--host"),
            (&["--host", "a=-1/s"][..], "--host"),
            (&["--host", "=5"][..], "--host"),
            (&["--host", "a=5", "--host", "b"][..], "--host"),
            (&["--host", "a=5", "--host", "b=5/s"][..], "--host"),
            (&["--host", "a=5", "--host", "a=6"][..], "twice"),
            (&["--host", "a=5", "-c", "3"][..], "-c"),
            (&["--host", "a=5/s", "--rate", "3"][..], "--rate"),
            (&["--host", "a=5", "--rate", "3"][..], "--rate"),
        ] {
            let mut v = vec!["http://127.0.0.1/"];
            v.extend_from_slice(args);
            let e = usage_msg(&v);
            assert!(e.contains(needle), "{args:?}: {e}");
        }
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
