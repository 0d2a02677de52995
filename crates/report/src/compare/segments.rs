//! Trace rows segment by segment: a `trace --mtu` or `--dscp` row's segments each read their
//! path MTU and their marking each way from their own upstream end; this block under the
//! table gives each segment its row — the largest datagram each way and what stopped a larger
//! one (as the `mtu up/down` column says an mtu row's, [`super::mtu`]) and what happened to
//! the marking each way (as the `marks up/down` columns say a probe's, [`super::marking`]) —
//! so the relay, tunnel or link that cuts the MTU or bleaches the DSCP is named. A row of
//! several runs (`--runs N`) adds them: each segment's largest datagram any run carried and the
//! latest verdict, its marking reads' arrivals added and judged by the rule of one read
//! ([`npt_result::marking::WaySum`]). A monitor's range (`npt report --from`) is one document
//! whose segments carry its rounds already added. Text, Markdown and the HTML page
//! ([`super::page`]) show it under the main table.

use std::io::{self, Write};

use npt_result::any::{AnyBody, AnyResult};
use npt_result::marking::WaySum;
use serde::Serialize;

use super::marking::Cells;
use super::mtu::Mtu;
use super::{Row, Table};

/// The block's title line in text and Markdown.
pub const TITLE: &str = "Trace segments: path MTU and marking each way";

/// What the columns are, under the block.
pub const LEGEND: &str = "(each segment read from its upstream end; mtu = the largest datagram \
     (UDP payload, bytes) any run carried that way and the latest run's verdict; marks = the \
     DSCP's fate that way and CE marks of the packets read; several runs add)";

/// Column names.
pub const HEADER: [&str; 5] = [
    "scenario / segment",
    "mtu up",
    "mtu down",
    "marks up",
    "marks down",
];

/// One segment of a trace row.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Segment {
    /// Who measured it (`here` or the hop agent's `npt://HOST:PORT`) and what.
    pub from: String,
    pub to: String,
    /// `--mtu`: its sizes each way over the runs; absent without a search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<Mtu>,
    /// `--dscp`: its marking each way over the runs (`-` where no read said); absent without
    /// a read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marking: Option<Cells>,
}

/// Fills the row's segments from its runs that are traces with `--mtu` or `--dscp`; other
/// rows have none.
pub fn fill<'a>(row: &mut Row, docs: impl Iterator<Item = &'a AnyResult>) {
    // Per segment: who, what, its sizes, its marks each way.
    type Reads = (String, String, Option<Mtu>, Option<(WaySum, WaySum)>);
    let mut segs: Vec<Reads> = Vec::new();
    for d in docs {
        let AnyBody::Trace(b) = &d.body else { continue };
        for (i, l) in b.segments.iter().enumerate() {
            if l.mtu.is_none() && l.marking.is_none() {
                continue;
            }
            if segs.len() <= i {
                segs.resize_with(i + 1, Default::default);
            }
            let Some(s) = segs.get_mut(i) else { continue };
            s.0.clone_from(&l.from);
            s.1.clone_from(&l.to);
            if let Some(m) = &l.mtu {
                let sizes = s.2.get_or_insert_with(Mtu::default);
                if let (Some(up), Some(down)) = (&m.up, &m.down) {
                    sizes.up.add(up);
                    sizes.down.add(down);
                }
            }
            if let Some(m) = &l.marking {
                let marks = s.3.get_or_insert_with(Default::default);
                if let (Some(up), Some(down)) = (&m.up, &m.down) {
                    marks.0.add(&WaySum::of(up));
                    marks.1.add(&WaySum::of(down));
                }
            }
        }
    }
    row.segments = segs
        .into_iter()
        .map(|(from, to, mtu, marks)| Segment {
            from,
            to,
            mtu,
            marking: marks.map(|(up, down)| {
                let cell = |w: &WaySum| {
                    if w.reads == 0 {
                        "-".to_string()
                    } else {
                        super::marking::cell(&w.way())
                    }
                };
                Cells {
                    up: cell(&up),
                    down: cell(&down),
                }
            }),
        })
        .collect();
}

/// Whether the table has trace rows with segment reads.
pub fn shown(t: &Table) -> bool {
    t.scenarios.iter().any(|r| !r.segments.is_empty())
}

/// The block's rows: each trace row's name, then one row per segment.
pub fn table_rows(t: &Table) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for r in &t.scenarios {
        if r.segments.is_empty() {
            continue;
        }
        let mut head = vec![String::new(); HEADER.len()];
        head[0].clone_from(&r.name);
        out.push(head);
        for (i, s) in r.segments.iter().enumerate() {
            let dash = || "-".to_string();
            let (mtu_up, mtu_down) = s
                .mtu
                .as_ref()
                .map_or((dash(), dash()), |m| (m.up.cell(), m.down.cell()));
            let (marks_up, marks_down) = s
                .marking
                .as_ref()
                .map_or((dash(), dash()), |m| (m.up.clone(), m.down.clone()));
            out.push(vec![
                format!("  {} {} → {}", i + 1, s.from, s.to),
                mtu_up,
                mtu_down,
                marks_up,
                marks_down,
            ]);
        }
    }
    out
}

