//! What `npt lifetime` prints, and `npt report` prints again: the lifetime with its bracket,
//! whether expired flows came back rebound (UDP) or how the path ended them (TCP), and what
//! kept the search from settling.

use std::io::{self, Write};

use npt_result::lifetime::{CutOff, LifetimeBody};

/// The text of a lifetime result.
pub fn write_lifetime(out: &mut dyn Write, b: &LifetimeBody) -> io::Result<()> {
    out.write_all(text(b).as_bytes())
}

/// The text's findings, one a line, without the title: the HTML page's caption and notes.
pub fn lifetime_lines(b: &LifetimeBody) -> Vec<String> {
    text(b)
        .lines()
        .skip(1)
        .map(|l| l.trim().to_string())
        .collect()
}

/// Seconds as the text shows them: whole when whole, else to 0.1 s (to 0.01 s below 10 s).
fn secs(s: f64) -> String {
    if (s - s.round()).abs() < 0.005 {
        format!("{} s", s.round())
    } else if s < 10.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.1} s")
    }
}

/// Flows of the search: its list, or (a monitor's range, which keeps no list) what its
/// errors divide by.
fn flows(b: &LifetimeBody) -> usize {
    if b.flows.is_empty() {
        b.errors
            .attempts
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
    } else {
        b.flows.len()
    }
}

fn conns(n: u32) -> String {
    format!("{n} connection{}", if n == 1 { "" } else { "s" })
}

/// How the path ended the connections past the lifetime, in words.
fn cut_off(c: &CutOff) -> Option<String> {
    let by = match (c.fin, c.rst) {
        (0, _) => "RST",
        (_, 0) => "FIN",
        _ => "FIN/RST",
    };
    let after = c.closed_after_s.map(secs).unwrap_or_default();
    let closed = c.fin + c.rst;
    let line = match c.how.as_deref()? {
        "closed" => format!(
            "cut off: closed by the path ({by}) after {after} ({})",
            conns(closed)
        ),
        "dropped" => format!(
            "cut off: silently dropped ({}: no callback, no FIN or RST)",
            conns(c.dropped)
        ),
        _ => format!(
            "cut off: {closed} closed by the path ({by}, first after {after}), {} silently dropped",
            c.dropped
        ),
    };
    Some(line)
}

/// The report's text: the verdict line with its bracket, the rebinding line, and the flows
/// that settled it.
fn text(b: &LifetimeBody) -> String {
    let s = &b.summary;
    let what = if b.target.starts_with("tcp://") {
        "idle TCP lifetime"
    } else {
        "idle UDP lifetime"
    };
    let mut out = format!("LIFETIME {} ({})\n", b.target, b.address);
    let mut alive = s.alive_after_s.map(secs);
    let mut gone = s.gone_after_s.map(secs);
    if alive.is_some() && alive == gone {
        // A bracket narrower than the text's rounding (a relay's FIN read to the ms).
        alive = s.alive_after_s.map(|a| format!("{a:.3} s"));
        gone = s.gone_after_s.map(|g| format!("{g:.3} s"));
    }
    let line = match (s.lifetime_s, alive.clone(), gone) {
        (Some(l), Some(a), Some(g)) => {
            format!("{what} {}: alive after {a}, gone after {g}", secs(l))
        }
        (Some(_), None, Some(g)) => {
            format!("{what} under {g}: gone after {g}, no shorter gap survived")
        }
        _ if s.longer_than_max => format!(
            "{what} longer than --max: alive after {}",
            alive.unwrap_or_else(|| secs(s.max_s))
        ),
        (_, Some(a), None) => {
            format!("{what} at least {a}: alive after {a}, no longer gap settled")
        }
        _ => format!("{what} unknown: no flow settled"),
    };
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    out.push_str(&format!(
        "  {line} ({}, {}, resolution {})\n",
        plural(usize::try_from(s.rounds).unwrap_or(usize::MAX), "round"),
        plural(flows(b), "flow"),
        secs(s.resolution_s)
    ));
    match s.rebound {
        Some(true) => out.push_str(&format!(
            "  rebound: {} of {} flows idle past the lifetime came back from a new source port\n",
            s.rebound_flows, s.rebound_checked
        )),
        Some(false) => out.push_str(&format!(
            "  not rebound: {} flows idle past the lifetime came back from the same source address\n",
            s.rebound_checked
        )),
        None => {}
    }
    if let Some(c) = &s.cut_off {
        if let Some(line) = cut_off(c) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    if s.inconsistent > 0 {
        out.push_str(&format!(
            "  {} flows contradicted the bracket (a lost callback?)\n",
            s.inconsistent
        ));
    }
    if s.refused > 0 {
        out.push_str(&format!(
            "  the responder refused {} callbacks (its per-address cap or its longest gap)\n",
            s.refused
        ));
    }
    if b.errors.total_errors > 0 {
        out.push_str(&format!(
            "  {} flows got no answer\n",
            b.errors.total_errors
        ));
    }
    out
}
