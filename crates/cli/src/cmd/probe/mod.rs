//! `npt probe`: flags (or the line tester's XML config) → a validated `ProbeConfig`, and how a
//! probe is shown (stage lines, banner, text report); [`execute`] runs it.
//!
//! Layering: an XML config, when given, sets the values; any flag given on the command line
//! overrides it. Every value is checked here and an error names the flag (or XML attribute).

pub mod checks;
pub mod config;
pub mod owd;
pub mod under_load;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use npt_probe::probe::runner::{OnWaiting, PacingSpec, ProbeConfig, Proto, RxStamp, Waiting};
use npt_result::error::ErrorKind;
use npt_result::probe::ProbeBody;
use npt_result::workload::Progress;
use npt_result::Document;
use npt_wire::Fill;

pub use crate::cmd::probe::config::config;
use crate::execute::{execute, Lines, Options, Subcommand};
use crate::flags::segment::Segment;
use crate::flags::via::ViaArgs;
use crate::usage::parse_duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Send, then wait --interval after each packet (closed loop, like ping).
    Interval,
    /// Fixed --pps, open loop; latency also from the intended send time.
    Rate,
    /// Warm up --warmup packets, then send one per reply (the line tester's onrecv).
    Relay,
}

/// `--rx-stamp`: where a UDP reply's receive time comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum RxStampArg {
    /// The clock read after the receive returned, wake-up included: the RTT at the application
    /// (what user-space ping-pong tools such as sockperf report).
    #[default]
    User,
    /// The kernel's timestamp of the reply's arrival: the tester's own wake-up is not in the RTT.
    Kernel,
}

impl From<RxStampArg> for RxStamp {
    fn from(a: RxStampArg) -> RxStamp {
        match a {
            RxStampArg::Kernel => RxStamp::Kernel,
            RxStampArg::User => RxStamp::User,
        }
    }
}

#[derive(Args, Debug, Default)]
#[command(after_help = crate::execute::EXIT_CODES)]
pub struct ProbeArgs {
    /// udp://HOST:PORT or tcp://HOST:PORT (npt serve, or any echo with --raw), or
    /// stamp://HOST:PORT: a STAMP Session-Reflector (RFC 8762; a router's, npt serve --stamp;
    /// IANA's port is 862). Not needed with --config.
    pub target: Option<String>,
    /// The line tester's XML config (ConfigTemplate.xml); flags given here override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Pacing mode [default: rate].
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Packets per second, whole run (rate mode) [default: 100].
    #[arg(long, allow_negative_numbers = true)]
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
    /// One message in flight over one connection, the next sent when its echo is back (the
    /// TCP ping-pong client of quic-tun's latency test): short for --mode relay --warmup 1.
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
    /// Bytes per packet, npt's header included [default: 64; stamp://: 44, or 112 with
    /// --stamp-key].
    #[arg(long, short = 's')]
    pub size: Option<usize>,
    /// Payload fill.
    #[arg(long, default_value = "random", value_parser = parse_fill)]
    pub fill: Fill,
    /// Check that every echoed payload is what was sent.
    #[arg(long)]
    pub verify: bool,
    /// Carry sequence and timestamp inside the payload, for any plain echo server (round
    /// trips only: no loss or delay per direction).
    #[arg(long)]
    pub raw: bool,
    /// The two hosts' clocks are synchronized (NTP, PTP): report one-way delay up and down.
    /// Without it one-way delay is reported only where the clocks are one (a loopback
    /// target, or inside npt lab); delay variation per direction needs no sync.
    #[arg(long)]
    pub owd: bool,
    #[command(flatten)]
    pub auth: crate::flags::auth::TokenArgs,
    /// stamp:// in STAMP's authenticated mode: the reflector's HMAC key (hex, at least 32
    /// digits).
    #[arg(
        long,
        value_name = "HEX",
        env = "NPT_STAMP_KEY",
        hide_env_values = true
    )]
    pub stamp_key: Option<String>,
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
    /// UDP: where a reply's receive time comes from [default: user].
    #[arg(long, value_enum)]
    pub rx_stamp: Option<RxStampArg>,
    /// UDP: wait by spinning instead of sleeping, so sends leave within about a microsecond
    /// of their due time and replies are read as they arrive; costs one busy CPU per probe
    /// thread.
    #[arg(long)]
    pub spin: bool,
    #[command(flatten)]
    pub output: crate::flags::output::OutputArgs,
    /// Log every packet to FILE as its fate is decided, one JSON object a line (NDJSON: flow,
    /// seq, send time, RTT or lost/late/duplicate/refused, the direction where the far end's
    /// counts tell), or `-` for stdout (text then goes to stderr).
    #[arg(long, value_name = "FILE|-")]
    pub packets: Option<PathBuf>,
    #[command(flatten)]
    pub source: crate::flags::source::SourceArgs,
    #[command(flatten)]
    pub via: ViaArgs,
    #[command(flatten)]
    pub load: crate::cmd::probe::under_load::LoadArgs,
    #[command(flatten)]
    pub segment: crate::flags::segment::SegmentArgs,
    #[command(flatten)]
    pub metrics: crate::flags::metrics::MetricsArgs,
}