/// The block for a terminal: title, aligned columns, legend (nothing without such rows).
pub fn write_text(w: &mut impl Write, t: &Table) -> io::Result<()> {
    if !shown(t) {
        return Ok(());
    }
    super::render::block_text(w, TITLE, &HEADER, &table_rows(t), LEGEND)
}

/// The block in Markdown: a table of its own under the main one.
pub fn write_markdown(w: &mut impl Write, t: &Table) -> io::Result<()> {
    if !shown(t) {
        return Ok(());
    }
    super::render::block_markdown(w, TITLE, &HEADER, &table_rows(t), LEGEND)
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::marking::{Tos, TosCount, Way};
    use npt_result::mtu::MtuDirection;
    use npt_result::stats::trace::{LegStats, TraceMeta, TraceStats};
    use npt_result::trace::{SegmentMarking, SegmentMtu};

    /// A trace of two segments: the second 1400 bytes (`local`) and bleaching DSCP up with
    /// `ce` CE marks; the first segment's marking read failed when `failed`.
    fn doc(ce: u64, failed: bool) -> AnyResult {
        let leg = |i: usize| LegStats {
            from: if i == 0 {
                "here".into()
            } else {
                "npt://r1:7777".into()
            },
            to: format!("tcp://h{i}:7777"),
            ..LegStats::default()
        };
        let mut b = TraceStats {
            segments: vec![leg(0), leg(1)],
            ..TraceStats::default()
        }
        .summarize(&TraceMeta {
            target: "tcp://h1:7777".into(),
            proto: "tcp".into(),
        });
        let ef0 = Some(Tos { dscp: 46, ecn: 2 });
        let arrived = |dscp: u8, ce: u64| {
            Way::of(
                ef0,
                &[
                    TosCount {
                        dscp,
                        ecn: 2,
                        packets: 20 - ce,
                    },
                    TosCount {
                        dscp,
                        ecn: 3,
                        packets: ce,
                    },
                ],
            )
        };
        for (i, l) in b.segments.iter_mut().enumerate() {
            let (size, verdict) = if i == 1 {
                (1372, "local")
            } else {
                (1472, "max_crossed")
            };
            let d = MtuDirection {
                verdict: verdict.into(),
                largest_datagram: Some(size),
                ..MtuDirection::default()
            };
            l.mtu = Some(SegmentMtu {
                to: format!("udp://h{i}:7777"),
                headers: 28,
                up: Some(d.clone()),
                down: Some(d),
                error: None,
            });
            let read = !(failed && i == 0);
            l.marking = Some(SegmentMarking {
                to: format!("udp://h{i}:7777"),
                up: read.then(|| arrived(if i == 1 { 0 } else { 46 }, if i == 1 { ce } else { 0 })),
                down: read.then(|| arrived(46, 0)),
                error: (!read).then(|| "timeout: no answer".to_string()),
            });
        }
        let now = std::time::SystemTime::now();
        let d = npt_result::Document::new(
            "trace",
            now,
            now,
            npt_result::StopReason::Count,
            serde_json::json!({}),
            b,
        );
        npt_result::any::from_value("trace", serde_json::to_value(&d).unwrap()).unwrap()
    }

    /// Each segment's sizes and marks each way; two runs add their reads (CE marks of both),
    /// a run whose read failed adds nothing; a trace without reads has no segment rows.
    #[test]
    fn a_trace_rows_segments_say_their_mtu_and_marking_each_way() {
        let mut row = Row {
            name: "chain".into(),
            ..Row::default()
        };
        let docs = [doc(2, true), doc(3, false)];
        fill(&mut row, docs.iter());
        let t = Table {
            scenarios: vec![row, Row::default()],
            ..Table::default()
        };
        let rows = table_rows(&t);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0][0], "chain");
        assert_eq!(
            rows[1],
            [
                "  1 here → tcp://h0:7777",
                "1472",
                "1472",
                "arrived CE 0/20",
                "arrived CE 0/20"
            ]
        );
        assert_eq!(
            rows[2],
            [
                "  2 npt://r1:7777 → tcp://h1:7777",
                "1372 local",
                "1372 local",
                "bleached 0 CE 5/40",
                "arrived CE 0/40"
            ]
        );
        let mut text = Vec::new();
        write_text(&mut text, &t).unwrap();
        assert!(String::from_utf8(text).unwrap().starts_with(TITLE));
        let mut only_failed = Row::default();
        fill(&mut only_failed, [doc(0, true)].iter());
        assert_eq!(only_failed.segments[0].marking.as_ref().unwrap().up, "-");
        let mut plain = Row::default();
        let mut d = doc(0, false);
        if let AnyBody::Trace(b) = &mut d.body {
            for l in &mut b.segments {
                l.mtu = None;
                l.marking = None;
            }
        }
        fill(&mut plain, [d].iter());
        assert!(plain.segments.is_empty());
    }
}
