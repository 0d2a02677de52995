//! `npt run`: flags → a validated `npt_users::RunConfig`, and how simulated users are shown
//! (banner, status line, text report); [`execute`] runs them.
//!
//! Every flag is checked here and an error names it (exit 2). The run stops at `--duration`
//! or on Ctrl-C/SIGTERM; either way the report is printed and `--json FILE` written.

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use npt_client::source::Source;
use npt_result::run::RunBody;
use npt_result::workload::Progress;
use npt_result::Document;
use npt_users::config::{GameShape, QuicShape, TransferShape, WebShape};
use npt_users::{Load, Mix, Range, RunConfig, Shape, Targets};

use crate::execute::{execute, Lines, Options, RunCommand};
use crate::flags::duration::{self, DurationArgs};
use crate::flags::segment::Segment;
use crate::usage;
use crate::usage::parse_duration;

#[derive(Args, Debug)]
#[command(after_help = crate::execute::EXIT_CODES)]
#[command(mut_args(duration::says("How long the run lasts (e.g. 3m)", Some("60s"))))]
pub struct RunArgs {
    /// npt serve targets, tcp://HOST:PORT (TCP and UDP on that port); users spread round-robin.
    #[arg(value_name = "TARGET")]
    pub targets: Vec<String>,
    /// The QUIC responder (`npt serve --quic`), HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub quic: Option<String>,
    /// Name checked against the QUIC certificate [default: the host of --quic].
    #[arg(long, value_name = "NAME")]
    pub quic_name: Option<String>,
    #[command(flatten)]
    pub trust: crate::flags::trust::TrustArgs,
    /// Simulated users (closed model); with --arrival-rate, the most active at once.
    #[arg(long, short = 'u', default_value_t = 300)]
    pub users: u32,
    #[command(flatten)]
    pub duration: DurationArgs,
    /// Users start evenly spread over this time.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub ramp_up: Duration,
    /// Open model: new user sessions per second (e.g. 50 or 50/s), each one visit.
    #[arg(long, value_name = "R/s")]
    pub arrival_rate: Option<String>,
    /// Activity weights [default: web=95,quic=5 with --quic, else web=100].
    #[arg(long)]
    pub mix: Option<String>,
    /// Think time between sessions, MIN..MAX (log-uniform).
    #[arg(long, default_value = "100ms..10s")]
    pub think: String,
    /// Random seed for every choice (same seed, same users) [default: from the clock].
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub auth: crate::flags::auth::TokenArgs,
    /// Connect, handshake and read/write idle timeout.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Length of one interval of the series and of the progress line.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub interval: Duration,
    /// Web: pages per visit.
    #[arg(long, default_value = "1..5")]
    pub pages: String,
    /// Web: request rounds per page (after the handshake exchange).
    #[arg(long, default_value = "2..8")]
    pub rounds: String,
    /// Web: handshake exchange, bytes up.
    #[arg(long, default_value = "400..2000")]
    pub handshake_up: String,
    /// Web: handshake exchange, bytes down.
    #[arg(long, default_value = "2KB..4KB")]
    pub handshake_down: String,
    /// Web: request size.
    #[arg(long, default_value = "1KB..32KB")]
    pub request_up: String,
    /// Web: response size.
    #[arg(long, default_value = "4KB..2MB")]
    pub request_down: String,
    /// Web: pause between requests and pages.
    #[arg(long, default_value = "10ms..200ms")]
    pub pause: String,
    /// QUIC: resources fetched concurrently after the main document.
    #[arg(long, default_value = "2..16")]
    pub resources: String,
    /// QUIC: main document size.
    #[arg(long, default_value = "8KB..128KB")]
    pub doc_down: String,
    /// QUIC: resource size.
    #[arg(long, default_value = "1KB..256KB")]
    pub resource_down: String,
    /// Download size (at most 64MB).
    #[arg(long, default_value = "1MB..16MB")]
    pub download: String,
    /// Upload size (at most 64MB).
    #[arg(long, default_value = "1MB..8MB")]
    pub upload: String,
    /// Transfer chunk size.
    #[arg(long, default_value = "64KB")]
    pub chunk: String,
    /// Game: session length.
    #[arg(long, default_value = "10s..60s")]
    pub game_length: String,
    /// Game: packets per second (fixed per session).
    #[arg(long, default_value = "30..60")]
    pub tick: String,
    /// Game: bytes per packet, header included.
    #[arg(long, default_value = "64..1280")]
    pub game_size: String,
    /// Game: a packet unanswered this long is lost.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub loss_timeout: Duration,
    /// Threads the users run on, each an event loop with its share of them [default: half the
    /// CPUs when a target is on this machine, leaving the rest to it; else one per CPU].
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
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

fn range(
    flag: &str,
    v: &str,
    f: fn(&str) -> Result<Range, npt_users::ConfigError>,
) -> anyhow::Result<Range> {
    f(v).map_err(|e| usage!("--{flag} {v:?}: {e}"))
}

fn sizes(flag: &str, v: &str) -> anyhow::Result<Range> {
    range(flag, v, Range::parse_size)
}

fn counts(flag: &str, v: &str, min: u64) -> anyhow::Result<Range> {
    let r = range(flag, v, Range::parse_count)?;
    if r.lo < min {
        return Err(usage!("--{flag} {v:?}: must be at least {min}"));
    }
    Ok(r)
}

fn resolve(flag: &str, s: &str, src: &Source) -> anyhow::Result<SocketAddr> {
    let host = s.rsplit_once(':').map_or(s, |(h, _)| h);
    crate::flags::source::SourceArgs::check_literal(src, host)?;
    let addrs: Vec<SocketAddr> = s
        .to_socket_addrs()
        .map_err(|e| usage!("{flag} {s:?}: {e} (expected HOST:PORT)"))?
        .collect();
    if addrs.is_empty() {
        return Err(usage!("{flag} {s:?}: no address"));
    }
    crate::flags::source::pick(src, s, addrs)?
        .into_iter()
        .next()
        .ok_or_else(|| usage!("{flag} {s:?}: no address"))
}

/// Validates the flags into the engine's config; every error names its flag.
pub fn config(a: &RunArgs) -> anyhow::Result<RunConfig> {
    a.metrics.check()?;
    let source = a.source.resolve()?;
    let mut stream = Vec::new();
    for t in &a.targets {
        if t.starts_with("udp://") || t.starts_with("http") || t.starts_with("quic://") {
            return Err(usage!(
                "target {t:?}: give npt serve as tcp://HOST:PORT (UDP uses the same port; QUIC is --quic)"
            ));
        }
        let hp = t.strip_prefix("tcp://").unwrap_or(t);
        stream.push(resolve("target", hp, &source)?);
    }
    let quic = a
        .quic
        .as_deref()
        .map(|q| resolve("--quic", q, &source))
        .transpose()?;
    let quic_server_name = match (&a.quic_name, &a.quic) {
        (Some(n), _) => n.clone(),
        (None, Some(q)) => host_of(q),
        (None, None) => "localhost".into(),
    };
    let mix = match &a.mix {
        Some(m) => Mix::parse(m).map_err(|e| usage!("--mix {m:?}: {e}"))?,
        None if quic.is_some() => Mix::default(),
        None => Mix::parse("web=100").map_err(|e| usage!("--mix: {e}"))?,
    };
    if mix.weight(npt_users::Activity::Quic) > 0 && quic.is_none() {
        return Err(usage!(
            "--mix {}: activity quic needs --quic HOST:PORT",
            mix.to_string_compact()
        ));
    }
    let needs_stream = npt_users::Activity::ALL
        .iter()
        .any(|x| *x != npt_users::Activity::Quic && mix.weight(*x) > 0);
    if needs_stream && stream.is_empty() {
        return Err(usage!(
            "--mix {}: give at least one target tcp://HOST:PORT",
            mix.to_string_compact()
        ));
    }
    let via = a.via.resolve(false)?;
    if let Some(v) = &via {
        let udp = [npt_users::Activity::Quic, npt_users::Activity::Game];
        if let Some(x) = udp.iter().find(|x| mix.weight(**x) > 0) {
            return Err(usage!(
                "--via {v}: npt run carries only its TCP activities (web, download, upload) \
                 through a proxy; --mix {} includes {x:?}",
                mix.to_string_compact()
            ));
        }
    }
    if a.users == 0 {
        return Err(usage!("--users must be at least 1"));
    }
    let duration = a.duration.get();
    if duration.is_zero() {
        return Err(usage!("--duration must be positive"));
    }
    if a.ramp_up > duration {
        return Err(usage!(
            "--ramp-up {:?} is longer than --duration {:?}",
            a.ramp_up,
            duration
        ));
    }
    if a.interval < Duration::from_millis(10) {
        return Err(usage!("--interval must be at least 10ms"));
    }
    if a.timeout.is_zero() {
        return Err(usage!("--timeout must be positive"));
    }
    let load = match &a.arrival_rate {
        None => Load::Users {
            users: a.users,
            ramp_up: a.ramp_up,
        },
        Some(r) => {
            let num = r.trim().trim_end_matches("/s");
            let per_sec: f64 = num.parse().map_err(|_| {
                usage!("--arrival-rate {r:?}: expected sessions per second, e.g. 50/s")
            })?;
            if !(per_sec > 0.0 && per_sec <= 1e6) {
                return Err(usage!(
                    "--arrival-rate {r:?}: must be above 0 and at most 1000000/s"
                ));
            }
            Load::Arrivals {
                per_sec,
                max_active: a.users,
            }
        }
    };
    let think = range("think", &a.think, Range::parse_duration)?;
    let max_frame = 64u64 << 20;
    let download = sizes("download", &a.download)?;
    let upload = sizes("upload", &a.upload)?;
    for (flag, r) in [("download", download), ("upload", upload)] {
        if r.hi > max_frame {
            return Err(usage!("--{flag}: at most 64MB per transfer"));
        }
    }
    let chunk = npt_users::config::parse_size(&a.chunk).map_err(|e| usage!("--chunk: {e}"))?;
    if chunk == 0 {
        return Err(usage!("--chunk must be at least 1 byte"));
    }
    let game_length = range("game-length", &a.game_length, Range::parse_duration)?;
    if game_length.lo == 0 {
        return Err(usage!("--game-length must be positive"));
    }
    let tick = counts("tick", &a.tick, 1)?;
    if tick.hi > 10_000 {
        return Err(usage!("--tick: at most 10000 packets per second"));
    }
    let game_size = sizes("game-size", &a.game_size)?;
    if game_size.hi > 65_000 {
        return Err(usage!("--game-size: at most 65000 bytes (one datagram)"));
    }
    let shape = Shape {
        mix,
        think,
        web: WebShape {
            pages: counts("pages", &a.pages, 1)?,
            rounds: counts("rounds", &a.rounds, 1)?,
            handshake_up: sizes("handshake-up", &a.handshake_up)?,
            handshake_down: sizes("handshake-down", &a.handshake_down)?,
            request_up: sizes("request-up", &a.request_up)?,
            request_down: sizes("request-down", &a.request_down)?,
            pause: range("pause", &a.pause, Range::parse_duration)?,
        },
        quic: QuicShape {
            resources: counts("resources", &a.resources, 0)?,
            doc_down: sizes("doc-down", &a.doc_down)?,
            resource_down: sizes("resource-down", &a.resource_down)?,
            ..QuicShape::default()
        },
        transfer: TransferShape {
            download,
            upload,
            chunk,
        },
        game: GameShape {
            session: game_length,
            tick_hz: tick,
            size: game_size,
            loss_timeout: a.loss_timeout,
        },
    };
    for (flag, r) in [
        ("handshake-up", shape.web.handshake_up),
        ("handshake-down", shape.web.handshake_down),
        ("request-up", shape.web.request_up),
        ("request-down", shape.web.request_down),
        ("doc-down", shape.quic.doc_down),
        ("resource-down", shape.quic.resource_down),
    ] {
        if r.hi > max_frame {
            return Err(usage!("--{flag}: at most 64MB"));
        }
    }
    let quic_trust = a.trust.resolve(crate::flags::trust::Quic::Optional)?;
    let secret = a.auth.get()?.map(str::to_string);
    // The targets' literals were checked as they resolved (above).
    a.source.for_target(
        "run",
        "",
        mix.weight(npt_users::Activity::Quic) > 0,
        via.is_some(),
    )?;
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    });
    Ok(RunConfig {
        targets: Targets {
            stream,
            quic,
            quic_server_name,
            via,
            source,
        },
        load,
        duration: a.duration.get(),
        shape,
        seed,
        token: 0,
        secret,
        timeout: a.timeout,
        interval: a.interval,
        quic_trust,
        workers: a.workers,
    })
}

