//! One round as the monitor keeps it: when it was due and when it ran (wall-clock labels, and
//! its lateness measured on the monotonic clock), how it ended ([`Status`]), its figures and
//! its stats value. Every outcome is a record, so the history says why a point is missing: a
//! round that could not run, hung past its bound, was skipped because its predecessor still
//! ran, or was held back by its byte budget is stored as such, never left out.

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::kinds::{Figures, Kind};

/// How a round ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It measured and something answered.
    Ok,
    /// It measured and nothing answered (every attempt lost or failed).
    NoAnswer,
    /// It measured and nothing answered but the server, which said it refused attempts (its
    /// budget, its `--token`): the path is up, the server will not serve this monitor.
    Refused,
    /// It could not run (a name that does not resolve, a socket refused …): `detail` says.
    Error,
    /// It passed its hard bound and was abandoned.
    Timeout,
    /// It was due while the target's previous round still ran.
    Skipped,
    /// Its byte budget for the day was spent.
    Budget,
}

impl Status {
    pub const ALL: [Status; 7] = [
        Status::Ok,
        Status::NoAnswer,
        Status::Refused,
        Status::Error,
        Status::Timeout,
        Status::Skipped,
        Status::Budget,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NoAnswer => "no_answer",
            Status::Refused => "refused",
            Status::Error => "error",
            Status::Timeout => "timeout",
            Status::Skipped => "skipped",
            Status::Budget => "budget",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|x| x.name() == s)
    }

    /// The target did not answer this round (what an `unreachable` alert counts).
    pub fn unreachable(self) -> bool {
        matches!(self, Status::NoAnswer | Status::Error | Status::Timeout)
    }

    /// The round measured something (its figures and stats are there).
    pub fn measured(self) -> bool {
        matches!(self, Status::Ok | Status::NoAnswer | Status::Refused)
    }
}

/// A finished (or skipped) round.
#[derive(Clone, Debug)]
pub struct Round {
    pub target: String,
    pub kind: Kind,
    /// Wall-clock ms since the Unix epoch: when it was due, started and ended (labels only;
    /// `lateness_ns` is measured on the monotonic clock).
    pub due_ms: i64,
    pub start_ms: i64,
    pub end_ms: i64,
    pub lateness_ns: u64,
    pub status: Status,
    /// Why it failed, or what its errors were.
    pub detail: Option<String>,
    pub figures: Figures,
    /// The stats value of a round that measured, encoded as the store keeps it
    /// ([`crate::kinds::KindStats::encode`]): a few hundred bytes, where the decoded value
    /// holds whole histograms, so rounds waiting for the store cost little memory.
    pub stats: Option<Vec<u8>>,
    /// What its stats are summarized with, shared by the rounds that have the same.
    pub described: Option<Arc<Described>>,
}

/// A round's description as JSON: its `KindMeta`, and the workload's effective config (the
/// `config` of its result document).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    pub meta: String,
    pub config: String,
}

impl Round {
    /// A round that did not measure: skipped, held back, failed to run or hung.
    pub fn empty(
        target: &str,
        kind: Kind,
        due_ms: i64,
        status: Status,
        detail: Option<String>,
    ) -> Round {
        Round {
            target: target.to_string(),
            kind,
            due_ms,
            start_ms: due_ms,
            end_ms: due_ms,
            lateness_ns: 0,
            status,
            detail,
            figures: Figures::default(),
            stats: None,
            described: None,
        }
    }
}

/// The last ms an RFC 3339 time can say (9999-12-31T23:59:59.999Z).
const LAST_MS: i64 = 253_402_300_799_999;

/// Wall-clock `ms` since the Unix epoch as RFC 3339, clamped to the years it can write (a range
/// asked up to the far future still has a label).
pub fn rfc3339(ms: i64) -> String {
    let ms = u64::try_from(ms.clamp(0, LAST_MS)).unwrap_or(0);
    npt_result::rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
}

/// Wall-clock ms since the Unix epoch.
pub fn wall_ms(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_out_of_range_still_have_a_label() {
        assert_eq!(rfc3339(i64::MAX), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(-5), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn statuses_name_and_parse() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.name()), Some(s));
        }
        assert!(Status::Timeout.unreachable() && !Status::Skipped.unreachable());
        assert!(Status::NoAnswer.measured() && !Status::Error.measured());
    }
}
