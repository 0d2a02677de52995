//! The body of a `probe` result: summary, tester health, the NPT-compatible `latency` and
//! `errors` blocks, serialized histograms and the per-interval series.
//!
//! Field names here are what users script against (docs/result-json.md, "probe"); keep them stable.

use std::collections::BTreeMap;

use npt_stats::{SerializedHistogram, Summary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::interval::Interval;
use crate::tcpinfo::TcpKernel;
use crate::Histograms;

// The shared blocks, under the paths they had when they were defined here.
pub use crate::common::{error_rate, jitter_mean, Directions, Errors, NptLatency};
pub use crate::health::Health;

/// The body of a `probe` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProbeBody {
    pub summary: ProbeSummary,
    /// CPU, memory, and the sends behind schedule with their lateness.
    #[schemars(extend("required" = ["sends_behind_schedule", "behind_threshold_ms", "send_lateness_ms"]))]
    pub health: Health,
    /// NPT's block, keyed by protocol (`udp` or `tcp`).
    #[schemars(extend("propertyNames" = {"enum": ["udp", "tcp"]}, "minProperties" = 1))]
    pub latency: BTreeMap<String, NptLatency>,
    pub errors: Errors,
    /// Serialized HDR histograms (ns) by name: [`hist`].
    #[schemars(
        description = "Serialized HDR histograms (ns) by name: `rtt`, `ipdv`, and `rtt_corrected` (rate mode), `connect`, `first_packet`, `first_echo` and `tcp_rtt` (TCP), `rtt_idle`, `rtt_loaded` and `rtt_recovery` (`--under-load`), `dwell`, `ipdv_up`, `ipdv_down`, `owd_up` and `owd_down` (`summary.directions`)."
    )]
    #[schemars(extend("propertyNames" = {"enum": hist::ALL}, "required" = [hist::RTT, hist::IPDV]))]
    pub histograms: Histograms,
    /// The probe fills `sent`, `lost`, `late`, `duplicated`, `reordered`, `loss_pct`,
    /// `jitter_ms` and `bandwidth_bps` besides the common fields.
    #[schemars(extend("allOf" = [{"items": {"required": [
        "sent", "lost", "late", "duplicated", "reordered", "loss_pct", "jitter_ms", "bandwidth_bps",
    ]}}]))]
    pub intervals: Vec<Interval>,
    /// `--under-load`: the phases, the increase under load, RPM and the load's goodput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_load: Option<crate::under_load::UnderLoad>,
}

impl crate::body::Body for ProbeBody {
    const KIND: &'static str = "probe";
}

impl crate::body::View for ProbeBody {
    crate::body::blocks!(health, intervals, histograms);

    /// The RTT.
    fn headline_parts(&self) -> Vec<(&str, &SerializedHistogram)> {
        crate::body::part(&self.histograms, hist::RTT)
    }
    fn headline_summary(&self) -> Result<Summary, String> {
        Ok(self.summary.rtt_ms)
    }
    fn target(&self) -> String {
        self.summary.target.clone()
    }
}

