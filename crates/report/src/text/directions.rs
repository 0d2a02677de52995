//! The probe report's lines on where things happened: which far end answered (npt serve, a
//! STAMP reflector, a plain echo) and, when most of what came back was foreign, what it looked
//! like; what the server refused (never path loss) and the fix, and one line splitting loss,
//! delay variation and one-way delay up and down — or why there is none (`--raw`, an echo, an
//! older server).

use std::io::{self, Write};

use npt_result::directions::{refusal_fix, OneWay, PathDirections};
use npt_result::probe::ProbeSummary;

use super::ms;

/// `refused    N by the server (x% of sent): …` when the server refused any packet.
pub fn write_refused(w: &mut dyn Write, s: &ProbeSummary) -> io::Result<()> {
    if s.refused_by_server == 0 {
        return Ok(());
    }
    let why: Vec<String> = s
        .refusal_notices
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let noticed = if why.is_empty() {
        String::new()
    } else {
        format!(" (notices: {})", why.join(", "))
    };
    writeln!(
        w,
        "refused    {} by the server ({:.3}% of sent, not path loss){noticed}: {}",
        s.refused_by_server,
        super::pct(s.refused_by_server, s.packets.sent),
        refusal_fix(&s.refusal_notices)
    )
}

fn one_way(name: &str, d: &OneWay) -> String {
    let mut out = name.to_string();
    if let (Some(lost), Some(pct)) = (d.lost, d.loss_pct) {
        out.push_str(&format!(" lost {lost} ({pct:.3}%)"));
    }
    if let Some(n) = d.duplicated.filter(|n| *n > 0) {
        out.push_str(&format!(" dup {n}"));
    }
    if let Some(n) = d.reordered.filter(|n| *n > 0) {
        out.push_str(&format!(" reordered {n}"));
    }
    if let Some(o) = &d.owd_ms {
        out.push_str(&format!(" owd p50 {} p99 {}", ms(o.p50), ms(o.p99)));
    }
    if d.ipdv_ms.count > 0 {
        out.push_str(&format!(
            " ipdv p50 {} p99 {}",
            ms(d.ipdv_ms.p50),
            ms(d.ipdv_ms.p99)
        ));
    }
    out
}

fn how(d: &PathDirections) -> String {
    let mut notes = Vec::new();
    if d.up.lost.is_some() {
        notes.push(match d.flows.why_inexact() {
            None => "exact".to_string(),
            Some(why) => format!("estimate: {why}"),
        });
    }
    notes.push(match d.clock.as_str() {
        "same-host" => "one-way delay: one clock (same host)".to_string(),
        "synced" => "one-way delay: clocks synced (--owd)".to_string(),
        "none" => "no one-way delay without a shared clock (--owd if synced)".to_string(),
        other => format!("clock {other}"),
    });
    if d.owd_negative > 0 {
        notes.push(format!(
            "{} one-way readings below zero (min {} ms): the clocks are not one",
            d.owd_negative,
            ms(d.owd_min_ms.unwrap_or(0.0))
        ));
    }
    notes.join("; ")
}

/// `far end    …`: which far end answered and what its figures can be (nothing for a file
/// written before it was recorded).
fn write_far_end(w: &mut dyn Write, s: &ProbeSummary) -> io::Result<()> {
    use npt_result::far_end::{ECHO, MIXED, NONE, NPT_SERVE, STAMP};
    let Some(far) = s.far_end.as_deref() else {
        return Ok(());
    };
    let raw = s.round_trip_only.as_deref() == Some("raw");
    let split = s.directions.is_some();
    let what = match far {
        NPT_SERVE if split => "npt serve (it says what it saw: per-direction figures)",
        NPT_SERVE => {
            "npt serve, which did not say what it saw (an older npt serve?): round trips only"
        }
        STAMP if split => "STAMP reflector (RFC 8762: its timestamps give per-direction figures)",
        STAMP => "STAMP reflector (RFC 8762): round trips only",
        ECHO if raw => "an echo that kept the stamp (--raw): round trips only",
        ECHO => "plain echo (returns bytes unchanged): round trips only, no per-direction figures",
        NONE if s.foreign > 0 => "none recognized: every reply was foreign (see `foreign`)",
        NONE => "none: no reply came back",
        MIXED => "mixed: replies from more than one kind of far end (npt serve, STAMP, plain echo)",
        other => other,
    };
    writeln!(w, "far end    {what}")
}

/// `foreign    N …, e.g. …` when most of what came back was not an answer to this run: what
/// it looked like and what to try.
fn write_foreign(w: &mut dyn Write, s: &ProbeSummary) -> io::Result<()> {
    let answered = s.packets.received + s.packets.late + s.packets.duplicated;
    match &s.foreign_example {
        Some(e) if s.foreign > answered => writeln!(
            w,
            "foreign    {} of what came back was not an answer to this run, e.g. {e}",
            s.foreign
        ),
        _ => Ok(()),
    }
}

/// `far end …`, then `direction  up … | down … | server dwell …  (exact; …)`, or why there
/// is no split.
pub fn write_directions(w: &mut dyn Write, s: &ProbeSummary) -> io::Result<()> {
    write_far_end(w, s)?;
    write_foreign(w, s)?;
    let Some(d) = &s.directions else {
        if s.far_end.is_some() && s.round_trip_only.as_deref() != Some("raw") {
            // The far end line said why there is no split.
            return Ok(());
        }
        let why = match s.round_trip_only.as_deref() {
            Some("raw") => "--raw is round trips only",
            Some(_) => "the server did not say what it saw (an older npt serve?): round trips only",
            // A file written before per-direction figures: as it was printed.
            None => return Ok(()),
        };
        return writeln!(w, "direction  none: {why}");
    };
    let unplaced = d
        .unplaced
        .map(|n| format!(" | unplaced {n}"))
        .unwrap_or_default();
    writeln!(
        w,
        "direction  {} | {}{unplaced} | server dwell p50 {} ms  ({})",
        one_way("up", &d.up),
        one_way("down", &d.down),
        ms(d.dwell_ms.p50),
        how(d)
    )
}
