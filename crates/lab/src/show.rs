//! `npt lab status` and the lines `up` / `run` print: nodes with their addresses, each link
//! direction with what it was configured to do and what it actually applied (packets, drops,
//! delay error), and services. Renders into any `io::Write`, so tests compare bytes.

use std::io::{self, Write};

use npt_link::{Impairments, Loss};

use crate::status::{Change, LabStatus};

/// The impairments in the file's own words: `delay 76ms jitter 1ms loss 1% rate 10mbit`.
pub fn describe(imp: &Impairments) -> String {
    let mut parts = Vec::new();
    if !imp.delay.is_zero() {
        parts.push(format!("delay {}", humantime::format_duration(imp.delay)));
    }
    if !imp.jitter.is_zero() {
        parts.push(format!("jitter {}", humantime::format_duration(imp.jitter)));
    }
    match imp.loss {
        Loss::None => {}
        Loss::Random { p } => {
            if !p.is_zero() {
                parts.push(format!("loss {p}"));
            }
        }
        Loss::GilbertElliott { p, r, .. } => {
            parts.push(format!("loss gilbert-elliott p {p} r {r}"))
        }
    }
    if !imp.duplicate.is_zero() {
        parts.push(format!("duplicate {}", imp.duplicate));
    }
    if !imp.reorder.is_zero() {
        parts.push(format!("reorder {}", imp.reorder));
    }
    if let Some(r) = imp.rate {
        parts.push(format!("rate {r} queue {}", imp.queue_len()));
    }
    if let Some(k) = imp.ecn {
        parts.push(format!("ecn {}", npt_link::format_duration(k)));
    }
    if parts.is_empty() {
        "perfect".to_string()
    } else {
        parts.join(" ")
    }
}

/// Changes, grouped by the instant they took effect (both directions of a link change at one
/// instant when one wire thread serves them, as by default): a line with the instant on the
/// lab's, the wall and the monotonic clock, then each direction's before → after.
pub fn write_changes(w: &mut impl Write, changes: &[Change], indent: &str) -> io::Result<()> {
    let mut last: Option<f64> = None;
    for c in changes {
        if last != Some(c.at_monotonic_s) {
            writeln!(
                w,
                "{indent}at +{:.6} s  {}  monotonic {:.6} s",
                c.at_lab_s, c.at, c.at_monotonic_s
            )?;
            last = Some(c.at_monotonic_s);
        }
        writeln!(
            w,
            "{indent}  {} > {}: {} → {}",
            c.from,
            c.to,
            describe(&c.before),
            describe(&c.after)
        )?;
    }
    Ok(())
}

/// The nodes that forwarded UDP datagrams: how many and how long they spent inside, in all
/// and per way through (nothing when no node forwarded any).
fn write_transit(w: &mut impl Write, s: &LabStatus) -> io::Result<()> {
    let forwarders: Vec<_> = s
        .nodes
        .iter()
        .filter_map(|n| Some((&n.name, n.transit.as_ref().filter(|t| t.count > 0)?)))
        .collect();
    if forwarders.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "  transit (UDP datagrams a node sent on: delivered into it → read back out)  {:>9}  ms p50/p99/max",
        "datagrams"
    )?;
    let ms = |c: u64, p50: f64, p99: f64, max: f64| format!("{c:>9}  {p50:.3}/{p99:.3}/{max:.3}");
    for (name, t) in forwarders {
        writeln!(
            w,
            "    {:<71}  {}",
            name,
            ms(t.count, t.p50_ms, t.p99_ms, t.max_ms)
        )?;
        for p in &t.pairs {
            writeln!(
                w,
                "      {:<69}  {}",
                format!("{} > {}", p.from, p.to),
                ms(p.count, p.p50_ms, p.p99_ms, p.max_ms)
            )?;
        }
        if t.evicted > 0 {
            writeln!(
                w,
                "      ({} deliveries forgotten unmatched: over {} held at once)",
                t.evicted,
                crate::transit::HELD
            )?;
        }
    }
    Ok(())
}

pub fn write_status(w: &mut impl Write, s: &LabStatus) -> io::Result<()> {
    writeln!(
        w,
        "lab {}: {} nodes, {} links, {} services",
        s.lab,
        s.nodes.len(),
        s.links.len(),
        s.services.len()
    )?;
    if let (Some(since), Some(read)) = (&s.since, &s.read_at) {
        writeln!(
            w,
            "  figures from {since} to {read} (the difference of two readings)"
        )?;
    }
    for n in &s.nodes {
        writeln!(
            w,
            "  node {:<10} {:<24} {}",
            n.name,
            n.netns,
            n.addrs.join(", ")
        )?;
    }
    writeln!(
        w,
        "  {:<22} {:<30} {:>9} {:>9} {:>7} {:>7} {:>5} {:>5}  delay error µs p50/p99/max  queue wait ms p50/p99/max",
        "direction", "configured", "pkts in", "out", "lost", "q-drop", "dup", "reord"
    )?;
    for l in &s.links {
        for d in &l.directions {
            let a = &d.applied;
            writeln!(
                w,
                "  {:<22} {:<30} {:>9} {:>9} {:>7} {:>7} {:>5} {:>5}  {:<27}  {}",
                format!("{} > {}", d.from, d.to),
                describe(&d.config),
                a.packets_in,
                a.packets_out,
                a.dropped_loss,
                a.dropped_queue,
                a.duplicated,
                a.reordered,
                format!(
                    "{:.0}/{:.0}/{:.0}",
                    a.delay_error_p50_us, a.delay_error_p99_us, a.delay_error_max_us
                ),
                if a.queue_wait_count == 0 {
                    "-".to_string()
                } else {
                    format!(
                        "{:.2}/{:.2}/{:.2}",
                        a.queue_wait_p50_ms, a.queue_wait_p99_ms, a.queue_wait_max_ms
                    )
                }
            )?;
            if a.ce_marked > 0 {
                writeln!(
                    w,
                    "    ecn: {} packets marked CE (ECN-capable, queued past the ecn threshold)",
                    a.ce_marked
                )?;
            }
            if d.late() {
                writeln!(
                    w,
                    "    late: {} of {} packets left over {} ms after their due time (max {:.1} ms): \
                     the box held this link up; what crossed it carries that",
                    a.released_late,
                    a.delay_error_count,
                    npt_link::LATE_RELEASE.as_millis(),
                    a.delay_error_max_us / 1e3
                )?;
            }
            if d.read_errors + d.write_errors > 0 {
                writeln!(
                    w,
                    "    ({} read errors, {} write errors on the TUN devices)",
                    d.read_errors, d.write_errors
                )?;
            }
        }
    }
    write_transit(w, s)?;
    if !s.changes.is_empty() {
        writeln!(
            w,
            "  changes (npt lab set; lab time, wall clock, monotonic clock):"
        )?;
        write_changes(w, &s.changes, "    ")?;
    }
    for sv in &s.services {
        writeln!(
            w,
            "  service {:<14} on {:<10} pid {:<8} {}",
            sv.name,
            sv.node,
            sv.pid,
            if sv.running { "running" } else { "EXITED" }
        )?;
    }
    Ok(())
}
