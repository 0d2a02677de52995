//! What `npt report` prints for a result of any kind — text, Markdown, CSV and an HTML page —
//! as one trait, [`Render`], that every kind of the registry implements (in
//! [`crate::kinds`]). Its defaults read only what every kind answers
//! (`npt_result::body::View`: the headline latency, errors, the interval series); a kind
//! overrides the whole of a format where its report has a layout of its own (a trace's
//! waterfall), or adds its own parts to the default page and CSV (a probe's one-way split, a
//! bulk's goodput) through the hooks below, so the page itself never asks which kind it
//! draws.
//!
//! The dispatch from the one result type to its kind's `Render` ([`of`]) is generated from the
//! registry of kinds (`npt_result::kinds!`): a new kind is rendered once it has an
//! `impl Render` (an empty one takes every default), and the build fails until it has.

use std::io::{self, Write};

use npt_result::any::{AnyBody, AnyResult};

use crate::compare::{self, CompareError, Input};
use crate::html::{Band, Chart, Page};
use crate::page::{Column, Timeline};

/// A renderer's failure: the output could not be written, or the document holds figures it
/// cannot show (a histogram that does not decode).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Doc(#[from] CompareError),
}

/// How one kind's result is rendered: each format whole (overridden where the kind has a
/// layout of its own), then the parts a kind adds to the default page and CSV.
pub trait Render {
    /// The text summary, as the command that made the result printed it.
    fn text(&self, w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
        default_text(w, doc)
    }

    /// Markdown: the compare table's row of this one result.
    fn markdown(&self, w: &mut dyn Write, doc: &AnyResult, path: &str) -> Result<(), RenderError> {
        default_markdown(w, doc, path)
    }

    /// A self-contained HTML page: a summary table and the charts of the series.
    fn html(&self, doc: &AnyResult, path: &str) -> Page {
        crate::page::html_page(doc, path)
    }

    /// Columns the CSV adds after the ones every kind has (none by default).
    fn csv_columns(&self) -> Vec<Column> {
        Vec::new()
    }

    /// Rows the page's summary table adds after the ones every kind has.
    fn summary_rows(&self) -> Vec<Vec<String>> {
        Vec::new()
    }

    /// Spans of the run shaded on every time chart (a loaded probe's phases).
    fn bands(&self) -> Vec<Band> {
        Vec::new()
    }

    /// What an interval's rate counts (docs/result-json.md, `rate_per_s`); `None` draws no
    /// rate chart.
    fn rate_unit(&self) -> Option<&'static str> {
        Some("requests/s")
    }

    /// Whether the errors chart also draws each interval's loss.
    fn draws_loss(&self) -> bool {
        false
    }

    /// Charts of the interval series drawn between latency and rate.
    fn series_charts(&self, _timeline: &Timeline, _bands: &[Band]) -> Vec<Chart> {
        Vec::new()
    }

    /// Charts drawn after the errors chart, before the latency's spectrum.
    fn charts(&self, _bands: &[Band]) -> Vec<Chart> {
        Vec::new()
    }
}

macro_rules! dispatch {
    ($($Var:ident($Body:ty) $(merge $Stats:ty)?;)*) => {
        /// The renderers of `body`'s kind.
        pub fn of(body: &AnyBody) -> &dyn Render {
            match body {
                $(AnyBody::$Var(b) => b,)*
            }
        }
    };
}
npt_result::kinds!(dispatch);

/// The text summary of any result, as the command that made it printed it.
pub fn text(w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
    of(&doc.body).text(w, doc)
}

/// Any result as Markdown (`path` names it).
pub fn markdown(w: &mut dyn Write, doc: &AnyResult, path: &str) -> Result<(), RenderError> {
    of(&doc.body).markdown(w, doc, path)
}

/// Any result as an HTML page (`path` names it).
pub fn html(doc: &AnyResult, path: &str) -> Page {
    of(&doc.body).html(doc, path)
}

/// What every kind can say: what it measured, how it ended, its headline latency and errors.
pub fn default_text(w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
    let b = doc.body.view();
    writeln!(w, "npt {} {}", doc.body.kind(), b.target())?;
    writeln!(
        w,
        "stopped by {} after {:.2} s",
        doc.stopped_by, doc.duration_s
    )?;
    let s = b.headline().summary();
    writeln!(w, "latency    {}", crate::text::summary_line(&s))?;
    let e = b.errors();
    if e.total_errors == 0 {
        writeln!(w, "errors     none")
    } else {
        writeln!(w, "errors     {}", e.total_errors)?;
        for (kind, k) in e.by_kind.iter() {
            writeln!(w, "  {kind:<12} {:>8}", k.count)?;
        }
        Ok(())
    }
}

/// The compare table's row of this one result.
pub fn default_markdown(w: &mut dyn Write, doc: &AnyResult, path: &str) -> Result<(), RenderError> {
    let input = Input {
        name: path.to_string(),
        path: path.to_string(),
        doc: doc.clone(),
    };
    let t = compare::table(&[input], None, &Default::default())?;
    compare::write_markdown(&mut &mut *w, &t)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty `impl Render` takes every default; a kind with its own layout keeps it.
    #[test]
    fn an_empty_impl_gets_the_defaults() {
        struct Plain;
        impl Render for Plain {}
        let doc = crate::page::test_probe([2_000_000, 3_000_000].into_iter(), &[]);
        let (mut own, mut default) = (Vec::new(), Vec::new());
        Plain.text(&mut default, &doc).unwrap();
        text(&mut own, &doc).unwrap();
        let default = String::from_utf8(default).unwrap();
        assert!(default.starts_with("npt probe "), "{default}");
        assert!(default.contains("latency    min 2.00"), "{default}");
        assert_ne!(
            String::from_utf8(own).unwrap(),
            default,
            "the probe's own text"
        );
    }
}
