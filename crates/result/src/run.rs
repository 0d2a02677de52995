//! The body of a `run` result (simulated users): NPT's `latency.<tcp|quic|udp>` and `errors`
//! blocks with correct per-request values, then per protocol and per activity summaries,
//! the tester's health, serialized histograms (exact merge later) and the 1 s series.
//!
//! Field names here are what users script against (docs/result-json.md, "run"); keep them
//! stable. `schema/run.schema.json` describes this layout and a test enforces it.

use std::collections::BTreeMap;

use npt_stats::{SerializedHistogram, Summary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Directions, Errors, NptLatency};
use crate::health::Health;
use crate::interval::Interval;
use crate::Histograms;

/// The body of a `run` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunBody {
    pub summary: RunSummary,
    /// CPU, memory, and the timer wakeups of think times and pauses (`timer_lateness_ms`,
    /// `late_wakeups`, `late_threshold_ms`).
    #[schemars(extend("required" = ["timer_lateness_ms", "late_wakeups", "late_threshold_ms"]))]
    pub health: Health,
    /// NPT's block: `latency.<tcp|quic|udp>.{avg,p50,p95,p99,max,min}_ms`, request latency
    /// (first byte handed to the socket → last response byte read). Protocols with no
    /// completed request are left out.
    #[schemars(extend("propertyNames" = {"enum": ["tcp", "quic", "udp"]}))]
    pub latency: BTreeMap<String, NptLatency>,
    /// NPT's block; `error_rate` = errors ÷ requests started (see [`Errors`]).
    pub errors: Errors,
    /// Keyed `tcp`, `quic`, `udp`.
    #[schemars(extend("propertyNames" = {"enum": ["tcp", "quic", "udp"]}))]
    pub protocols: BTreeMap<String, ProtocolStats>,
    /// Keyed `web`, `quic`, `download`, `upload`, `game` (activities in the mix only).
    #[schemars(extend("propertyNames" = {"enum": ["web", "quic", "download", "upload", "game"]}))]
    pub activities: BTreeMap<String, ActivityStats>,
    /// Serialized HDR histograms (ns), named by [`hist`]: `proto.<tcp|quic|udp>.<latency|
    /// connect|handshake|first_request|proxy|tcp_rtt>`, `activity.<name>.<latency|ttfb>`,
    /// `health.timer_lateness`.
    #[schemars(extend("propertyNames" = {"pattern": concat!(
        "^(proto\\.(tcp|quic|udp)\\.(latency|connect|handshake|first_request|proxy|tcp_rtt)",
        "|activity\\.(web|quic|download|upload|game)\\.(latency|ttfb)",
        "|health\\.timer_lateness)$",
    )}))]
    pub histograms: Histograms,
    /// One per interval (1 s by default); `bytes`, `active_users` and `active_connections`
    /// filled besides the common fields.
    #[schemars(extend("allOf" = [
        {"items": {"required": ["bytes", "active_users", "active_connections"]}}
    ]))]
    pub intervals: Vec<Interval>,
}

impl crate::body::Body for RunBody {
    const KIND: &'static str = "run";
}

impl crate::body::View for RunBody {
    crate::body::blocks!(health, intervals, histograms);

    /// The request latency of every protocol.
    fn headline_parts(&self) -> Vec<(&str, &SerializedHistogram)> {
        self.histograms
            .iter()
            .filter(|(k, _)| hist::is_proto_latency(k))
            .map(|(k, h)| (k.as_str(), h))
            .collect()
    }
    /// The first target.
    fn target(&self) -> String {
        self.summary.targets.first().cloned().unwrap_or_default()
    }
}

/// What the users did, over the whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunSummary {
    /// `closed` (fixed users with think time) or `open` (sessions arriving at a rate).
    #[schemars(extend("enum" = ["closed", "open"]))]
    pub model: String,
    pub targets: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic_target: Option<String>,
    pub users: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_rate_per_s: Option<f64>,
    pub mix: String,
    pub seed: u64,
    pub duration_s: f64,
    pub ramp_up_s: f64,
    /// Sessions (visits, transfers, game sessions) started and finished without error.
    pub sessions_started: u64,
    pub sessions_completed: u64,
    /// Completed requests over every protocol.
    pub requests: u64,
    pub requests_per_s: f64,
    /// Application payload bytes each way (headers of IP/TCP/UDP/QUIC excluded; npt's own
    /// 48-byte frame header included).
    pub bytes: Directions,
    pub throughput_bps: Directions,
    pub max_active_users: u64,
    pub max_active_connections: u64,
    /// Open model: arrivals not started because `max_active` users were already active.
    pub arrivals_dropped: u64,
    /// Requests still in flight when the run ended (neither completed nor failed; those older
    /// than the timeout are also counted as `timeout` errors), and the age of the oldest.
    #[serde(default)]
    pub in_flight_at_end: u64,
    #[serde(default)]
    pub oldest_in_flight_ms: f64,
}

