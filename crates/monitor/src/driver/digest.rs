//! What a round's own thread makes of its result document: its status, figures and stats
//! value, so that decoding and encoding histograms costs the round's thread, not the loop.

use std::sync::Arc;

use npt_result::any::AnyResult;
use npt_stats::Histogram;

use super::RunError;
use crate::kinds::{Kind, KindStats};
use crate::round::{Described, Status};

/// What a round's thread makes of its result.
pub(super) struct Digest {
    pub(super) status: Status,
    pub(super) detail: Option<String>,
    pub(super) figures: crate::kinds::Figures,
    pub(super) stats: Option<Vec<u8>>,
    pub(super) described: Option<Arc<Described>>,
    pub(super) headline: Option<Histogram>,
}

/// A round's result read back as its stats value, its figures and its status, on the round's
/// own thread (decoding and encoding histograms is its cost, not the loop's).
pub(super) fn digest(
    kind: Kind,
    r: Result<AnyResult, RunError>,
    prev: Option<Arc<Described>>,
) -> Digest {
    let doc = match r {
        Ok(d) => d,
        Err(e) => {
            return Digest {
                status: Status::Error,
                detail: Some(format!("{}: {}", e.kind, e.detail)),
                figures: Default::default(),
                stats: None,
                described: None,
                headline: None,
            }
        }
    };
    let (stats, meta) = match KindStats::of_doc(kind, &doc) {
        Ok(x) => x,
        Err(e) => {
            return Digest {
                status: Status::Error,
                detail: Some(format!("its result does not read back: {e}")),
                figures: Default::default(),
                stats: None,
                described: None,
                headline: None,
            }
        }
    };
    let figures = stats.figures();
    let answered = figures.count > 0
        || figures.goodput_bps.is_some_and(|g| g > 0.0)
        || figures.segments_ms.iter().any(Option::is_some);
    let errors = &doc.body.view().errors().by_kind;
    let detail = errors.iter().next().map(|(k, c)| match c.examples.first() {
        Some(e) => format!("{k}: {e}"),
        None => k.to_string(),
    });
    let described = Described {
        meta: serde_json::to_string(&meta).unwrap_or_default(),
        config: doc.config.to_string(),
    };
    let described = match prev {
        Some(p) if *p == described => p,
        _ => Arc::new(described),
    };
    Digest {
        status: if answered {
            Status::Ok
        } else if figures.refused > 0 {
            Status::Refused
        } else {
            Status::NoAnswer
        },
        detail,
        figures,
        stats: Some(stats.encode()),
        described: Some(described),
        headline: stats.headline().cloned(),
    }
}
