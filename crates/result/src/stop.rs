//! Why a run ended, as every result says it (`stopped_by`), with ONE priority: when a run's
//! flows, tasks or merged parts stopped for different reasons, the result names the most
//! telling one ([`StopReason::most_telling`]). The probe's engine and `npt merge` used to
//! rank them differently.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why a run (or one flow of it) stopped, in priority order: a variant earlier in the list
/// says more about the run than a later one, and is the one a result reports.
///
/// A second Ctrl-C (`abort`) over a first (`signal`): the user cut the run short. Then the
/// run's own plan (`duration`, `count`): a run that completed its plan counts its failures in
/// `errors`, and says `stalled` or `error` only when nothing else stopped it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum StopReason {
    /// A second Ctrl-C: replies in flight abandoned.
    Abort,
    /// A Ctrl-C (or SIGTERM): no new attempts, replies in flight drained.
    Signal,
    /// The configured duration ran out.
    Duration,
    /// The configured count was sent.
    Count,
    /// Relay pacing with nothing in flight and nothing it may send: every packet that could
    /// release the next one was lost ("a network like that is worth a complaint").
    Stalled,
    /// The run could not go on (a flow failed to connect, a thread failed).
    Error,
}

impl StopReason {
    /// Every reason, in priority order.
    pub const ALL: [StopReason; 6] = [
        StopReason::Abort,
        StopReason::Signal,
        StopReason::Duration,
        StopReason::Count,
        StopReason::Stalled,
        StopReason::Error,
    ];

    /// The name in `stopped_by`.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Abort => "abort",
            StopReason::Signal => "signal",
            StopReason::Duration => "duration",
            StopReason::Count => "count",
            StopReason::Stalled => "stalled",
            StopReason::Error => "error",
        }
    }

    /// The reason a run of these parts reports: the first in priority order, `Error` when
    /// there is none (nothing ran to a stop).
    pub fn most_telling(reasons: impl IntoIterator<Item = StopReason>) -> StopReason {
        reasons.into_iter().min().unwrap_or(StopReason::Error)
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_json_names_and_priority_is_the_declared_order() {
        for r in StopReason::ALL {
            assert_eq!(
                serde_json::to_value(r).unwrap(),
                serde_json::json!(r.name())
            );
            let back: StopReason = serde_json::from_value(serde_json::json!(r.name())).unwrap();
            assert_eq!(back, r);
        }
        let mut sorted = StopReason::ALL;
        sorted.sort();
        assert_eq!(sorted, StopReason::ALL);
        use StopReason::*;
        assert_eq!(StopReason::most_telling([Count, Signal, Error]), Signal);
        assert_eq!(StopReason::most_telling([Error, Duration]), Duration);
        assert_eq!(StopReason::most_telling([Error, Stalled]), Stalled);
        assert_eq!(StopReason::most_telling([Signal, Abort]), Abort);
        assert_eq!(StopReason::most_telling([]), Error);
    }
}
