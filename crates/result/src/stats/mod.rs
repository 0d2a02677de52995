//! Every workload's measurements as one value that adds, and the one function that turns it
//! into the result body (ripgrep's `printer/src/stats.rs`, kept per kind).
//!
//! A stats value holds what a run measured in a form that adds: counters, HDR histograms by
//! their names in the result, errors by kind, the interval records, and the few figures that
//! only a running engine can make (rates over its own clock, the tester's health), which add
//! as parts that ran side by side add. [`Stats::summarize`] builds the body from it and from
//! the run's description ([`Stats::Meta`], the configuration the parts share). The engine
//! calls it once at the end; `npt merge` recovers each part's value from its document
//! ([`Stats::from_body`]), adds them and calls it too, so a merge is the document of the
//! whole run by construction, and nothing is computed in two places.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use npt_stats::{Histogram, StatsError, Summary};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::Histograms;

pub mod bulk;
pub mod directions;
pub mod http;
pub mod ping;
pub mod probe;
pub mod run;
pub mod setup;
pub mod trace;

pub use bulk::{BulkMeta, BulkStats};
pub use http::{HttpMeta, HttpStats};
pub use ping::{PingMeta, PingStats};
pub use probe::{ProbeMeta, ProbeStats};
pub use run::{RunMeta, RunStats};
pub use setup::{SetupMeta, SetupStats};

/// A workload's measurements as a value that adds, and its body.
pub trait Stats: Default + for<'a> AddAssign<&'a Self> + Serialize + DeserializeOwned {
    /// The result body ([`crate::probe::ProbeBody`] …).
    type Body;
    /// What the parts of one run share: its configuration as the body states it.
    type Meta;

    /// The value a saved body was summarized from (as far as the body keeps it: see each
    /// kind's notes), and its description.
    fn from_body(body: &Self::Body) -> Result<(Self, Self::Meta), BodyError>;

    /// The body of these measurements.
    fn summarize(&self, meta: &Self::Meta) -> Self::Body;

    /// Adds the measurements of a later run of the same workload on the same path, where `+=`
    /// adds parts that ran side by side: `npt monitor`'s rounds, one after another, and its
    /// rollups of them. Counters, histograms and errors add alike; a length of time adds
    /// instead of the longest standing, and a rate becomes the rate over the summed time (each
    /// part's weighted by its own time), so a day of rounds reads as one run of that day's
    /// send time. The default is `+=`: a kind whose value holds no rate or length of time.
    fn then(&mut self, later: &Self) {
        *self += later;
    }
}

/// The mean of two rates over their times `a` and `b` (seconds): each weighted by its time,
/// their plain mean when neither has any.
pub fn over_time(x: f64, a: f64, y: f64, b: f64) -> f64 {
    if a + b > 0.0 {
        (x * a + y * b) / (a + b)
    } else {
        (x + y) / 2.0
    }
}

/// [`over_time`] each way.
pub fn directions_over_time(
    x: &crate::common::Directions,
    a: f64,
    y: &crate::common::Directions,
    b: f64,
) -> crate::common::Directions {
    crate::common::Directions {
        up: over_time(x.up, a, y.up, b),
        down: over_time(x.down, a, y.down, b),
    }
}

/// A histogram of a saved body that does not decode, by its name in the document.
#[derive(Debug, thiserror::Error)]
#[error("histogram {name}: {source}")]
pub struct BodyError {
    pub name: String,
    pub source: StatsError,
}

/// HDR histograms (ns) by their names in the result's `histograms` map.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HistMap(BTreeMap<String, Histogram>);

impl HistMap {
    /// A saved map, every histogram decoded.
    pub fn from_saved(saved: &Histograms) -> Result<HistMap, BodyError> {
        saved
            .iter()
            .map(|(k, s)| {
                Histogram::from_serialized(s)
                    .map(|h| (k.clone(), h))
                    .map_err(|source| BodyError {
                        name: k.clone(),
                        source,
                    })
            })
            .collect::<Result<_, _>>()
            .map(HistMap)
    }

