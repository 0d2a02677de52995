//! `npt probe`'s flags, as clap parses them: what `npt probe` (and compare's and the monitor's
//! probe rounds) read. [`crate::cmd::probe::config`] validates them.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use npt_probe::RxStamp;
use npt_wire::Fill;

use crate::cmd::probe::under_load::LoadArgs;
use crate::flags::duration::{self, DurationArgs};
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
#[command(mut_args(duration::says(
    "Stop sending after this long (e.g. 60s, 2m). Neither this nor --count: until Ctrl-C",
    None
)))]
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
    #[command(flatten)]
    pub duration: DurationArgs,
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
    /// UDP: ask npt serve to send its replies with this DSCP (0-63 or a name, as --dscp)
    /// [default: the DSCP sent]. npt serve also says what each request arrived with.
    #[arg(long, value_name = "N")]
    pub reply_dscp: Option<String>,
    /// UDP: ask npt serve to send its replies with this ECN codepoint: ect0, ect1 or not-ect
    /// [default: the one sent]. Never CE.
    #[arg(long, value_name = "ect0|ect1|not-ect")]
    pub reply_ecn: Option<String>,
    #[command(flatten)]
    pub via: ViaArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub segment: crate::flags::segment::SegmentArgs,
    #[command(flatten)]
    pub metrics: crate::flags::metrics::MetricsArgs,
}

fn parse_fill(s: &str) -> Result<Fill, String> {
    s.parse()
}
