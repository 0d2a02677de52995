//! Alert rules and their state, sans-IO: each finished round's figures go in
//! ([`Alerts::on_round`]), the changes come out (a rule starts or stops firing for a target),
//! and the driver stores and sends them. Hysteresis twice over: a rule fires only after
//! `rounds` rounds in a row break it and clears only after `clear_rounds` rounds in a row are
//! back past `clear` (a level that may differ from the threshold), so a path that hovers at the
//! threshold does not flap.
//!
//! ```toml
//! [[alert]]
//! name = "latency-step"
//! metric = "p50_ms"          # loss_pct | p50_ms | p90_ms | p99_ms | rpm | goodput_mbps | mtu_up_bytes | mtu_down_bytes | ce_pct | unreachable | flagged | bleached
//! above = 20                 # fires above this (or `below = …`, for rpm, goodput and mtu sizes)
//! baseline_rounds = 60       # optional: relative to the median of the target's last 60 normal rounds
//! rounds = 3                 # rounds in a row to fire [default: 3]
//! clear_rounds = 3           # rounds in a row to clear [default: rounds]
//! clear = 10                 # clears at or below this [default: the threshold]
//! targets = ["relay-*"]      # which targets (`*` matches anything) [default: all]
//! ```
//!
//! With `baseline_rounds`, the threshold is the baseline plus `above` (minus `below`), the
//! baseline being the median of the metric over the target's last N rounds that did not break
//! the rule; it does not move while the rule is breaking or firing, so a step up stays an alert
//! until it is undone. A round without the figure (no answer for a latency metric, a skipped
//! round) counts neither way. `unreachable` counts rounds with no answer at all (nothing
//! answered, the round could not run, or it hung); a round that could not run counts as 100 %
//! loss for `loss_pct`. `flagged` counts setup rounds whose verdict flagged a layer (one that
//! took more round trips than its protocol needs, a rejected 0-RTT, a refused resumption);
//! rounds of other kinds count neither way. `bleached` counts probe rounds whose marking
//! (`--dscp`, `--tos`, `--ecn`) did not arrive as sent one way or both — DSCP or ECN bleached
//! to 0, rewritten or mixed; `ce_pct` is the share of a marked probe round's packets that
//! arrived CE, in the direction with more. Rounds without a marking the far end told (none
//! sent, a plain echo) count neither way for either.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::key::{invalid, ConfigError};
use crate::kinds::Figures;
use crate::round::Status;
use crate::store::AlertRow;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    #[default]
    LossPct,
    P50Ms,
    P90Ms,
    P99Ms,
    Rpm,
    GoodputMbps,
    /// An mtu round's largest datagram that crossed up (down), bytes.
    MtuUpBytes,
    MtuDownBytes,
    /// A marked probe round's share of packets that arrived CE, the larger direction's (%).
    CePct,
    Unreachable,
    Flagged,
    /// A marked probe round whose marking did not arrive as sent, one way or both.
    Bleached,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::LossPct => "loss_pct",
            Metric::P50Ms => "p50_ms",
            Metric::P90Ms => "p90_ms",
            Metric::P99Ms => "p99_ms",
            Metric::Rpm => "rpm",
            Metric::GoodputMbps => "goodput_mbps",
            Metric::MtuUpBytes => "mtu_up_bytes",
            Metric::MtuDownBytes => "mtu_down_bytes",
            Metric::CePct => "ce_pct",
            Metric::Unreachable => "unreachable",
            Metric::Flagged => "flagged",
            Metric::Bleached => "bleached",
        }
    }

    /// The metric's value for one round, if the round has it.
    pub fn value(self, status: Status, f: &Figures) -> Option<f64> {
        let latency = |v: f64| (f.count > 0).then_some(v);
        match self {
            Metric::Unreachable => match status {
                Status::Skipped | Status::Budget => None,
                s => Some(if s.unreachable() { 1.0 } else { 0.0 }),
            },
            Metric::LossPct => match status {
                Status::Error | Status::Timeout => Some(100.0),
                _ => f.loss_pct(),
            },
            Metric::P50Ms => latency(f.p50_ms),
            Metric::P90Ms => latency(f.p90_ms),
            Metric::P99Ms => latency(f.p99_ms),
            Metric::Rpm => f.rpm,
            Metric::GoodputMbps => f.goodput_bps.map(|b| b / 1e6),
            Metric::MtuUpBytes => f.mtu_up_bytes,
            Metric::MtuDownBytes => f.mtu_down_bytes,
            Metric::Flagged => f.flagged.map(|n| if n > 0 { 1.0 } else { 0.0 }),
            Metric::CePct => f.ce_pct(),
            Metric::Bleached => f.bleached(),
        }
    }
}

