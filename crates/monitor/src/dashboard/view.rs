//! Which targets one page of the dashboard shows, chosen on the server: a monitor of ten
//! thousand targets sends the browser one page of them (20 by default) with their charts,
//! never ten thousand series. The query names the page (`page`, `per`), a search (`q`: part
//! of a target's name, URL or group, any case), a `group`, and the order (`sort`).
//!
//! Worst first (the default order) ranks by what the monitor already knows of each target
//! now, most serious first, each step breaking the ties of the one before:
//! 1. still watched before removed;
//! 2. the alert rules firing for it (more is worse);
//! 3. down: its last round got no answer, failed or timed out;
//! 4. its last round's loss (%);
//! 5. its slowdown: the last round's p99 over the target's usual median (a moving average of
//!    its rounds' p50, [`crate::live::TargetLive::base_p50_ms`]) — a tail ten times the usual
//!    centre ranks above one twice it, whatever the path's own RTT;
//! 6. its name.
//!
//! Targets without a round yet have none of 2–5 and come after every one that has a fault.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::live::TargetLive;
use crate::store::AlertRow;

/// Targets per page unless the query says otherwise, and at most.
pub const PER_DEFAULT: usize = 20;
pub const PER_MAX: usize = 50;

/// The orders the page offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sort {
    #[default]
    Worst,
    Name,
    P50,
    Loss,
}

impl Sort {
    pub const ALL: [Sort; 4] = [Sort::Worst, Sort::Name, Sort::P50, Sort::Loss];

    pub fn name(self) -> &'static str {
        match self {
            Sort::Worst => "worst",
            Sort::Name => "name",
            Sort::P50 => "p50",
            Sort::Loss => "loss",
        }
    }

    pub fn parse(s: &str) -> Option<Sort> {
        Sort::ALL.into_iter().find(|x| x.name() == s)
    }
}

/// One page's query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// 1-based; past the last page reads as the last.
    pub page: usize,
    pub per: usize,
    pub q: String,
    pub group: Option<String>,
    pub sort: Sort,
}

impl Default for View {
    fn default() -> View {
        View {
            page: 1,
            per: PER_DEFAULT,
            q: String::new(),
            group: None,
            sort: Sort::Worst,
        }
    }
}

impl View {
    /// Reads `page`, `per`, `q`, `group` and `sort` through `get` (the query's decoded
    /// values); the error names the parameter.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<View, String> {
        let mut v = View::default();
        if let Some(p) = get("page") {
            v.page = p
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("page {p:?}: a page number from 1"))?;
        }
        if let Some(p) = get("per") {
            v.per = p
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=PER_MAX).contains(n))
                .ok_or_else(|| format!("per {p:?}: targets per page, 1 to {PER_MAX}"))?;
        }
        v.q = get("q").unwrap_or_default().trim().to_string();
        v.group = get("group").filter(|g| !g.is_empty());
        if let Some(s) = get("sort") {
            v.sort = Sort::parse(&s).ok_or_else(|| {
                let names: Vec<&str> = Sort::ALL.iter().map(|x| x.name()).collect();
                format!("sort {s:?}: one of {}", names.join(", "))
            })?;
        }
        Ok(v)
    }
}

/// One page of targets and what the page says around it.
#[derive(Debug)]
pub struct Selection {
    /// The page's targets, in order, with the rules firing for each.
    pub rows: Vec<(Arc<TargetLive>, Vec<String>)>,
    /// Targets watched or kept, all of them; those the search and group let through.
    pub total: usize,
    pub matched: usize,
    /// The page shown (clamped to the last) and how many there are (at least 1).
    pub page: usize,
    pub pages: usize,
    /// Every group name, for the page's filter.
    pub groups: Vec<String>,
}

/// What worst-first compares, worst greatest.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Badness {
    pub active: bool,
    pub firing: usize,
    pub down: bool,
    pub loss_pct: f64,
    pub slowdown: f64,
}

