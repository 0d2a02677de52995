//! `npt probe`: flags (or seed 002's XML config) → a validated `ProbeConfig` → run → report.
//!
//! Layering: an XML config, when given, sets the values; any flag given on the command line
//! overrides it. Every value is checked here and an error names the flag (or XML attribute).

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use npt_probe::probe::driver::Control;
use npt_probe::probe::runner::{self, PacingSpec, ProbeConfig, Proto, StageSpec};
use npt_probe::probe::xml::{self, XmlLog, XmlPacing, XmlStop};
use npt_wire::Fill;

use crate::probe_checks::check_memory;
use crate::usage;
use crate::usage::parse_duration;
use crate::via::ViaArgs;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Send, then wait --interval after each packet (closed loop, like ping).
    Interval,
    /// Fixed --pps, open loop; latency also from the intended send time.
    Rate,
    /// Warm up --warmup packets, then send one per reply (seed 002's onrecv).
    Relay,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    #[default]
    Text,
    Json,
}

#[derive(Args, Debug, Default)]
pub struct ProbeArgs {
    /// udp://HOST:PORT or tcp://HOST:PORT (not needed with --config).
    pub target: Option<String>,
    /// Seed 002's XML config (ConfigTemplate.xml); flags given here override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Pacing mode [default: rate].
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Packets per second, whole run (rate mode) [default: 100].
    #[arg(long)]
    pub pps: Option<f64>,
    /// Wait after each send (interval mode) [default: 10ms].
    #[arg(long, value_parser = parse_duration)]
    pub interval: Option<Duration>,
    /// Packets in flight after warm-up, whole run (relay mode) [default: 128].
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Spacing of warm-up packets (relay mode) [default: 1ms].
    #[arg(long, value_parser = parse_duration)]
    pub warmup_interval: Option<Duration>,
    /// One message in flight over one connection, the next sent when its echo is back (seed
    /// 001's TCP ping-pong client): short for --mode relay --warmup 1.
    #[arg(long)]
    pub ping_pong: bool,
    /// Stop after sending this many packets.
    #[arg(long, short = 'n')]
    pub count: Option<u64>,
    /// Stop sending after this long (e.g. 60s, 2m). Neither this nor --count: until Ctrl-C.
    #[arg(long, short = 'd', value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Client sockets (distinct source ports); the load is split evenly [default: 1].
    #[arg(long)]
    pub clients: Option<u32>,
    /// Sender threads the clients are spread over [default: min(clients, cores)].
    #[arg(long)]
    pub threads: Option<u32>,
    /// Bytes per packet, npt's header included [default: 64].
    #[arg(long, short = 's')]
    pub size: Option<usize>,
    /// Payload fill.
    #[arg(long, default_value = "random", value_parser = parse_fill)]
    pub fill: Fill,
    /// Check that every echoed payload is what was sent.
    #[arg(long)]
    pub verify: bool,
    /// Carry sequence and timestamp inside the payload, for any plain echo server.
    #[arg(long)]
    pub raw: bool,
    /// Secret the server was started with (npt serve --token): a keyed handshake per flow,
    /// then every packet carries a MAC (the secret never travels).
    #[arg(long, value_name = "SECRET")]
    pub token: Option<String>,
    /// A packet unanswered this long is lost; a later reply is "late".
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub loss_timeout: Duration,
    /// Print a stage line every this long [default: 1s].
    #[arg(long, value_parser = parse_duration)]
    pub report_every: Option<Duration>,
    /// Print a stage line every this many packets sent (instead of by time).
    #[arg(long)]
    pub report_every_packets: Option<u64>,
    /// Sends more than this late count as behind schedule.
    #[arg(long, value_parser = parse_duration, default_value = "1ms")]
    pub behind_threshold: Duration,
    /// Write the result document (JSON) to this file, atomically.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// What goes to stdout: a text report, or the JSON result document.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// No stage lines while running.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub via: ViaArgs,
    #[command(flatten)]
    pub segment: crate::segment::SegmentArgs,
    #[command(flatten)]
    pub metrics: crate::metrics::MetricsArgs,
}

