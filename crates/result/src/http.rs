//! The body of an `http` result (the gateway benchmark): summary, per-host results, cold start,
//! tester health, the NPT-compatible `latency` and `errors` blocks, serialized histograms and
//! the per-interval series (its text summary is npt-report's `text::write_http`).
//!
//! Field names here are what users script against (docs/result-json.md, "http"): `summary.requests`,
//! `summary.rps`, `summary.latency_ms.*`, `summary.status.<code>`, `summary.errors`,
//! `hosts.<host>.requests`, `cold_start.ready_ms`, `cold_start.first_request_ms` and, in open
//! loop, `summary.latency_uncorrected_ms`. Keep them stable; `schema/http.schema.json` checks them.

use std::collections::BTreeMap;

use npt_stats::{SerializedHistogram, Summary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Directions, Errors, NptLatency};
use crate::health::Health;
use crate::interval::Interval;
use crate::Histograms;

/// The body of an `http` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HttpBody {
    pub summary: HttpSummary,
    /// Per virtual host (the `Host` header / `:authority` sent), keyed by that name.
    #[schemars(extend("minProperties" = 1))]
    pub hosts: BTreeMap<String, HostResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_start: Option<ColdStart>,
    /// CPU, memory, the sends behind schedule with their lateness, and in open loop the
    /// pacer's timer lateness.
    #[schemars(extend("required" = ["sends_behind_schedule", "behind_threshold_ms", "send_lateness_ms"]))]
    pub health: Health,
    /// NPT's block; the key is `tcp` (HTTP runs over TCP).
    #[schemars(extend("propertyNames" = {"enum": ["tcp"]}, "required" = ["tcp"]))]
    pub latency: BTreeMap<String, NptLatency>,
    pub errors: Errors,
    /// Serialized HDR histograms (ns) by name: [`hist`].
    #[schemars(
        description = "Serialized HDR histograms (ns) by name: `latency`, `latency_uncorrected`, `ttfb`, `connect`, `tls`, `proxy`, and `hosts.<host>` per host."
    )]
    #[schemars(extend(
        "propertyNames" = {"pattern": "^(latency|latency_uncorrected|ttfb|connect|tls|proxy|hosts\\..+)$"},
        "required" = [hist::LATENCY, hist::TTFB, hist::CONNECT],
    ))]
    pub histograms: Histograms,
    /// One per interval (1 s); `status` filled besides the common fields.
    #[schemars(extend("allOf" = [{"items": {"required": ["status"]}}]))]
    pub intervals: Vec<Interval>,
    /// What each layer of the run's new connections cost (TCP connect, TLS, the first
    /// response byte) in ms and in round trips of a base round trip the run measured, judged
    /// as `npt setup` judges its own (docs/http.md, "Setup cost per layer"). Absent through
    /// `--via`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<crate::setup::SetupBody>,
}

impl crate::body::Body for HttpBody {
    const KIND: &'static str = "http";
}

impl crate::body::View for HttpBody {
    crate::body::blocks!(health, intervals, histograms);

    /// The request latency (corrected in open loop).
    fn headline_parts(&self) -> Vec<(&str, &SerializedHistogram)> {
        crate::body::part(&self.histograms, hist::LATENCY)
    }
    fn headline_summary(&self) -> Result<Summary, String> {
        Ok(self.summary.latency_ms)
    }
    /// The target, or the URL when it has none.
    fn target(&self) -> String {
        if self.summary.target.is_empty() {
            self.summary.url.clone()
        } else {
            self.summary.target.clone()
        }
    }
}

/// What the benchmark sent and what came back. In open loop (`--rate`) `rate` and
/// `latency_uncorrected_ms` are always there.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[schemars(extend(
    "if" = {"properties": {"open_loop": {"const": true}}},
    "then" = {"required": ["rate", "latency_uncorrected_ms"]},
))]
pub struct HttpSummary {
    pub url: String,
    /// The socket address requests were sent to.
    pub target: String,
    pub method: String,
    /// The protocol the run used: `http/1.1` or `h2`.
    #[schemars(extend("enum" = ["http/1.1", "h2"]))]
    pub protocol: String,
    /// `--http2-fallback` only, when the server did not speak HTTP/2 and the run used
    /// HTTP/1.1: why (`TLS ALPN chose http/1.1`, `h2c prior knowledge was answered by
    /// HTTP/1.x ("HTTP/1.1 400 Bad Request")` …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downgrade: Option<String>,
    pub tls: bool,
    /// `closed` (`-c` workers send as soon as the previous answer is in) or `open` (`--rate`).
    #[schemars(extend("enum" = ["closed", "open"]))]
    pub mode: String,
    pub open_loop: bool,
    /// `--rate`, requests per second (open loop only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Concurrent connections (`-c`).
    #[schemars(range(min = 1))]
    pub connections: u32,
    /// Concurrent streams per HTTP/2 connection (1 for HTTP/1.1).
    #[schemars(range(min = 1))]
    pub streams: u32,
    /// True with `--new-conn`: a new TCP (and TLS) connection per request.
    pub new_conn: bool,
    /// Responses received completely, whatever their status.
    pub requests: u64,
    /// Responses with a 2xx status.
    pub ok: u64,
    /// Requests that got no complete response (transport errors, timeouts); by kind in `errors`.
    pub errors: u64,
    /// Requests still waiting for their response when the run ended (neither counted as
    /// requests nor as errors), and the age of the oldest.
    #[serde(default)]
    pub in_flight_at_end: u64,
    #[serde(default)]
    pub oldest_in_flight_ms: f64,
    /// `requests` per second over the measured phase.
    pub rps: f64,
    /// Length of the measured phase (after any cold start).
    pub duration_s: f64,
    /// Connections opened during the measured phase.
    pub connections_opened: u64,
    /// Response counts by status code (`"200"`, `"404"` …).
    #[schemars(extend("propertyNames" = {"pattern": "^[1-9][0-9]{2}$"}))]
    pub status: BTreeMap<String, u64>,
    /// Request and response body bytes of completed requests (headers excluded).
    pub bytes: Directions,
    /// Body bits per second each way (headers excluded).
    pub throughput_bps: Directions,
    /// Request latency: first byte handed to the socket → last response byte read. In open loop
    /// this is measured from the *intended* send time (coordinated-omission corrected, as wrk2).
    pub latency_ms: Summary,
    /// Open loop only: latency from the actual send, which hides server stalls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_ms: Option<Summary>,
    /// Phases: TCP connect, TLS handshake (per connection), time to the response head, complete.
    pub phases_ms: Phases,
}

