//! TCP probes' first packet and total in the shape of quic-tun's latency table: one row per
//! scenario, its "first packet latency" (the first echo after the connect) and "total latency"
//! (from the connection up to the last reply) first — that test's client started its clock
//! after `connect` returned — then the connect and npt's own figures, which include it. A
//! published table of that test is read off these two columns by name. Text, Markdown and the
//! HTML page ([`super::page`]) show it under the main table.

use std::io::{self, Write};

use npt_result::probe::ProbeSummary;

use super::render::opt;
use super::runs::median;
use super::{Row, Table};

/// The block's title line in text and Markdown.
pub const TITLE: &str = "TCP first packet and total, quic-tun's latency test's definitions (ms)";

/// What the two definitions are, under the block.
pub const LEGEND: &str = "(first packet latency = the first echo alone, from its send after \
     the connect to its reply; total latency = from the connection up to the last reply: quic-tun's \
     clock starts after connect returned. npt's first packet and total include the connect; \
     medians of runs, each run's first connection of each flow)";

/// Column names.
pub const HEADER: [&str; 6] = [
    "scenario",
    "first packet latency",
    "total latency",
    "connect",
    "npt first packet",
    "npt total",
];

/// A TCP probe row's first packet and total, npt's and quic-tun's, and the connect: medians
/// of its runs' that state them (nothing for a row without npt's two).
pub fn fill(row: &mut Row, probes: &[&ProbeSummary]) {
    let med = |f: fn(&ProbeSummary) -> Option<f64>| {
        let v: Vec<f64> = probes.iter().filter_map(|p| f(p)).collect();
        (!v.is_empty()).then(|| median(v))
    };
    let (first, total) = (med(|p| p.first_packet_ms), med(|p| p.total_ms));
    if first.is_none() || total.is_none() {
        return;
    }
    (row.first_packet_ms, row.total_ms) = (first, total);
    row.connect_ms = med(|p| p.connect_ms);
    row.first_echo_ms = med(|p| p.first_echo_ms);
    row.total_after_connect_ms = med(|p| p.total_after_connect_ms);
}

/// Rows with a TCP first packet (TCP probes).
fn rows(t: &Table) -> impl Iterator<Item = &Row> {
    t.scenarios.iter().filter(|r| r.first_packet_ms.is_some())
}

/// Whether the table has TCP probe rows.
pub fn shown(t: &Table) -> bool {
    rows(t).next().is_some()
}

fn cells(r: &Row) -> Vec<String> {
    vec![
        r.name.clone(),
        opt(r.first_echo_ms, 2),
        opt(r.total_after_connect_ms, 2),
        opt(r.connect_ms, 2),
        opt(r.first_packet_ms, 2),
        opt(r.total_ms, 2),
    ]
}

/// The block's rows, as the text, Markdown and HTML tables show them.
pub fn table_rows(t: &Table) -> Vec<Vec<String>> {
    rows(t).map(cells).collect()
}

/// The block for a terminal: title, aligned columns, legend (nothing without TCP probe rows).
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
    use std::collections::BTreeMap;

    use npt_result::any::AnyBody;

    use super::super::{table, write_markdown, write_text, Input};
    use super::TITLE;

    /// A TCP probe's result with these figures (ms).
    fn tcp(name: &str, connect: f64, echo: f64, after: f64) -> Input {
        let mut doc = crate::page::test_probe([25_000_000u64].into_iter(), &[]);
        if let AnyBody::Probe(b) = &mut doc.body {
            let s = &mut b.summary;
            s.connect_ms = Some(connect);
            s.first_echo_ms = Some(echo);
            s.first_packet_ms = Some(connect + echo);
            s.total_after_connect_ms = Some(after);
            s.total_ms = Some(connect + after);
        }
        Input {
            name: name.into(),
            path: format!("{name}.json"),
            doc,
        }
    }

    /// quic-tun's table is read off by name: its first packet latency is the first echo
    /// after the connect, its total the time after it; npt's, connect included, beside them.
    #[test]
    fn tcp_rows_read_as_quic_tuns_table() {
        let inputs = [
            tcp("direct-0%", 25.0, 25.5, 1500.25),
            tcp("forwarded-0%", 0.1, 50.5, 1525.0),
        ];
        let t = table(&inputs, None, &BTreeMap::new()).unwrap();
        let r = &t.scenarios[1];
        assert_eq!(
            (r.first_echo_ms, r.total_after_connect_ms),
            (Some(50.5), Some(1525.0))
        );
        assert_eq!((r.first_packet_ms, r.connect_ms), (Some(50.6), Some(0.1)));
        let mut text = Vec::new();
        write_text(&mut text, &t).unwrap();
        let text = String::from_utf8(text).unwrap();
        let block: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("TCP first"))
            .collect();
        assert!(
            block[1].starts_with("scenario      first packet latency  total latency"),
            "{text}"
        );
        let cells: Vec<&str> = block[2].split_whitespace().collect();
        assert_eq!(
            cells,
            ["direct-0%", "25.50", "1500.25", "25.00", "50.50", "1525.25"]
        );
        assert!(block[4].starts_with("(first packet latency = the first echo alone"));
        let mut md = Vec::new();
        write_markdown(&mut md, &t).unwrap();
        let md = String::from_utf8(md).unwrap();
        assert!(
            md.contains("| forwarded-0% | 50.50 | 1525.00 | 0.10 | 50.60 | 1525.10 |"),
            "{md}"
        );
        // The HTML page has it as a table of its own.
        let page = crate::compare::page::html_page(&t, &[], "t");
        let block = page
            .tables
            .iter()
            .find(|x| x.caption.starts_with(TITLE))
            .unwrap();
        assert_eq!(block.header[1], "first packet latency");
        assert_eq!(block.rows[1][1], "50.50");
        // No TCP probe, no block.
        let mut udp = tcp("u", 1.0, 1.0, 1.0);
        if let AnyBody::Probe(b) = &mut udp.doc.body {
            (b.summary.first_packet_ms, b.summary.total_ms) = (None, None);
        }
        let t = table(&[udp], None, &BTreeMap::new()).unwrap();
        let mut text = Vec::new();
        write_text(&mut text, &t).unwrap();
        assert!(!String::from_utf8(text).unwrap().contains("TCP first"));
    }
}