fn parse_fill(s: &str) -> Result<Fill, String> {
    s.parse()
}

pub fn run(a: ProbeArgs) -> anyhow::Result<ExitCode> {
    let (mut cfg, mut notices) = config(&a)?;
    let mut o = Options::new(&a.output);
    o.segment = &a.segment;
    o.metrics = &a.metrics;
    o.packets_to(a.packets.as_deref());
    // Before the reachability checks below: nothing reaches the network with a bad path.
    o.check()?;
    if let Some(plan) = &cfg.under_load {
        crate::cmd::probe::under_load::check_reachable(plan)?;
    }
    if cfg.proto == Proto::Tcp && cfg.via.is_none() {
        // A name with several addresses (localhost → ::1, 127.0.0.1): the first that accepts.
        if let Some((addr, note)) =
            crate::cmd::probe::checks::first_accepting(&cfg.target, cfg.addr, &cfg.source)
        {
            cfg.addr = addr;
            notices.extend(note);
        }
    }
    o.notices = notices;
    o.labels = vec![
        ("protocol", cfg.proto.name().to_string()),
        ("target", cfg.addr.to_string()),
    ];
    execute(cfg, o)
}

impl Subcommand for ProbeConfig {
    const LINES: Lines = Lines::Report;

    fn split(&mut self, seg: &Segment) -> anyhow::Result<()> {
        seg.apply_probe(self)
    }

    fn banner(&self) -> Option<String> {
        Some(banner(self))
    }

    fn live(&self) -> Option<crate::execute::live::Spec> {
        Some(crate::execute::live::Spec {
            title: banner(self),
            rate_unit: "pps",
            duration: self.duration,
        })
    }

    fn line(p: &Progress<'_>) -> String {
        npt_report::text::stage_line(p.interval)
    }

    /// The wait for the last replies, once sending has stopped (the line tester said so too).
    fn say_to(&mut self, say: crate::execute::Say) {
        self.on_waiting = OnWaiting(Some(std::sync::Arc::new(move |w: &Waiting| {
            say(&npt_report::text::waiting_line(
                w.elapsed.as_secs_f64(),
                w.why.map_or("stopped", |r| r.name()),
                w.in_flight,
                w.up_to.as_secs_f64() * 1e3,
                w.held,
            ))
        })));
    }

    fn render(out: &mut dyn Write, doc: &Document<ProbeBody>) -> std::io::Result<()> {
        npt_report::text::write_probe(out, doc)
    }

    fn refused(body: &ProbeBody) -> u64 {
        body.summary.refused_by_server
    }