impl Badness {
    pub fn of(t: &TargetLive, firing: usize) -> Badness {
        let last = t.last.as_ref();
        let f = last.map(|l| &l.figures);
        let slowdown = match (f.filter(|f| f.count > 0), t.base_p50_ms) {
            (Some(f), Some(b)) if b > 0.0 => f.p99_ms / b,
            _ => 0.0,
        };
        Badness {
            active: t.active,
            firing,
            down: last.is_some_and(|l| l.status.unreachable()),
            loss_pct: f.and_then(|f| f.loss_pct()).unwrap_or(0.0),
            slowdown,
        }
    }

    fn cmp(&self, o: &Badness) -> Ordering {
        self.active
            .cmp(&o.active)
            .then(self.firing.cmp(&o.firing))
            .then(self.down.cmp(&o.down))
            .then(self.loss_pct.total_cmp(&o.loss_pct))
            .then(self.slowdown.total_cmp(&o.slowdown))
    }
}

fn matches(t: &TargetLive, q: &str) -> bool {
    q.is_empty()
        || [
            Some(t.name.as_str()),
            Some(t.url.as_str()),
            t.group.as_deref(),
        ]
        .into_iter()
        .flatten()
        .any(|s| s.to_lowercase().contains(q))
}

/// Filters, orders and cuts `targets` (every target, as [`crate::live::Live::targets`] gives
/// them) into the page `v` asks for.
pub fn select(targets: Vec<Arc<TargetLive>>, alerts: &[AlertRow], v: &View) -> Selection {
    let mut firing: HashMap<&str, Vec<String>> = HashMap::new();
    for a in alerts.iter().filter(|a| a.firing) {
        firing.entry(&a.target).or_default().push(a.rule.clone());
    }
    let total = targets.len();
    let groups: BTreeSet<String> = targets.iter().filter_map(|t| t.group.clone()).collect();
    let q = v.q.to_lowercase();
    let mut keep: Vec<(Arc<TargetLive>, Badness)> = targets
        .into_iter()
        .filter(|t| v.group.is_none() || t.group == v.group)
        .filter(|t| matches(t, &q))
        .map(|t| {
            let b = Badness::of(&t, firing.get(t.name.as_str()).map_or(0, Vec::len));
            (t, b)
        })
        .collect();
    let last_p50 = |t: &TargetLive| {
        t.last
            .as_ref()
            .filter(|l| l.figures.count > 0)
            .map(|l| l.figures.p50_ms)
    };
    // Names are unique, so every order is total and a page never shifts between two reads
    // of the same state.
    match v.sort {
        Sort::Worst => keep.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.name.cmp(&b.0.name))),
        Sort::Name => keep.sort_by(|a, b| a.0.name.cmp(&b.0.name)),
        Sort::P50 => keep.sort_by(|a, b| {
            let (x, y) = (last_p50(&a.0), last_p50(&b.0));
            // Slowest first; those without a figure last.
            y.unwrap_or(f64::NEG_INFINITY)
                .total_cmp(&x.unwrap_or(f64::NEG_INFINITY))
                .then(a.0.name.cmp(&b.0.name))
        }),
        Sort::Loss => keep.sort_by(|a, b| {
            b.1.loss_pct
                .total_cmp(&a.1.loss_pct)
                .then(a.0.name.cmp(&b.0.name))
        }),
    }
    let matched = keep.len();
    let pages = matched.div_ceil(v.per).max(1);
    let page = v.page.min(pages);
    let rows = keep
        .into_iter()
        .skip((page - 1) * v.per)
        .take(v.per)
        .map(|(t, _)| {
            let f = firing.get(t.name.as_str()).cloned().unwrap_or_default();
            (t, f)
        })
        .collect();
    Selection {
        rows,
        total,
        matched,
        page,
        pages,
        groups: groups.into_iter().collect(),
    }
}