/// An `[[alert]]` of the config file, as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertFile {
    pub name: String,
    pub metric: Metric,
    pub above: Option<f64>,
    pub below: Option<f64>,
    pub clear: Option<f64>,
    pub baseline_rounds: Option<u32>,
    pub rounds: Option<u32>,
    pub clear_rounds: Option<u32>,
    #[serde(default)]
    pub targets: Vec<String>,
}

/// A rule, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub name: String,
    pub metric: Metric,
    /// Fires above the threshold (else below).
    pub above: bool,
    /// The threshold, or the offset from the baseline.
    pub threshold: f64,
    /// Where it clears (same meaning as `threshold`).
    pub clear: f64,
    pub baseline_rounds: Option<u32>,
    pub rounds: u32,
    pub clear_rounds: u32,
    pub targets: Vec<String>,
}

/// `*` matches any run of characters; everything else itself.
pub fn glob(pat: &str, name: &str) -> bool {
    match pat.split_once('*') {
        None => pat == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| tail.get(i..).is_some_and(|t| glob(rest, t)))
        }
    }
}

/// Checks `[[alert]]` number `i`.
pub fn rule(i: usize, a: &AlertFile) -> Result<Rule, ConfigError> {
    let at = |k: &str| format!("alert[{i}].{k}");
    if a.name.trim().is_empty() {
        return Err(invalid(at("name"), "must not be empty"));
    }
    if !crate::config::label_text(&a.name) {
        return Err(invalid(at("name"), crate::config::LABEL_TEXT));
    }
    let finite = |k: &str, v: f64| {
        if v.is_finite() {
            Ok(v)
        } else {
            Err(invalid(at(k), "must be a number"))
        }
    };
    let (above, threshold) = match (a.metric, a.above, a.below) {
        (Metric::Unreachable | Metric::Flagged | Metric::Bleached, None, None) => (true, 0.5),
        (Metric::Unreachable, _, _) => {
            return Err(invalid(
                at("above"),
                "unreachable has no threshold: it counts rounds with no answer",
            ))
        }
        (Metric::Flagged, _, _) => {
            return Err(invalid(
                at("above"),
                "flagged has no threshold: it counts setup rounds that flagged a layer",
            ))
        }
        (Metric::Bleached, _, _) => {
            return Err(invalid(
                at("above"),
                "bleached has no threshold: it counts probe rounds whose marking did not \
                 arrive as sent",
            ))
        }
        (Metric::CePct, Some(v), None) | (Metric::CePct, None, Some(v))
            if a.baseline_rounds.is_none() && !(0.0..=100.0).contains(&v) =>
        {
            let k = if a.above.is_some() { "above" } else { "below" };
            return Err(invalid(at(k), format!("{v}: ce_pct is a share, 0 to 100")));
        }
        (_, Some(v), None) => (true, finite("above", v)?),
        (_, None, Some(v)) => (false, finite("below", v)?),
        (_, Some(_), Some(_)) => return Err(invalid(at("below"), "give above or below, not both")),
        (m, None, None) => {
            return Err(invalid(
                at("above"),
                format!("missing: {} fires above (or below) a value", m.name()),
            ))
        }
    };
    let clear = match a.clear {
        Some(c) => {
            let c = finite("clear", c)?;
            // The good side: below an upper threshold (or offset); above a lower level, or a
            // smaller offset below a baseline.
            let wrong = match (above, a.baseline_rounds.is_some()) {
                (true, _) | (false, true) => c > threshold,
                (false, false) => c < threshold,
            };
            if wrong {
                return Err(invalid(
                    at("clear"),
                    format!(
                        "{c} must be on the good side of the threshold {threshold} (it clears \
                         once the metric is back past it)"
                    ),
                ));
            }
            c
        }
        None => threshold,
    };
    if matches!(
        a.metric,
        Metric::Unreachable | Metric::Flagged | Metric::Bleached
    ) && a.baseline_rounds.is_some()
    {
        return Err(invalid(
            at("baseline_rounds"),
            format!("{} has no baseline", a.metric.name()),
        ));
    }
    if matches!(a.baseline_rounds, Some(n) if !(3..=10_000).contains(&n)) {
        return Err(invalid(
            at("baseline_rounds"),
            "must be between 3 and 10000",
        ));
    }
    let rounds = a.rounds.unwrap_or(3);
    if rounds == 0 {
        return Err(invalid(at("rounds"), "must be at least 1"));
    }
    let clear_rounds = a.clear_rounds.unwrap_or(rounds);
    if clear_rounds == 0 {
        return Err(invalid(at("clear_rounds"), "must be at least 1"));
    }
    Ok(Rule {
        name: a.name.clone(),
        metric: a.metric,
        above,
        threshold,
        clear,
        baseline_rounds: a.baseline_rounds,
        rounds,
        clear_rounds,
        targets: a.targets.clone(),
    })
}