    fn failed(body: &ProbeBody) -> Option<&'static str> {
        if body.summary.packets.received == 0 {
            let kinds = &body.errors.by_kind;
            return Some(if kinds.get(ErrorKind::Refused.name()) > 0 {
                "no reply was received: the connection was refused (nothing listens there)"
            } else if kinds.get(ErrorKind::ClosedUnanswered.name()) > 0 {
                "no reply was received: the connection was accepted and closed without an \
                 answer (closed_unanswered: a relay or forwarder whose backend is down?)"
            } else {
                "no reply was received"
            });
        }
        // `--under-load` whose load moved nothing (every stream failed): the loaded phase
        // measured an idle path.
        body.under_load
            .as_ref()
            .filter(|u| u.load_errors.total_errors > 0 && u.bytes.up + u.bytes.down == 0.0)
            .map(|_| "the load moved nothing (see under_load.load_errors)")
    }
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
        (Some(c), Some(d)) => format!("stop after {c} packets or {d:?}"),
        (Some(c), None) => format!("stop after {c} packets"),
        (None, Some(d)) => format!("stop after {d:?}"),
        (None, None) => "run until Ctrl-C".to_string(),
    };
    let load = cfg.under_load.as_ref().map_or(String::new(), |p| {
        let s = p.spec();
        format!(
            "; under load: {} {} x{} from {:?} to {:?}",
            s.target,
            s.direction,
            s.streams,
            p.idle,
            p.idle + p.loaded()
        )
    });
    format!(
        "npt probe {}://{} ({}): {pacing}, {} B {}, {} client(s), {stop}{load}",
        cfg.proto.name(),
        cfg.target,
        cfg.addr,
        cfg.size,
        match (cfg.proto, cfg.raw) {
            (Proto::Stamp, _) if cfg.stamp_key.is_some() => "STAMP authenticated",
            (Proto::Stamp, _) => "STAMP",
            (_, true) => "raw",
            _ => "framed",
        },
        cfg.clients
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_probe::probe::runner::StageSpec;

    fn args(target: &str) -> ProbeArgs {
        ProbeArgs {
            target: Some(target.to_string()),
            fill: Fill::Random,
            loss_timeout: Duration::from_secs(1),
            behind_threshold: Duration::from_millis(1),
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

    /// The stop in the banner reads as a phrase in each case (it read `stop after until
    /// Ctrl-C` with neither --count nor --duration).
    #[test]
    fn banner_says_when_the_probe_stops() {
        let mut a = args("udp://127.0.0.1:7777");
        let b = banner(&config(&a).unwrap().0);
        assert!(b.ends_with(", 1 client(s), run until Ctrl-C"), "{b}");
        a.count = Some(10);
        let b = banner(&config(&a).unwrap().0);
        assert!(b.ends_with(", stop after 10 packets"), "{b}");
        a.duration = Some(Duration::from_secs(5));
        let b = banner(&config(&a).unwrap().0);
        assert!(b.ends_with(", stop after 10 packets or 5s"), "{b}");
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
        a.auth.token = Some("x".into());
        assert!(err(&a).contains("--token"));
    }

    #[test]
    fn stamp_targets_size_and_key() {
        let (c, _) = config(&args("stamp://127.0.0.1:862")).unwrap();
        assert_eq!((c.proto, c.size, c.raw), (Proto::Stamp, 44, false));
        let mut a = args("stamp://127.0.0.1:862");
        a.stamp_key = Some("000102030405060708090a0b0c0d0e0f".into());
        let (c, _) = config(&a).unwrap();
        assert_eq!(c.size, 112, "the authenticated packet");
        assert!(c.stamp_key.is_some());
        a.size = Some(113);
        assert!(err(&a).contains("--size 113: a STAMP test packet is 112 bytes (authenticated)"));
        a.size = Some(116);
        assert!(config(&a).is_ok(), "room for the padding TLV");
        a.stamp_key = Some("0001".into());
        assert!(err(&a).contains("--stamp-key: 2 bytes"), "{}", err(&a));
        let mut a = args("stamp://127.0.0.1:862");
        a.size = Some(45);
        assert!(err(&a).contains("--size 45"));
        a.size = None;
        a.raw = true;
        assert!(err(&a).contains("a stamp:// target speaks STAMP"));
        let mut a = args("stamp://127.0.0.1:862");
        a.auth.token = Some("s".into());
        assert!(err(&a).contains("--raw and --token"));
        let mut a = args("udp://127.0.0.1:7777");
        a.stamp_key = Some("000102030405060708090a0b0c0d0e0f".into());
        assert!(err(&a).contains("--stamp-key is for stamp://"));
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
            "the line tester's dataprotocol raw means a plain echo server"
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
