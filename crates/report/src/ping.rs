//! The body of a `kind = "ping"` result document: a `summary` users script against, the NPT
//! `latency.<proto>` and `errors` blocks every npt result carries, and the RTT histogram so
//! results merge exactly; and its text summary, so that `npt report` prints what `npt ping`
//! printed. Here rather than in npt-ping so that every reader reads it as one typed result
//! ([`crate::result::Workload::Ping`]).
//!
//! Field names are what users script against (README, `npt ping`); `schema/ping.schema.json`
//! checks them.

use std::collections::BTreeMap;
use std::io::{self, Write};

use npt_stats::SerializedHistogram;
use serde::{Deserialize, Serialize};

use crate::probe::{Errors, NptLatency};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PingBody {
    pub target: String,
    pub proto: String,
    /// Addresses the target resolved to, in the order they were tried.
    pub addresses: Vec<String>,
    pub summary: PingSummary,
    /// `latency.<tcp|udp|quic>`: the NPT latency block.
    pub latency: BTreeMap<String, NptLatency>,
    /// `error_rate` = total_errors ÷ sent (`attempts` is not written).
    pub errors: Errors,
    /// The RTT histogram (ns).
    pub histogram: SerializedHistogram,
    /// `npt ping --from`: the hop agent (`npt://HOST:PORT`) the RTTs were measured from; absent
    /// when measured from this host (and in files written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_from: Option<String>,
}

/// Counts and RTT statistics in milliseconds (zeros when nothing answered).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PingSummary {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub loss_pct: f64,
    /// Answers that came after their attempt had timed out, or twice.
    pub late: u64,
    pub min_ms: f64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub stddev_ms: f64,
}

/// The closing lines of `npt ping` (`--- TARGET ping statistics ---` …); `took_s` is the run's
/// length.
pub fn write_text(
    out: &mut dyn Write,
    b: &PingBody,
    stopped_by: &str,
    took_s: f64,
) -> io::Result<()> {
    let s = &b.summary;
    match &b.measured_from {
        Some(agent) => writeln!(
            out,
            "--- {} ping statistics, measured from {agent} ---",
            b.target
        )?,
        None => writeln!(out, "--- {} ping statistics ---", b.target)?,
    }
    let stopped = match stopped_by {
        "count" => String::new(),
        why => format!(", stopped by {why}"),
    };
    writeln!(
        out,
        "{} sent, {} received, {:.1}% loss, {} late, time {:.2} s{stopped}",
        s.sent, s.received, s.loss_pct, s.late, took_s
    )?;
    if s.received > 0 {
        writeln!(
            out,
            "rtt min/avg/p50/p90/max/stddev = {:.3}/{:.3}/{:.3}/{:.3}/{:.3}/{:.3} ms",
            s.min_ms, s.avg_ms, s.p50_ms, s.p90_ms, s.max_ms, s.stddev_ms
        )?;
    }
    if !b.errors.by_kind.is_empty() {
        let kinds: Vec<String> = b
            .errors
            .by_kind
            .iter()
            .map(|(k, v)| format!("{k} {}", v.count))
            .collect();
        writeln!(out, "errors: {}", kinds.join(", "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(json: &str) -> PingBody {
        serde_json::from_str(json).unwrap()
    }

    const BEFORE: &str = r#"{"target": "tcp://10.0.3.2:7777", "proto": "tcp",
        "addresses": ["10.0.3.2:7777"],
        "summary": {"sent": 1, "received": 1, "lost": 0, "loss_pct": 0.0, "late": 0,
            "min_ms": 69.0, "avg_ms": 69.0, "p50_ms": 69.0, "p90_ms": 69.0, "p95_ms": 69.0,
            "p99_ms": 69.0, "max_ms": 69.0, "stddev_ms": 0.0},
        "latency": {}, "errors": {"total_errors": 0, "error_rate": 0.0, "by_kind": {}},
        "histogram": {"encoding": "x", "unit": "ns", "data": ""}}"#;

    /// Files written before `--from` existed have no `measured_from`: they read, render and
    /// write back as they were.
    #[test]
    fn measured_from_is_optional_and_only_written_when_set() {
        let b = body(BEFORE);
        assert_eq!(b.measured_from, None);
        let v = serde_json::to_value(&b).unwrap();
        assert!(v.get("measured_from").is_none(), "{v}");
        let mut out = Vec::new();
        write_text(&mut out, &b, "count", 1.0).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .starts_with("--- tcp://10.0.3.2:7777 ping statistics ---\n"));

        let mut b = b;
        b.measured_from = Some("npt://10.0.1.2:7777".into());
        let v = serde_json::to_value(&b).unwrap();
        assert_eq!(v["measured_from"], "npt://10.0.1.2:7777");
        let again: PingBody = serde_json::from_value(v).unwrap();
        assert_eq!(again.measured_from.as_deref(), Some("npt://10.0.1.2:7777"));
        let mut out = Vec::new();
        write_text(&mut out, &again, "count", 1.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(
                "--- tcp://10.0.3.2:7777 ping statistics, measured from npt://10.0.1.2:7777 ---\n"
            ),
            "{text}"
        );
    }
}
