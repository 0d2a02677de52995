//! Errors counted by kind, with the first few messages of each kept as examples: a value that
//! adds up across tasks and result files without growing with the number of errors.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How many example messages are kept per error kind.
pub const EXAMPLES_PER_KIND: usize = 3;

/// Errors counted by kind, with the first few messages of each as examples.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ErrorCounts {
    kinds: BTreeMap<String, ErrorKind>,
}

/// The errors of one kind: how many, and the first few messages.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ErrorKind {
    #[schemars(range(min = 1))]
    pub count: u64,
    /// The first messages of this kind, a few at most ([`EXAMPLES_PER_KIND`]).
    #[schemars(length(max = EXAMPLES_PER_KIND))]
    pub examples: Vec<String>,
}

impl ErrorCounts {
    /// Counts one error of `kind`; `example` is only called while examples are still wanted.
    pub fn record(&mut self, kind: &str, example: impl FnOnce() -> String) {
        if let Some(k) = self.kinds.get_mut(kind) {
            k.count += 1;
            if k.examples.len() < EXAMPLES_PER_KIND {
                k.examples.push(example());
            }
            return;
        }
        self.kinds.insert(
            kind.to_string(),
            ErrorKind {
                count: 1,
                examples: vec![example()],
            },
        );
    }

    pub fn total(&self) -> u64 {
        self.kinds.values().map(|k| k.count).sum()
    }

    pub fn get(&self, kind: &str) -> u64 {
        self.kinds.get(kind).map_or(0, |k| k.count)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &ErrorKind)> {
        self.kinds.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }
}

impl ErrorCounts {
    /// The same errors with each kind renamed by `name` (kinds that map to one name add up,
    /// their examples joined up to the limit): reads files written with older kind names.
    pub fn renamed(&self, name: impl Fn(&str) -> &str) -> ErrorCounts {
        let mut out = ErrorCounts::default();
        for (kind, v) in &self.kinds {
            let mut one = ErrorCounts::default();
            one.kinds.insert(name(kind).to_string(), v.clone());
            out += &one;
        }
        out
    }
}

impl AddAssign<&ErrorCounts> for ErrorCounts {
    fn add_assign(&mut self, rhs: &ErrorCounts) {
        for (kind, v) in &rhs.kinds {
            let e = self.kinds.entry(kind.clone()).or_default();
            e.count += v.count;
            for ex in &v.examples {
                if e.examples.len() < EXAMPLES_PER_KIND {
                    e.examples.push(ex.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_count_and_keep_few_examples() {
        let mut e = ErrorCounts::default();
        for i in 0..10 {
            e.record("timeout", || format!("t{i}"));
        }
        let mut f = ErrorCounts::default();
        f.record("refused", || "r".into());
        f.record("timeout", || "x".into());
        e += &f;
        assert_eq!(e.total(), 12);
        assert_eq!(e.get("timeout"), 11);
        let (_, t) = e.iter().find(|(k, _)| *k == "timeout").unwrap();
        assert_eq!(t.examples, vec!["t0", "t1", "t2"]);
        let r = e.renamed(|k| if k == "refused" { "timeout" } else { k });
        assert_eq!((r.total(), r.get("timeout"), r.get("refused")), (12, 12, 0));
    }
}
