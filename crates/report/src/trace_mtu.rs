//! A trace's per-segment path MTU (`npt trace --mtu`) in every format: one row per segment with
//! the largest datagram that crossed each way and what stopped a larger one. Beside the
//! waterfall ([`crate::trace`]), which it leaves as it was for traces without `--mtu`.

use std::io::{self, Write};

use npt_result::trace::{SegmentMtu, TraceBody};

use crate::html::Table;
use crate::trace_segments::{Reading, SegmentTable};

/// The note under the table.
pub const NOTE: &str = "mtu: the largest UDP datagram that crossed each way (an IP packet is \
                        28 bytes more over IPv4, 48 over IPv6), and what stopped a larger one";

/// The table; `None` when the trace has no MTU figures.
pub fn table(b: &TraceBody) -> Option<SegmentTable> {
    SegmentTable::of(
        b,
        &Reading {
            title: "Path MTU per segment",
            what: "mtu searched",
            word: "mtu",
            note: NOTE,
            of: &|l| l.mtu.as_ref(),
            cells: &|m: &SegmentMtu| {
                [
                    m.to.clone(),
                    SegmentMtu::way_text(m.up.as_ref()),
                    SegmentMtu::way_text(m.down.as_ref()),
                ]
            },
            error: &|m| m.error.as_ref(),
        },
    )
}

/// The text table (nothing without MTU figures).
pub fn write_text(out: &mut dyn Write, b: &TraceBody) -> io::Result<()> {
    table(b).map_or(Ok(()), |t| t.write_text(out))
}

/// The Markdown table (nothing without MTU figures).
pub fn write_markdown(out: &mut dyn Write, b: &TraceBody) -> io::Result<()> {
    table(b).map_or(Ok(()), |t| t.write_markdown(out))
}

/// The HTML table, when there are MTU figures.
pub fn html_table(b: &TraceBody) -> Option<Table> {
    table(b).map(SegmentTable::html)
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::mtu::MtuDirection;
    use npt_result::stats::trace::{LegStats, TraceMeta, TraceStats};
    use npt_result::stats::PingStats;

    #[test]
    fn each_segment_says_what_crossed_and_what_stopped_more() {
        let icmp = MtuDirection {
            verdict: "icmp".into(),
            largest_datagram: Some(1372),
            smallest_lost: Some(1373),
            icmp_mtu: Some(1400),
            icmp_from: Some("10.0.1.2".into()),
            ..MtuDirection::default()
        };
        let hole = MtuDirection {
            verdict: "black_hole".into(),
            largest_datagram: Some(1372),
            smallest_lost: Some(1373),
            ..MtuDirection::default()
        };
        assert_eq!(
            SegmentMtu::way_text(Some(&icmp)),
            "1372 B (ICMP: MTU 1400 from 10.0.1.2)"
        );
        assert_eq!(
            SegmentMtu::way_text(Some(&hole)),
            "1372 B (black hole: 1373 lost, no ICMP)"
        );
        assert_eq!(SegmentMtu::way_text(None), "-");
        let m = SegmentMtu {
            to: "udp://10.0.2.2:7777".into(),
            headers: 28,
            up: Some(icmp),
            down: Some(hole),
            error: None,
        };
        let failed = SegmentMtu {
            to: "udp://10.0.3.2:7777".into(),
            headers: 0,
            up: None,
            down: None,
            error: Some("config: the agent refused it".into()),
        };
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
        b.segments[0].mtu = Some(m);
        b.segments[1].mtu = Some(failed);
        let mut out = Vec::new();
        write_text(&mut out, &b).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("segment 1  udp://10.0.2.2:7777  1372 B (ICMP: MTU 1400 from 10.0.1.2)  1372 B (black hole"), "{text}");
        assert!(
            text.contains("segment 2  udp://10.0.3.2:7777  -")
                && text.contains("segment 2 mtu: config: the agent refused it"),
            "{text}"
        );
        let mut md = Vec::new();
        write_markdown(&mut md, &b).unwrap();
        assert!(String::from_utf8(md)
            .unwrap()
            .contains("| segment 1 | udp://10.0.2.2:7777 |"));
        b.segments.iter_mut().for_each(|l| l.mtu = None);
        let mut none = Vec::new();
        write_text(&mut none, &b).unwrap();
        assert!(none.is_empty(), "no MTU, no table");
    }
}