/// `host` of `host:port` / `[v6]:port`.
fn host_of(hp: &str) -> String {
    if let Some(rest) = hp.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest).to_string();
    }
    hp.rsplit_once(':').map_or(hp, |(h, _)| h).to_string()
}

pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let mut o = Options::new(&a.output);
    o.segment = &a.segment;
    o.metrics = &a.metrics;
    o.labels = vec![("target", a.targets.join(","))];
    execute(config(&a)?, o)
}

impl RunCommand for RunConfig {
    const LINES: Lines = Lines::Status {
        off_tty: true,
        wipe: false,
    };

    fn split(&mut self, seg: &Segment) -> anyhow::Result<()> {
        seg.apply_run(self)
    }

    fn banner(&self) -> Option<String> {
        Some(banner(self))
    }

    fn live(&self) -> Option<crate::execute::live::Spec> {
        Some(crate::execute::live::Spec {
            title: banner(self),
            rate_unit: "req/s",
            duration: Some(self.duration),
        })
    }

    fn line(p: &Progress<'_>) -> String {
        let iv = p.interval;
        format!(
            "{:>6.1}s  users {:>6}  conns {:>6}  requests {:>9} (+{:>6})  errors {:>6}  p50 {:>8.2} ms  p99 {:>8.2} ms",
            p.elapsed.as_secs_f64(),
            iv.active_users.unwrap_or(0),
            iv.active_connections.unwrap_or(0),
            p.completed,
            iv.completed,
            p.errors,
            iv.latency_ms.p50,
            iv.latency_ms.p99
        )
    }

