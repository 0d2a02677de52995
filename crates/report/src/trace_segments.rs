//! The layout of a trace's per-segment tables beside the waterfall (`npt trace --mtu`,
//! `--dscp`): one row per segment — its number, what was read, up, down — the failed reads
//! under it and a note, in text, Markdown and HTML. What each table says is its module's
//! ([`crate::trace_mtu`], [`crate::trace_marking`]); how it is laid out is this one's.

use std::io::{self, Write};

use npt_result::trace::{Leg, TraceBody};

use crate::html::Table;

/// One per-segment table, ready to write.
pub struct SegmentTable {
    /// The HTML caption's start: `Path MTU per segment`.
    pub title: &'static str,
    pub head: [String; 4],
    pub rows: Vec<[String; 4]>,
    /// Each failed read: `segment N mtu: why`.
    pub errors: Vec<String>,
    pub note: &'static str,
}

/// What a table reads of one segment's figures `T`.
pub struct Reading<'a, T> {
    pub title: &'static str,
    /// The second column's head (`mtu searched`) and the word of an error line (`mtu`).
    pub what: &'static str,
    pub word: &'static str,
    pub note: &'static str,
    /// The segment's figures, if this reading was made.
    pub of: &'a dyn Fn(&Leg) -> Option<&T>,
    /// Where it was read to, up and down in words.
    pub cells: &'a dyn Fn(&T) -> [String; 3],
    /// Why it failed, if it did.
    pub error: &'a dyn Fn(&T) -> Option<&String>,
}

impl SegmentTable {
    /// The table of `r` over `b`'s segments; `None` when no segment has its figures.
    pub fn of<T>(b: &TraceBody, r: &Reading<'_, T>) -> Option<SegmentTable> {
        if b.segments.iter().all(|l| (r.of)(l).is_none()) {
            return None;
        }
        let each = || {
            b.segments
                .iter()
                .enumerate()
                .filter_map(|(i, l)| (r.of)(l).map(|m| (i + 1, m)))
        };
        Some(SegmentTable {
            title: r.title,
            head: ["", r.what, "up", "down"].map(String::from),
            rows: each()
                .map(|(n, m)| {
                    let [to, up, down] = (r.cells)(m);
                    [format!("segment {n}"), to, up, down]
                })
                .collect(),
            errors: each()
                .filter_map(|(n, m)| Some(format!("segment {n} {}: {}", r.word, (r.error)(m)?)))
                .collect(),
            note: r.note,
        })
    }

    /// The text table: columns padded to their widest cell, the last one not.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut w = [0usize; 4];
        for r in std::iter::once(&self.head).chain(&self.rows) {
            for (k, c) in r.iter().enumerate() {
                w[k] = w[k].max(c.chars().count());
            }
        }
        writeln!(out)?;
        for r in std::iter::once(&self.head).chain(&self.rows) {
            let line = format!(
                "{:<w0$}  {:<w1$}  {:<w2$}  {}",
                r[0],
                r[1],
                r[2],
                r[3],
                w0 = w[0],
                w1 = w[1],
                w2 = w[2]
            );
            writeln!(out, "{}", line.trim_end())?;
        }
        for e in &self.errors {
            writeln!(out, "{e}")?;
        }
        writeln!(out, "{}", self.note)
    }

    /// The Markdown table (`|` in a cell escaped).
    pub fn write_markdown(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "| {} |", self.head.join(" | "))?;
        writeln!(out, "|---|---|---|---|")?;
        for r in &self.rows {
            let c: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
            writeln!(out, "| {} |", c.join(" | "))?;
        }
        writeln!(out)?;
        for e in &self.errors {
            writeln!(out, "{}  ", e.replace('|', "\\|"))?;
        }
        writeln!(out, "{}", self.note)?;
        writeln!(out)
    }

    /// The HTML table, the failed reads in its caption.
    pub fn html(self) -> Table {
        let caption = if self.errors.is_empty() {
            format!("{} — {}", self.title, self.note)
        } else {
            format!("{} — {}. {}", self.title, self.note, self.errors.join("; "))
        };
        Table {
            caption,
            header: self.head.to_vec(),
            rows: self.rows.into_iter().map(|r| r.to_vec()).collect(),
        }
    }
}