impl Rule {
    pub fn applies_to(&self, target: &str) -> bool {
        self.targets.is_empty() || self.targets.iter().any(|p| glob(p, target))
    }

    fn breaks(&self, v: f64, base: f64) -> bool {
        if self.above {
            v > base + self.threshold
        } else {
            v < base - self.threshold_below()
        }
    }

    fn cleared(&self, v: f64, base: f64) -> bool {
        if self.above {
            v <= base + self.clear
        } else {
            v >= base - self.clear_below()
        }
    }

    /// Below a baseline the offset counts down; without one, `below` is the level itself.
    fn threshold_below(&self) -> f64 {
        if self.baseline_rounds.is_some() {
            self.threshold
        } else {
            -self.threshold
        }
    }

    fn clear_below(&self) -> f64 {
        if self.baseline_rounds.is_some() {
            self.clear
        } else {
            -self.clear
        }
    }

    /// The level the metric is compared with for `base` (the baseline, or 0).
    pub fn level(&self, base: f64) -> f64 {
        if self.above {
            base + self.threshold
        } else {
            base - self.threshold_below()
        }
    }
}

/// A rule started or stopped firing for a target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    pub target: String,
    pub rule: String,
    pub metric: &'static str,
    pub firing: bool,
    pub at_ms: i64,
    /// When the state it leaves began.
    pub since_ms: i64,
    pub value: f64,
    /// The level compared with (baseline + offset, or the threshold).
    pub threshold: f64,
    pub baseline: Option<f64>,
    /// Rounds in a row that made the change.
    pub rounds: u32,
}

#[derive(Clone, Debug, Default)]
struct State {
    firing: bool,
    since_ms: i64,
    streak: u32,
    value: Option<f64>,
    window: VecDeque<f64>,
}

/// Every rule's state for every target.
#[derive(Debug, Default)]
pub struct Alerts {
    rules: Vec<Rule>,
    state: BTreeMap<(String, String), State>,
}

fn median(w: &VecDeque<f64>) -> Option<f64> {
    let mut v: Vec<f64> = w.iter().copied().collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => v.get(n / 2).copied(),
        _ => Some((v.get(n / 2 - 1)? + v.get(n / 2)?) / 2.0),
    }
}