/// What the probe did and what it measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProbeSummary {
    #[schemars(extend("enum" = ["udp", "tcp"]))]
    pub protocol: String,
    pub target: String,
    /// `interval`, `rate` or `relay`.
    #[schemars(extend("enum" = ["interval", "rate", "relay"]))]
    pub mode: String,
    /// True for `rate` (open loop, latency also from the intended send time).
    pub open_loop: bool,
    /// `framed` (npt serve), `raw` (any echo server) or `stamp` (a STAMP Session-Reflector,
    /// RFC 8762; `protocol` is then `udp`).
    #[schemars(extend("enum" = ["framed", "raw", "stamp"]))]
    pub framing: String,
    #[schemars(range(min = 1))]
    pub clients: u32,
    #[schemars(range(min = 1))]
    pub size: u32,
    /// Sent, received, lost, late, duplicated, reordered.
    #[serde(flatten)]
    pub packets: npt_stats::PacketCounts,
    /// Packets the server's budget (or its `--token`) refused, as it counted them: never path
    /// loss. 0 against a server that does not say (an older `npt serve`, `--raw`). Absent in
    /// files written before it was counted.
    #[serde(default)]
    pub refused_by_server: u64,
    /// The server's refusal notices by reason (`budget`, `token_required`, `no_token`,
    /// `unknown_session`): they say why; they are rate-limited, so they are fewer than the
    /// refusals.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub refusal_notices: crate::directions::RefusalNotices,
    /// `lost ÷ (sent − refused_by_server)`, in %: of the packets the path carried both ways.
    #[schemars(range(min = 0, max = 100))]
    pub loss_pct: f64,
    /// Per direction, from what the server saw of each packet (framed probes against an
    /// `npt serve` that reflects; absent with `--raw` or an older server: round trips only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directions: Option<crate::directions::PathDirections>,
    /// Why there is no `directions` block: `raw` (`--raw`: any echo server, round trips
    /// only), `echo` (the far end is a plain echo that returned each request unchanged) or
    /// `server` (the server did not say what it saw: an older `npt serve`). Absent when there
    /// is one, and in files written before it was recorded.
    #[schemars(extend("enum" = ["raw", "echo", "server"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip_only: Option<String>,
    /// Packets sent per second over the send phase.
    pub pps: f64,
    /// Replies received per second over the send phase.
    pub pps_received: f64,
    pub send_duration_s: f64,
    pub loss_timeout_ms: f64,
    /// Round-trip time of on-time replies, from the actual send.
    pub rtt_ms: Summary,
    /// `rate` mode only: round-trip time measured from the intended send time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_corrected_ms: Option<Summary>,
    /// RFC 3550 interarrival jitter of the round-trip time (sample-weighted over clients).
    pub jitter_ms: f64,
    /// The samples `jitter_ms` is the weighted mean of, so that results merge exactly
    /// ([`npt_stats::JitterMean`]). Absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_samples: Option<u64>,
    /// |RTT(i) - RTT(i-1)| between consecutive replies (IPDV).
    pub ipdv_ms: Summary,
    /// Application payload bits/s each way (IP/UDP/TCP headers excluded).
    pub bandwidth_bps: Directions,
    /// Application payload bytes each way.
    pub bytes: Directions,
    /// TCP: connect + the first echo on each flow's first connection and nothing else, mean
    /// over flows (npt's first packet: what a user waits for a first answer, connect
    /// included); the distribution is `phases_ms.first_packet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_packet_ms: Option<f64>,
    /// TCP: connect time, mean over connections; the distribution is `phases_ms.connect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<f64>,
    /// TCP: the first echo alone, from its send (after the connection was up) to its reply,
    /// on each flow's first connection, mean over flows: quic-tun's latency test's "first
    /// packet latency" (its clock starts after `connect` returned). `first_packet_ms` is
    /// `connect_ms` plus this, flow by flow; the distribution is `phases_ms.first_echo`.
    /// Absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_echo_ms: Option<f64>,
    /// TCP: the distributions of connect and first packet over flows, from the histograms
    /// `histograms.{connect,first_packet}` (as `run`'s `protocols.tcp.connect_ms`). Absent in
    /// files written before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases_ms: Option<ProbePhases>,
    /// TCP: from the start of the first connect until the last reply (npt's total: connect
    /// included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<f64>,
    /// TCP: from the moment the first connection was up until the last reply: quic-tun's
    /// latency test's "total latency" (its clock starts after `connect` returned). Absent in
    /// files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_after_connect_ms: Option<f64>,
    /// `--via`: the proxy and the phases of its handshakes (means over connections or UDP
    /// associations). `connect_ms` / `first_packet_ms` then include the whole handshake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyPhases>,
    /// TCP: what the tester's kernel saw of the connections (`TCP_INFO`): retransmits and its
    /// own RTT, which the echo's loss count cannot show. With `--via` it is of the first hop
    /// (tester → proxy) only: `scope` says which. Absent for UDP and in files written before
    /// it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<TcpKernel>,
    /// The DSCP/ECN marking sent (`--dscp`, `--tos`, `--ecn`), the replies by the marking they
    /// came back with (UDP; as the kernel tells) and, when `npt serve` was asked, each
    /// direction's fate and CE count. Absent when unmarked both ways.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marking: Option<crate::marking::Marking>,
    /// Replies whose payload differed from what was sent (`--verify`).
    pub corrupt: u64,
    /// Datagrams that were not a reply of this run (foreign, truncated, other flow).
    pub foreign: u64,
    /// What the first foreign datagram (or TCP record) looked like: its length, its first
    /// bytes in hex and what it is not (e.g. `not an npt frame`). Absent when none was foreign.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_example: Option<String>,
    /// Which far end answered, by its replies: `npt-serve` (per-direction figures),
    /// `stamp` (a STAMP reflector), `echo` (a plain echo that returned the requests unchanged,
    /// or `--raw` against any echo: round trips only), `none` (no reply), `mixed` (flows or
    /// merged parts differed). Absent in files written before it was recorded.
    #[schemars(extend("enum" = crate::far_end::ALL))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub far_end: Option<String>,
    /// Replies too old to classify as late or duplicate.
    pub stale: u64,
}