/// The phases of a request, each a distribution in ms.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Phases {
    pub connect: Summary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Summary>,
    /// `--via`: the proxy's own part of each connect (authentication + CONNECT reply);
    /// `connect` then runs until the tunnel is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Summary>,
    /// From the actual send to the response head (status line and headers) being parsed.
    pub ttfb: Summary,
    /// From the actual send to the last body byte (the uncorrected latency).
    pub complete: Summary,
}

/// One virtual host's requests.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HostResult {
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub rps: f64,
    #[schemars(extend("propertyNames" = {"pattern": "^[1-9][0-9]{2}$"}))]
    pub status: BTreeMap<String, u64>,
    pub bytes_received: u64,
    pub latency_ms: Summary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_ms: Option<Summary>,
    pub ttfb_ms: Summary,
    /// Per-host load only (`--host NAME=N` or `NAME=R/s`): the connections this host had to
    /// itself, as a separate client would (absent when the hosts shared the `-c` connections
    /// round-robin, which gives every host the same request rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub connections: Option<u32>,
    /// Per-host rate only (`--host NAME=R/s`): this host's own open-loop rate, requests per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

/// The gateway benchmark's cold start: a command is spawned and polled until its first 2xx answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ColdStart {
    pub command: String,
    /// From spawning the command to the end of the first 2xx response.
    pub ready_ms: f64,
    /// Latency of that first successful request alone.
    pub first_request_ms: f64,
    /// Requests (and connection attempts) sent until then, the successful one included.
    #[schemars(range(min = 1))]
    pub attempts: u64,
    /// The status of that response (2xx).
    #[schemars(range(min = 200, max = 299))]
    pub first_status: u16,
    /// The port watched for listening: the URL's, or `--cold-start-port`'s (the command's
    /// own, behind a gateway), as `host:port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// From spawning the command until that port first accepted a TCP connection (the process
    /// starting and binding; polled every 2 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listening_ms: Option<f64>,
    /// How precisely `listening_ms` is known: the port was still closed this long before it
    /// (when the previous try began), so listening began within this window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listening_within_ms: Option<f64>,
    /// From listening to the end of the first 2xx response through the URL (`ready_ms −
    /// listening_ms`): the service getting ready to answer, plus any gateway in front of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listening_to_ready_ms: Option<f64>,
    /// `--cold-start-port` only: from spawning to the end of the command's first 2xx answer
    /// on its own port, asked directly (plain HTTP/1.1), not through the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_ready_ms: Option<f64>,
    /// `--cold-start-port` only: that direct request's own time (from its send to the end of
    /// its response).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_first_request_ms: Option<f64>,
    /// `--cold-start-port` only: the gateway's own part, `ready_ms − service_ready_ms` — how
    /// much later the first good answer came through the URL than from the service itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_ms: Option<f64>,
}

/// The names in an http result's `histograms` map (serialized HDR histograms, ns).
pub mod hist {
    /// Request latency (corrected in open loop), as `summary.latency_ms`.
    pub const LATENCY: &str = "latency";
    /// Open loop only: latency from the actual send.
    pub const LATENCY_UNCORRECTED: &str = "latency_uncorrected";
    pub const TTFB: &str = "ttfb";
    pub const CONNECT: &str = "connect";
    /// TLS runs only.
    pub const TLS: &str = "tls";
    /// `--via` only: the proxy's own part of each connect.
    pub const PROXY: &str = "proxy";
    /// Latency per host: `hosts.<host>`.
    pub const HOST_PREFIX: &str = "hosts.";

    /// The name of `host`'s latency histogram.
    pub fn host(host: &str) -> String {
        format!("{HOST_PREFIX}{host}")
    }
}
