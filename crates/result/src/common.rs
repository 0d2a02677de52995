//! The blocks every kind of result shares, defined once: NPT's `latency` and `errors` blocks,
//! a value per direction, and the two rates every summary computes (`loss_pct`, `error_rate`).
//! Each kind's body module uses these; `crate::probe` re-exports them under the paths they had
//! when they lived there.

use std::ops::AddAssign;

use npt_stats::{ErrorCounts, JitterMean, Summary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A figure each way: application payload bytes, or bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Directions {
    pub up: f64,
    pub down: f64,
}

impl Directions {
    /// Whole byte counts each way.
    pub fn bytes(up: u64, down: u64) -> Directions {
        Directions {
            up: up as f64,
            down: down as f64,
        }
    }

    /// Bits per second of byte counts moved in `secs` (0 for no time).
    pub fn bits_per_s(up: u64, down: u64, secs: f64) -> Directions {
        let per_s = |b: u64| {
            if secs > 0.0 {
                b as f64 * 8.0 / secs
            } else {
                0.0
            }
        };
        Directions {
            up: per_s(up),
            down: per_s(down),
        }
    }
}

/// Parts that ran side by side: their bytes and their rates add.
impl AddAssign<&Directions> for Directions {
    fn add_assign(&mut self, rhs: &Directions) {
        self.up += rhs.up;
        self.down += rhs.down;
    }
}

/// NPT's latency block: `latency.<proto>.{avg,p50,p95,p99,max,min}_ms`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NptLatency {
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub min_ms: f64,
}

impl From<&Summary> for NptLatency {
    fn from(s: &Summary) -> Self {
        NptLatency {
            avg_ms: s.mean,
            p50_ms: s.p50,
            p95_ms: s.p95,
            p99_ms: s.p99,
            max_ms: s.max,
            min_ms: s.min,
        }
    }
}

/// NPT's errors block, plus the kinds. The same for every kind of result:
/// `error_rate = total_errors ÷ attempts`, where an attempt is a packet sent (`probe`) or a
/// request started (`run`, `http`: completed, failed or still in flight at the end). An error
/// that kept anything from being sent at all (a flow that could not connect) counts as its own
/// attempt, so the rate is never above 1.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Errors {
    pub total_errors: u64,
    /// `total_errors ÷ attempts`, 0..=1.
    #[schemars(range(min = 0, max = 1))]
    pub error_rate: f64,
    /// What `error_rate` divides by. Absent in files written before it was recorded; read
    /// those with [`Errors::attempts_or`].
    #[schemars(
        description = "What `error_rate` divides by. Absent in files written before it was recorded."
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u64>,
    /// Counts and examples by kind, in the one vocabulary of error kinds
    /// ([`crate::error::ErrorKind`], docs/result-json.md).
    #[schemars(extend("propertyNames" = {"enum": crate::error::ErrorKind::names()}))]
    pub by_kind: ErrorCounts,
}

impl Errors {
    /// The block for `by_kind` errors over `attempts` attempts.
    pub fn new(by_kind: ErrorCounts, attempts: u64) -> Errors {
        let total_errors = by_kind.total();
        Errors {
            total_errors,
            error_rate: error_rate(total_errors, attempts),
            attempts: Some(attempts),
            by_kind,
        }
    }

    /// The attempts recorded, or for an older file what its `error_rate` divided by then
    /// (`legacy`: packets sent for a probe, completed requests + errors for run and http).
    pub fn attempts_or(&self, legacy: u64) -> u64 {
        self.attempts.unwrap_or(legacy)
    }
}

/// Errors by kind and the attempts they happened in: what the `errors` block is made of, as
/// a value that adds (the kinds add, so do the attempts of parts that ran side by side).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorStats {
    pub by_kind: ErrorCounts,
    pub attempts: u64,
}

