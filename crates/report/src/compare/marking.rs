//! The compare table's marking columns (`marks up`, `marks down`): for marked UDP probes whose
//! far end was asked ([`npt_result::marking`]), what happened to the DSCP each way and how many
//! packets arrived CE-marked — `bleached 0`, `arrived CE 318/400` — over every run of the row
//! (the runs' counts added). Shown only when some row has them.

use npt_result::marking::{Fate, Marking, Way};
use npt_result::probe::ProbeSummary;
use serde::Serialize;

use super::{Row, Table};

/// The extra columns' names.
pub const COLUMNS: [&str; 2] = ["marks up", "marks down"];

/// One row's two cells.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Cells {
    pub up: String,
    pub down: String,
}

/// Adds the runs' markings and says each direction, when any run asked its far end.
pub fn fill<'a>(row: &mut Row, probes: impl Iterator<Item = &'a ProbeSummary>) {
    let mut all: Option<Marking> = None;
    for m in probes.filter_map(|p| p.marking.as_ref()) {
        match &mut all {
            Some(a) => *a += m,
            None => all = Some(m.clone()),
        }
    }
    let Some(mut m) = all.filter(|m| m.asked.is_some()) else {
        return;
    };
    m.settle();
    if let (Some(up), Some(down)) = (&m.up, &m.down) {
        row.marking = Some(Cells {
            up: cell(up),
            down: cell(down),
        });
    }
}

/// `arrived`, `bleached 0`, `rewritten 10`, `mixed`, `unknown`, and ` CE n/m` when the packets
/// were sent ECN-capable.
pub(super) fn cell(w: &Way) -> String {
    let dscp = match w.dscp {
        Fate::Arrived => "arrived".to_string(),
        Fate::Bleached => "bleached 0".to_string(),
        Fate::Rewritten => format!("rewritten {}", w.arrived.map_or(0, |t| t.dscp)),
        Fate::Mixed => "mixed".to_string(),
        Fate::Unknown => "unknown".to_string(),
    };
    let ect = w.sent.is_some_and(|t| t.ecn != 0) || w.ce > 0;
    if ect && w.packets > 0 {
        format!("{dscp} CE {}/{}", w.ce, w.packets)
    } else {
        dscp
    }
}

/// Whether the table shows the marking columns.
pub fn shown(t: &Table) -> bool {
    t.scenarios.iter().any(|r| r.marking.is_some())
}

/// Appends the columns' names when [`shown`].
pub fn header(t: &Table, h: &mut Vec<String>) {
    if shown(t) {
        h.extend(COLUMNS.iter().map(|s| s.to_string()));
    }
}

/// Appends a row's cells when [`shown`] (`-` for a row without them).
pub fn cells(t: &Table, r: &Row, c: &mut Vec<String>) {
    if shown(t) {
        let (up, down) = r
            .marking
            .as_ref()
            .map_or(("-", "-"), |m| (m.up.as_str(), m.down.as_str()));
        c.push(up.to_string());
        c.push(down.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::marking::Tos;

    fn probe(seen: u8, here: u8, n: u64) -> ProbeSummary {
        let mut m = Marking {
            sent: Some(Tos::of(0xba)),
            asked: Some(Tos::of(0xba)),
            ..Marking::default()
        };
        for _ in 0..n {
            m.count_reply(Some(here), Some((seen, 0xba)));
        }
        ProbeSummary {
            marking: m.block(),
            ..ProbeSummary::default()
        }
    }

    #[test]
    fn runs_add_up_into_each_directions_cell() {
        // Up bleached (DSCP 0, ECT(0)) in one run and CE-marked in the other; down arrived.
        let (a, b) = (probe(0x02, 0xba, 3), probe(0x03, 0xbb, 1));
        let mut r = Row::default();
        fill(&mut r, [&a, &b].into_iter());
        let c = r.marking.clone().unwrap();
        assert_eq!(c.up, "bleached 0 CE 1/4");
        assert_eq!(c.down, "arrived CE 1/4");
        let t = Table {
            scenarios: vec![r.clone(), Row::default()],
            ..Table::default()
        };
        let mut h = Vec::new();
        header(&t, &mut h);
        assert_eq!(h, vec!["marks up", "marks down"]);
        let mut cs = Vec::new();
        cells(&t, &t.scenarios[1], &mut cs);
        assert_eq!(cs, vec!["-", "-"]);
        // A probe that asked nothing: no cells, no columns.
        let mut plain = Row::default();
        fill(&mut plain, [&ProbeSummary::default()].into_iter());
        assert!(plain.marking.is_none());
    }
}
