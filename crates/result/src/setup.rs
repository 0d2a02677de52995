//! The body of a `kind = "setup"` result document (`npt setup`): what each layer of a
//! connection's setup costs — TCP connect, a SOCKS5 (CONNECT or UDP ASSOCIATE) or HTTP CONNECT
//! proxy's exchanges, TLS, the QUIC handshake, the first response byte — in milliseconds (the
//! median of fresh attempts, with its interval) and in round trips of the path, beside the
//! round trips its protocol needs, with a flag where a layer took more. Here rather than in npt-setup so that
//! every reader reads it as one typed result ([`crate::any::AnyBody::Setup`]).
//!
//! Field names are what users script against (docs/setup.md); `schema/setup.schema.json`
//! checks them.

use std::collections::BTreeMap;

use npt_stats::SerializedHistogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Errors, NptLatency};

/// The body of a `setup` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SetupBody {
    /// `tcp://`, `http://`, `https://`, `quic://` or `udp://HOST:PORT` as given.
    #[schemars(regex(pattern = "^(tcp|http|https|quic|udp)://"))]
    pub target: String,
    /// The address it resolved to (the proxy's, through `--via`).
    pub address: String,
    /// `--via` (password left out), when the connections went through a proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    pub summary: SetupSummary,
    /// Every layer, in the order a connection sets them up.
    pub layers: Vec<LayerRecord>,
    /// `latency.setup`: the NPT latency block of a whole setup (start to the first response
    /// byte, or to the last layer), the `setup` histogram's.
    #[schemars(extend(
        "propertyNames" = {"enum": ["setup"]},
        "maxProperties" = 1,
    ))]
    pub latency: BTreeMap<String, NptLatency>,
    /// `total_errors`: attempts that failed; `error_rate` over the attempts made.
    pub errors: Errors,
    /// Histograms, ns: `setup` (whole setups), `rtt` (the base round trips) and one per layer
    /// under its name.
    pub histograms: BTreeMap<String, SerializedHistogram>,
}

/// The run's verdict.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SetupSummary {
    /// Attempts made (each a fresh connection; with `--resume`, one more before them that only
    /// fetched the session ticket and is not counted).
    pub attempts: u64,
    /// Attempts that set up every layer.
    pub completed: u64,
    /// The base round trip, ms: the smallest of `rtt_samples`.
    pub rtt_ms: f64,
    /// The median of the base round trips, ms.
    pub rtt_p50_ms: f64,
    /// Base round trips measured.
    pub rtt_samples: u64,
    /// How the base round trip was measured: `warm_request` (a second request on each set-up
    /// connection: one round trip through every layer to the far end and back) or
    /// `tcp_connect` (the TCP connects to the first hop, for `tcp://` targets).
    #[schemars(extend("enum" = ["warm_request", "tcp_connect"]))]
    pub rtt_from: String,
    /// A whole setup's median, ms, and in base round trips.
    pub setup_p50_ms: f64,
    pub setup_rtts: f64,
    /// The round trips the layers' protocols need, added up.
    pub expected_rtts: f64,
    /// Layers flagged as costing more round trips than their protocol needs.
    pub flagged: u32,
    /// A document of several runs (`npt report --from`, a monitor's range of rounds): the
    /// runs, and of them those whose own verdict flagged a layer. Absent in one run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flagged_runs: Option<u64>,
    /// The TLS version asked for (`1.2`, `1.3`), for TLS targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_version: Option<String>,
    /// `--resume`: of the counted attempts, how many resumed the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<u64>,
    /// `--resume`: of the counted attempts, how many the server made do a full handshake
    /// instead (each flags the TLS or QUIC layer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumption_refused: Option<u64>,
    /// QUIC `--resume`: attempts that sent their request in 0-RTT, and of those, the ones the
    /// server accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_rtt_sent: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_rtt_accepted: Option<u64>,
}

/// One layer's cost.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LayerRecord {
    /// `tcp_connect`, `socks5_greeting`, `socks5_connect`, `socks5_udp_associate`,
    /// `http_connect`, `tls`, `quic`, `first_byte`.
    #[schemars(extend("enum" = ["tcp_connect", "socks5_greeting", "socks5_connect", "socks5_udp_associate", "http_connect", "tls", "quic", "first_byte"]))]
    pub layer: String,
    /// What the layer was: `TLS 1.3 resumed`, `QUIC 0-RTT` …
    pub what: String,
    /// Attempts that completed this layer.
    pub samples: u64,
    /// The median cost, ms, with its 95 % order-statistic interval.
    pub p50_ms: f64,
    pub p50_lo_ms: f64,
    pub p50_hi_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// The median in base round trips (`p50_ms / rtt_ms`), and its interval's ends.
    pub rtts: f64,
    pub rtts_lo: f64,
    pub rtts_hi: f64,
    /// The round trips the layer's protocol needs.
    pub expected_rtts: f64,
    /// Why the layer is flagged (it cost more round trips than its protocol needs); absent
    /// when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
}

/// A layer of a connection's setup, in the order they happen; its name is `layers[].layer`
/// and its histogram's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    TcpConnect,
    Socks5Greeting,
    Socks5Connect,
    Socks5UdpAssociate,
    HttpConnect,
    Tls,
    Quic,
    FirstByte,
}

impl Layer {
    /// Every layer, in order.
    pub const ALL: [Layer; 8] = [
        Layer::TcpConnect,
        Layer::Socks5Greeting,
        Layer::Socks5Connect,
        Layer::Socks5UdpAssociate,
        Layer::HttpConnect,
        Layer::Tls,
        Layer::Quic,
        Layer::FirstByte,
    ];

    /// The name in the result (`layers[].layer`, the histogram's key).
    pub fn name(self) -> &'static str {
        match self {
            Layer::TcpConnect => "tcp_connect",
            Layer::Socks5Greeting => "socks5_greeting",
            Layer::Socks5Connect => "socks5_connect",
            Layer::Socks5UdpAssociate => "socks5_udp_associate",
            Layer::HttpConnect => "http_connect",
            Layer::Tls => "tls",
            Layer::Quic => "quic",
            Layer::FirstByte => "first_byte",
        }
    }

    /// The layer named `name` in a result.
    pub fn parse(name: &str) -> Option<Layer> {
        Layer::ALL.into_iter().find(|l| l.name() == name)
    }
}

impl crate::body::Body for SetupBody {
    const KIND: &'static str = "setup";
}

impl crate::body::View for SetupBody {
    crate::body::blocks!(histograms);

    fn headline_parts(&self) -> Vec<(&str, &SerializedHistogram)> {
        crate::body::part(&self.histograms, "setup")
    }
    fn target(&self) -> String {
        self.target.clone()
    }
}
