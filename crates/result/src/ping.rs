//! The body of a `kind = "ping"` result document: a `summary` users script against, the NPT
//! `latency.<proto>` and `errors` blocks every npt result carries, and the RTT histogram so
//! results merge exactly; and its text summary, so that `npt report` prints what `npt ping`
//! printed. Here rather than in npt-ping so that every reader reads it as one typed result
//! ([`crate::any::AnyBody::Ping`]).
//!
//! Field names are what users script against (docs/result-json.md, "ping"); `schema/ping.schema.json`
//! checks them.

use std::collections::BTreeMap;

use npt_stats::SerializedHistogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Errors, NptLatency};
use crate::Histograms;

/// The body of a `ping` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PingBody {
    /// `PROTO://HOST:PORT` (or `icmp://HOST`) as given.
    #[schemars(regex(pattern = "^(tcp|udp|quic|icmp)://"))]
    pub target: String,
    #[schemars(extend("enum" = ["tcp", "udp", "quic", "icmp"]))]
    pub proto: String,
    /// Addresses the target resolved to, in the order they were tried.
    #[schemars(length(min = 1))]
    pub addresses: Vec<String>,
    pub summary: PingSummary,
    /// `latency.<tcp|udp|quic|icmp>`: the NPT latency block.
    #[schemars(extend(
        "propertyNames" = {"enum": ["tcp", "udp", "quic", "icmp"]},
        "minProperties" = 1,
        "maxProperties" = 1,
    ))]
    pub latency: BTreeMap<String, NptLatency>,
    /// `error_rate` = total_errors ÷ sent (`attempts` is not written).
    pub errors: Errors,
    /// The RTT histogram (ns).
    pub histogram: SerializedHistogram,
    /// `npt ping --from`: the hop agent (`npt://HOST:PORT`) the RTTs were measured from; absent
    /// when measured from this host (and in files written before it existed).
    #[schemars(regex(pattern = "^npt://"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_from: Option<String>,
    /// What answered each attempt ([`answered_by`]): `first_listener` (a TCP connect: whatever
    /// listens at the address, a relay or forwarder included), `proxy` (a TCP connect through
    /// `--via`, until the proxy's CONNECT reply), `echo` (an echo from the path's far end:
    /// UDP, or TCP `--echo`), `quic_server` or `host` (an ICMP echo: the host's kernel);
    /// absent in files written before it existed.
    #[schemars(extend("enum" = ["first_listener", "proxy", "echo", "quic_server", "host"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// What the figure does not say, in words (a TCP connect through a relay is the first
    /// relay's, [`note`]); absent when there is nothing to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `npt ping --echo`: each answered attempt's connect and echo apart (the summary is their
    /// sum); absent otherwise, and when nothing answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<EchoPhases>,
    /// `npt ping --echo --setup`: what each layer of the attempts' connections cost — the TCP
    /// connect (to the proxy, through `--via`), the proxy's exchanges, the first echo — in ms
    /// and in round trips of a base round trip from a second echo on each connection, judged
    /// as `npt setup` judges its own (docs/ping.md, "Setup cost per layer"). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<crate::setup::SetupBody>,
}

impl crate::body::Body for PingBody {
    const KIND: &'static str = "ping";
}

impl crate::body::View for PingBody {
    crate::body::blocks!();

    /// Its one histogram, as `rtt`.
    fn histograms(&self) -> BTreeMap<&str, &SerializedHistogram> {
        BTreeMap::from([(hist::RTT, &self.histogram)])
    }
    fn headline_parts(&self) -> Vec<(&str, &SerializedHistogram)> {
        vec![(hist::RTT, &self.histogram)]
    }
    fn headline_summary(&self) -> Result<npt_stats::Summary, String> {
        Ok(self.summary.as_summary())
    }
    fn target(&self) -> String {
        self.target.clone()
    }
}

/// `npt ping --echo`: the two parts of each answered attempt, in ms.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EchoPhases {
    /// The TCP connect (through `--via`: until the proxy's CONNECT reply): answered by the
    /// first listener, a relay or forwarder included.
    pub connect_ms: NptLatency,
    /// One framed echo on the new connection: through every relay to `npt serve` and back (a
    /// relay that connects onward when a client connects, as socat does, adds that connect).
    pub echo_ms: NptLatency,
    /// Their histograms (ns): `connect`, `echo`.
    #[schemars(extend("propertyNames" = {"enum": ["connect", "echo"]}))]
    pub histograms: Histograms,
}

