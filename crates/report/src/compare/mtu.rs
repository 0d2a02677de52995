//! The compare table's `mtu up/down` column: the largest datagram each `npt mtu` row's path
//! carried each way, and what stopped a larger one — a tunnel against the direct path, one
//! relay's fragmentation against another's black hole. A row read back from a monitor's
//! rounds (`npt report --from … --format json`) is compared the same way. An mtu row's latency
//! columns are its probes' round trips; the sizes are here. Shown in the text, Markdown and
//! HTML tables only when some row has it.

use npt_result::any::{AnyBody, AnyResult};
use npt_result::mtu::MtuDirection;
use serde::Serialize;

use super::{Row, Table};

/// The column's name.
pub const COLUMN: &str = "mtu up/down";

/// A row's sizes each way, over its runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Mtu {
    pub up: Way,
    pub down: Way,
}

/// One way of a row.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Way {
    /// The largest datagram any run saw cross, bytes (UDP payload); absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_datagram: Option<u32>,
    /// The latest run's verdict (`icmp`, `black_hole`, `local`, `max_crossed`,
    /// `nothing_crossed`, `unreadable`).
    pub verdict: String,
}

impl Way {
    pub(super) fn add(&mut self, d: &MtuDirection) {
        self.largest_datagram = self.largest_datagram.max(d.largest_datagram);
        self.verdict.clone_from(&d.verdict);
    }

    /// `1372 icmp`, `1472` when the largest tried crossed, `-` when unreadable.
    pub(super) fn cell(&self) -> String {
        match (self.largest_datagram, self.verdict.as_str()) {
            (_, "unreadable") | (None, "") => "-".to_string(),
            (Some(n), "max_crossed") => n.to_string(),
            (Some(n), v) => format!("{n} {v}"),
            (None, v) => v.to_string(),
        }
    }
}

/// Fills the row's sizes from its runs that are `mtu` results; other kinds leave it empty.
pub fn fill<'a>(row: &mut Row, docs: impl Iterator<Item = &'a AnyResult>) {
    let mut m = Mtu::default();
    let mut any = false;
    for d in docs {
        let AnyBody::Mtu(b) = &d.body else {
            continue;
        };
        any = true;
        m.up.add(&b.summary.up);
        m.down.add(&b.summary.down);
    }
    row.mtu = any.then_some(m);
}

/// Whether the table shows the column.
pub fn shown(t: &Table) -> bool {
    t.scenarios.iter().any(|r| r.mtu.is_some())
}

/// Appends the column's name when [`shown`].
pub fn header(t: &Table, h: &mut Vec<String>) {
    if shown(t) {
        h.push(COLUMN.to_string());
    }
}

/// A row's sizes as a cell: `1372 icmp / 1372 black_hole`, `-` without.
pub fn cell(m: Option<&Mtu>) -> String {
    m.map_or("-".to_string(), |m| {
        format!("{} / {}", m.up.cell(), m.down.cell())
    })
}

/// Appends a row's cell when [`shown`].
pub fn cells(t: &Table, r: &Row, c: &mut Vec<String>) {
    if shown(t) {
        c.push(cell(r.mtu.as_ref()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::mtu::{MtuBody, MtuSummary};

    fn mtu(up: (&str, Option<u32>), down: (&str, Option<u32>)) -> AnyResult {
        let way = |(v, n): (&str, Option<u32>)| MtuDirection {
            verdict: v.into(),
            largest_datagram: n,
            ..MtuDirection::default()
        };
        let body = MtuBody {
            target: "udp://t:1".into(),
            address: "192.0.2.1:1".into(),
            summary: MtuSummary {
                headers: 28,
                max: 1472,
                far_end: "npt-serve".into(),
                up: way(up),
                down: way(down),
                ..MtuSummary::default()
            },
            latency: Default::default(),
            errors: npt_result::common::Errors::new(Default::default(), 0),
            rtt_histogram: npt_stats::Histogram::new().to_serialized(),
        };
        let now = std::time::SystemTime::now();
        let doc = npt_result::Document::new(
            "mtu",
            now,
            now,
            npt_result::StopReason::Count,
            serde_json::json!({}),
            body,
        );
        npt_result::any::from_value("mtu", serde_json::to_value(&doc).unwrap()).unwrap()
    }

    #[test]
    fn runs_give_the_largest_crossed_and_the_latest_verdict() {
        let docs = [
            mtu(("icmp", Some(1372)), ("black_hole", Some(1370))),
            mtu(("icmp", Some(1372)), ("black_hole", Some(1372))),
        ];
        let mut row = Row::default();
        fill(&mut row, docs.iter());
        assert_eq!(
            cell(row.mtu.as_ref()),
            "1372 icmp / 1372 black_hole".to_string()
        );
        let mut row = Row::default();
        fill(
            &mut row,
            [mtu(("max_crossed", Some(1472)), ("unreadable", None))].iter(),
        );
        assert_eq!(cell(row.mtu.as_ref()), "1472 / -");
        let mut other = Row::default();
        fill(&mut other, std::iter::empty());
        assert_eq!((other.mtu.clone(), cell(None)), (None, "-".to_string()));
    }
}