    fn render(mut out: &mut dyn Write, doc: &Document<RunBody>) -> std::io::Result<()> {
        npt_report::text::write_run(&mut out, doc)
    }

    fn refused(body: &RunBody) -> u64 {
        body.activities
            .values()
            .filter_map(|a| a.game.as_ref())
            .map(|g| g.refused_by_server)
            .sum()
    }

    fn failed(body: &RunBody) -> Option<&'static str> {
        (body.summary.requests == 0).then_some("no request completed")
    }
}

fn banner(cfg: &RunConfig) -> String {
    let load = match cfg.load {
        Load::Users { users, ramp_up } => {
            format!(
                "{users} users (closed loop, ramp-up {})",
                humantime::format_duration(ramp_up)
            )
        }
        Load::Arrivals {
            per_sec,
            max_active,
        } => format!("{per_sec} sessions/s (open model, at most {max_active} active)"),
    };
    let mut targets: Vec<String> = cfg
        .targets
        .stream
        .iter()
        .map(|a| format!("tcp://{a}"))
        .collect();
    if let Some(q) = cfg.targets.quic {
        targets.push(format!("quic://{q}"));
    }
    format!(
        "npt run {}: {load}, mix {}, {}, seed {}",
        targets.join(" "),
        cfg.shape.mix.to_string_compact(),
        humantime::format_duration(cfg.duration),
        cfg.seed
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: RunArgs,
    }

    fn cfg(args: &[&str]) -> anyhow::Result<RunConfig> {
        let mut v = vec!["npt"];
        v.extend_from_slice(args);
        config(&T::try_parse_from(v).unwrap().a)
    }

    fn err(args: &[&str]) -> String {
        match cfg(args) {
            Ok(_) => panic!("{args:?} accepted"),
            Err(e) => {
                assert!(e.downcast_ref::<crate::UsageError>().is_some(), "{e}");
                e.to_string()
            }
        }
    }

    #[test]
    fn bad_flags_name_the_flag() {
        assert!(err(&["tcp://127.0.0.1:7777", "--users", "0"]).contains("--users"));
        assert!(err(&["tcp://127.0.0.1:7777", "--mix", ""]).contains("--mix"));
        assert!(err(&["tcp://127.0.0.1:7777", "--mix", "web=1,chat=1"]).contains("chat"));
        assert!(err(&["tcp://127.0.0.1:7777", "--think", "5s..1s"]).contains("--think"));
        assert!(err(&["tcp://127.0.0.1:7777", "--mix", "quic=1"]).contains("--quic"));
        assert!(err(&["--mix", "web=1"]).contains("target"));
        assert!(err(&["tcp://127.0.0.1:7777", "--download", "1MB..1GB"]).contains("--download"));
        assert!(err(&["tcp://127.0.0.1:7777", "--arrival-rate", "0"]).contains("--arrival-rate"));
        assert!(err(&["tcp://127.0.0.1:7777", "--rounds", "0..2"]).contains("--rounds"));
        assert!(err(&["udp://127.0.0.1:7777"]).contains("tcp://"));
        // One trust group: clap refuses the pair (exit 2 naming both), as in every subcommand.
        let e = T::try_parse_from(["npt", "tcp://127.0.0.1:7", "--insecure", "--ca", "x.pem"])
            .err()
            .unwrap();
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
        assert!(e.to_string().contains("--ca"));
    }

    #[test]
    fn defaults_and_open_model() {
        let c = cfg(&["tcp://127.0.0.1:7777"]).unwrap();
        assert_eq!(c.shape.mix.to_string_compact(), "web=100");
        assert_eq!(
            c.load,
            Load::Users {
                users: 300,
                ramp_up: Duration::ZERO
            }
        );
        let c = cfg(&[
            "tcp://127.0.0.1:7777",
            "--quic",
            "127.0.0.1:7778",
            "--insecure",
        ])
        .unwrap();
        assert_eq!(c.shape.mix.to_string_compact(), "web=95,quic=5");
        assert_eq!(c.targets.quic_server_name, "127.0.0.1");
        let c = cfg(&[
            "tcp://127.0.0.1:7777",
            "--arrival-rate",
            "50/s",
            "--seed",
            "3",
        ])
        .unwrap();
        assert_eq!(
            c.load,
            Load::Arrivals {
                per_sec: 50.0,
                max_active: 300
            }
        );
        assert_eq!(c.seed, 3);
        assert_eq!(host_of("[::1]:7778"), "::1");
    }
}
