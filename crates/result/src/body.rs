//! What every kind's result body answers, in one trait: its name, the NPT `latency` and
//! `errors` blocks, the tester's health, the interval series, the histograms by dotted name, the
//! headline latency (the one a user feels) and what was measured. Each kind implements it once,
//! next to its body type; the registry ([`crate::kinds`]) builds everything that reads a
//! result of any kind from it — the one result type [`crate::any::Workload`], [`crate::any::KINDS`],
//! the schemas and `npt merge`'s dispatch — so no reader matches on the kinds itself.
//!
//! The defaults are what a kind without that part says: a ping records no tester health and
//! no interval series.

use std::collections::BTreeMap;

use npt_stats::{Histogram, SerializedHistogram, Summary};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::common::{Errors, NptLatency};
use crate::health::Health;
use crate::interval::Interval;
use crate::Histograms;

/// A result body: the part of a result document that differs by kind.
pub trait Body: Clone + std::fmt::Debug + Serialize + DeserializeOwned + JsonSchema {
    /// The document's `kind` (`probe`, `run` …), also the subcommand that writes it and the
    /// schema file's name (`schema/<kind>.schema.json`).
    const KIND: &'static str;

    /// NPT's `latency` block.
    fn latency(&self) -> &BTreeMap<String, NptLatency>;

    /// NPT's `errors` block.
    fn errors(&self) -> &Errors;

    /// The same, to rename the error kinds of older files as they are read.
    fn errors_mut(&mut self) -> &mut Errors;

    /// The tester's health (zeros for a kind that records none).
    fn health(&self) -> Health {
        Health::default()
    }

    /// The interval series (none for a kind without one).
    fn intervals(&self) -> &[Interval] {
        &[]
    }

    /// Every serialized histogram by its dotted name.
    fn histograms(&self) -> BTreeMap<&str, &SerializedHistogram>;

    /// The histograms the headline latency is made of, by name (added exactly).
    fn headline_parts(&self) -> Vec<(&str, &SerializedHistogram)>;

    /// The headline latency as the result states it (the figures `npt compare` shows). By
    /// default the [`Body::headline_parts`] added; a histogram that does not decode is an
    /// error naming it, since the figures would silently lose its samples.
    fn headline_summary(&self) -> Result<Summary, String> {
        let mut h = Histogram::new();
        for (k, v) in self.headline_parts() {
            h += &Histogram::from_serialized(v).map_err(|e| format!("{k}: {e}"))?;
        }
        Ok(h.summary())
    }

    /// What was measured: a URL or `PROTO://HOST:PORT`.
    fn target(&self) -> String;
}

/// A body's `histograms` map by name (what [`Body::histograms`] is for most kinds).
pub fn named(map: &Histograms) -> BTreeMap<&str, &SerializedHistogram> {
    map.iter().map(|(k, h)| (k.as_str(), h)).collect()
}

/// The histogram `name` of a body's map, as one headline part (none when it is not there).
pub fn part<'a>(map: &'a Histograms, name: &str) -> Vec<(&'a str, &'a SerializedHistogram)> {
    map.get_key_value(name)
        .map(|(k, h)| (k.as_str(), h))
        .into_iter()
        .collect()
}

/// The accessors of the blocks a body keeps under their usual field names — `latency`,
/// `errors`, and those named: `histograms` (the map), `health`, `intervals` — written once for
/// every kind's [`Body`] impl.
macro_rules! blocks {
    ($($block:ident),*) => {
        fn latency(&self) -> &std::collections::BTreeMap<String, $crate::common::NptLatency> {
            &self.latency
        }
        fn errors(&self) -> &$crate::common::Errors {
            &self.errors
        }
        fn errors_mut(&mut self) -> &mut $crate::common::Errors {
            &mut self.errors
        }
        $($crate::body::blocks!(@$block);)*
    };
    (@histograms) => {
        fn histograms(
            &self,
        ) -> std::collections::BTreeMap<&str, &npt_stats::SerializedHistogram> {
            $crate::body::named(&self.histograms)
        }
    };
    (@health) => {
        fn health(&self) -> $crate::health::Health {
            self.health
        }
    };
    (@intervals) => {
        fn intervals(&self) -> &[$crate::interval::Interval] {
            &self.intervals
        }
    };
}

pub(crate) use blocks;