/// TCP phases of a probe's flows, in ms.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProbePhases {
    /// TCP connect (with `--via`: until the tunnel is open), one per flow.
    pub connect: Summary,
    /// Connect + the first echo on that connection, one per flow that got one.
    pub first_packet: Summary,
    /// The first echo alone (from its send to its reply), one per flow that got one. Absent
    /// in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_echo: Option<Summary>,
}

/// A proxy handshake, phase by phase (ms, means over `handshakes`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProxyPhases {
    /// The proxy URL, password left out.
    pub via: String,
    /// Handshakes that succeeded (TCP connections or UDP associations).
    pub handshakes: u64,
    /// TCP connect to the proxy.
    pub proxy_connect_ms: f64,
    /// SOCKS5 method choice and user/password exchange (0 for HTTP CONNECT).
    pub auth_ms: f64,
    /// CONNECT / UDP ASSOCIATE sent → the proxy's success reply.
    pub reply_ms: f64,
    /// All three.
    pub handshake_ms: f64,
}

/// The names in a probe's `histograms` map (serialized HDR histograms, ns).
pub mod hist {
    /// Round-trip time of on-time replies, from the actual send.
    pub const RTT: &str = "rtt";
    /// `rate` mode only: round-trip time from the intended send time.
    pub const RTT_CORRECTED: &str = "rtt_corrected";
    /// |RTT(i) - RTT(i-1)| between consecutive replies.
    pub const IPDV: &str = "ipdv";
    /// TCP only: connect, connect + first echo, and the first echo alone, one value per flow.
    pub const CONNECT: &str = "connect";
    pub const FIRST_PACKET: &str = "first_packet";
    pub const FIRST_ECHO: &str = "first_echo";
    /// TCP only: the kernel's smoothed RTT (`TCP_INFO`), sampled: see `summary.tcp_info`.
    pub const TCP_RTT: &str = "tcp_rtt";
    /// `--under-load` only: the RTTs of packets sent in each phase.
    pub const RTT_IDLE: &str = "rtt_idle";
    pub const RTT_LOADED: &str = "rtt_loaded";
    pub const RTT_RECOVERY: &str = "rtt_recovery";
    /// The phase histograms, in phase order.
    pub const PHASES: [&str; 3] = [RTT_IDLE, RTT_LOADED, RTT_RECOVERY];
    pub use crate::directions::hist::{DWELL, IPDV_DOWN, IPDV_UP, OWD_DOWN, OWD_UP};
    /// Every name above.
    pub const ALL: [&str; 15] = [
        RTT,
        RTT_CORRECTED,
        IPDV,
        CONNECT,
        FIRST_PACKET,
        FIRST_ECHO,
        TCP_RTT,
        RTT_IDLE,
        RTT_LOADED,
        RTT_RECOVERY,
        DWELL,
        IPDV_UP,
        IPDV_DOWN,
        OWD_UP,
        OWD_DOWN,
    ];
}
