//! The text summary `npt http` prints, and `npt report` / `npt merge` print again.

use npt_result::http::HttpBody;
use npt_result::Document;
use npt_stats::Summary;

use crate::text;

fn lat(s: &Summary) -> String {
    format!(
        "min {}  mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (ms)",
        text::ms(s.min),
        text::ms(s.mean),
        text::ms(s.p50),
        text::ms(s.p90),
        text::ms(s.p99),
        text::ms(s.p999),
        text::ms(s.max)
    )
}

/// The text summary `npt http` prints, and `npt report` / `npt merge` print again.
pub fn write_http(w: &mut dyn std::io::Write, doc: &Document<HttpBody>) -> std::io::Result<()> {
    let (b, stopped_by) = (&doc.body, &doc.stopped_by);
    let s = &b.summary;
    let shape = if s.new_conn {
        "new connection per request".to_string()
    } else if s.protocol == "h2" {
        format!("{} connections × {} streams", s.connections, s.streams)
    } else {
        format!("{} keep-alive connections", s.connections)
    };
    let mode = match s.rate {
        Some(r) => format!("open loop at {r} req/s"),
        None => format!("closed loop, {} concurrent", s.connections * s.streams),
    };
    writeln!(
        w,
        "npt http {} {}{} → {}: {}, {}",
        s.method,
        s.url,
        if s.tls { " (TLS)" } else { "" },
        s.target,
        s.protocol,
        shape
    )?;
    writeln!(
        w,
        "  mode        {mode}; {:.2} s, stopped by {stopped_by}",
        s.duration_s
    )?;
    if let Some(why) = &s.downgrade {
        writeln!(w, "  protocol    {} (fell back from h2: {why})", s.protocol)?;
    }
    if let Some(cs) = &b.cold_start {
        writeln!(
            w,
            "  cold start  ready after {} ms, first good request {} ms (status {}, {} attempts): `{}`",
            text::ms(cs.ready_ms),
            text::ms(cs.first_request_ms),
            cs.first_status,
            cs.attempts,
            cs.command
        )?;
        if let (Some(port), Some(l), Some(a)) =
            (&cs.port, cs.listening_ms, cs.listening_to_ready_ms)
        {
            let within = cs
                .listening_within_ms
                .map_or(String::new(), |x| format!(", seen to {} ms", text::ms(x)));
            writeln!(
                w,
                "              start → listening {} ms ({port}{within}), listening → first good response {} ms",
                text::ms(l),
                text::ms(a)
            )?;
        }
        if let (Some(sr), Some(g)) = (cs.service_ready_ms, cs.gateway_ms) {
            writeln!(
                w,
                "              service answered on its own port after {} ms; the gateway's own part {} ms",
                text::ms(sr),
                text::ms(g)
            )?;
        }
    }
    writeln!(
        w,
        "  requests    {}  ({:.1} req/s)   2xx {}   errors {}",
        s.requests, s.rps, s.ok, s.errors
    )?;
    if s.in_flight_at_end > 0 {
        writeln!(
            w,
            "  in flight   {} at the end, the oldest {:.1} ms (not in the latencies)",
            s.in_flight_at_end, s.oldest_in_flight_ms
        )?;
    }
    let codes: Vec<String> = s.status.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    writeln!(
        w,
        "  status      {}",
        if codes.is_empty() {
            "-".into()
        } else {
            codes.join("  ")
        }
    )?;
    if let Some(u) = &s.latency_uncorrected_ms {
        writeln!(
            w,
            "  latency     {}   (from intended send time)",
            lat(&s.latency_ms)
        )?;
        writeln!(w, "  uncorrected {}   (from actual send)", lat(u))?;
        let timer = match &b.health.timer_lateness_ms {
            Some(t) => format!(
                "; pacer timer late p50 {:.1} p99 {:.1} max {:.1} µs",
                t.p50 * 1e3,
                t.p99 * 1e3,
                t.max * 1e3
            ),
            None => String::new(),
        };
        writeln!(
            w,
            "  schedule    {} sends more than {} ms behind schedule{timer}",
            b.health.sends_behind_schedule.unwrap_or(0),
            b.health.behind_threshold_ms.unwrap_or(0.0)
        )?;
    } else {
        writeln!(w, "  latency     {}", lat(&s.latency_ms))?;
    }
    let p = &s.phases_ms;
    let mut phases = format!(
        "connect p50 {} p99 {} ({} conns)",
        text::ms(p.connect.p50),
        text::ms(p.connect.p99),
        s.connections_opened
    );
    if let Some(t) = &p.tls {
        phases += &format!("   tls p50 {} p99 {}", text::ms(t.p50), text::ms(t.p99));
    }
    phases += &format!(
        "   ttfb p50 {} p99 {}   complete p50 {} p99 {}  (ms)",
        text::ms(p.ttfb.p50),
        text::ms(p.ttfb.p99),
        text::ms(p.complete.p50),
        text::ms(p.complete.p99)
    );
    writeln!(w, "  phases      {phases}")?;
    if let Some(setup) = &b.setup {
        text::setup::write_block(w, "  setup      ", setup)?;
    }
    let own_load = b.hosts.values().any(|h| h.connections.is_some());
    if b.hosts.len() > 1 || own_load {
        if own_load {
            writeln!(w, "  hosts       each on connections of its own")?;
        } else {
            writeln!(
                w,
                "  hosts       sharing the connections round-robin (the same rate each)"
            )?;
        }
        for (name, h) in &b.hosts {
            let load = match (h.connections, h.rate) {
                (_, Some(r)) => format!("  {r} req/s asked"),
                (Some(c), None) => format!("  {c} conns"),
                (None, None) => String::new(),
            };
            writeln!(
                w,
                "    {name:<20} {:>9} req  {:>10.1} req/s  p50 {}  p99 {} ms  errors {}{load}",
                h.requests,
                h.rps,
                text::ms(h.latency_ms.p50),
                text::ms(h.latency_ms.p99),
                h.errors
            )?;
        }
    }
    for (kind, k) in b.errors.by_kind.iter() {
        writeln!(
            w,
            "  error       {kind}: {}  e.g. {}",
            k.count,
            k.examples.first().map_or("", |s| s.as_str())
        )?;
    }
    writeln!(
        w,
        "  bodies      sent {}  received {}  (headers excluded)",
        text::bits(s.throughput_bps.up),
        text::bits(s.throughput_bps.down)
    )?;
    writeln!(
        w,
        "  client      cpu {:.0}%  max rss {} MiB",
        b.health.cpu_pct,
        b.health.max_rss_bytes / (1 << 20)
    )?;
    // Written since the client chose its own thread count (config.threads / threads_why).
    if let (Some(n), Some(why)) = (
        doc.config.get("threads").and_then(|v| v.as_u64()),
        doc.config.get("threads_why").and_then(|v| v.as_str()),
    ) {
        writeln!(w, "  threads     {n} ({why})")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use npt_result::http::{hist, ColdStart, HostResult, HttpSummary};
    use npt_result::probe::{Errors, Health};

    use super::*;

    fn summary(v: &[u64]) -> Summary {
        let mut h = npt_stats::Histogram::new();
        for &x in v {
            h.record(x);
        }
        h.summary()
    }

    /// Ten responses (one 503) over `hosts` and one refused request, as the collector of
    /// `npt http` would sum them up.
    fn body(open_loop: bool, hosts: &[&str]) -> HttpBody {
        let lat = summary(&[200_000; 10]);
        let mut status = BTreeMap::new();
        status.insert("200".to_string(), 9);
        status.insert("503".to_string(), 1);
        let mut by_kind = npt_stats::ErrorCounts::default();
        by_kind.record("refused", || "connection refused".into());
        let empty = npt_stats::Histogram::new().to_serialized();
        let host = |i: usize| HostResult {
            requests: 10 / hosts.len() as u64,
            ok: 10 / hosts.len() as u64 - u64::from(i == 0),
            latency_ms: lat,
            ..HostResult::default()
        };
        HttpBody {
            summary: HttpSummary {
                url: "http://127.0.0.1:1/".into(),
                method: "GET".into(),
                protocol: "http/1.1".into(),
                connections: 2,
                streams: 1,
                rate: open_loop.then_some(1000.0),
                mode: if open_loop { "open" } else { "closed" }.into(),
                open_loop,
                requests: 10,
                ok: 9,
                errors: 1,
                rps: 10.0,
                duration_s: 1.0,
                status,
                latency_ms: lat,
                latency_uncorrected_ms: open_loop.then_some(lat),
                ..HttpSummary::default()
            },
            hosts: hosts
                .iter()
                .enumerate()
                .map(|(i, h)| (h.to_string(), host(i)))
                .collect(),
            cold_start: None,
            health: Health::default(),
            latency: BTreeMap::new(),
            errors: Errors::new(by_kind, 11),
            histograms: [hist::LATENCY, hist::TTFB, hist::CONNECT]
                .iter()
                .map(|k| (k.to_string(), empty.clone()))
                .collect(),
            intervals: Vec::new(),
            setup: None,
        }
    }

    fn rendered(b: &HttpBody) -> String {
        let now = std::time::SystemTime::now();
        let doc = Document::new(
            "http",
            now,
            now,
            npt_result::StopReason::Duration,
            serde_json::Value::Null,
            b.clone(),
        );
        let mut out = Vec::new();
        write_http(&mut out, &doc).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn summary_text_closed_loop_one_host() {
        let t = rendered(&body(false, &["a.test"]));
        assert!(t.contains("closed loop, 2 concurrent"), "{t}");
        assert!(
            t.contains("requests    10  (10.0 req/s)   2xx 9   errors 1"),
            "{t}"
        );
        assert!(t.contains("status      200: 9  503: 1"), "{t}");
        assert!(
            t.contains("error       refused: 1  e.g. connection refused"),
            "{t}"
        );
        assert!(!t.contains("uncorrected"), "{t}");
        assert!(
            !t.contains("hosts"),
            "one host needs no per-host table: {t}"
        );
    }

    #[test]
    fn per_host_loads_are_stated() {
        let mut b = body(false, &["fast.test", "slow.test"]);
        for h in b.hosts.values_mut() {
            h.connections = Some(10);
        }
        let t = rendered(&b);
        assert!(t.contains("each on connections of its own"), "{t}");
        assert!(t.contains("errors 0  10 conns"), "{t}");
    }

    #[test]
    fn summary_text_open_loop_hosts_and_cold_start() {
        let mut b = body(true, &["app1.test", "app2.test"]);
        b.cold_start = Some(ColdStart {
            command: "node app.js".into(),
            ready_ms: 201.0,
            first_request_ms: 11.7,
            attempts: 5,
            first_status: 200,
            port: Some("127.0.0.1:3000".into()),
            listening_ms: Some(170.0),
            listening_to_ready_ms: Some(31.0),
            listening_within_ms: Some(2.0),
            service_ready_ms: Some(176.0),
            service_first_request_ms: Some(1.0),
            gateway_ms: Some(25.0),
        });
        let t = rendered(&b);
        assert!(t.contains("open loop at 1000 req/s"), "{t}");
        assert!(t.contains("(from intended send time)"), "{t}");
        assert!(t.contains("uncorrected min"), "{t}");
        assert!(t.contains("app1.test") && t.contains("app2.test"), "{t}");
        assert!(t.contains("sharing the connections round-robin"), "{t}");
        assert!(t.contains("cold start  ready after 201"), "{t}");
        assert!(t.contains("`node app.js`"), "{t}");
        assert!(t.contains("start → listening 170"), "{t}");
        assert!(t.contains("seen to 2.00 ms"), "{t}");
        assert!(t.contains("the gateway's own part 25"), "{t}");
    }
}
