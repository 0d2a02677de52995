//! `npt probe --under-load`: what the probe measured in each phase (idle, loaded while bulk
//! streams ran, recovery after them), how much the load added, the responsiveness the IETF
//! responsiveness draft defines (round trips per minute, RPM) and what the load moved. It is
//! its own block of a probe's body (`under_load`) so that other additions to the probe result
//! stay apart from it; the per-phase RTT histograms sit in the body's `histograms` map
//! (`rtt_idle`, `rtt_loaded`, `rtt_recovery`) so that `npt merge` adds them exactly.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Directions, Errors};
use crate::Summary;

/// The phases' names, in order.
pub const PHASES: [&str; 3] = ["idle", "loaded", "recovery"];

/// The share of the loaded phase's RTTs the responsiveness keeps (the draft's 95th-percentile
/// trimmed mean: the slowest 5 % are dropped before averaging).
pub const RPM_TRIM: f64 = 0.95;

/// Round trips per minute of a round trip of `ms` milliseconds (`None` for no round trip).
pub fn rpm(ms: f64) -> Option<f64> {
    (ms > 0.0).then(|| 60_000.0 / ms)
}

/// The loaded probe's block of a probe result.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UnderLoad {
    /// What ran as the load.
    pub load: LoadSpec,
    /// `idle`, `loaded`, `recovery`, in order: each with its planned bounds (s since the
    /// start of the run, for renderers to shade) and the RTTs of the probe packets *sent* in it.
    pub phases: Vec<Phase>,
    /// When the load's streams were started and when they were told to stop (s since the start
    /// of the run); absent when the run ended before the load began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_started_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_ended_s: Option<f64>,
    /// Loaded p50 − idle p50, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub increase_p50_ms: Option<f64>,
    /// Loaded p50 ÷ idle p50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub increase_p50_x: Option<f64>,
    /// Loaded p99 − idle p99, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub increase_p99_ms: Option<f64>,
    /// Responsiveness under the load: 60000 ÷ `rpm_rtt_ms` (round trips per minute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<f64>,
    /// The round trip `rpm` is made of: the 95 % trimmed mean of the loaded phase's probe
    /// RTTs (the draft's foreign probes; npt sends no self-probes on the load's connections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm_rtt_ms: Option<f64>,
    /// The same figure for the idle phase, for comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_rpm: Option<f64>,
    /// The load's application payload bits/s each way over its own run (headers excluded), as
    /// `npt bulk` reports it.
    pub goodput_bps: Directions,
    /// The load's payload bytes each way.
    pub bytes: Directions,
    /// TCP: the kernel's smoothed RTT on the load's own connections (`TCP_INFO`, sampled every
    /// 100 ms); QUIC: the connections' RTT estimate; UDP: the RTT of the responder's reports (up)
    /// or of the pulls (down). A view from inside the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_rtt_ms: Option<Summary>,
    /// The load's streams that ended with an error, by kind (a refused load target is here).
    pub load_errors: Errors,
    /// TCP: segments the tester's kernel retransmitted on the load's streams that send (up and
    /// both; `TCP_INFO`, as `npt bulk`'s `summary.retransmits`); absent on a download, whose
    /// retransmits are the responder's. QUIC: packets the tester's QUIC stack declared lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// TCP: the congestion control the tester's kernel ran on the load's streams that send,
    /// read back from each socket (`--load-congestion` or the system's default); absent on a
    /// download, which the responder's governs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// A `udp://` load: what it sent and what the responder reported arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpLoad>,
}

/// What a UDP load at a rate delivered (the responder's counts, as `npt bulk udp://` reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UdpLoad {
    /// Datagrams sent, arrived (as the responder reported) and the difference.
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    /// `lost` ÷ `sent`, %.
    pub loss_pct: f64,
    /// What arrived, bits/s of datagrams (the npt header included, IP/UDP headers not).
    pub delivered_bps: f64,
    /// RFC 3550 jitter of the one-way transit time, as the responder measured it.
    pub jitter_ms: f64,
}

impl UdpLoad {
    /// Loads that ran side by side (merged parts): counts and rates add, the loss follows
    /// from the counts, the larger jitter stands.
    pub fn add(&mut self, o: &UdpLoad) {
        self.sent += o.sent;
        self.received += o.received;
        self.lost += o.lost;
        self.loss_pct = if self.sent == 0 {
            0.0
        } else {
            self.lost as f64 * 100.0 / self.sent as f64
        };
        self.delivered_bps += o.delivered_bps;
        self.jitter_ms = self.jitter_ms.max(o.jitter_ms);
    }
}

/// What the load was.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LoadSpec {
    /// `tcp://HOST:PORT`, `quic://HOST:PORT` or `udp://HOST:PORT`.
    pub target: String,
    /// `down` (the responder sends), `up` (this host sends) or `both`.
    #[schemars(extend("enum" = ["up", "down", "both"]))]
    pub direction: String,
    /// Streams each way (a UDP load is one flow).
    #[schemars(range(min = 1, max = 1024))]
    pub streams: u32,
    /// `--load-rate`: a UDP load's rate, bits/s of datagrams (IP/UDP headers excluded); a
    /// tcp:// or quic:// load's pace of each stream, bits/s of payload (what it achieved is
    /// `goodput_bps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<f64>,
    /// `--load-size`: a UDP load's datagram size, bytes (IP/UDP headers excluded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// `--via`, password left out, when the load went through a proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// `--load-congestion`: this host's TCP congestion control on the load's streams, when set
    /// (what the kernel ran is `under_load.congestion`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
}

/// One phase of a loaded probe.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Phase {
    #[schemars(extend("enum" = PHASES))]
    pub name: String,
    /// Planned bounds, s since the start of the run.
    pub start_s: f64,
    pub end_s: f64,
    /// RTTs of the on-time replies to packets sent in this phase.
    pub rtt_ms: Summary,
}

/// The histogram name of a phase's RTTs in a probe body's `histograms`.
pub fn hist_name(phase: &str) -> String {
    format!("rtt_{phase}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpm_is_round_trips_per_minute() {
        assert_eq!(rpm(100.0), Some(600.0));
        assert_eq!(rpm(0.0), None);
        assert_eq!(hist_name("loaded"), "rtt_loaded");
    }

    #[test]
    fn udp_loads_side_by_side_add_and_the_loss_follows_the_counts() {
        let mut a = UdpLoad {
            sent: 100,
            received: 50,
            lost: 50,
            loss_pct: 50.0,
            delivered_bps: 9e6,
            jitter_ms: 1.0,
        };
        a.add(&UdpLoad {
            sent: 100,
            received: 100,
            lost: 0,
            loss_pct: 0.0,
            delivered_bps: 1e6,
            jitter_ms: 2.0,
        });
        assert_eq!((a.sent, a.received, a.lost), (200, 150, 50));
        assert_eq!(
            (a.loss_pct, a.delivered_bps, a.jitter_ms),
            (25.0, 10e6, 2.0)
        );
    }
}
