//! The body of a `kind = "lifetime"` result document (`npt lifetime`): how long the path keeps
//! an idle UDP flow (or TCP connection) alive, as a bracket — the longest idle a flow survived, the shortest it did
//! not — and whether a flow that expired came back from a new source port (a rebound mapping);
//! every flow of the search with its gap and fate. Here rather than in npt-lifetime so that
//! every reader reads it as one typed result ([`crate::any::AnyBody::Lifetime`]).
//!
//! Field names are what users script against (docs/lifetime.md);
//! `schema/lifetime.schema.json` checks them.

use std::collections::BTreeMap;

use npt_stats::SerializedHistogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Errors, NptLatency};

/// The body of a `lifetime` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LifetimeBody {
    /// `udp://HOST:PORT` or `tcp://HOST:PORT` as given.
    #[schemars(regex(pattern = "^(udp|tcp)://"))]
    pub target: String,
    /// The address it resolved to.
    pub address: String,
    pub summary: LifetimeSummary,
    /// Every flow of the search, in the order they were opened.
    pub flows: Vec<FlowRecord>,
    /// `latency.udp` (or `latency.tcp`): the NPT latency block of the flows' first round trips
    /// (request → ack), the `ack` histogram's; the lifetime itself is in `summary`.
    #[schemars(extend(
        "propertyNames" = {"enum": ["udp", "tcp"]},
        "maxProperties" = 1,
    ))]
    pub latency: BTreeMap<String, NptLatency>,
    /// `total_errors`: flows that got no ack; `error_rate` over the flows opened.
    pub errors: Errors,
    /// The flows' first round trips (request → ack), ns.
    pub ack_histogram: SerializedHistogram,
}

/// What the search found.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LifetimeSummary {
    /// The lifetime, s: the middle of the bracket; absent when no flow expired within
    /// `max_s` (then `longer_than_max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_s: Option<f64>,
    /// The longest idle gap a flow survived, s (the responder's own hold); absent when none
    /// did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alive_after_s: Option<f64>,
    /// The shortest idle gap a flow did not survive, s; absent when none expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gone_after_s: Option<f64>,
    /// True when a flow idle for `max_s` still lived: the lifetime is longer than the search
    /// went.
    pub longer_than_max: bool,
    /// The longest gap searched (`--max`), s.
    pub max_s: f64,
    /// How narrow the bracket was to get (`--resolution`, or 2 % of the lifetime when that is
    /// more than 1 s), s.
    pub resolution_s: f64,
    /// Rounds of parallel flows the search took (the first is the coarse ladder).
    pub rounds: u32,
    /// Whether a flow silent past the lifetime came back from another source address than it
    /// had (the path made a new mapping on a new port); absent when none was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebound: Option<bool>,
    /// Rebind flows answered after their silence, and of those the ones seen from a new
    /// source address.
    pub rebound_checked: u32,
    pub rebound_flows: u32,
    /// Results that contradict the others (a flow gone at a gap shorter than one a flow
    /// survived: a lost callback, or a path whose timeout varies); the survivor is trusted.
    pub inconsistent: u32,
    /// Flows whose callback the responder refused (its per-address cap or its longest gap).
    pub refused: u32,
    /// `tcp://`: how the path ended the connections idle past the lifetime; absent for UDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_off: Option<CutOff>,
}

/// How the path ended the TCP connections it did not keep.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CutOff {
    /// `closed` when the path closed every one (FIN or RST: a relay that timed out),
    /// `dropped` when it closed none and their callbacks never came (a NAT or firewall that
    /// forgot them silently), `mixed` when both; absent when none expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["closed", "dropped", "mixed"]))]
    pub how: Option<String>,
    /// Connections the path closed with a FIN while idle.
    pub fin: u32,
    /// Connections the path reset (RST) while idle.
    pub rst: u32,
    /// Connections whose callback never came, with no close.
    pub dropped: u32,
    /// The shortest idle time after which the path closed a connection, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_after_s: Option<f64>,
}

/// One flow of the search.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FlowRecord {
    /// The round it belonged to (0: the ladder).
    pub round: u32,
    /// The idle gap asked for, s.
    pub gap_s: f64,
    /// `alive` (the callback came), `gone` (it did not), `no_ack` (the request was never
    /// answered), `refused` (the responder would not call back), `cancelled` (the bracket no
    /// longer needed it), `rebind` (a flow silent past the bracket, then asked where it comes
    /// from: `seen_after`), `closed` (`tcp://`: the path closed the connection while it was
    /// idle: `closed_by`, `closed_after_s`).
    #[schemars(extend(
        "enum" = ["alive", "gone", "no_ack", "refused", "cancelled", "rebind", "closed"]
    ))]
    pub fate: String,
    /// `alive`: how long the responder held it before calling back, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_s: Option<f64>,
    /// The source address the responder saw at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
    /// `rebind`: the source address the responder saw after the silence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_after: Option<String>,
    /// `closed`: `fin` or `rst`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["fin", "rst"]))]
    pub closed_by: Option<String>,
    /// `closed`: how long after its ack the connection was closed, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_after_s: Option<f64>,
}

impl crate::body::Body for LifetimeBody {
    const KIND: &'static str = "lifetime";
}

impl crate::body::View for LifetimeBody {
    crate::body::blocks!();

    fn histograms(&self) -> BTreeMap<&str, &SerializedHistogram> {
        BTreeMap::from([("ack", &self.ack_histogram)])
    }
    fn headline_parts(&self) -> Vec<(&str, &SerializedHistogram)> {
        vec![("ack", &self.ack_histogram)]
    }
    fn target(&self) -> String {
        self.target.clone()
    }
}