/// One protocol's requests and connections.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProtocolStats {
    pub requests: u64,
    pub errors: u64,
    pub connections: u64,
    pub bytes: Directions,
    /// Mean application throughput over the run, bits/s each way.
    pub throughput_bps: Directions,
    /// Request latency: first byte handed to the socket → last response byte read.
    pub latency_ms: Summary,
    /// TCP connect (SYN → established). For QUIC the same as the handshake.
    pub connect_ms: Summary,
    /// TCP: the handshake-sized exchange of a web page; QUIC: the QUIC/TLS handshake.
    pub handshake_ms: Summary,
    /// Connect start → last byte of the first request's response (quic-tun's latency test's "first packet").
    pub first_request_ms: Summary,
    /// `--via`: the proxy's own part of each connect (authentication + CONNECT reply);
    /// `connect_ms` then runs until the tunnel is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_ms: Option<Summary>,
    /// TCP: the tester's kernel's view of the connections (`TCP_INFO`, read when each is up
    /// and when it ends): retransmits, data segments, the smoothed RTT at each connection's
    /// end (histogram `proto.tcp.tcp_rtt`). With `--via`, of the tester → proxy hop only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<crate::tcpinfo::TcpKernel>,
    /// What each layer of the protocol's new connections cost — TCP: the connect (to the proxy
    /// through `--via`) and the proxy's exchanges; QUIC: the handshake; then the first response
    /// byte — in ms and in round trips of a base round trip from requests on connections
    /// already in use, judged as `npt setup` judges its own (docs/run.md, "Setup cost per
    /// layer"). Absent for UDP, and when no connection got its first byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<crate::setup::SetupBody>,
}

/// One activity of the mix.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ActivityStats {
    #[schemars(extend("enum" = ["tcp", "quic", "udp"]))]
    pub protocol: String,
    pub sessions: u64,
    pub requests: u64,
    pub errors: u64,
    pub bytes: Directions,
    pub latency_ms: Summary,
    /// Download/upload: request sent → first response byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb_ms: Option<Summary>,
    /// Download/upload: bytes moved / time taken, over all transfers, bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_bps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game: Option<GameStats>,
}

/// The game activity's UDP packets.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct GameStats {
    /// Sent, received, lost, late, duplicated, reordered.
    #[serde(flatten)]
    pub packets: npt_stats::PacketCounts,
    /// Packets the server's budget (or its `--token`) refused: never path loss. Absent in
    /// files written before it was counted.
    #[serde(default)]
    pub refused_by_server: u64,
    /// `lost ÷ (sent − refused_by_server)`, in %.
    #[schemars(range(min = 0, max = 100))]
    pub loss_pct: f64,
    /// RFC 3550 interarrival jitter of the RTT, sample-weighted over sessions.
    pub jitter_ms: f64,
    /// The samples `jitter_ms` is the weighted mean of (exact merges); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_samples: Option<u64>,
    pub loss_timeout_ms: f64,
}

/// The names in a run result's `histograms` map (serialized HDR histograms, ns), built and
/// read back here only.
pub mod hist {
    /// Per protocol: `proto.<tcp|quic|udp>.<phase>`.
    pub const PROTO_PREFIX: &str = "proto.";
    /// Per activity: `activity.<name>.<what>`.
    pub const ACTIVITY_PREFIX: &str = "activity.";
    /// How late think-time and pause wakeups fired.
    pub const TIMER_LATENESS: &str = "health.timer_lateness";

    /// Request latency (protocols and activities); the headline of a run.
    pub const LATENCY: &str = "latency";
    /// Protocol phases.
    pub const CONNECT: &str = "connect";
    pub const HANDSHAKE: &str = "handshake";
    pub const FIRST_REQUEST: &str = "first_request";
    /// `--via` only: the proxy's own part of each connect.
    pub const PROXY: &str = "proxy";
    /// TCP: the kernel's smoothed RTT at the end of each connection (`TCP_INFO`).
    pub const TCP_RTT: &str = "tcp_rtt";
    /// Activity: download/upload time to first byte.
    pub const TTFB: &str = "ttfb";

    /// `proto.<proto>.<phase>`.
    pub fn proto(proto: &str, phase: &str) -> String {
        format!("{PROTO_PREFIX}{proto}.{phase}")
    }

    /// `activity.<activity>.<what>`.
    pub fn activity(activity: &str, what: &str) -> String {
        format!("{ACTIVITY_PREFIX}{activity}.{what}")
    }

    /// A name of this map, read back.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Name<'a> {
        Proto { proto: &'a str, phase: &'a str },
        Activity { activity: &'a str, what: &'a str },
        TimerLateness,
    }

    /// What `name` names, if it is one of this map's (protocol and activity names hold no dot).
    pub fn parse(name: &str) -> Option<Name<'_>> {
        if name == TIMER_LATENESS {
            return Some(Name::TimerLateness);
        }
        if let Some(rest) = name.strip_prefix(PROTO_PREFIX) {
            let (proto, phase) = rest.split_once('.')?;
            return Some(Name::Proto { proto, phase });
        }
        let (activity, what) = name.strip_prefix(ACTIVITY_PREFIX)?.split_once('.')?;
        Some(Name::Activity { activity, what })
    }

    /// True for `proto.<p>.latency`, the histograms of a run's headline latency.
    pub fn is_proto_latency(name: &str) -> bool {
        matches!(parse(name), Some(Name::Proto { phase: LATENCY, .. }))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn names_are_built_and_read_back_in_one_place() {
            let n = proto("quic", HANDSHAKE);
            assert_eq!(n, "proto.quic.handshake");
            assert_eq!(
                parse(&n),
                Some(Name::Proto {
                    proto: "quic",
                    phase: HANDSHAKE
                })
            );
            let a = activity("download", TTFB);
            assert_eq!(
                parse(&a),
                Some(Name::Activity {
                    activity: "download",
                    what: TTFB
                })
            );
            assert_eq!(parse(TIMER_LATENESS), Some(Name::TimerLateness));
            assert!(is_proto_latency("proto.tcp.latency"));
            assert!(!is_proto_latency("activity.web.latency"));
            assert_eq!(parse("proto.tcp"), None);
            assert_eq!(parse("rtt"), None);
        }
    }
}
