//! `npt bulk` as a [`Workload`]: a [`Config`] runs through [`crate::run`] and records itself in
//! the result's `config`. It hands over every interval it closes (the lines `npt bulk` prints)
//! and the `--metrics` totals ([`crate::metrics`]).

use std::sync::Arc;
use std::time::Duration;

use npt_result::bulk::BulkBody;
use npt_result::workload::{Finished, Length, Progress, Stop, Workload};

use crate::{BulkError, Config};

/// How long a bulk run takes at most: its duration and the timeout of its last exchange.
pub fn length(duration: Duration, timeout: Duration) -> Length {
    Length::planned(duration.saturating_add(timeout))
}

impl Workload for Config {
    type Body = BulkBody;
    type Error = BulkError;

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "target": self.target.to_string(),
            "proto": self.target.proto.name(),
            "direction": self.ways.name(),
            "streams": self.streams,
            "duration_s": self.duration.as_secs_f64(),
            "interval_s": self.interval.as_secs_f64(),
            // UDP: the flow's rate; streams: each stream's pace (--rate).
            "rate_bps": self.udp.map(|u| u.rate_bps).or(self.rate_bps),
            "size": self.udp.map(|u| u.size),
            "timeout_s": self.timeout.as_secs_f64(),
            "via": self.via.as_ref().map(|v| v.to_string()),
            "congestion": self.congestion,
        })
    }

    fn length(&self) -> Option<Length> {
        Some(length(self.duration, self.timeout))
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        on_interval: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<BulkBody>, BulkError> {
        crate::run(self, stop, on_interval)
    }
}
