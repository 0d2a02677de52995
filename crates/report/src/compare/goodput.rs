//! The compare table's goodput columns (`goodput up`, `goodput down`, Mbit/s): filled from bulk
//! results, shown in the text, Markdown and HTML tables only when some row has them, so tables
//! of latency results look as they always did. A bulk row's latency columns are its report
//! RTTs; its capacity is here.

use npt_result::any::{AnyBody, AnyResult};

use super::{median, Row, Table};

/// The extra columns' names.
pub const COLUMNS: [&str; 2] = ["goodput up", "goodput down"];

/// Fills the row's goodput from its runs' bulk summaries: each direction the median over the
/// runs that moved bytes that way (application payload, bit/s); a direction no run used stays
/// empty rather than reading 0.
pub fn fill<'a>(row: &mut Row, docs: impl Iterator<Item = &'a AnyResult>) {
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for d in docs {
        let AnyBody::Bulk(b) = &d.body else { continue };
        let s = &b.summary;
        if s.bytes.up > 0.0 {
            up.push(s.goodput_bps.up);
        }
        if s.bytes.down > 0.0 {
            down.push(s.goodput_bps.down);
        }
    }
    let med = |v: Vec<f64>| (!v.is_empty()).then(|| median(v));
    row.goodput_up_bps = med(up);
    row.goodput_down_bps = med(down);
}

/// Whether the table shows the goodput columns.
pub fn shown(t: &Table) -> bool {
    t.scenarios
        .iter()
        .any(|r| r.goodput_up_bps.is_some() || r.goodput_down_bps.is_some())
}

/// Appends the columns' names when [`shown`].
pub fn header(t: &Table, h: &mut Vec<String>) {
    if shown(t) {
        h.extend(COLUMNS.iter().map(|s| s.to_string()));
    }
}

/// Appends a row's cells when [`shown`], in Mbit/s.
pub fn cells(t: &Table, r: &Row, c: &mut Vec<String>) {
    if shown(t) {
        let mbit = |v: Option<f64>| v.map_or("-".to_string(), |b| format!("{:.2}", b / 1e6));
        c.push(mbit(r.goodput_up_bps));
        c.push(mbit(r.goodput_down_bps));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bulk result that moved `up` and `down` bit/s for one second.
    fn bulk(up: f64, down: f64) -> AnyResult {
        use npt_result::stats::{BulkMeta, BulkStats, Stats};
        let meta = BulkMeta {
            target: "tcp://t:1".into(),
            protocol: "tcp".into(),
            direction: "both".into(),
        };
        let mut body = BulkStats {
            streams: 1,
            duration_s: 1.0,
            ..BulkStats::default()
        }
        .summarize(&meta);
        body.summary.bytes.up = up / 8.0;
        body.summary.bytes.down = down / 8.0;
        body.summary.goodput_bps.up = up;
        body.summary.goodput_bps.down = down;
        let now = std::time::SystemTime::now();
        let doc = npt_result::Document::new(
            "bulk",
            now,
            now,
            npt_result::StopReason::Duration,
            serde_json::json!({}),
            body,
        );
        npt_result::any::from_value("bulk", serde_json::to_value(&doc).unwrap()).unwrap()
    }

    #[test]
    fn medians_per_direction_and_columns_only_when_a_row_has_them() {
        let mut t = Table {
            scenarios: vec![Row {
                name: "probe".into(),
                ..Row::default()
            }],
            ..Table::default()
        };
        let mut h = Vec::new();
        header(&t, &mut h);
        assert!(h.is_empty(), "no bulk row, no goodput columns");

        let mut r = Row {
            name: "bulk".into(),
            ..Row::default()
        };
        let runs = [bulk(9e6, 0.0), bulk(5e6, 0.0), bulk(7e6, 0.0)];
        fill(&mut r, runs.iter());
        assert_eq!(r.goodput_up_bps, Some(7e6), "the median of three runs");
        assert_eq!(r.goodput_down_bps, None, "no run moved bytes down");
        t.scenarios.push(r);
        let mut h = Vec::new();
        header(&t, &mut h);
        assert_eq!(h, COLUMNS);
        let mut c = Vec::new();
        cells(&t, &t.scenarios[1], &mut c);
        assert_eq!(c, ["7.00", "-"]);
        let mut c = Vec::new();
        cells(&t, &t.scenarios[0], &mut c);
        assert_eq!(c, ["-", "-"], "a probe row has no goodput");
    }
}
