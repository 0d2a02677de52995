//! What a monitor keeps of `npt lifetime` rounds: a lifetime is not a sum of samples, so its
//! value is the rounds' lifetimes as a histogram (each round's bracket middle, what a chart
//! draws and an alert's `p50_ms` reads: a NAT whose timeout dropped from 30 s to 10 s shows as
//! a step), the bracket all the rounds agree on (a survivor proves the path kept a flow that
//! long, an expiry that it did not keep one longer), and the counts of every round added.
//!
//! A round that read "longer than --max" counts as `--max` in the histogram (a floor: the
//! chart stays flat at it). When a later round's bracket does not meet the range's (the
//! path's timeout changed), the later one is kept and the change counted.

use npt_result::common::{Errors, NptLatency};
use npt_result::lifetime::{CutOff, LifetimeBody, LifetimeSummary};
use npt_stats::{ErrorCounts, Histogram};
use serde::{Deserialize, Serialize};

/// The rounds' lifetimes and brackets, and their counts added.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LifetimeSum {
    /// Each round's lifetime (its bracket's middle; `--max` when longer), ns.
    pub lifetimes: Histogram,
    /// The bracket the rounds agree on, s.
    pub alive_after_s: Option<f64>,
    pub gone_after_s: Option<f64>,
    /// Rounds added, and those that read longer than `--max`.
    pub rounds: u64,
    pub longer_than_max: u64,
    /// Rounds whose bracket did not meet the range's before them (the timeout changed).
    pub changed: u64,
    /// The searches' own rounds, flows and counts, added.
    pub search_rounds: u64,
    pub flows: u64,
    pub rebound_checked: u64,
    pub rebound_flows: u64,
    pub inconsistent: u64,
    pub refused: u64,
    /// `tcp://`: how the path ended the connections it did not keep, added.
    pub cut_off: Option<CutOff>,
    /// The flows' first round trips (request → ack), ns.
    pub acks: Histogram,
    pub errors: ErrorCounts,
}

/// What a lifetime body is summarized with: the round's target and search bounds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LifetimeMeta {
    pub target: String,
    pub address: String,
    pub max_s: f64,
    pub resolution_s: f64,
}

fn ns(s: f64) -> u64 {
    // NO-PANIC: a float-to-int `as` saturates; lifetimes are finite and at most 600 s.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let v = (s.max(0.0) * 1e9).round() as u64;
    v
}

fn count(n: u32) -> u64 {
    u64::from(n)
}

impl LifetimeSum {
    /// One round's value and description, from its document.
    pub fn of_body(b: &LifetimeBody) -> Result<(LifetimeSum, LifetimeMeta), String> {
        let s = &b.summary;
        let mut lifetimes = Histogram::new();
        let read = if s.longer_than_max {
            s.alive_after_s.or(Some(s.max_s))
        } else {
            s.lifetime_s
        };
        if let Some(l) = read {
            lifetimes.record(ns(l).max(1));
        }
        let acks = Histogram::from_serialized(&b.ack_histogram)
            .map_err(|e| format!("histogram ack: {e}"))?;
        let sum = LifetimeSum {
            lifetimes,
            alive_after_s: s.alive_after_s,
            gone_after_s: s.gone_after_s,
            rounds: 1,
            longer_than_max: u64::from(s.longer_than_max),
            changed: 0,
            search_rounds: count(s.rounds),
            flows: b.flows.len() as u64,
            rebound_checked: count(s.rebound_checked),
            rebound_flows: count(s.rebound_flows),
            inconsistent: count(s.inconsistent),
            refused: count(s.refused),
            cut_off: s.cut_off.clone(),
            acks,
            errors: b.errors.by_kind.clone(),
        };
        let meta = LifetimeMeta {
            target: b.target.clone(),
            address: b.address.clone(),
            max_s: s.max_s,
            resolution_s: s.resolution_s,
        };
        Ok((sum, meta))
    }

    /// Adds a later round (or rollup) after these.
    pub fn then(&mut self, later: &LifetimeSum) {
        let meets = |alive: Option<f64>, gone: Option<f64>| match (alive, gone) {
            (Some(a), Some(g)) => a < g,
            _ => true,
        };
        let alive = max(self.alive_after_s, later.alive_after_s);
        let gone = min(self.gone_after_s, later.gone_after_s);
        if self.rounds > 0 && !meets(alive, gone) {
            self.changed += 1 + later.changed;
            self.alive_after_s = later.alive_after_s;
            self.gone_after_s = later.gone_after_s;
        } else {
            self.changed += later.changed;
            self.alive_after_s = alive;
            self.gone_after_s = gone;
        }
        self.lifetimes += &later.lifetimes;
        self.rounds += later.rounds;
        self.longer_than_max += later.longer_than_max;
        self.search_rounds += later.search_rounds;
        self.flows += later.flows;
        self.rebound_checked += later.rebound_checked;
        self.rebound_flows += later.rebound_flows;
        self.inconsistent += later.inconsistent;
        self.refused += later.refused;
        if let Some(c) = &later.cut_off {
            let mine = self.cut_off.get_or_insert_with(CutOff::default);
            mine.fin += c.fin;
            mine.rst += c.rst;
            mine.dropped += c.dropped;
            mine.closed_after_s = min(mine.closed_after_s, c.closed_after_s);
            mine.how = match (mine.fin + mine.rst > 0, mine.dropped > 0) {
                (true, true) => Some("mixed".into()),
                (true, false) => Some("closed".into()),
                (false, true) => Some("dropped".into()),
                (false, false) => None,
            };
        }
        self.acks += &later.acks;
        self.errors += &later.errors;
    }

