//! `npt ping`'s flags: what `npt ping` (and compare's and the monitor's ping rounds) parse.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
#[command(after_help = crate::execute::EXIT_CODES)]
pub struct PingArgs {
    /// tcp://HOST:PORT (connect RTT), udp://HOST:PORT (echo RTT), quic://HOST:PORT (handshake),
    /// icmp://HOST (the host's ICMP echo: an unprivileged ICMP socket where
    /// net.ipv4.ping_group_range allows it, else a raw one, as root).
    #[arg(value_name = "TARGET")]
    pub target: String,
    /// Attempts to make; 0 = until Ctrl-C.
    #[arg(long, short = 'c', value_name = "N", default_value_t = 5)]
    pub count: u64,
    #[command(flatten)]
    pub timing: crate::flags::timing::AttemptTiming,
    /// UDP datagram size in bytes, header included (at least 48 framed, 24 raw); with --echo,
    /// the TCP echo's size; icmp://, the ICMP message's (its 8-byte header included, at least
    /// 28).
    #[arg(long, short = 's', value_name = "BYTES", default_value_t = 64)]
    pub size: usize,
    /// tcp:// end to end: each attempt is a new connection and one framed echo on it against
    /// `npt serve`, connect and echo timed apart. A connect alone is answered by the first
    /// relay or forwarder, which accepts by itself even when nothing behind it answers.
    #[arg(long)]
    pub echo: bool,
    /// With --echo: a second echo on each connection, after the one the ping times, as the
    /// base round trip of a setup block — each layer (TCP connect, the --via proxy's greeting
    /// and CONNECT, the first echo) in ms and in round trips, judged as `npt setup` judges.
    #[arg(long)]
    pub setup: bool,
    /// UDP: ping any echo server (the stamp rides in the payload) instead of `npt serve`.
    #[arg(long)]
    pub raw: bool,
    #[command(flatten)]
    pub auth: crate::flags::auth::TokenArgs,
    #[command(flatten)]
    pub trust: crate::flags::trust::TrustArgs,
    #[command(flatten)]
    pub output: crate::flags::output::OutputArgs,
    /// Log every attempt to FILE as it is settled, one JSON object a line (NDJSON: seq, send
    /// time, RTT or lost/late/refused/error), or `-` for stdout (text then goes to stderr).
    #[arg(long, value_name = "FILE|-")]
    pub packets: Option<PathBuf>,
    #[command(flatten)]
    pub source: crate::flags::source::SourceArgs,
    #[command(flatten)]
    pub via: crate::flags::via::ViaArgs,
    /// Measure from a hop agent instead of from here: `npt serve --token S --hop-agent` on
    /// npt://HOST:PORT pings the target and sends the samples back (needs --token, the agent's
    /// secret). For the segments between relays that this host cannot see.
    #[arg(long, value_name = "npt://HOST:PORT")]
    pub from: Option<String>,
}
