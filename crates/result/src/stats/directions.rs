//! A probe's per-direction figures as a value that adds ([`DirStats`]) and its block
//! ([`crate::directions::PathDirections`]): counters and flow outcomes add, the histograms
//! (dwell, IPDV and one-way delay each way) are in the probe's [`HistMap`] and add there, so
//! `npt merge` of parts is exact; a merged split is exact when every part's was.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use super::HistMap;
use crate::common::loss_pct;
use crate::directions::{hist, FlowsSettled, OneWay, PathDirections};

/// Per-direction counts of one probe or of parts added.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirStats {
    pub flows: FlowsSettled,
    /// The clock assumption (`same-host`, `synced`, `none`; `mixed` once parts differ).
    pub clock: String,
    /// Loss, duplicates and reordering are counted per direction (UDP; not over TCP).
    pub counts: bool,
    pub lost_up: u64,
    pub lost_down: u64,
    pub unplaced: u64,
    pub dup_up: u64,
    pub dup_down: u64,
    pub reorder_up: u64,
    pub reorder_down: u64,
    pub stamped: u64,
    pub owd_negative: u64,
    pub owd_min_ms: Option<f64>,
    pub far_error_ms: Option<f64>,
}

impl AddAssign<&FlowsSettled> for FlowsSettled {
    fn add_assign(&mut self, o: &FlowsSettled) {
        self.reflected += o.reflected;
        self.exact += o.exact;
        self.no_report += o.no_report;
        self.no_query += o.no_query;
        self.unknown_flow += o.unknown_flow;
        self.disagree += o.disagree;
    }
}

impl AddAssign<&DirStats> for DirStats {
    fn add_assign(&mut self, o: &DirStats) {
        if self.clock.is_empty() {
            self.clock = o.clock.clone();
        } else if !o.clock.is_empty() && self.clock != o.clock {
            self.clock = "mixed".to_string();
        }
        self.flows += &o.flows;
        self.counts |= o.counts;
        self.lost_up += o.lost_up;
        self.lost_down += o.lost_down;
        self.unplaced += o.unplaced;
        self.dup_up += o.dup_up;
        self.dup_down += o.dup_down;
        self.reorder_up += o.reorder_up;
        self.reorder_down += o.reorder_down;
        self.stamped += o.stamped;
        self.owd_negative += o.owd_negative;
        self.owd_min_ms = super::min_opt(self.owd_min_ms, o.owd_min_ms);
        self.far_error_ms = super::max_opt(self.far_error_ms, o.far_error_ms);
    }
}

impl DirStats {
    /// The values a saved block was made from.
    pub fn from_block(b: &PathDirections) -> DirStats {
        let n = |x: Option<u64>| x.unwrap_or(0);
        DirStats {
            flows: b.flows,
            clock: b.clock.clone(),
            counts: b.up.lost.is_some(),
            lost_up: n(b.up.lost),
            lost_down: n(b.down.lost),
            unplaced: n(b.unplaced),
            dup_up: n(b.up.duplicated),
            dup_down: n(b.down.duplicated),
            reorder_up: n(b.up.reordered),
            reorder_down: n(b.down.reordered),
            stamped: b.stamped,
            owd_negative: b.owd_negative,
            owd_min_ms: b.owd_min_ms,
            far_error_ms: b.far_error_ms,
        }
    }

    /// The block: `sent` and `refused` are the probe's totals (the denominators of each
    /// direction's loss), `h` its histograms.
    pub fn block(&self, sent: u64, refused: u64, h: &HistMap) -> PathDirections {
        let counts = self.counts;
        let some = |x: u64| counts.then_some(x);
        // Down carried the replies the server sent: what reached it and was not refused.
        let replies = sent.saturating_sub(refused).saturating_sub(self.lost_up);
        let owd = |name: &str| {
            (self.clock != "none" && !self.clock.is_empty())
                .then(|| h.summary_opt(name))
                .flatten()
                .filter(|s| s.count > 0)
        };
        PathDirections {
            exact: self.flows.reflected > 0 && self.flows.exact == self.flows.reflected,
            flows: self.flows,
            clock: if self.clock.is_empty() {
                "none".to_string()
            } else {
                self.clock.clone()
            },
            up: OneWay {
                lost: some(self.lost_up),
                loss_pct: counts.then(|| loss_pct(self.lost_up, sent)),
                duplicated: some(self.dup_up),
                reordered: some(self.reorder_up),
                ipdv_ms: h.summary(hist::IPDV_UP),
                owd_ms: owd(hist::OWD_UP),
            },
            down: OneWay {
                lost: some(self.lost_down),
                loss_pct: counts.then(|| loss_pct(self.lost_down, replies)),
                duplicated: some(self.dup_down),
                reordered: some(self.reorder_down),
                ipdv_ms: h.summary(hist::IPDV_DOWN),
                owd_ms: owd(hist::OWD_DOWN),
            },
            unplaced: (counts && self.unplaced > 0).then_some(self.unplaced),
            dwell_ms: h.summary(hist::DWELL),
            stamped: self.stamped,
            owd_negative: self.owd_negative,
            owd_min_ms: self.owd_min_ms,
            far_error_ms: self.far_error_ms,
        }
    }
}
