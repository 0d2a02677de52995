//! Jitter as RFC 3550 defines it (one estimator per flow, fed in arrival order), and the mean
//! of many flows' jitter as a value that adds up, so parts of a run merge to the same figure
//! in any grouping.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// RFC 3550 interarrival jitter estimator, fed with one transit (or round-trip) time per
/// packet in arrival order: `J += (|D| - J) / 16` where `D` is the change in transit time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Jitter {
    last: Option<u64>,
    j: f64,
    samples: u64,
}

impl Jitter {
    /// Feeds one transit time; returns |D|, the change from the previous one (the IPDV), if any.
    #[inline]
    pub fn record(&mut self, transit_ns: u64) -> Option<u64> {
        let d = self.last.map(|l| transit_ns.abs_diff(l));
        if let Some(d) = d {
            self.j += (d as f64 - self.j) / 16.0;
            self.samples += 1;
        }
        self.last = Some(transit_ns);
        d
    }

    /// The current estimate in ns.
    pub fn value_ns(&self) -> f64 {
        self.j
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Combines estimators of independent flows: the sample-weighted mean of their estimates
    /// (see [`JitterMean`]), in ns.
    pub fn merged(parts: &[Jitter]) -> f64 {
        let mut m = JitterMean::default();
        for p in parts {
            m += p;
        }
        m.value_ns()
    }
}

/// The RFC 3550 jitter of many flows: the mean of their estimates, each weighted by its
/// samples. A per-flow estimate is a smoothed value and cannot itself be merged, but this
/// combination can, exactly: adding parts (clients, sessions, agents' result files) in any
/// grouping gives the value of one collector that saw every flow. A result file keeps the
/// value and the samples (`jitter_ms`, `jitter_samples`), which is all a merge needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JitterMean {
    weighted_ns: f64,
    samples: u64,
}

impl JitterMean {
    /// One flow's estimate.
    pub fn of(j: &Jitter) -> JitterMean {
        JitterMean::from_value(j.value_ns(), j.samples())
    }

    /// A value of `samples` samples, as read back from a result (`jitter_ms × 1e6`).
    pub fn from_value(value_ns: f64, samples: u64) -> JitterMean {
        JitterMean {
            weighted_ns: value_ns * samples as f64,
            samples,
        }
    }

    /// The sample-weighted mean in ns (0 without samples).
    pub fn value_ns(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.weighted_ns / self.samples as f64
        }
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }
}

impl AddAssign<&JitterMean> for JitterMean {
    fn add_assign(&mut self, rhs: &JitterMean) {
        self.weighted_ns += rhs.weighted_ns;
        self.samples += rhs.samples;
    }
}

impl AddAssign<&Jitter> for JitterMean {
    fn add_assign(&mut self, rhs: &Jitter) {
        *self += &JitterMean::of(rhs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_follows_rfc3550() {
        let mut j = Jitter::default();
        assert_eq!(j.record(1000), None);
        assert_eq!(j.record(1160), Some(160));
        assert!((j.value_ns() - 10.0).abs() < 1e-9);
        assert_eq!(j.record(1160), Some(0));
        assert!((j.value_ns() - 9.375).abs() < 1e-9);
    }

    #[test]
    fn jitter_of_many_flows_merges_the_same_in_any_grouping() {
        let flows: Vec<Jitter> = (0..5u64)
            .map(|f| {
                let mut j = Jitter::default();
                for i in 0..(10 + f * 7) {
                    j.record(1_000 + (i * 7919 * (f + 1)) % 500);
                }
                j
            })
            .collect();
        let mut all = JitterMean::default();
        for f in &flows {
            all += f;
        }
        let by_hand: f64 = flows
            .iter()
            .map(|f| f.value_ns() * f.samples() as f64)
            .sum::<f64>()
            / flows.iter().map(|f| f.samples() as f64).sum::<f64>();
        assert!((all.value_ns() - by_hand).abs() < 1e-9);
        assert_eq!(Jitter::merged(&flows), all.value_ns());
        // Two parts, each written out as (value, samples) and read back, then added.
        let part = |fs: &[Jitter]| {
            let mut m = JitterMean::default();
            for f in fs {
                m += f;
            }
            JitterMean::from_value(m.value_ns(), m.samples())
        };
        let mut merged = part(&flows[..2]);
        merged += &part(&flows[2..]);
        assert_eq!(merged.samples(), all.samples());
        assert!((merged.value_ns() - all.value_ns()).abs() <= all.value_ns() * 1e-12);
        assert_eq!(JitterMean::default().value_ns(), 0.0);
    }
}
