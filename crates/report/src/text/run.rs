//! The text summary `npt run` prints at the end, and `npt report` / `npt merge` print again.

use npt_result::run::RunBody;
use npt_result::Document;
use npt_stats::Summary;

/// The text summary printed at the end of `npt run`.
pub fn write_run(w: &mut impl std::io::Write, doc: &Document<RunBody>) -> std::io::Result<()> {
    let b = &doc.body;
    let s = &b.summary;
    let load = match s.arrival_rate_per_s {
        Some(r) => format!("{r} sessions/s (open model, at most {} active)", s.users),
        None => format!("{} users (closed loop, think time)", s.users),
    };
    writeln!(
        w,
        "npt run: {load}, mix {}, {:.1} s, seed {}, stopped by {}",
        s.mix, s.duration_s, s.seed, doc.stopped_by
    )?;
    writeln!(
        w,
        "  sessions {} started, {} completed; {} requests ({:.1}/s); max active users {}, connections {}",
        s.sessions_started,
        s.sessions_completed,
        s.requests,
        s.requests_per_s,
        s.max_active_users,
        s.max_active_connections
    )?;
    writeln!(
        w,
        "  payload {:.1} MB up, {:.1} MB down ({:.2} / {:.2} Mbit/s)",
        s.bytes.up / 1e6,
        s.bytes.down / 1e6,
        s.throughput_bps.up / 1e6,
        s.throughput_bps.down / 1e6
    )?;
    if s.in_flight_at_end > 0 {
        writeln!(
            w,
            "  in flight at the end: {} requests, the oldest {:.1} ms (not in the latencies)",
            s.in_flight_at_end, s.oldest_in_flight_ms
        )?;
    }
    writeln!(w)?;
    writeln!(
        w,
        "  request latency (ms)  {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "requests", "errors", "avg", "min", "p50", "p95", "p99", "max"
    )?;
    let row = |w: &mut dyn std::io::Write, name: &str, n: u64, e: u64, l: &Summary| {
        writeln!(
            w,
            "  {name:<20} {n:>9} {e:>7} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            l.mean, l.min, l.p50, l.p95, l.p99, l.max
        )
    };
    for (p, x) in &b.protocols {
        row(w, p, x.requests, x.errors, &x.latency_ms)?;
    }
    for (a, x) in &b.activities {
        row(w, &format!("  {a}"), x.requests, x.errors, &x.latency_ms)?;
    }
    writeln!(w)?;
    for (p, x) in &b.protocols {
        let m = |s: &Summary| {
            if s.count == 0 {
                "-".to_string()
            } else {
                format!("p50 {:.2} p99 {:.2}", s.p50, s.p99)
            }
        };
        writeln!(
            w,
            "  {p:<5} connections {:>7}  connect {}  handshake {}  first request {}",
            x.connections,
            m(&x.connect_ms),
            m(&x.handshake_ms),
            m(&x.first_request_ms)
        )?;
        if let Some(k) = &x.tcp_info {
            write!(w, "  {p:<5} ")?;
            super::tcpinfo::write_kernel(w, k)?;
        }
    }
    for (p, x) in &b.protocols {
        if let Some(s) = &x.setup {
            super::setup::write_block(w, &format!("  {p:<5} setup"), s)?;
        }
    }
    for (a, x) in &b.activities {
        if let (Some(t), Some(bps)) = (&x.ttfb_ms, x.transfer_bps) {
            writeln!(
                w,
                "  {a:<8} ttfb p50 {:.2} ms p99 {:.2} ms, throughput {:.1} Mbit/s per transfer",
                t.p50,
                t.p99,
                bps / 1e6
            )?;
        }
        if let Some(g) = &x.game {
            writeln!(
                w,
                "  {a:<8} sent {} received {} lost {} ({:.2}%) late {} dup {} reordered {}, jitter {:.3} ms",
                g.packets.sent, g.packets.received, g.packets.lost, g.loss_pct, g.packets.late, g.packets.duplicated, g.packets.reordered, g.jitter_ms
            )?;
            if g.refused_by_server > 0 {
                writeln!(
                    w,
                    "  {a:<8} refused {} by the server (not path loss): {}",
                    g.refused_by_server,
                    npt_result::directions::refusal_fix(&Default::default())
                )?;
            }
        }
    }
    write!(
        w,
        "  errors {} (rate {:.4})",
        b.errors.total_errors, b.errors.error_rate
    )?;
    for (k, e) in b.errors.by_kind.iter() {
        write!(w, "  {k} {}", e.count)?;
    }
    writeln!(w)?;
    for (k, e) in b.errors.by_kind.iter() {
        if let Some(ex) = e.examples.first() {
            writeln!(w, "    {k}: {ex}")?;
        }
    }
    let h = &b.health;
    let timer = h.timer_lateness_ms.unwrap_or_default();
    writeln!(
        w,
        "  tester: cpu {:.1}% ({:.1} s user, {:.1} s sys), timer lateness p50 {:.2} ms p99 {:.2} ms max {:.2} ms, {} wakeups > {} ms late, max rss {:.1} MB",
        h.cpu_pct,
        h.cpu_user_s,
        h.cpu_sys_s,
        timer.p50,
        timer.p99,
        timer.max,
        h.late_wakeups.unwrap_or(0),
        h.late_threshold_ms.unwrap_or(0.0),
        h.max_rss_bytes as f64 / 1e6
    )?;
    Ok(())
}
