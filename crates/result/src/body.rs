//! What every kind's result body is and answers, in two traits: [`Body`], what a kind *is* —
//! its name ([`Body::KIND`]) and a document body that is written, read and described by a
//! schema — and [`View`], what every kind *answers* — the NPT `latency` and `errors` blocks,
//! the tester's health, the interval series, the histograms by dotted name, the headline
//! latency (the one a user feels) and what was measured. Each kind implements both once, next
//! to its body type; the registry ([`crate::kinds`]) builds everything that reads a result of
//! any kind from them — the one result type [`crate::any::AnyBody`], [`crate::Kind`],
//! [`crate::any::KINDS`], the schemas and `npt merge`'s dispatch.
//!
//! Why two traits, not one: a `Body` is `Clone`, `Deserialize` and has a const name, so it
//! cannot be a trait object; `View` asks nothing of the type and is one. A reader of any kind
//! takes the body as `&dyn View` ([`crate::any::AnyBody::view`]) and calls its answers there,
//! each written once, in the kind's `impl View` — no enum or wrapper repeats them.
//!
//! A reader that needs what only some kinds record takes their bodies. `npt report`'s text,
//! page and CSV ask the kind's own `Render` (one impl per kind, dispatched from the registry:
//! no match on kinds); `compare`'s table, whose columns are figures a few kinds have (a
//! probe's loss and jitter, a TCP probe's and a run's kernel counters, http's and run's
//! request rate, a bulk's goodput, a trace's measured sum), matches on the kinds that have
//! each, and a kind without such a figure needs no line there.
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
pub trait Body: View + Clone + std::fmt::Debug + Serialize + DeserializeOwned + JsonSchema {
    /// The document's `kind` (`probe`, `run` …), also the subcommand that writes it, the
    /// schema file's name (`schema/<kind>.schema.json`) and the name of its [`crate::Kind`].
    const KIND: &'static str;
}

/// What a result body answers, whatever its kind (a trait object: `&dyn View`).
pub trait View {
    /// NPT's `latency` block.
    fn latency(&self) -> &BTreeMap<String, NptLatency>;

    /// NPT's `errors` block.
    fn errors(&self) -> &Errors;

    /// The same, to rename the error kinds of older files as they are read.
    fn errors_mut(&mut self) -> &mut Errors;

    /// The tester's health (zeros for a kind that records none: a ping).
    fn health(&self) -> Health {
        Health::default()
    }

    /// The interval series (none for a kind without one: a ping).
    fn intervals(&self) -> &[Interval] {
        &[]
    }

    /// Every serialized histogram by its dotted name: a probe's `rtt`, `rtt_corrected`, `ipdv`,
    /// `connect`, `first_packet`; run's `proto.tcp.latency` …; http's `latency`,
    /// `latency_uncorrected`, `ttfb`, `connect`, `tls`, `proxy` and `hosts.<host>`; a ping's
    /// one histogram as `rtt`.
    fn histograms(&self) -> BTreeMap<&str, &SerializedHistogram>;

    /// The histograms the headline latency is made of, by name (added exactly): a probe's
    /// RTT, http's request latency, run's request latency of every protocol, a ping's RTT, a
    /// bulk's RTT under its load, a trace's RTT through the chain.
    fn headline_parts(&self) -> Vec<(&str, &SerializedHistogram)>;

    /// The latency the user feels as one histogram: its [`View::headline_parts`] added
    /// exactly. Undecodable data counts as empty.
    fn headline(&self) -> Histogram {
        let mut h = Histogram::new();
        for (_, x) in self.headline_parts() {
            if let Ok(d) = Histogram::from_serialized(x) {
                h += &d;
            }
        }
        h
    }

    /// The headline latency as the result states it (the figures `npt compare` shows). By
    /// default the [`View::headline_parts`] added; a histogram that does not decode is an
    /// error naming it, since the figures would silently lose its samples.
    fn headline_summary(&self) -> Result<Summary, String> {
        let mut h = Histogram::new();
        for (k, v) in self.headline_parts() {
            h += &Histogram::from_serialized(v).map_err(|e| format!("{k}: {e}"))?;
        }
        Ok(h.summary())
    }

    /// What was measured: a URL or `PROTO://HOST:PORT` (run's first target).
    fn target(&self) -> String;
}

/// A body's `histograms` map by name (what [`View::histograms`] is for most kinds).
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
/// every kind's [`View`] impl.
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