fn parse_fill(s: &str) -> Result<Fill, String> {
    s.parse()
}

/// Splits `udp://host:port` into protocol and address text.
fn parse_target(t: &str) -> anyhow::Result<(Proto, String)> {
    let (scheme, rest) = t
        .split_once("://")
        .ok_or_else(|| usage!("target {t:?}: expected udp://HOST:PORT or tcp://HOST:PORT"))?;
    let proto = match scheme.to_ascii_lowercase().as_str() {
        "udp" => Proto::Udp,
        "tcp" => Proto::Tcp,
        other => {
            return Err(usage!(
                "target {t:?}: unsupported scheme {other:?} (probe speaks udp:// and tcp://)"
            ))
        }
    };
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() {
        return Err(usage!("target {t:?}: missing HOST:PORT"));
    }
    Ok((proto, rest.to_string()))
}

pub fn resolve(hostport: &str, flag: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = hostport.parse::<SocketAddr>() {
        return Ok(a);
    }
    let (host, port) = hostport
        .rsplit_once(':')
        .ok_or_else(|| usage!("{flag} {hostport:?}: missing :PORT"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| usage!("{flag} {hostport:?}: bad port {port:?}"))?;
    if port == 0 {
        return Err(usage!("{flag} {hostport:?}: port 0 is not a target"));
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let mut addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| usage!("{flag} {hostport:?}: cannot resolve host {host:?}: {e}"))?;
    addrs
        .next()
        .ok_or_else(|| usage!("{flag} {hostport:?}: host {host:?} has no address"))
}

/// A target the proxy will resolve: the unspecified address with the target's port.
fn unresolved(hostport: &str) -> anyhow::Result<SocketAddr> {
    let port = hostport
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .ok_or_else(|| usage!("target {hostport:?}: missing :PORT"))?;
    Ok(SocketAddr::from(([0, 0, 0, 0], port)))
}

/// Turns flags (and the XML config, if any) into a validated run config.
pub fn config(a: &ProbeArgs) -> anyhow::Result<(ProbeConfig, Vec<String>)> {
    a.metrics.check()?;
    let mut notices = Vec::new();
    let x = match &a.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| usage!("--config {}: {e}", path.display()))?;
            let x = xml::parse(&text).map_err(|e| usage!("--config {}: {e}", path.display()))?;
            if !x.ignored.is_empty() {
                notices.push(format!(
                    "config: ignored (no equivalent in npt, one sender loop per client): {}",
                    x.ignored.join(", ")
                ));
            }
            Some(x)
        }
        None => None,
    };
    let (proto, hostport) = match (&a.target, &x) {
        (Some(t), _) => parse_target(t)?,
        (None, Some(x)) => (
            if x.tcp { Proto::Tcp } else { Proto::Udp },
            if x.host.contains(':') {
                format!("[{}]:{}", x.host, x.port)
            } else {
                format!("{}:{}", x.host, x.port)
            },
        ),
        (None, None) => {
            return Err(usage!(
                "a target is required: npt probe udp://HOST:PORT (or --config FILE)"
            ))
        }
    };
    let via = a.via.resolve(proto == Proto::Udp)?;
    let addr = match resolve(&hostport, "target") {
        Ok(addr) => addr,
        // socks5h://: the proxy resolves the name; the port is all npt needs here.
        Err(_) if a.via.remote_dns() => unresolved(&hostport)?,
        Err(e) => return Err(e),
    };

    // Pacing: flags first, then the XML, then defaults.
    let mode = a.mode.or(x.as_ref().map(|x| match x.pacing {
        XmlPacing::Interval(_) => Mode::Interval,
        XmlPacing::OnSend { .. } => Mode::Rate,
        XmlPacing::OnRecv { .. } => Mode::Relay,
    }));
    if a.ping_pong {
        if matches!(a.mode, Some(m) if m != Mode::Relay) {
            return Err(usage!(
                "--ping-pong is relay pacing; it cannot be used with --mode"
            ));
        }
        if matches!(a.warmup, Some(w) if w != 1) {
            return Err(usage!(
                "--ping-pong keeps one message in flight; drop --warmup"
            ));
        }
    }
    let mode = if a.ping_pong {
        Mode::Relay
    } else {
        mode.unwrap_or(Mode::Rate)
    };
    let flag_for_other_mode = |given: bool, flag: &str, needs: &str| -> anyhow::Result<()> {
        if given {
            return Err(usage!("{flag} applies only to --mode {needs}"));
        }
        Ok(())
    };
    let pacing = match mode {
        Mode::Rate => {
            flag_for_other_mode(a.interval.is_some(), "--interval", "interval")?;
            flag_for_other_mode(
                a.warmup.is_some() || a.warmup_interval.is_some(),
                "--warmup/--warmup-interval",
                "relay",
            )?;
            let pps = a
                .pps
                .or(match x.as_ref().map(|x| x.pacing) {
                    Some(XmlPacing::OnSend { maxpps }) => Some(maxpps),
                    _ => None,
                })
                .unwrap_or(100.0);
            if !(pps.is_finite() && pps > 0.0 && pps <= 10_000_000.0) {
                return Err(usage!("--pps {pps}: must be between 0 and 10,000,000"));
            }
            PacingSpec::Rate { pps }
        }
        Mode::Interval => {
            flag_for_other_mode(a.pps.is_some(), "--pps", "rate")?;
            flag_for_other_mode(
                a.warmup.is_some() || a.warmup_interval.is_some(),
                "--warmup/--warmup-interval",
                "relay",
            )?;
            let (interval, source) = match (a.interval, x.as_ref().map(|x| x.pacing)) {
                (Some(d), _) => (d, "--interval"),
                (None, Some(XmlPacing::Interval(d))) => (d, "--config: <relay interval>"),
                _ => (Duration::from_millis(10), "--interval"),
            };
            if interval.is_zero() {
                return Err(usage!(
                    "{source} 0: must be positive (0 would send as fast as the CPU allows, for \
                     ever); for a fixed rate use --mode rate --pps N"
                ));
            }
            PacingSpec::Interval { interval }
        }
        Mode::Relay => {
            flag_for_other_mode(a.pps.is_some(), "--pps", "rate")?;
            flag_for_other_mode(a.interval.is_some(), "--interval", "interval")?;
            let (xw, xi) = match x.as_ref().map(|x| x.pacing) {
                Some(XmlPacing::OnRecv { warmup, interval }) => (Some(warmup), Some(interval)),
                _ => (None, None),
            };
            let warmup = if a.ping_pong {
                1
            } else {
                a.warmup.or(xw).unwrap_or(128)
            };
            if warmup == 0 {
                return Err(usage!("--warmup must be at least 1 (packets in flight)"));
            }
            PacingSpec::Relay {
                warmup,
                warmup_interval: a.warmup_interval.or(xi).unwrap_or(Duration::from_millis(1)),
            }
        }
    };

    // Stop condition.
    let (mut count, mut duration) = (a.count, a.duration);
    if count.is_none() && duration.is_none() {
        match x.as_ref().map(|x| x.stop) {
            Some(XmlStop::Count(n)) => count = Some(n),
            Some(XmlStop::Time(d)) => duration = Some(d),
            _ => {}
        }
    }
    if count == Some(0) {
        return Err(usage!("--count must be at least 1"));
    }
    if duration == Some(Duration::ZERO) {
        return Err(usage!("--duration must be positive"));
    }

    let clients = a.clients.or(x.as_ref().map(|x| x.clients)).unwrap_or(1);
    if clients == 0 || clients > 10_000 {
        return Err(usage!("--clients {clients}: must be between 1 and 10000"));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let threads = a.threads.unwrap_or(clients.min(cores));
    if threads == 0 {
        return Err(usage!("--threads must be at least 1"));
    }
    if threads > clients {
        notices.push(format!(
            "--threads {threads} > --clients {clients}: using {clients}"
        ));
    }

    let raw = a.raw || (x.is_some() && a.token.is_none());
    if a.raw && a.token.is_some() {
        return Err(usage!(
            "--token needs npt's framed packets; it cannot be used with --raw"
        ));
    }
    let min = if raw {
        npt_wire::RAW_HEADER_LEN
    } else {
        npt_wire::HEADER_LEN
    };
    let max = match proto {
        Proto::Udp => 65_507,
        Proto::Tcp => npt_wire::frame::MAX_FRAME_LEN as usize,
    };
    let size = a.size.unwrap_or(64);
    if size < min || size > max {
        return Err(usage!(
            "--size {size}: must be between {min} (the {} header) and {max} bytes",
            if raw { "raw" } else { "framed" }
        ));
    }
    if a.loss_timeout.is_zero() {
        return Err(usage!("--loss-timeout must be positive"));
    }
    if a.report_every.is_some() && a.report_every_packets.is_some() {
        return Err(usage!(
            "--report-every and --report-every-packets cannot be used together"
        ));
    }
    let stage = match (a.report_every, a.report_every_packets) {
        (Some(d), None) if d.is_zero() => return Err(usage!("--report-every must be positive")),
        (Some(d), None) => StageSpec::Time(d),
        (None, Some(0)) => return Err(usage!("--report-every-packets must be at least 1")),
        (None, Some(p)) => StageSpec::Packets(p),
        _ => match x.as_ref().and_then(|x| x.log) {
            Some(XmlLog::Count(p)) => StageSpec::Packets(p),
            Some(XmlLog::Time(d)) => StageSpec::Time(d),
            None => StageSpec::Time(Duration::from_secs(1)),
        },
    };
    if matches!(&a.token, Some(t) if t.is_empty()) {
        return Err(usage!("--token must not be empty"));
    }
    if a.token.is_some() && proto == Proto::Udp && via.is_some() {
        return Err(usage!(
            "--token cannot be used with --via over UDP yet (the handshake does not go through \
             a SOCKS5 UDP relay); use tcp:// through the proxy"
        ));
    }
    check_memory(clients, stage, a.loss_timeout, &pacing)?;
    let mut cfg = ProbeConfig {
        proto,
        target: hostport,
        addr,
        raw,
        token: a.token.clone(),
        size,
        fill: a.fill,
        verify: a.verify,
        pacing,
        loss_timeout: a.loss_timeout,
        count,
        duration,
        clients,
        threads: threads.min(clients),
        stage,
        behind_threshold: a.behind_threshold,
        via,
        segment: None,
    };
    if let Some((seg, info)) = a.segment.resolve(&serde_json::to_value(&cfg)?)? {
        seg.apply_probe(&mut cfg)?;
        cfg.segment = Some(serde_json::to_value(info)?);
    }
    Ok((cfg, notices))
}

