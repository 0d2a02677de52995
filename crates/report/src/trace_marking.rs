//! A trace's per-segment DSCP/ECN marking (`npt trace --dscp`) in every format: one row per
//! segment saying, each way, whether the marking arrived, was rewritten (to what) or bleached,
//! and the CE marks — so the segment and the direction that lost a marking read at a glance.
//! Under the waterfall ([`crate::trace`]), which it leaves as it was for unmarked traces.

use std::io::{self, Write};

use npt_result::marking::{Fate, Way};
use npt_result::trace::{SegmentMarking, TraceBody};

use crate::html::Table;
use crate::text::marking::{dscp_name, ecn_name};
use crate::trace_segments::{Reading, SegmentTable};

/// The note under the table.
pub const NOTE: &str = "marking: marked UDP echoes to each segment's npt serve; up as the \
                        far end says each echo arrived, down as each reply arrived (CE: \
                        congestion marks of the packets read)";

/// One field's fate in words: `bleached to 0`, `rewritten to 10`, `mixed (mostly 0)`.
fn fate(f: Fate, got: Option<String>) -> String {
    let got = got.unwrap_or_else(|| "?".into());
    match f {
        Fate::Arrived => "arrived".into(),
        Fate::Bleached => "bleached to 0".into(),
        Fate::Rewritten => format!("rewritten to {got}"),
        Fate::Mixed => format!("mixed (mostly {got})"),
        Fate::Unknown => "unknown".into(),
    }
}

/// One way in words: `DSCP 46 (EF) bleached to 0, ECN ECT(0) arrived (CE 3 of 20)`, `-`
/// when the read failed.
pub fn way_text(w: Option<&Way>) -> String {
    let Some(w) = w else { return "-".into() };
    let sent = |f: &dyn Fn(u8) -> String, v: Option<u8>| v.map(|v| format!(" {}", f(v)));
    let dscp = format!(
        "DSCP{} {}",
        sent(&dscp_name, w.sent.map(|t| t.dscp)).unwrap_or_default(),
        fate(w.dscp, w.arrived.map(|t| dscp_name(t.dscp)))
    );
    let ecn = format!(
        "ECN{} {}",
        sent(&|e| ecn_name(e).to_string(), w.sent.map(|t| t.ecn)).unwrap_or_default(),
        fate(w.ecn, w.arrived.map(|t| ecn_name(t.ecn).to_string()))
    );
    format!("{dscp}, {ecn} (CE {} of {})", w.ce, w.packets)
}

/// The table; `None` when the trace has no marking figures.
pub fn table(b: &TraceBody) -> Option<SegmentTable> {
    SegmentTable::of(
        b,
        &Reading {
            title: "DSCP/ECN per segment",
            what: "marking read",
            word: "marking",
            note: NOTE,
            of: &|l| l.marking.as_ref(),
            cells: &|m: &SegmentMarking| {
                [
                    m.to.clone(),
                    way_text(m.up.as_ref()),
                    way_text(m.down.as_ref()),
                ]
            },
            error: &|m| m.error.as_ref(),
        },
    )
}

/// The text table (nothing without marking figures).
pub fn write_text(out: &mut dyn Write, b: &TraceBody) -> io::Result<()> {
    table(b).map_or(Ok(()), |t| t.write_text(out))
}

/// The Markdown table (nothing without marking figures).
pub fn write_markdown(out: &mut dyn Write, b: &TraceBody) -> io::Result<()> {
    table(b).map_or(Ok(()), |t| t.write_markdown(out))
}

/// The HTML table, when there are marking figures.
pub fn html_table(b: &TraceBody) -> Option<Table> {
    table(b).map(SegmentTable::html)
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::marking::Tos;
    use npt_result::stats::trace::{LegStats, TraceMeta, TraceStats};
    use npt_result::stats::PingStats;

    #[test]
    fn each_segment_says_each_way_what_became_of_the_marking() {
        let ef = Some(Tos { dscp: 46, ecn: 2 });
        let arrived = Way {
            sent: ef,
            arrived: ef,
            dscp: Fate::Arrived,
            ecn: Fate::Arrived,
            packets: 20,
            ce: 3,
        };
        let bleached = Way {
            arrived: Some(Tos { dscp: 0, ecn: 2 }),
            dscp: Fate::Bleached,
            ce: 0,
            ..arrived
        };
        assert_eq!(
            way_text(Some(&bleached)),
            "DSCP 46 (EF) bleached to 0, ECN ECT(0) arrived (CE 0 of 20)"
        );
        assert_eq!(
            way_text(Some(&arrived)),
            "DSCP 46 (EF) arrived, ECN ECT(0) arrived (CE 3 of 20)"
        );
        assert_eq!(way_text(None), "-");
        let leg = |from: &str, to: &str| LegStats {
            from: from.into(),
            to: to.into(),
            addresses: vec![],
            stats: PingStats::default(),
        };
        let mut b = TraceStats {
            segments: vec![
                leg("here", "tcp://10.0.2.2:7777"),
                leg("npt://10.0.2.2:7777", "tcp://10.0.3.2:7777"),
            ],
            ..TraceStats::default()
        }
        .summarize(&TraceMeta {
            target: "tcp://10.0.3.2:7777".into(),
            proto: "tcp".into(),
        });
        let mut text = Vec::new();
        write_text(&mut text, &b).unwrap();
        assert!(text.is_empty(), "an unmarked trace has no table");
        b.segments[0].marking = Some(SegmentMarking {
            to: "udp://10.0.2.2:7777".into(),
            up: Some(bleached),
            down: Some(arrived),
            error: None,
        });
        b.segments[1].marking = Some(SegmentMarking {
            to: "udp://10.0.3.2:7777".into(),
            up: None,
            down: None,
            error: Some("config: the agent refused it".into()),
        });
        write_text(&mut text, &b).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("segment 1  udp://10.0.2.2:7777  DSCP 46 (EF) bleached to 0"));
        assert!(text.contains("segment 2 marking: config: the agent refused it"));
        let mut md = Vec::new();
        write_markdown(&mut md, &b).unwrap();
        assert!(String::from_utf8(md)
            .unwrap()
            .contains("| segment 2 | udp://10.0.3.2:7777 | - | - |"));
        assert_eq!(html_table(&b).unwrap().rows.len(), 2);
    }
}
