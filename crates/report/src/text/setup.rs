//! What `npt setup` prints, and `npt report` prints again: the base round trip and how it was
//! measured, one line per layer — its median cost with its interval, its multiple of the base
//! round trip beside what its protocol needs — the whole setup, and a line per flag; for a
//! monitor's range, how many rounds it adds and how many of them flagged a layer.

use std::io::{self, Write};

use npt_result::setup::SetupBody;

/// The text of a setup result.
pub fn write_setup(out: &mut dyn Write, b: &SetupBody) -> io::Result<()> {
    out.write_all(text(b).as_bytes())
}

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn rtts(v: f64) -> String {
    format!("{v:.2}")
}

fn needs(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// A setup block inside another kind's text (`npt http`, `npt ping --setup`): `npt setup`'s
/// table, judged by the same rule, under a heading of its own that starts with `lead`, the
/// table indented by `lead`'s indent.
pub(crate) fn write_block(w: &mut dyn Write, lead: &str, b: &SetupBody) -> io::Result<()> {
    writeln!(
        w,
        "{lead} {} new connections, each layer in round trips of the path:",
        b.summary.attempts
    )?;
    let indent = &lead[..lead.len() - lead.trim_start().len()];
    for line in text(b).lines().skip(1) {
        writeln!(w, "{indent}{line}")?;
    }
    Ok(())
}

/// The text, its first line the target's.
pub(crate) fn text(b: &SetupBody) -> String {
    let s = &b.summary;
    let via = b
        .via
        .as_ref()
        .map(|v| format!(" via {v}"))
        .unwrap_or_default();
    let mut out = format!("SETUP {}{via} ({})\n", b.target, b.address);
    let from = match s.rtt_from.as_str() {
        "tcp_connect" => "the smallest TCP connect to the first hop",
        _ => "the smallest second request on a set-up connection",
    };
    if s.rtt_samples > 0 {
        out.push_str(&format!(
            "  base RTT {} ms: {from} ({} samples, p50 {} ms)\n",
            ms(s.rtt_ms),
            s.rtt_samples,
            ms(s.rtt_p50_ms)
        ));
    } else {
        out.push_str("  base RTT unknown: no connection got that far\n");
    }
    let width = b
        .layers
        .iter()
        .map(|l| l.what.chars().count())
        .max()
        .unwrap_or(0)
        .max("whole setup".len());
    out.push_str(&format!(
        "  {:<width$}  {:>8}  {:>19}  {:>5}  {:>5}\n",
        "layer", "p50 ms", "95% ci", "RTTs", "needs"
    ));
    let known = s.rtt_samples > 0;
    for l in &b.layers {
        let some = l.samples > 0;
        let ci = if some {
            format!("{}–{}", ms(l.p50_lo_ms), ms(l.p50_hi_ms))
        } else {
            "-".to_string()
        };
        out.push_str(&format!(
            "  {:<width$}  {:>8}  {:>19}  {:>5}  {:>5}{}\n",
            l.what,
            if some { ms(l.p50_ms) } else { "-".into() },
            ci,
            if some && known {
                rtts(l.rtts)
            } else {
                "-".into()
            },
            needs(l.expected_rtts),
            if l.flag.is_some() { "  !" } else { "" }
        ));
    }
    out.push_str(&format!(
        "  {:<width$}  {:>8}  {:>19}  {:>5}  {:>5}\n",
        "whole setup",
        if s.completed > 0 {
            ms(s.setup_p50_ms)
        } else {
            "-".into()
        },
        format!("{} of {} set up", s.completed, s.attempts),
        if s.completed > 0 && known {
            rtts(s.setup_rtts)
        } else {
            "-".into()
        },
        needs(s.expected_rtts)
    ));
    if let (Some(runs), Some(flagged)) = (s.runs, s.flagged_runs) {
        out.push_str(&format!(
            "  {runs} rounds of {} connections added; {flagged} of the rounds flagged a layer\n",
            s.attempts
        ));
    }
    if let Some(r) = s.resumed {
        out.push_str(&format!("  resumed {r} of {}\n", s.attempts));
    }
    if let (Some(sent), Some(acc)) = (s.zero_rtt_sent, s.zero_rtt_accepted) {
        out.push_str(&format!(
            "  0-RTT: sent in {sent} of {}, accepted in {acc}\n",
            s.attempts
        ));
    }
    for l in &b.layers {
        if let Some(f) = &l.flag {
            out.push_str(&format!("  ! {}: {f}\n", l.what));
        }
    }
    if s.flagged == 0 && s.completed > 0 {
        out.push_str("  every layer took the round trips its protocol needs\n");
    }
    if b.errors.total_errors > 0 {
        out.push_str(&format!("  errors: {}", b.errors.total_errors));
        for (kind, e) in b.errors.by_kind.iter() {
            let example = e
                .examples
                .first()
                .map(|x| format!(" ({x})"))
                .unwrap_or_default();
            out.push_str(&format!(" {kind} {}{example}", e.count));
        }
        out.push('\n');
    }
    out
}