    pub fn get(&self, name: &str) -> Option<&Histogram> {
        self.0.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// The histogram `name`, made empty if it is not there yet.
    pub fn entry(&mut self, name: &str) -> &mut Histogram {
        self.0.entry(name.to_string()).or_default()
    }

    /// Records one value into histogram `name`.
    pub fn record(&mut self, name: &str, ns: u64) {
        self.entry(name).record(ns);
    }

    /// Puts a whole histogram in (adds it to one of the same name).
    pub fn add(&mut self, name: &str, h: &Histogram) {
        *self.entry(name) += h;
    }

    /// The summary of `name` (an empty one when it is not there).
    pub fn summary(&self, name: &str) -> Summary {
        self.get(name).map(|h| h.summary()).unwrap_or_default()
    }

    /// The summary of `name` when it is there.
    pub fn summary_opt(&self, name: &str) -> Option<Summary> {
        self.get(name).map(|h| h.summary())
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The named histograms serialized, those that are there.
    pub fn saved<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Histograms {
        names
            .into_iter()
            .filter_map(|n| Some((n.to_string(), self.get(n)?.to_serialized())))
            .collect()
    }

    /// Every histogram serialized.
    pub fn saved_all(&self) -> Histograms {
        self.0
            .iter()
            .map(|(k, h)| (k.clone(), h.to_serialized()))
            .collect()
    }
}

impl AddAssign<&HistMap> for HistMap {
    fn add_assign(&mut self, rhs: &HistMap) {
        for (k, h) in &rhs.0 {
            self.add(k, h);
        }
    }
}

/// A mean over parts weighted by a count (requests, clients), for figures a document keeps
/// only as a mean: one part's value as it is, the weighted mean of the parts' values for
/// several.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WeightedMean {
    sum: f64,
    weight: f64,
    parts: u32,
    /// The first part's value, which stands alone while it is the only one.
    first: f64,
}

impl WeightedMean {
    /// One part's mean `value` over `weight`.
    pub fn of(value: f64, weight: f64) -> WeightedMean {
        WeightedMean {
            sum: value * weight,
            weight,
            parts: 1,
            first: value,
        }
    }

    /// The weighted mean (0 for several parts without weight).
    pub fn value(&self) -> f64 {
        if self.parts == 1 {
            self.first
        } else if self.weight > 0.0 {
            self.sum / self.weight
        } else {
            0.0
        }
    }
}

impl AddAssign<&WeightedMean> for WeightedMean {
    fn add_assign(&mut self, rhs: &WeightedMean) {
        if self.parts == 0 {
            self.first = rhs.first;
        }
        self.sum += rhs.sum;
        self.weight += rhs.weight;
        self.parts += rhs.parts;
    }
}

/// A distribution a running engine records as a histogram but a document keeps only as its
/// summary (http's per-host time to first byte, say). Histograms add exactly; once a saved
/// summary is in, the first part's summary stands for all (the document holds nothing to
/// merge it with), as merges always did.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub enum Dist {
    #[default]
    Empty,
    Recorded(Histogram),
    Saved(Summary),
}

impl Dist {
    pub fn summary(&self) -> Summary {
        match self {
            Dist::Empty => Summary::default(),
            Dist::Recorded(h) => h.summary(),
            Dist::Saved(s) => *s,
        }
    }

    /// Records one value (into a recorded histogram; a saved summary stays as it is).
    pub fn record(&mut self, ns: u64) {
        match self {
            Dist::Empty => {
                let mut h = Histogram::new();
                h.record(ns);
                *self = Dist::Recorded(h);
            }
            Dist::Recorded(h) => h.record(ns),
            Dist::Saved(_) => {}
        }
    }
}

impl AddAssign<&Dist> for Dist {
    fn add_assign(&mut self, rhs: &Dist) {
        match (&mut *self, rhs) {
            (_, Dist::Empty) => {}
            (Dist::Empty, r) => *self = r.clone(),
            (Dist::Recorded(a), Dist::Recorded(b)) => *a += b,
            (Dist::Recorded(_), Dist::Saved(_)) | (Dist::Saved(_), _) => {}
        }
    }
}

/// The sum of two optional figures: absent only when both are.
pub(crate) fn add_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// The smaller of two optional figures.
pub(crate) fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The larger of two optional figures.
pub(crate) fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// Status code counts added by code.
pub(crate) fn add_codes(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}

#[cfg(test)]
mod tests;
