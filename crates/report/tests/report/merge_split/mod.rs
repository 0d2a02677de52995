//! Why this exists: `npt merge` must write the document one agent doing the whole load would
//! have written. For every kind, a recorded set of random samples (seeded, bounded) is split at
//! random into k parts (k random, 1..=8); each part's stats value is summarized into its
//! document as the engine does; `npt merge` of those documents must equal the summary of the
//! whole, compared as full JSON.
//!
//! What a part measures on its own (rates over its clock, its length, its health, gauges) is
//! drawn per part and is, by definition, what the whole adds up from its parts (so it is added
//! first, to the part and to the whole); everything recorded sample by sample then goes into
//! the part and into the whole directly, never through `+=`, so a wrong `+=` of a measured
//! field shows up as a merge that differs from the whole. Floats are compared exactly except
//! where a document keeps a mean that a merge has to weight back into a sum (see [`Rule`]),
//! and histograms by their contents (their encoded bytes depend on how the arrays grew).

#![cfg(test)]
// Sample values are small and drawn in range: their conversions cannot truncate.
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

mod bulk;
mod http;
mod probe;
mod run;

use std::path::PathBuf;
use std::time::SystemTime;

use npt_report::merge::{merge, Part, SegmentLabel};
use npt_result::stats::Stats;
use npt_result::{Document, StopReason};
use npt_stats::{Histogram, SerializedHistogram};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::Value;

/// Seeds tried per kind: each a different sample set, split and k.
const SEEDS: u64 = 16;
/// Most samples in one set.
const MAX_SAMPLES: usize = 400;

/// How one field of the merge is compared with the whole's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    Exact,
    /// A mean a document keeps as a mean (jitter, proxy phases): the merge weights it back
    /// into a sum (`mean × count`), which is exact only up to rounding.
    Approx,
    /// No histogram of it is in the document, so the merge keeps the first part's (http's
    /// per-host time to first byte and uncorrected latency): compared with part 0's.
    FirstPart,
}

/// A recorded run: each part's stats value and the whole's.
pub struct Split<S> {
    pub parts: Vec<S>,
    pub whole: S,
}

impl<S: Stats + Clone> Split<S> {
    pub fn new(k: usize) -> Split<S> {
        Split {
            parts: vec![S::default(); k],
            whole: S::default(),
        }
    }

    /// Adds what part `p` measured on its own, to it and to the whole (before any sample).
    pub fn agent(&mut self, p: usize, a: &S) {
        self.parts[p] += a;
        self.whole += a;
    }

    /// Records a sample into part `p` and into the whole.
    pub fn record(&mut self, p: usize, f: impl Fn(&mut S)) {
        f(&mut self.parts[p]);
        f(&mut self.whole);
    }
}

pub fn rng(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(0x6e70_7400 ^ seed)
}

/// How many parts and samples a seed draws.
pub fn shape(r: &mut SmallRng) -> (usize, usize) {
    (r.gen_range(1..=8), r.gen_range(0..=MAX_SAMPLES))
}

/// A latency of 5 µs .. ~200 ms, skewed low.
pub fn ns(r: &mut SmallRng) -> u64 {
    let x: f64 = r.gen();
    5_000 + (x * x * x * 2e8) as u64
}

/// A histogram of a few random latencies (a part's own lateness figures).
pub fn some_hist(r: &mut SmallRng) -> Histogram {
    let mut h = Histogram::new();
    for _ in 0..r.gen_range(0..20) {
        h.record(ns(r));
    }
    h
}

/// A part's health as a machine reports it.
pub fn health(r: &mut SmallRng) -> npt_result::Health {
    npt_result::Health {
        cpu_user_s: r.gen_range(0.0..5.0),
        cpu_sys_s: r.gen_range(0.0..2.0),
        cpu_pct: r.gen_range(0.0..200.0),
        max_rss_bytes: r.gen_range(1 << 20..1 << 30),
        ..npt_result::Health::default()
    }
}

/// The part's document as its engine writes it.
fn doc<B: Serialize>(kind: &str, index: usize, count: usize, body: B) -> Value {
    let config = serde_json::json!({"segment": {
        "index": index, "count": count, "run_id": "split", "config_hash": "h"}});
    let t = SystemTime::UNIX_EPOCH;
    let d = Document::new(kind, t, t, StopReason::Duration, config, body);
    serde_json::to_value(d).unwrap()
}