impl Alerts {
    pub fn new(rules: Vec<Rule>) -> Alerts {
        Alerts {
            rules,
            state: BTreeMap::new(),
        }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// New rules (a reload): the state of a (target, rule) pair that stays is kept.
    pub fn set_rules(&mut self, rules: Vec<Rule>) {
        self.state
            .retain(|(_, r), _| rules.iter().any(|x| &x.name == r));
        self.rules = rules;
    }

    /// Drops the state of targets no longer watched.
    pub fn retain_targets(&mut self, keep: &dyn Fn(&str) -> bool) {
        self.state.retain(|(t, _), _| keep(t));
    }

    /// The states kept in the store before a restart.
    pub fn restore(&mut self, rows: &[AlertRow]) {
        for r in rows {
            if self.rules.iter().any(|x| x.name == r.rule) {
                let s = self
                    .state
                    .entry((r.target.clone(), r.rule.clone()))
                    .or_default();
                s.firing = r.firing;
                s.since_ms = r.since_ms;
                s.streak = r.streak;
                s.value = r.value;
            }
        }
    }

    /// Where the stored rounds that rebuild `target`'s baselines start ([`Alerts::rebuild`]),
    /// for a target measured every `every_ms` whose rounds are kept `keep_ms`; `None` when no
    /// rule with a baseline applies to it. Far enough back to hold every window at its full
    /// length twice over, and to reach that far before the moment a restored firing state (or
    /// streak) began, when the window stopped learning.
    pub fn replay_from(
        &self,
        target: &str,
        every_ms: i64,
        now_ms: i64,
        keep_ms: i64,
    ) -> Option<i64> {
        let n = self
            .rules
            .iter()
            .filter(|r| r.applies_to(target))
            .filter_map(|r| r.baseline_rounds)
            .max()?;
        let span = every_ms.max(1).saturating_mul(2 * i64::from(n) + 10);
        let since = self
            .state
            .iter()
            .filter(|((t, _), s)| t == target && (s.firing || s.streak > 0))
            .map(|(_, s)| s.since_ms)
            .min()
            .unwrap_or(now_ms);
        Some((since.min(now_ms) - span).max(now_ms - keep_ms))
    }

    /// Rebuilds the baseline windows of `target` from its stored rounds, oldest first (status,
    /// figures, start ms), as they stood before a restart: the rounds go through the same rules
    /// on a fresh state, and only the windows are kept; the firing states, streaks and values
    /// stay what [`Alerts::restore`] read. Without this a rule that was firing at a restart was
    /// never ready again (an empty window, which learns only while nothing fires) and never
    /// cleared.
    pub fn rebuild<'a>(
        &mut self,
        target: &str,
        rounds: impl IntoIterator<Item = (Status, &'a Figures, i64)>,
    ) {
        let rules: Vec<Rule> = self
            .rules
            .iter()
            .filter(|r| r.baseline_rounds.is_some() && r.applies_to(target))
            .cloned()
            .collect();
        if rules.is_empty() {
            return;
        }
        let mut fresh = Alerts::new(rules);
        for (status, f, at_ms) in rounds {
            fresh.on_round(target, status, f, at_ms);
        }
        for (key, s) in fresh.state {
            self.state.entry(key).or_default().window = s.window;
        }
    }

    /// One round of `target` ended: its changes, and the rows to store for every state it moved.
    pub fn on_round(
        &mut self,
        target: &str,
        status: Status,
        f: &Figures,
        now_ms: i64,
    ) -> (Vec<Change>, Vec<AlertRow>) {
        let mut changes = Vec::new();
        let mut rows = Vec::new();
        for rule in self.rules.iter().filter(|r| r.applies_to(target)) {
            let Some(v) = rule.metric.value(status, f) else {
                continue;
            };
            let s = self
                .state
                .entry((target.to_string(), rule.name.clone()))
                .or_default();
            let (base, ready) = match rule.baseline_rounds {
                None => (0.0, true),
                Some(n) => {
                    let need = usize::try_from(n.min(5)).unwrap_or(5);
                    match median(&s.window) {
                        Some(m) if s.window.len() >= need => (m, true),
                        _ => (0.0, false),
                    }
                }
            };
            let before = (s.firing, s.streak);
            let breaks = ready && rule.breaks(v, base);
            if let Some(n) = rule.baseline_rounds {
                // The baseline learns only from normal rounds while nothing is happening.
                if !s.firing && !breaks && s.streak == 0 {
                    s.window.push_back(v);
                    while s.window.len() > usize::try_from(n).unwrap_or(usize::MAX) {
                        s.window.pop_front();
                    }
                }
            }
            if !ready {
                continue;
            }
            s.value = Some(v);
            if !s.firing {
                s.streak = if breaks { s.streak + 1 } else { 0 };
                if s.streak == 1 {
                    s.since_ms = now_ms;
                }
                if s.streak >= rule.rounds {
                    changes.push(change(target, rule, true, s, now_ms, v, base));
                    s.firing = true;
                    s.since_ms = now_ms;
                    s.streak = 0;
                }
            } else {
                s.streak = if rule.cleared(v, base) {
                    s.streak + 1
                } else {
                    0
                };
                if s.streak >= rule.clear_rounds {
                    changes.push(change(target, rule, false, s, now_ms, v, base));
                    s.firing = false;
                    s.since_ms = now_ms;
                    s.streak = 0;
                }
            }
            if (s.firing, s.streak) != before {
                rows.push(AlertRow {
                    target: target.to_string(),
                    rule: rule.name.clone(),
                    firing: s.firing,
                    since_ms: s.since_ms,
                    streak: s.streak,
                    value: s.value,
                });
            }
        }
        (changes, rows)
    }

    /// Every state, for the dashboard: (target, rule, firing, since, last value).
    pub fn states(&self) -> Vec<AlertRow> {
        self.state
            .iter()
            .map(|((t, r), s)| AlertRow {
                target: t.clone(),
                rule: r.clone(),
                firing: s.firing,
                since_ms: s.since_ms,
                streak: s.streak,
                value: s.value,
            })
            .collect()
    }

    /// Rules firing for `target`.
    pub fn firing(&self, target: &str) -> Vec<&str> {
        self.state
            .iter()
            .filter(|((t, _), s)| t == target && s.firing)
            .map(|((_, r), _)| r.as_str())
            .collect()
    }
}

fn change(
    target: &str,
    rule: &Rule,
    firing: bool,
    s: &State,
    now_ms: i64,
    v: f64,
    base: f64,
) -> Change {
    Change {
        target: target.to_string(),
        rule: rule.name.clone(),
        metric: rule.metric.name(),
        firing,
        at_ms: now_ms,
        since_ms: s.since_ms,
        value: v,
        threshold: if firing {
            rule.level(base)
        } else if rule.above {
            base + rule.clear
        } else {
            base - rule.clear_below()
        },
        baseline: rule.baseline_rounds.map(|_| base),
        rounds: if firing {
            rule.rounds
        } else {
            rule.clear_rounds
        },
    }
}

#[cfg(test)]
mod tests;
