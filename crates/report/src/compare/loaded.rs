//! The compare table's loaded-probe columns (`loaded p50`, `loaded p99`, `rpm`): filled from a
//! probe's `under_load` block, and shown in the text, Markdown and HTML tables only when some
//! row has them, so tables of plain results look as they always did.

use npt_result::under_load::UnderLoad;

use super::render::opt;
use super::{cells, median, Row, Table, HEADER};

/// The extra columns' names.
pub const COLUMNS: [&str; 3] = ["loaded p50", "loaded p99", "rpm"];

/// Fills the row's loaded columns from its runs' `under_load` blocks: the loaded phase's p50 and
/// p99 and the RPM, each the median over the runs that have them (the figure itself for one).
pub fn fill<'a>(row: &mut Row, blocks: impl Iterator<Item = &'a UnderLoad>) {
    let (mut p50, mut p99, mut rpm) = (Vec::new(), Vec::new(), Vec::new());
    for u in blocks {
        if let Some(l) = u
            .phases
            .iter()
            .find(|p| p.name == "loaded" && p.rtt_ms.count > 0)
        {
            p50.push(l.rtt_ms.p50);
            p99.push(l.rtt_ms.p99);
        }
        rpm.extend(u.rpm);
    }
    let med = |v: Vec<f64>| (!v.is_empty()).then(|| median(v));
    row.loaded_p50_ms = med(p50);
    row.loaded_p99_ms = med(p99);
    row.rpm = med(rpm);
}

/// Whether the table shows the loaded columns.
pub fn shown(t: &Table) -> bool {
    t.scenarios
        .iter()
        .any(|r| r.loaded_p50_ms.is_some() || r.rpm.is_some())
}

/// The table's column names: [`HEADER`], then [`COLUMNS`] when [`shown`], then the
/// per-direction ones when some row has them ([`super::directions`]), then goodput
/// ([`super::goodput`]), then requests per second ([`super::rate`]), then the lifetime
/// ([`super::lifetime`]), then the mtu sizes ([`super::mtu`]).
pub fn header(t: &Table) -> Vec<String> {
    let mut h: Vec<String> = HEADER.iter().map(|s| s.to_string()).collect();
    if shown(t) {
        h.extend(COLUMNS.iter().map(|s| s.to_string()));
    }
    super::directions::header(t, &mut h);
    super::marking::header(t, &mut h);
    super::goodput::header(t, &mut h);
    super::rate::header(t, &mut h);
    super::lifetime::header(t, &mut h);
    super::mtu::header(t, &mut h);
    h
}

/// A row's cells: [`cells`], then the loaded columns when [`shown`], then the per-direction
/// ones, then goodput, then requests per second.
pub fn row_cells(t: &Table, r: &Row) -> Vec<String> {
    let mut c = cells(t.baseline.as_deref(), r);
    if shown(t) {
        c.push(opt(r.loaded_p50_ms, 2));
        c.push(opt(r.loaded_p99_ms, 2));
        c.push(opt(r.rpm, 0));
    }
    super::directions::cells(t, r, &mut c);
    super::marking::cells(t, r, &mut c);
    super::goodput::cells(t, r, &mut c);
    super::rate::cells(t, r, &mut c);
    super::lifetime::cells(t, r, &mut c);
    super::mtu::cells(t, r, &mut c);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::under_load::Phase;
    use npt_stats::Summary;

    #[test]
    fn columns_only_when_a_row_has_them_and_medians_over_runs() {
        let mut t = Table {
            scenarios: vec![Row {
                name: "plain".into(),
                ..Row::default()
            }],
            ..Table::default()
        };
        assert_eq!(header(&t).len(), HEADER.len());
        let block = |p50: f64, rpm: f64| UnderLoad {
            phases: vec![Phase {
                name: "loaded".into(),
                rtt_ms: Summary {
                    count: 10,
                    p50,
                    p99: p50 * 2.0,
                    ..Summary::default()
                },
                ..Phase::default()
            }],
            rpm: Some(rpm),
            ..UnderLoad::default()
        };
        let mut r = Row {
            name: "loaded".into(),
            ..Row::default()
        };
        let runs = [
            block(100.0, 500.0),
            block(140.0, 400.0),
            block(120.0, 450.0),
        ];
        fill(&mut r, runs.iter());
        assert_eq!(
            (r.loaded_p50_ms, r.loaded_p99_ms, r.rpm),
            (Some(120.0), Some(240.0), Some(450.0))
        );
        t.scenarios.push(r);
        let h = header(&t);
        assert_eq!(&h[HEADER.len()..], ["loaded p50", "loaded p99", "rpm"]);
        assert_eq!(
            &row_cells(&t, &t.scenarios[0])[HEADER.len()..],
            ["-", "-", "-"]
        );
        assert_eq!(
            &row_cells(&t, &t.scenarios[1])[HEADER.len()..],
            ["120.00", "240.00", "450"]
        );
    }
}
