//! From recorded timings to a verdict, without a socket or a clock: the attempts' timings
//! added into one value ([`tally`]: a histogram per layer, the base round trips, counts), which
//! the result's own rule judges ([`npt_result::stats::setup`]: each layer's median cost and
//! its interval, its multiple of the base round trip, the round trips its protocol needs, and
//! the flag when it took more) — the rule a monitor's range of rounds is judged by too. Pure
//! functions of what the attempts recorded, so the flagging rule is tested here on timings
//! written by hand (a broken 0-RTT, an extra proxy round trip, a resumption the server
//! refused).

pub use npt_result::setup::Layer;
pub use npt_result::stats::setup::{
    Attempt, LayerVerdict, Plan, Verdict, MIN_EXCESS_NS, TOLERANCE_RTTS,
};
use npt_result::stats::SetupStats;
use npt_stats::ErrorCounts;

/// The attempts of a run whose connections set up `plan`, added: a layer's histogram holds
/// one sample per attempt that completed it, a whole setup one per attempt that completed
/// every layer.
pub fn tally(plan: &[Plan], attempts: &[Attempt], errors: ErrorCounts) -> SetupStats {
    let mut s = SetupStats {
        runs: 1,
        errors,
        ..SetupStats::default()
    };
    for p in plan {
        s.layers.entry(p.layer).or_default();
    }
    for a in attempts {
        s.record(plan, a);
    }
    s
}

/// The verdict on `attempts` of a run whose connections set up `plan`.
pub fn classify(plan: &[Plan], attempts: &[Attempt], resume: bool) -> Verdict {
    tally(plan, attempts, ErrorCounts::default()).verdict(plan, resume)
}

#[cfg(test)]
mod tests;