/// What answered a ping's attempts (`answered_by`).
pub mod answered_by {
    /// A TCP connect: the kernel of whatever listens at the address. A relay or forwarder
    /// accepts by itself, so through one this is the first relay's time, not the path's.
    pub const FIRST_LISTENER: &str = "first_listener";
    /// A TCP connect through `--via`: the proxy's CONNECT reply, sent once the proxy connected
    /// to the target (whose listener, again, may be a relay that accepts by itself).
    pub const PROXY: &str = "proxy";
    /// An echo from the path's far end: a UDP echo, or TCP `--echo` (connect + one echo).
    pub const ECHO: &str = "echo";
    /// A QUIC handshake, answered by the QUIC server.
    pub const QUIC_SERVER: &str = "quic_server";
    /// An ICMP echo, answered by the target host's kernel (no port, nothing in user space).
    pub const HOST: &str = "host";
}

/// The words beside a ping answered by `answered_by` ([`answered_by`]): a TCP connect is the
/// first listener's, which through a relay is not the path's.
pub fn note(answered_by: &str) -> Option<String> {
    match answered_by {
        answered_by::FIRST_LISTENER => Some(
            "a TCP connect is answered by whatever listens at the address: through a relay or \
             forwarder (which accepts by itself) it is the first relay's time, and says nothing \
             of what is behind it; --echo times connect + one echo end to end"
                .to_string(),
        ),
        answered_by::PROXY => Some(
            "the proxy's CONNECT reply comes once it has connected to the target: a relay there \
             accepts by itself and says nothing of what is behind it; --echo times connect + \
             one echo end to end"
                .to_string(),
        ),
        _ => None,
    }
}

/// Counts and RTT statistics in milliseconds (zeros when nothing answered).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PingSummary {
    pub sent: u64,
    pub received: u64,
    /// Attempts without an answer that the server did not refuse: `sent − received −
    /// refused_by_server`.
    pub lost: u64,
    /// `lost ÷ (sent − refused_by_server)`, in %.
    #[schemars(range(min = 0, max = 100))]
    pub loss_pct: f64,
    /// Answers that came after their attempt had timed out, or twice.
    pub late: u64,
    /// UDP against `npt serve`: attempts the server refused (its per-source budget, or a
    /// `--token` it wants), from its refusal notices and counts — never counted as loss.
    #[serde(default)]
    pub refused_by_server: u64,
    pub min_ms: f64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub stddev_ms: f64,
    /// An echo (UDP, TCP `--echo`): which far end answered ([`crate::far_end`]): `npt-serve`
    /// (its framed echo replies), `echo` (a plain echo that returned each request unchanged,
    /// or any echo under `--raw`), `none` (no reply) or `mixed`; absent for a connect or a
    /// handshake, and in files written before it existed.
    #[schemars(extend("enum" = crate::far_end::ALL))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub far_end: Option<String>,
}

impl PingSummary {
    /// The figures as the one summary type of every kind (p99.9 and p99.99: its max).
    pub fn as_summary(&self) -> npt_stats::Summary {
        npt_stats::Summary {
            count: self.received,
            min: self.min_ms,
            mean: self.avg_ms,
            stddev: self.stddev_ms,
            p50: self.p50_ms,
            p90: self.p90_ms,
            p95: self.p95_ms,
            p99: self.p99_ms,
            p999: self.max_ms,
            p9999: self.max_ms,
            max: self.max_ms,
        }
    }
}

/// The name a ping's one histogram goes by among every result's histograms
/// ([`crate::body::View::histograms`]); the document keeps it as `histogram`.
pub mod hist {
    /// Round-trip time of answered attempts.
    pub const RTT: &str = "rtt";
    /// `--echo`: the connect part of answered attempts ([`super::EchoPhases`]).
    pub const CONNECT: &str = "connect";
    /// `--echo`: the echo part of answered attempts.
    pub const ECHO: &str = "echo";
}