pub fn run(a: ProbeArgs) -> anyhow::Result<ExitCode> {
    let (mut cfg, mut notices) = config(&a)?;
    if cfg.proto == Proto::Tcp && cfg.via.is_none() {
        // A name with several addresses (localhost → ::1, 127.0.0.1): the first that accepts.
        if let Some((addr, note)) = crate::probe_checks::first_accepting(&cfg.target, cfg.addr) {
            cfg.addr = addr;
            notices.extend(note);
        }
    }
    notices.extend(a.segment.wait_for_start()?);
    for n in &notices {
        eprintln!("npt probe: {n}");
    }
    let control = Arc::new(Control::default());
    crate::signals::install(&control)?;
    let target = cfg.addr.to_string();
    let metrics = a.metrics.start(
        "probe",
        &[("protocol", cfg.proto.name()), ("target", &target)],
    )?;
    let mut probe_live = crate::metrics::ProbeLive::default();
    let json_to_stdout = a.format == Format::Json;
    if !a.quiet {
        eprintln!("{}", banner(&cfg));
    }
    let quiet = a.quiet;
    let live = if crate::live::wanted(quiet) && !json_to_stdout {
        let c = control.clone();
        let spec = crate::live::Spec {
            title: banner(&cfg),
            rate_unit: "pps",
            duration: cfg.duration,
        };
        Some(crate::live::Live::start(spec, move || {
            c.signals.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })?)
    } else {
        None
    };
    let outcome = runner::run(&cfg, control.clone(), |stage| {
        if let Some(m) = &metrics {
            probe_live.stage(m, stage);
        }
        if let Some(l) = &live {
            l.sample(crate::live::Sample {
                t_s: stage.end_s,
                rate: stage.rate_per_s,
                p50_ms: stage.latency_ms.p50,
                p99_ms: stage.latency_ms.p99,
                errors: stage.errors,
                loss_pct: stage.loss_pct,
            });
            return;
        }
        if quiet {
            return;
        }
        let line = npt_report::text::stage_line(stage);
        // Stage lines go where they do not mix with the JSON document.
        if json_to_stdout {
            eprintln!("{line}");
        } else {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    })?;
    if let Some(l) = live {
        l.finish()?;
    }
    let code = finish(&outcome, a.json.as_deref(), a.format)?;
    if let Some(m) = metrics {
        probe_live.finish(&m, &outcome.doc.body);
        let signals = control.signals.load(std::sync::atomic::Ordering::SeqCst);
        m.linger(|| control.signals.load(std::sync::atomic::Ordering::SeqCst) > signals);
    }
    Ok(code)
}

pub fn banner(cfg: &ProbeConfig) -> String {
    let pacing = match cfg.pacing {
        PacingSpec::Rate { pps } => format!("rate {pps} pps (open loop)"),
        PacingSpec::Interval { interval } => format!("interval {interval:?} (closed loop)"),
        PacingSpec::Relay {
            warmup,
            warmup_interval,
        } => format!("relay, warm-up {warmup} packets every {warmup_interval:?} (closed loop)"),
    };
    let stop = match (cfg.count, cfg.duration) {
        (Some(c), Some(d)) => format!("{c} packets or {d:?}"),
        (Some(c), None) => format!("{c} packets"),
        (None, Some(d)) => format!("{d:?}"),
        (None, None) => "until Ctrl-C".to_string(),
    };
    format!(
        "npt probe {}://{} ({}): {pacing}, {} B {}, {} client(s), stop after {stop}",
        cfg.proto.name(),
        cfg.target,
        cfg.addr,
        cfg.size,
        if cfg.raw { "raw" } else { "framed" },
        cfg.clients
    )
}

/// Writes the result (file and/or stdout) and picks the exit code.
pub fn finish(
    outcome: &runner::Outcome,
    json: Option<&std::path::Path>,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let bytes = outcome.doc.to_json_pretty();
    if let Some(path) = json {
        npt_report::write_atomic(path, &bytes)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => out.write_all(&bytes)?,
        Format::Text => npt_report::text::write_probe(&mut out, &outcome.doc)?,
    }
    out.flush()?;
    if outcome.nothing_answered {
        eprintln!("npt probe: no reply was received");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(target: &str) -> ProbeArgs {
        ProbeArgs {
            target: Some(target.to_string()),
            fill: Fill::Random,
            loss_timeout: Duration::from_secs(1),
            behind_threshold: Duration::from_millis(1),
            format: Format::Text,
            ..ProbeArgs::default()
        }
    }

    fn err(a: &ProbeArgs) -> String {
        config(a).unwrap_err().to_string()
    }

    #[test]
    fn defaults() {
        let (c, _) = config(&args("udp://127.0.0.1:7777")).unwrap();
        assert_eq!(c.proto, Proto::Udp);
        assert_eq!(c.pacing, PacingSpec::Rate { pps: 100.0 });
        assert_eq!((c.size, c.clients, c.raw), (64, 1, false));
        assert_eq!(c.stage, StageSpec::Time(Duration::from_secs(1)));
        assert_eq!((c.count, c.duration), (None, None));
    }

    #[test]
    fn interval_zero_is_refused_and_ping_pong_is_relay_with_one_in_flight() {
        let mut a = args("udp://127.0.0.1:7777");
        a.mode = Some(Mode::Interval);
        a.interval = Some(Duration::ZERO);
        assert!(
            err(&a).contains("--interval 0: must be positive"),
            "{}",
            err(&a)
        );
        let mut a = args("tcp://127.0.0.1:7777");
        a.ping_pong = true;
        let (c, _) = config(&a).unwrap();
        assert!(matches!(c.pacing, PacingSpec::Relay { warmup: 1, .. }));
        a.mode = Some(Mode::Rate);
        assert!(err(&a).contains("--ping-pong"));
    }

    #[test]
    fn bad_targets_name_the_problem() {
        assert!(err(&args("127.0.0.1:7777")).contains("expected udp://HOST:PORT"));
        assert!(err(&args("http://127.0.0.1:7777")).contains("unsupported scheme"));
        assert!(err(&args("udp://127.0.0.1")).contains("missing :PORT"));
        assert!(err(&args("udp://127.0.0.1:99999")).contains("bad port"));
        assert!(err(&args("udp://no-such-host.invalid:7")).contains("cannot resolve host"));
    }

    #[test]
    fn flags_for_another_mode_are_refused() {
        let mut a = args("udp://127.0.0.1:7");
        a.interval = Some(Duration::from_millis(5));
        assert!(err(&a).contains("--interval applies only to --mode interval"));
        a.mode = Some(Mode::Relay);
        assert!(err(&a).contains("--interval"));
        let mut a = args("udp://127.0.0.1:7");
        a.mode = Some(Mode::Relay);
        a.pps = Some(5.0);
        assert!(err(&a).contains("--pps applies only to --mode rate"));
    }

    #[test]
    fn sizes_and_counts() {
        let mut a = args("udp://127.0.0.1:7");
        a.size = Some(40);
        assert!(err(&a).contains("--size 40"));
        a.raw = true;
        assert!(config(&a).is_ok(), "raw header is 24 bytes");
        a.size = Some(70_000);
        assert!(err(&a).contains("--size"));
        let mut a = args("udp://127.0.0.1:7");
        a.count = Some(0);
        assert!(err(&a).contains("--count"));
        let mut a = args("udp://127.0.0.1:7");
        a.clients = Some(0);
        assert!(err(&a).contains("--clients"));
        let mut a = args("udp://127.0.0.1:7");
        a.raw = true;
        a.token = Some("x".into());
        assert!(err(&a).contains("--token"));
    }

    #[test]
    fn xml_config_and_flag_override() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/ConfigTemplate.xml"
        );
        let mut a = ProbeArgs {
            config: Some(path.into()),
            ..args("x")
        };
        a.target = None;
        let (c, notices) = config(&a).unwrap();
        assert_eq!(
            c.pacing,
            PacingSpec::Relay {
                warmup: 50_000,
                warmup_interval: Duration::from_millis(10)
            }
        );
        assert_eq!(c.count, Some(1_000_000));
        assert!(
            c.raw,
            "the seed's dataprotocol raw means a plain echo server"
        );
        assert_eq!(c.stage, StageSpec::Packets(100_000));
        assert_eq!(c.addr, "127.0.0.1:7777".parse().unwrap());
        assert!(notices[0].contains("threadsperclient=8"));
        a.count = Some(10);
        a.warmup = Some(4);
        let (c, _) = config(&a).unwrap();
        assert_eq!(c.count, Some(10));
        assert_eq!(
            c.pacing,
            PacingSpec::Relay {
                warmup: 4,
                warmup_interval: Duration::from_millis(10)
            }
        );
        a.config = Some("/nonexistent.xml".into());
        assert!(err(&a).contains("--config /nonexistent.xml"));
    }
}
