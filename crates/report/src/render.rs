//! What `npt report` prints for a result of any kind: text, Markdown and an HTML page, each a
//! default that reads only what every kind answers (`npt_result::kinds::Body`: the headline
//! latency, errors, the interval series), which a kind overrides where its report has a layout
//! of its own ([`Render`]). The dispatch from the one result type to the kind's renderer is
//! generated from the registry of kinds (`npt_result::kinds!`), so a new kind needs no line
//! here to be rendered: without an `impl Render` it gets every default.
//!
//! How a kind without an impl falls back to the defaults, on stable Rust: the dispatch calls
//! `(&Pick(body)).layout()`. Method lookup tries the receiver `&Pick<B>` as it is first, which
//! [`Own`] (implemented for `Pick<B>` where `B: Render`) takes with `&self`; only when `B`
//! has no `Render` does it add a reference and find [`Plain`] (implemented for `&Pick<B>`
//! of any `B`). The choice is made where the concrete body type is known, at compile time.

use std::io::{self, Write};

use npt_result::any::{AnyResult, Workload};

use crate::compare::{self, CompareError, Input};
use crate::html::Page;

/// A renderer's failure: the output could not be written, or the document holds figures it
/// cannot show (a histogram that does not decode).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Doc(#[from] CompareError),
}

/// A kind's own layout: override what it prints differently from the defaults.
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
}

/// The renderers of one kind, as an object (what the dispatch hands back).
pub trait Layout {
    fn text(&self, w: &mut dyn Write, doc: &AnyResult) -> io::Result<()>;
    fn markdown(&self, w: &mut dyn Write, doc: &AnyResult, path: &str) -> Result<(), RenderError>;
    fn html(&self, doc: &AnyResult, path: &str) -> Page;
}

impl<B: Render> Layout for B {
    fn text(&self, w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
        Render::text(self, w, doc)
    }
    fn markdown(&self, w: &mut dyn Write, doc: &AnyResult, path: &str) -> Result<(), RenderError> {
        Render::markdown(self, w, doc, path)
    }
    fn html(&self, doc: &AnyResult, path: &str) -> Page {
        Render::html(self, doc, path)
    }
}

/// The defaults, for a kind with no layout of its own.
pub struct Defaults;

impl Render for Defaults {}

/// A body on its way to its layout (see the module's note).
pub struct Pick<'a, B>(pub &'a B);

/// Found first: the kind's own [`Render`].
pub trait Own<'a> {
    fn layout(&self) -> &'a dyn Layout;
}

impl<'a, B: Render> Own<'a> for Pick<'a, B> {
    fn layout(&self) -> &'a dyn Layout {
        self.0
    }
}

/// Found when the kind has no [`Render`]: the [`Defaults`].
pub trait Plain<'a> {
    fn layout(&self) -> &'a dyn Layout;
}

impl<'a, B> Plain<'a> for &Pick<'a, B> {
    fn layout(&self) -> &'a dyn Layout {
        &Defaults
    }
}

macro_rules! layouts {
    ($($Var:ident($Body:ty) $(merge $Stats:ty)?;)*) => {
        /// The renderers of `doc`'s kind.
        pub fn layout(doc: &AnyResult) -> &dyn Layout {
            match &doc.body {
                $(Workload::$Var(b) => (&Pick(b)).layout(),)*
            }
        }
    };
}
npt_result::kinds!(layouts);

/// The text summary of any result, as the command that made it printed it.
pub fn text(w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
    layout(doc).text(w, doc)
}

/// Any result as Markdown (`path` names it).
pub fn markdown(w: &mut dyn Write, doc: &AnyResult, path: &str) -> Result<(), RenderError> {
    layout(doc).markdown(w, doc, path)
}

/// Any result as an HTML page (`path` names it).
pub fn html(doc: &AnyResult, path: &str) -> Page {
    layout(doc).html(doc, path)
}

/// What every kind can say: what it measured, how it ended, its headline latency and errors.
pub fn default_text(w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
    let b = &doc.body;
    writeln!(w, "npt {} {}", b.kind(), b.target())?;
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

    /// A type with no `Render` falls back to the defaults; a kind with its own layout keeps it.
    #[test]
    fn a_kind_without_a_layout_gets_the_defaults() {
        let doc = crate::page::test_probe([2_000_000, 3_000_000].into_iter(), &[]);
        let plain = (&Pick(&())).layout();
        let (mut own, mut default) = (Vec::new(), Vec::new());
        plain.text(&mut default, &doc).unwrap();
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
