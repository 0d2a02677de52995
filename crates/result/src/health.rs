//! The tester's own health, one type for every workload: was the client the bottleneck?
//! Every kind reports CPU time, CPU share and peak memory; a paced sender (`probe`, `http`)
//! adds its sends behind schedule and their lateness, `run` its timer wakeups. A field a kind
//! never writes stays out of its JSON, so each kind's `health` block reads as it always did.
//!
//! Health is per machine and does not merge exactly: parts that ran side by side add their
//! CPU seconds and late sends, keep the highest CPU share and peak memory, and the worst
//! part's lateness figures (highest p99), which a reader looking for a saturated agent wants.

use std::ops::AddAssign;

use npt_stats::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The tester's own health (each kind fills its own fields: see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Health {
    /// Paced senders: sends that left more than `behind_threshold_ms` after they were due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sends_behind_schedule: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_threshold_ms: Option<f64>,
    /// Paced senders: how late sends left compared with their due time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lateness_ms: Option<Summary>,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// CPU time / wall time × 100 (200 = both cores of a 2-core machine busy).
    pub cpu_pct: f64,
    pub max_rss_bytes: u64,
    /// `http`'s open-loop pacer: how late its timer released each send after its due time
    /// (before any wait for a free slot); `run`: how late think-time and pause wakeups fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_lateness_ms: Option<Summary>,
    /// `run`: wakeups more than `late_threshold_ms` late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_wakeups: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_threshold_ms: Option<f64>,
}

impl Health {
    /// The process's CPU time since `cpu0` (from [`crate::cpu_seconds`]) over `wall_s`
    /// seconds, and its peak memory now; the paced-sender and timer fields empty.
    pub fn measured(cpu0: (f64, f64), wall_s: f64) -> Health {
        let (user, sys) = crate::cpu_seconds();
        let (user, sys) = (user - cpu0.0, sys - cpu0.1);
        Health {
            cpu_user_s: user,
            cpu_sys_s: sys,
            cpu_pct: if wall_s > 0.0 {
                (user + sys) / wall_s * 100.0
            } else {
                0.0
            },
            max_rss_bytes: crate::max_rss_bytes(),
            ..Health::default()
        }
    }

    /// The paced sender's fields: `behind` sends later than `threshold_ms`, and their lateness.
    pub fn with_sends(mut self, behind: u64, threshold_ms: f64, lateness: Summary) -> Health {
        self.sends_behind_schedule = Some(behind);
        self.behind_threshold_ms = Some(threshold_ms);
        self.send_lateness_ms = Some(lateness);
        self
    }
}

fn add_opt<T: std::ops::Add<Output = T> + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// Another machine's health joined in (see the module's note: not exact).
impl AddAssign<&Health> for Health {
    fn add_assign(&mut self, rhs: &Health) {
        // The worst part's lateness figures; of equal ones the later part's.
        let p99 = |h: &Health| h.send_lateness_ms.map(|s| s.p99);
        let worse = match (p99(self), p99(rhs)) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(a), Some(b)) => b >= a,
        };
        if worse {
            self.send_lateness_ms = rhs.send_lateness_ms;
            self.behind_threshold_ms = rhs.behind_threshold_ms;
            self.timer_lateness_ms = rhs.timer_lateness_ms;
        }
        self.timer_lateness_ms = self.timer_lateness_ms.or(rhs.timer_lateness_ms);
        self.behind_threshold_ms = self.behind_threshold_ms.or(rhs.behind_threshold_ms);
        self.sends_behind_schedule = add_opt(self.sends_behind_schedule, rhs.sends_behind_schedule);
        self.cpu_user_s += rhs.cpu_user_s;
        self.cpu_sys_s += rhs.cpu_sys_s;
        self.cpu_pct = self.cpu_pct.max(rhs.cpu_pct);
        self.max_rss_bytes = self.max_rss_bytes.max(rhs.max_rss_bytes);
        self.late_wakeups = add_opt(self.late_wakeups, rhs.late_wakeups);
        self.late_threshold_ms = self.late_threshold_ms.or(rhs.late_threshold_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_writes_only_its_fields_and_old_blocks_read() {
        let probe = Health::default().with_sends(3, 1.0, Summary::default());
        let json = serde_json::to_value(probe).unwrap();
        assert_eq!(json["sends_behind_schedule"], 3);
        assert!(json.get("late_wakeups").is_none() && json.get("timer_lateness_ms").is_none());
        let run: Health = serde_json::from_value(serde_json::json!({
            "cpu_user_s": 1.0, "cpu_sys_s": 0.5, "cpu_pct": 20.0, "max_rss_bytes": 7,
            "timer_lateness_ms": Summary::default(), "late_wakeups": 2, "late_threshold_ms": 10.0}))
        .unwrap();
        assert_eq!(
            (run.late_wakeups, run.sends_behind_schedule),
            (Some(2), None)
        );
        assert!(serde_json::to_value(run)
            .unwrap()
            .get("send_lateness_ms")
            .is_none());
    }

    #[test]
    fn machines_add_cpu_and_keep_the_worst_lateness() {
        let late = |p99: f64| Summary {
            count: 1,
            p99,
            ..Summary::default()
        };
        let mut a = Health {
            cpu_user_s: 1.0,
            cpu_pct: 50.0,
            max_rss_bytes: 10,
            ..Health::default().with_sends(1, 1.0, late(5.0))
        };
        let b = Health {
            cpu_user_s: 2.0,
            cpu_pct: 20.0,
            max_rss_bytes: 30,
            ..Health::default().with_sends(2, 2.0, late(9.0))
        };
        a += &b;
        assert_eq!((a.cpu_user_s, a.cpu_pct, a.max_rss_bytes), (3.0, 50.0, 30));
        assert_eq!(a.sends_behind_schedule, Some(3));
        assert_eq!(
            (a.send_lateness_ms.map(|s| s.p99), a.behind_threshold_ms),
            (Some(9.0), Some(2.0))
        );
        let mut none = Health::default();
        none += &a;
        assert_eq!(none, a, "the default is the identity");
    }
}