/// Merges the parts' documents and compares the merge with the whole's summary.
pub fn check<S>(kind: &str, seed: u64, split: &Split<S>, meta: &S::Meta, rule: fn(&[&str]) -> Rule)
where
    S: Stats,
    S::Body: Serialize,
{
    let k = split.parts.len();
    let docs: Vec<Value> = (0..k)
        .map(|i| doc(kind, i, k, split.parts[i].summarize(meta)))
        .collect();
    let parts: Vec<Part> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| Part {
            path: PathBuf::from(format!("{kind}-{i}.json")),
            kind: kind.to_string(),
            segment: SegmentLabel {
                index: i as u32,
                count: k as u32,
                run_id: "split".into(),
                config_hash: "h".into(),
                start_at: None,
            },
            json: d.clone(),
        })
        .collect();
    let (merged, cov) = merge(&parts).unwrap();
    assert!(cov.missing.is_empty());
    let whole = serde_json::to_value(split.whole.summarize(meta)).unwrap();
    let cx = Cx {
        what: format!("{kind} seed {seed} k {k}"),
        rule,
        first: &docs[0],
    };
    for (key, want) in whole.as_object().unwrap() {
        cx.compare(&mut vec![key.clone()], &merged[key], want);
    }
}

struct Cx<'a> {
    what: String,
    rule: fn(&[&str]) -> Rule,
    first: &'a Value,
}

impl Cx<'_> {
    fn compare(&self, path: &mut Vec<String>, got: &Value, want: &Value) {
        let at = || format!("{}: /{}", self.what, path.join("/"));
        let segs: Vec<&str> = path.iter().map(String::as_str).collect();
        match (self.rule)(&segs) {
            Rule::FirstPart => {
                let first = self.first.pointer(&format!("/{}", path.join("/")));
                assert_eq!(Some(got), first, "{} (the first part's)", at());
                return;
            }
            Rule::Approx => {
                if let (Some(g), Some(w)) = (got.as_f64(), want.as_f64()) {
                    assert!(
                        (g - w).abs() <= w.abs() * 1e-9 + 1e-12,
                        "{}: {g} vs {w}",
                        at()
                    );
                    return;
                }
            }
            Rule::Exact => {}
        }
        match (got, want) {
            (Value::Object(g), Value::Object(w)) if w.contains_key("encoding") => {
                let h = |v: &Value| {
                    let s: SerializedHistogram = serde_json::from_value(v.clone()).unwrap();
                    Histogram::from_serialized(&s).unwrap()
                };
                let (g, w) = (h(&Value::Object(g.clone())), h(want));
                assert_eq!(
                    (g.count(), g.clamped()),
                    (w.count(), w.clamped()),
                    "{}",
                    at()
                );
                assert_eq!(g.summary(), w.summary(), "{}", at());
                for i in 0..=40 {
                    let q = f64::from(i) / 40.0;
                    assert_eq!(g.quantile_ns(q), w.quantile_ns(q), "{} q {q}", at());
                }
            }
            (Value::Object(g), Value::Object(w)) => {
                let (gk, wk): (Vec<_>, Vec<_>) = (g.keys().collect(), w.keys().collect());
                assert_eq!(gk, wk, "{}: keys", at());
                for (key, wv) in w {
                    path.push(key.clone());
                    self.compare(path, &g[key], wv);
                    path.pop();
                }
            }
            (Value::Array(g), Value::Array(w)) => {
                assert_eq!(g.len(), w.len(), "{}: length", at());
                for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                    path.push(i.to_string());
                    self.compare(path, gv, wv);
                    path.pop();
                }
            }
            _ => assert_eq!(got, want, "{}", at()),
        }
    }
}

/// True when `path` starts with `pattern` (`*` matches any one segment).
pub fn under(path: &[&str], pattern: &[&str]) -> bool {
    path.len() >= pattern.len() && pattern.iter().zip(path).all(|(p, s)| *p == "*" || p == s)
}

#[test]
fn probe_parts_merge_into_the_whole() {
    let _turn = npt_testkit::turn::turn(module_path!());
    for seed in 0..SEEDS {
        let (split, meta) = probe::recorded(seed);
        check("probe", seed, &split, &meta, probe::rule);
    }
}

#[test]
fn run_parts_merge_into_the_whole() {
    let _turn = npt_testkit::turn::turn(module_path!());
    for seed in 0..SEEDS {
        let (split, meta) = run::recorded(seed);
        check("run", seed, &split, &meta, run::rule);
    }
}

#[test]
fn http_parts_merge_into_the_whole() {
    let _turn = npt_testkit::turn::turn(module_path!());
    for seed in 0..SEEDS {
        let (split, meta) = http::recorded(seed);
        check("http", seed, &split, &meta, http::rule);
    }
}

#[test]
fn bulk_parts_merge_into_the_whole() {
    let _turn = npt_testkit::turn::turn(module_path!());
    for seed in 0..SEEDS {
        let (split, meta) = bulk::recorded(seed);
        check("bulk", seed, &split, &meta, bulk::rule);
    }
}
