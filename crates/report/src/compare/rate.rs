//! The compare table's `req/s` column: the completed requests per second of `npt http` rows
//! (`summary.rps`, over the measured phase) and `npt run` rows (`summary.requests_per_s`, every
//! protocol's requests), so a gateway or a forwarder under simulated users is compared by what
//! it served as well as by its latency. Shown in the text, Markdown and HTML tables only when
//! some row has it; tables of probes look as they always did.

use npt_result::any::{AnyBody, AnyResult};

use super::{median, Row, Table};

/// The column's name.
pub const COLUMN: &str = "req/s";

/// Fills the row's requests per second: the median over its runs that are `http` or `run`
/// results (the figure itself for one); other kinds leave it empty.
pub fn fill<'a>(row: &mut Row, docs: impl Iterator<Item = &'a AnyResult>) {
    let v: Vec<f64> = docs
        .filter_map(|d| match &d.body {
            AnyBody::Http(b) => Some(b.summary.rps),
            AnyBody::Run(b) => Some(b.summary.requests_per_s),
            _ => None,
        })
        .collect();
    row.requests_per_s = (!v.is_empty()).then(|| median(v));
}

/// Whether the table shows the column.
pub fn shown(t: &Table) -> bool {
    t.scenarios.iter().any(|r| r.requests_per_s.is_some())
}

/// Appends the column's name when [`shown`].
pub fn header(t: &Table, h: &mut Vec<String>) {
    if shown(t) {
        h.push(COLUMN.to_string());
    }
}

/// Appends a row's cell when [`shown`]: requests per second to one decimal, `-` without.
pub fn cells(t: &Table, r: &Row, c: &mut Vec<String>) {
    if shown(t) {
        c.push(
            r.requests_per_s
                .map_or("-".to_string(), |v| format!("{v:.1}")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result of `kind` (`http` or `run`) whose body says `rps` requests per second.
    pub(crate) fn with_rps(kind: &str, rps: f64) -> AnyResult {
        use npt_result::stats::{HttpMeta, HttpStats, RunMeta, RunStats, Stats};
        let body = if kind == "http" {
            let mut b = HttpStats::default().summarize(&HttpMeta::default());
            b.summary.rps = rps;
            serde_json::to_value(b).unwrap()
        } else {
            let mut b = RunStats::default().summarize(&RunMeta::default());
            b.summary.requests_per_s = rps;
            serde_json::to_value(b).unwrap()
        };
        let now = std::time::SystemTime::now();
        let doc = npt_result::Document::new(
            kind,
            now,
            now,
            npt_result::StopReason::Duration,
            serde_json::json!({}),
            body,
        );
        npt_result::any::from_value(kind, serde_json::to_value(&doc).unwrap()).unwrap()
    }

    #[test]
    fn http_and_run_rows_have_their_rate_and_the_median_of_runs() {
        let mut t = Table {
            scenarios: vec![Row {
                name: "probe".into(),
                ..Row::default()
            }],
            ..Table::default()
        };
        let mut h = Vec::new();
        header(&t, &mut h);
        assert!(h.is_empty(), "no http or run row, no req/s column");
        let runs = [
            with_rps("http", 900.0),
            with_rps("http", 1200.5),
            with_rps("http", 1000.0),
        ];
        let mut http = Row::default();
        fill(&mut http, runs.iter());
        assert_eq!(
            http.requests_per_s,
            Some(1000.0),
            "the median of three runs"
        );
        let mut run = Row::default();
        fill(&mut run, [with_rps("run", 42.26)].iter());
        assert_eq!(run.requests_per_s, Some(42.26));
        t.scenarios.extend([http, run]);
        let mut h = Vec::new();
        header(&t, &mut h);
        assert_eq!(h, [COLUMN]);
        let cell = |i: usize| {
            let mut c = Vec::new();
            cells(&t, &t.scenarios[i], &mut c);
            c
        };
        assert_eq!(
            (cell(0), cell(1), cell(2)),
            (
                vec!["-".to_string()],
                vec!["1000.0".to_string()],
                vec!["42.3".to_string()]
            )
        );
        let mut text = Vec::new();
        super::super::write_text(&mut text, &t).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.lines().next().unwrap().ends_with("  req/s"), "{text}");
        let mut md = Vec::new();
        super::super::write_markdown(&mut md, &t).unwrap();
        let md = String::from_utf8(md).unwrap();
        assert!(
            md.contains("| errors | req/s |\n|---|---|---|---|---|---|---|---|---|---|---|"),
            "{md}"
        );
        assert!(md.contains(" | 1000.0 |"), "{md}");
        let json = serde_json::to_value(&t).unwrap();
        assert!(json["scenarios"][0].get("requests_per_s").is_none());
        assert_eq!(json["scenarios"][1]["requests_per_s"], 1000.0);
    }
}