impl ErrorStats {
    /// What a saved block holds; `legacy_attempts` for a file written before `attempts` was
    /// (see [`Errors::attempts_or`]).
    pub fn from_block(e: &Errors, legacy_attempts: u64) -> ErrorStats {
        ErrorStats {
            by_kind: e.by_kind.clone(),
            attempts: e.attempts_or(legacy_attempts),
        }
    }

    pub fn total(&self) -> u64 {
        self.by_kind.total()
    }

    /// The `errors` block.
    pub fn block(&self) -> Errors {
        Errors::new(self.by_kind.clone(), self.attempts)
    }
}

impl AddAssign<&ErrorStats> for ErrorStats {
    fn add_assign(&mut self, rhs: &ErrorStats) {
        self.by_kind += &rhs.by_kind;
        self.attempts += rhs.attempts;
    }
}

/// A saved jitter as the stats crate's mergeable value. Files written before
/// `jitter_samples` existed are weighted by `legacy_weight` (their replies), as merges of them
/// always were.
pub fn jitter_mean(jitter_ms: f64, samples: Option<u64>, legacy_weight: u64) -> JitterMean {
    JitterMean::from_value(jitter_ms * 1e6, samples.unwrap_or(legacy_weight))
}

/// `errors ÷ attempts`, the one definition of `error_rate`; an attempt count below the errors
/// (errors that kept anything from being sent) is raised to them, so the rate stays in 0..=1.
pub fn error_rate(errors: u64, attempts: u64) -> f64 {
    let attempts = attempts.max(errors);
    if attempts == 0 {
        0.0
    } else {
        errors as f64 / attempts as f64
    }
}

/// `lost ÷ sent` in %, the one definition of every `loss_pct` (0 when nothing was sent).
pub fn loss_pct(lost: u64, sent: u64) -> f64 {
    if sent == 0 {
        0.0
    } else {
        lost as f64 * 100.0 / sent as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_rate_is_errors_over_attempts_and_never_above_one() {
        assert_eq!(error_rate(0, 0), 0.0);
        assert_eq!(error_rate(1, 4), 0.25);
        // A flow that could not connect sent nothing: its error is its own attempt.
        assert_eq!(error_rate(2, 0), 1.0);
        assert_eq!(error_rate(3, 2), 1.0);
        let mut kinds = ErrorCounts::default();
        kinds.record("timeout", || "t".into());
        kinds.record("refused", || "r".into());
        let e = Errors::new(kinds, 8);
        assert_eq!(
            (e.total_errors, e.attempts, e.error_rate),
            (2, Some(8), 0.25)
        );
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["attempts"], 8);
        // A file written before `attempts` existed still reads, with the old denominator.
        let old: Errors = serde_json::from_value(serde_json::json!({
            "total_errors": 1, "error_rate": 0.5, "by_kind": {}}))
        .unwrap();
        assert_eq!(old.attempts_or(2), 2);
    }

    #[test]
    fn error_stats_add_kinds_and_attempts_old_blocks_by_their_denominator() {
        let mut kinds = ErrorCounts::default();
        kinds.record("reset", || "r".into());
        let mut a = ErrorStats::from_block(&Errors::new(kinds.clone(), 4), 99);
        let old = Errors {
            attempts: None,
            ..Errors::new(kinds, 0)
        };
        a += &ErrorStats::from_block(&old, 6);
        let e = a.block();
        assert_eq!(
            (e.total_errors, e.attempts, e.error_rate),
            (2, Some(10), 0.2)
        );
    }

    #[test]
    fn loss_and_directions() {
        assert_eq!(loss_pct(0, 0), 0.0);
        assert_eq!(loss_pct(1, 4), 25.0);
        let mut d = Directions::bytes(1, 2);
        d += &Directions::bits_per_s(1, 2, 8.0);
        assert_eq!(d, Directions { up: 2.0, down: 4.0 });
        assert_eq!(Directions::bits_per_s(5, 5, 0.0), Directions::default());
    }
}
