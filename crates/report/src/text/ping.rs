//! The closing lines `npt ping` prints, and `npt report` prints again.

use std::io::{self, Write};

use npt_result::ping::PingBody;
use npt_result::StopReason;

/// The closing lines of `npt ping` (`--- TARGET ping statistics ---` …); `took_s` is the run's
/// length.
pub fn write_ping(
    out: &mut dyn Write,
    b: &PingBody,
    stopped_by: StopReason,
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
        StopReason::Count => String::new(),
        why => format!(", stopped by {why}"),
    };
    let refused = match s.refused_by_server {
        0 => String::new(),
        r => format!(", {r} refused"),
    };
    writeln!(
        out,
        "{} sent, {} received{refused}, {:.1}% loss, {} late, time {:.2} s{stopped}",
        s.sent, s.received, s.loss_pct, s.late, took_s
    )?;
    if s.refused_by_server > 0 {
        writeln!(
            out,
            "{}",
            super::refused_line(s.refused_by_server, "attempts")
        )?;
    }
    if s.received > 0 {
        writeln!(
            out,
            "rtt min/avg/p50/p90/max/stddev = {:.3}/{:.3}/{:.3}/{:.3}/{:.3}/{:.3} ms",
            s.min_ms, s.avg_ms, s.p50_ms, s.p90_ms, s.max_ms, s.stddev_ms
        )?;
    }
    if let Some(p) = &b.phases {
        for (name, l) in [("connect", &p.connect_ms), ("echo", &p.echo_ms)] {
            writeln!(
                out,
                "{name:<7} min/avg/p50/p95/max = {:.3}/{:.3}/{:.3}/{:.3}/{:.3} ms",
                l.min_ms, l.avg_ms, l.p50_ms, l.p95_ms, l.max_ms
            )?;
        }
    }
    if let Some(setup) = &b.setup {
        super::setup::write_block(out, "setup:", setup)?;
    }
    if !b.errors.by_kind.is_empty() {
        let kinds: Vec<String> = b
            .errors
            .by_kind
            .iter()
            .map(|(k, v)| format!("{k} {}", v.count))
            .collect();
        writeln!(out, "errors: {}", kinds.join(", "))?;
        // The kind that needs words: what closed, and what it means.
        let unanswered = npt_result::error::ErrorKind::ClosedUnanswered.name();
        if let Some(e) = b.errors.by_kind.iter().find(|(k, _)| *k == unanswered) {
            if let Some(ex) = e.1.examples.first() {
                writeln!(out, "  {unanswered}: e.g. {ex}")?;
            }
        }
    }
    // What answered, where something did (nothing answering needs no caveat about whom).
    if let Some(w) = s
        .far_end
        .as_deref()
        .filter(|_| s.received > 0)
        .and_then(far_end)
    {
        writeln!(out, "far end: {w}")?;
    }
    if let Some(n) = b.note.as_ref().filter(|_| s.received > 0) {
        writeln!(out, "note: {n}")?;
    }
    Ok(())
}

/// The words for an echo's `summary.far_end` (as `npt probe` names it); nothing for `none`.
fn far_end(name: &str) -> Option<&str> {
    use npt_result::far_end::{ECHO, MIXED, NPT_SERVE, STAMP};
    Some(match name {
        NPT_SERVE => "npt serve",
        ECHO => "plain echo (returns bytes unchanged; under --raw, any echo does)",
        STAMP => "STAMP reflector (RFC 8762)",
        MIXED => "mixed: replies from more than one kind of far end (npt serve, plain echo)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use npt_result::any::{from_value, AnyBody};
    use npt_result::ping::PingSummary;
    use npt_result::probe::Errors;
    use npt_result::Document;

    use super::*;

    /// A ping read back as any result prints the closing lines `npt ping` printed.
    #[test]
    fn a_ping_reads_as_one_result_too() {
        let mut h = npt_stats::Histogram::new();
        for v in [1_000_000, 3_000_000] {
            h.record(v);
        }
        let body = PingBody {
            target: "tcp://127.0.0.1:1".into(),
            proto: "tcp".into(),
            addresses: vec!["127.0.0.1:1".into()],
            summary: PingSummary {
                sent: 3,
                received: 2,
                lost: 1,
                ..Default::default()
            },
            latency: BTreeMap::new(),
            errors: Errors::default(),
            histogram: h.to_serialized(),
            measured_from: None,
            answered_by: None,
            note: None,
            phases: None,
            setup: None,
        };
        let now = std::time::SystemTime::now();
        let doc = Document::new(
            "ping",
            now,
            now,
            npt_result::StopReason::Count,
            serde_json::json!({}),
            body,
        );
        let r = from_value("p.json", serde_json::to_value(&doc).unwrap()).unwrap();
        assert!(matches!(r.body, AnyBody::Ping(_)));
        let mut out = Vec::new();
        crate::text::write_text(&mut out, &r).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("--- tcp://127.0.0.1:1 ping statistics ---\n3 sent, 2 received"),
            "{text}"
        );
    }

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
        write_ping(&mut out, &b, StopReason::Count, 1.0).unwrap();
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
        write_ping(&mut out, &again, StopReason::Count, 1.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(
                "--- tcp://10.0.3.2:7777 ping statistics, measured from npt://10.0.1.2:7777 ---\n"
            ),
            "{text}"
        );
    }
}
