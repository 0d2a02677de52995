//! Where a probe's losses and delay happened: the `summary.directions` block (loss,
//! duplicates and reordering up and down, the far end's dwell, delay variation per direction,
//! one-way delay under a stated clock assumption) and `summary.refused_by_server` beside it —
//! what an `npt serve` that reflects told about every packet (docs/result-json.md, "probe").
//!
//! Field names here are what users script against; keep them stable.

use std::collections::BTreeMap;

use npt_stats::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The names of the per-direction histograms in a probe's `histograms` map (ns).
pub mod hist {
    /// Time the far end held each packet (its send − receive time).
    pub const DWELL: &str = "dwell";
    /// |difference of consecutive packets' one-way transit| up and down (no clock sync).
    pub const IPDV_UP: &str = "ipdv_up";
    pub const IPDV_DOWN: &str = "ipdv_down";
    /// One-way delay up and down, under the block's `clock` assumption only.
    pub const OWD_UP: &str = "owd_up";
    pub const OWD_DOWN: &str = "owd_down";
    /// Every name above.
    pub const ALL: [&str; 5] = [DWELL, IPDV_UP, IPDV_DOWN, OWD_UP, OWD_DOWN];
}

/// Per direction, from what the far end saw of each packet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PathDirections {
    /// True when every flow's far end answered the final flow query and its counts added up
    /// with the client's: `up.lost` and `down.lost` are then exact, like the totals.
    pub exact: bool,
    /// How the flows ended: settled exactly, or why not.
    pub flows: FlowsSettled,
    /// The clock assumption `owd_ms` rests on: `same-host` (a loopback target, or inside
    /// `npt lab`), `synced` (`--owd`: the user says the clocks are synchronized), `none` (no
    /// one-way delay), `mixed` (merged parts that differed).
    #[schemars(extend("enum" = ["same-host", "synced", "none", "mixed"]))]
    pub clock: String,
    pub up: OneWay,
    pub down: OneWay,
    /// UDP: path losses placed in neither direction (after the last reply, when the final
    /// query got no answer). `up.lost + down.lost + unplaced` is `summary.lost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unplaced: Option<u64>,
    /// Time the far end held each packet: RTT minus this is what the path took.
    pub dwell_ms: Summary,
    /// On-time replies that carried the far end's timestamps (the samples of the delays).
    pub stamped: u64,
    /// One-way readings below zero: the clocks are not one (the assumption is wrong).
    #[serde(default)]
    pub owd_negative: u64,
    /// The most negative one-way reading, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owd_min_ms: Option<f64>,
    /// The largest clock error a far end stated (STAMP's Error Estimate), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub far_error_ms: Option<f64>,
}

/// How the flows that reflected ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FlowsSettled {
    /// Flows whose replies said what the far end saw.
    pub reflected: u32,
    /// Settled by the far end's final counts.
    pub exact: u32,
    /// The final query got no answer (an older `npt serve`, or the path was down at the end).
    pub no_report: u32,
    /// Flows to a STAMP reflector, which has no final count to ask for: losses after its last
    /// answer stay `unplaced` (absent in files written before it was counted).
    #[serde(default)]
    pub no_query: u32,
    /// The far end kept no record of the flow (it forgot it, or refused all of it).
    pub unknown_flow: u32,
    /// The far end's counts did not add up with the client's (it counted more than could
    /// have arrived): the split is the replies' estimate.
    pub disagree: u32,
}

impl FlowsSettled {
    /// Why the split is not exact, in words; None when it is.
    pub fn why_inexact(&self) -> Option<String> {
        if self.reflected > 0 && self.exact == self.reflected {
            return None;
        }
        let mut why = Vec::new();
        if self.no_report > 0 {
            why.push(format!(
                "{} flow(s) got no final count (an older npt serve, or the path was down at the end)",
                self.no_report
            ));
        }
        if self.no_query > 0 {
            why.push(format!(
                "{} STAMP flow(s): STAMP has no final count, so losses after the last answer \
                 cannot be placed",
                self.no_query
            ));
        }
        if self.unknown_flow > 0 {
            why.push(format!(
                "the server kept no record of {} flow(s)",
                self.unknown_flow
            ));
        }
        if self.disagree > 0 {
            why.push(format!(
                "the server's counts of {} flow(s) did not add up with ours",
                self.disagree
            ));
        }
        if why.is_empty() {
            why.push("per-direction loss is not counted over TCP".to_string());
        }
        Some(why.join("; "))
    }
}

/// One direction of the path.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OneWay {
    /// UDP: packets lost this way (absent over TCP, whose transport hides loss). Up: sent
    /// packets that never reached the server; down: its replies that never came back (a late
    /// reply stays lost, as in `summary.lost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// `lost` of what went this way, in %: up of the packets sent, down of the replies the
    /// server sent.
    #[schemars(range(min = 0, max = 100))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_pct: Option<f64>,
    /// UDP: packets that arrived more than once this way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicated: Option<u64>,
    /// UDP: packets that arrived after a later one this way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reordered: Option<u64>,
    /// |difference of consecutive packets' transit| this way: needs no clock sync.
    pub ipdv_ms: Summary,
    /// One-way delay, only under the block's `clock` assumption (absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owd_ms: Option<Summary>,
}

/// `summary.refusal_notices`: refusal notices the server sent, by reason (`budget`,
/// `token_required`, `no_token`, `unknown_session`, `other`). Notices are rate-limited by the
/// server: the count of refusals is `refused_by_server`, these say why.
pub type RefusalNotices = BTreeMap<String, u64>;

/// What to do about refusals, for the text report: the fix a user can apply.
pub fn refusal_fix(notices: &RefusalNotices) -> &'static str {
    let token = ["token_required", "no_token", "unknown_session"]
        .iter()
        .any(|k| notices.get(*k).is_some_and(|n| *n > 0));
    if token {
        "the server takes only --token sessions: pass --token SECRET (the server's secret)"
    } else {
        "its per-source budget: authenticate with --token (tokened sessions are not \
         budgeted), or raise the server's limits (npt serve --source-pps/--source-mbps, \
         --total-pps/--total-mbps, --open-limits; loopback and private sources are exempt \
         unless --limit-local)"
    }
}
