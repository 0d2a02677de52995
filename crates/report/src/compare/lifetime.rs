//! The compare table's `lifetime` column: how long each `npt lifetime` row's path kept an idle
//! flow, with its bracket — a relay against the direct path, a NAT against another, one
//! proxy's UDP timeout against the next. A lifetime row's latency columns are its flows'
//! request → ack round trips; the lifetime is here. Shown in the text, Markdown and HTML
//! tables only when some row has it.

use npt_result::any::{AnyBody, AnyResult};
use serde::Serialize;

use super::{median, Row, Table};

/// The column's name.
pub const COLUMN: &str = "lifetime";

/// A row's lifetime: the median over its runs, and the bracket all of them agree on.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Lifetime {
    /// The median of the runs' lifetimes (the middle of each one's bracket), s; absent when
    /// no run saw a flow expire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifetime_s: Option<f64>,
    /// The longest idle any run's flow survived, s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alive_after_s: Option<f64>,
    /// The shortest idle after which any run's flow was gone, s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gone_after_s: Option<f64>,
    /// True when a run's flow outlived its `--max` (and none expired).
    pub longer_than_max: bool,
}

/// Fills the row's lifetime from its runs that are `lifetime` results; other kinds leave it
/// empty.
pub fn fill<'a>(row: &mut Row, docs: impl Iterator<Item = &'a AnyResult>) {
    let mut l = Lifetime::default();
    let mut mids = Vec::new();
    let mut any = false;
    for d in docs {
        let AnyBody::Lifetime(b) = &d.body else {
            continue;
        };
        any = true;
        let s = &b.summary;
        mids.extend(s.lifetime_s);
        let pick = |a: Option<f64>, b: Option<f64>, f: fn(f64, f64) -> f64| match (a, b) {
            (Some(a), Some(b)) => Some(f(a, b)),
            (a, b) => a.or(b),
        };
        l.alive_after_s = pick(l.alive_after_s, s.alive_after_s, f64::max);
        l.gone_after_s = pick(l.gone_after_s, s.gone_after_s, f64::min);
        l.longer_than_max |= s.longer_than_max;
    }
    l.lifetime_s = (!mids.is_empty()).then(|| median(mids));
    row.lifetime = any.then_some(l);
}

/// Whether the table shows the column.
pub fn shown(t: &Table) -> bool {
    t.scenarios.iter().any(|r| r.lifetime.is_some())
}

/// Appends the column's name when [`shown`].
pub fn header(t: &Table, h: &mut Vec<String>) {
    if shown(t) {
        h.push(COLUMN.to_string());
    }
}

/// A lifetime as a cell: `30.0 s (29.8-30.2)`, `>40 s` past `--max`, `-` without.
pub fn cell(l: Option<&Lifetime>) -> String {
    let Some(l) = l else {
        return "-".to_string();
    };
    match (l.lifetime_s, l.alive_after_s, l.gone_after_s) {
        (Some(m), Some(a), Some(g)) => format!("{m:.1} s ({a:.1}-{g:.1})"),
        (Some(m), None, Some(g)) => format!("{m:.1} s (<{g:.1})"),
        (None, Some(a), _) if l.longer_than_max => format!(">{a:.0} s"),
        (_, Some(a), _) => format!(">={a:.1} s"),
        _ => "-".to_string(),
    }
}

/// Appends a row's cell when [`shown`].
pub fn cells(t: &Table, r: &Row, c: &mut Vec<String>) {
    if shown(t) {
        c.push(cell(r.lifetime.as_ref()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::lifetime::{LifetimeBody, LifetimeSummary};

    fn lifetime(summary: LifetimeSummary) -> AnyResult {
        let body = LifetimeBody {
            target: "udp://t:1".into(),
            address: "192.0.2.1:1".into(),
            summary,
            flows: Vec::new(),
            latency: Default::default(),
            errors: npt_result::common::Errors::new(Default::default(), 0),
            ack_histogram: npt_stats::Histogram::new().to_serialized(),
        };
        let now = std::time::SystemTime::now();
        let doc = npt_result::Document::new(
            "lifetime",
            now,
            now,
            npt_result::StopReason::Count,
            serde_json::json!({}),
            body,
        );
        npt_result::any::from_value("lifetime", serde_json::to_value(&doc).unwrap()).unwrap()
    }

    fn bracket(a: f64, g: f64) -> LifetimeSummary {
        LifetimeSummary {
            lifetime_s: Some((a + g) / 2.0),
            alive_after_s: Some(a),
            gone_after_s: Some(g),
            ..LifetimeSummary::default()
        }
    }

    #[test]
    fn runs_agree_on_the_narrowest_bracket() {
        let docs = [lifetime(bracket(29.8, 30.6)), lifetime(bracket(29.4, 30.2))];
        let mut row = Row::default();
        fill(&mut row, docs.iter());
        let l = row.lifetime.clone().unwrap();
        assert_eq!((l.alive_after_s, l.gone_after_s), (Some(29.8), Some(30.2)));
        assert_eq!(cell(Some(&l)), "30.0 s (29.8-30.2)");
        let past = LifetimeSummary {
            alive_after_s: Some(40.0),
            longer_than_max: true,
            ..LifetimeSummary::default()
        };
        let mut row = Row::default();
        fill(&mut row, [lifetime(past)].iter());
        assert_eq!(cell(row.lifetime.as_ref()), ">40 s");
        let mut other = Row::default();
        fill(&mut other, std::iter::empty());
        assert_eq!(
            (other.lifetime.clone(), cell(None)),
            (None, "-".to_string())
        );
    }
}
