//! `npt lab status` and the lines `up` / `run` print: nodes with their addresses, each link
//! direction with what it was configured to do and what it actually applied (packets, drops,
//! delay error), and services. Renders into any `io::Write`, so tests compare bytes.

use std::io::{self, Write};

use npt_link::{Impairments, Loss};

use crate::runtime::LabStatus;

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
    if parts.is_empty() {
        "perfect".to_string()
    } else {
        parts.join(" ")
    }
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
            if d.read_errors + d.write_errors > 0 {
                writeln!(
                    w,
                    "    ({} read errors, {} write errors on the TUN devices)",
                    d.read_errors, d.write_errors
                )?;
            }
        }
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