    /// The body one run of these rounds would have written: the agreed bracket, the counts
    /// added, no flows (a round's are in its own document).
    pub fn body(&self, m: &LifetimeMeta) -> LifetimeBody {
        let sat = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let longer = self.gone_after_s.is_none() && self.longer_than_max > 0;
        let summary = LifetimeSummary {
            lifetime_s: self
                .gone_after_s
                .map(|g| (self.alive_after_s.unwrap_or(0.0) + g) / 2.0),
            alive_after_s: self.alive_after_s,
            gone_after_s: self.gone_after_s,
            longer_than_max: longer,
            max_s: m.max_s,
            resolution_s: m.resolution_s,
            rounds: sat(self.search_rounds),
            rebound: (self.rebound_checked > 0).then_some(self.rebound_flows > 0),
            rebound_checked: sat(self.rebound_checked),
            rebound_flows: sat(self.rebound_flows),
            inconsistent: sat(self.inconsistent),
            refused: sat(self.refused),
            cut_off: self.cut_off.clone(),
        };
        let proto = if m.target.starts_with("tcp://") {
            "tcp"
        } else {
            "udp"
        };
        LifetimeBody {
            target: m.target.clone(),
            address: m.address.clone(),
            summary,
            flows: Vec::new(),
            latency: [(proto.to_string(), NptLatency::from(&self.acks.summary()))].into(),
            errors: Errors::new(self.errors.clone(), self.flows),
            ack_histogram: self.acks.to_serialized(),
        }
    }
}

fn max(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn min(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(alive: f64, gone: Option<f64>, longer: bool) -> LifetimeSum {
        let b = LifetimeBody {
            target: "udp://192.0.2.1:7777".into(),
            address: "192.0.2.1:7777".into(),
            summary: LifetimeSummary {
                lifetime_s: gone.map(|g| (alive + g) / 2.0),
                alive_after_s: Some(alive),
                gone_after_s: gone,
                longer_than_max: longer,
                max_s: 40.0,
                resolution_s: 1.0,
                rounds: 2,
                ..LifetimeSummary::default()
            },
            flows: Vec::new(),
            latency: Default::default(),
            errors: Errors::new(ErrorCounts::default(), 0),
            ack_histogram: Histogram::new().to_serialized(),
        };
        LifetimeSum::of_body(&b).unwrap().0
    }

    #[test]
    fn rounds_narrow_the_bracket_and_chart_each_lifetime() {
        let mut s = round(29.8, Some(30.6), false);
        s.then(&round(29.4, Some(30.2), false));
        assert_eq!((s.alive_after_s, s.gone_after_s), (Some(29.8), Some(30.2)));
        assert_eq!((s.rounds, s.changed, s.lifetimes.count()), (2, 0, 2));
        let m = LifetimeMeta {
            target: "udp://192.0.2.1:7777".into(),
            max_s: 40.0,
            ..LifetimeMeta::default()
        };
        let b = s.body(&m);
        assert_eq!(b.summary.lifetime_s, Some(30.0));
        assert_eq!(b.summary.rounds, 4);
        // Stored and read back, it adds the same.
        let back: LifetimeSum = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back.lifetimes.count(), 2);
    }

    #[test]
    fn a_changed_timeout_keeps_the_later_bracket_and_past_max_is_a_floor() {
        let mut s = round(29.8, Some(30.2), false);
        s.then(&round(9.8, Some(10.2), false));
        assert_eq!((s.alive_after_s, s.gone_after_s), (Some(9.8), Some(10.2)));
        assert_eq!(s.changed, 1);
        let mut long = round(40.0, None, true);
        long.then(&round(40.0, None, true));
        assert_eq!(long.longer_than_max, 2);
        let p50 = long.lifetimes.quantile_ns(0.5) as f64 / 1e9;
        assert!((p50 - 40.0).abs() < 0.1, "{p50}");
        assert!(long.body(&LifetimeMeta::default()).summary.longer_than_max);
    }
}
