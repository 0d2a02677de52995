//! The compare table's per-direction columns (`loss up`, `loss down`, `owd up`, `owd down`):
//! filled from probes whose server said what it saw (`summary.directions`), and shown in the
//! text, Markdown and HTML tables only when some row has them. A row's refusals by the server
//! go in its errors cell (they are not path loss).

use npt_result::probe::ProbeSummary;

use super::render::opt;
use super::{median, Row, Table};

/// The extra columns' names.
pub const COLUMNS: [&str; 4] = ["loss up", "loss down", "owd up", "owd down"];

/// Fills the row's per-direction figures from its runs' summaries: loss each way over every
/// packet that went that way in every run, one-way delay the median of the runs' p50s.
pub fn fill<'a>(row: &mut Row, probes: impl Iterator<Item = &'a ProbeSummary>) {
    let (mut sent, mut refused) = (0u64, 0u64);
    let (mut up, mut down, mut replies, mut counted) = (0u64, 0u64, 0u64, false);
    let (mut owd_up, mut owd_down) = (Vec::new(), Vec::new());
    for p in probes {
        sent += p.packets.sent;
        refused += p.refused_by_server;
        let Some(d) = &p.directions else { continue };
        if let (Some(u), Some(dn)) = (d.up.lost, d.down.lost) {
            counted = true;
            up += u;
            down += dn;
            replies += p
                .packets
                .sent
                .saturating_sub(p.refused_by_server)
                .saturating_sub(u);
        }
        owd_up.extend(d.up.owd_ms.map(|s| s.p50));
        owd_down.extend(d.down.owd_ms.map(|s| s.p50));
    }
    let med = |v: Vec<f64>| (!v.is_empty()).then(|| median(v));
    row.refused_pct = (refused > 0).then(|| npt_result::loss_pct(refused, sent));
    if counted {
        row.loss_up_pct = Some(npt_result::loss_pct(up, sent));
        row.loss_down_pct = Some(npt_result::loss_pct(down, replies));
    }
    row.owd_up_ms = med(owd_up);
    row.owd_down_ms = med(owd_down);
}

/// Whether the table shows the per-direction columns.
pub fn shown(t: &Table) -> bool {
    t.scenarios
        .iter()
        .any(|r| r.loss_up_pct.is_some() || r.owd_up_ms.is_some())
}

/// Appends the columns' names when [`shown`].
pub fn header(t: &Table, h: &mut Vec<String>) {
    if shown(t) {
        h.extend(COLUMNS.iter().map(|s| s.to_string()));
    }
}

/// Appends a row's cells when [`shown`]: loss in %, one-way delay in ms.
pub fn cells(t: &Table, r: &Row, c: &mut Vec<String>) {
    if shown(t) {
        let pct = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}%"));
        c.push(pct(r.loss_up_pct));
        c.push(pct(r.loss_down_pct));
        c.push(opt(r.owd_up_ms, 2));
        c.push(opt(r.owd_down_ms, 2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::directions::{OneWay, PathDirections};
    use npt_stats::Summary;

    fn probe(sent: u64, refused: u64, up: u64, down: u64, owd: Option<f64>) -> ProbeSummary {
        let s = owd.map(|p50| Summary {
            count: 1,
            p50,
            ..Summary::default()
        });
        ProbeSummary {
            packets: npt_stats::PacketCounts {
                sent,
                ..Default::default()
            },
            refused_by_server: refused,
            directions: Some(PathDirections {
                up: OneWay {
                    lost: Some(up),
                    owd_ms: s,
                    ..OneWay::default()
                },
                down: OneWay {
                    lost: Some(down),
                    owd_ms: s,
                    ..OneWay::default()
                },
                ..PathDirections::default()
            }),
            ..ProbeSummary::default()
        }
    }

    #[test]
    fn columns_only_when_a_row_has_them_and_loss_over_every_run() {
        let mut t = Table {
            scenarios: vec![Row::default()],
            ..Table::default()
        };
        assert!(!shown(&t));
        let runs = [
            probe(1000, 0, 30, 0, Some(30.0)),
            probe(1000, 500, 0, 47, Some(32.0)),
        ];
        fill(&mut t.scenarios[0], runs.iter());
        let r = &t.scenarios[0];
        assert_eq!(r.loss_up_pct, Some(1.5), "30 of 2000 sent");
        // Down carried 970 + 500 replies.
        assert!((r.loss_down_pct.unwrap() - 47.0 * 100.0 / 1470.0).abs() < 1e-9);
        assert_eq!((r.owd_up_ms, r.refused_pct), (Some(31.0), Some(25.0)));
        assert!(shown(&t));
        let mut c = Vec::new();
        cells(&t, &t.scenarios[0], &mut c);
        assert_eq!(c, ["1.50%", "3.20%", "31.00", "31.00"]);
    }
}
