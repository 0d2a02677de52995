//! The text lines of a result's DSCP/ECN marking: what was sent with and what came back, and
//! — when the far end was asked — each direction's fate: `DSCP 46 (EF) bleached to 0 up,
//! arrived down; ECN ECT(0) arrived up (CE 37 of 400), arrived down (CE 0 of 400)`.

use std::io::{self, Write};

use npt_result::marking::{Fate, Marking, Tos, Way};

/// `marking    sent DSCP 46 (EF) ECN 0; replies arrived with DSCP 0: 20` (UDP), or
/// `…; replies: no per-packet marking over TCP`.
pub fn write_marking(w: &mut dyn Write, m: &Marking, udp: bool) -> io::Result<()> {
    let sent = match m.sent {
        Some(t) => format!("sent {}", tos(t)),
        None => "sent unmarked".to_string(),
    };
    let back = if m.received.is_empty() {
        if udp {
            "replies: the OS did not say".to_string()
        } else {
            "replies: no per-packet marking over TCP".to_string()
        }
    } else {
        let each: Vec<String> = m
            .received
            .iter()
            .map(|c| {
                format!(
                    "{}: {}",
                    tos(Tos {
                        dscp: c.dscp,
                        ecn: c.ecn
                    }),
                    c.packets
                )
            })
            .collect();
        format!("replies arrived with {}", each.join(", "))
    };
    writeln!(w, "marking    {sent}; {back}")?;
    if let (Some(up), Some(down)) = (&m.up, &m.down) {
        writeln!(w, "           {}", directions(up, down))?;
        if m.far_received.is_empty() && m.far_silent > 0 {
            writeln!(
                w,
                "           up unknown: the far end did not say what its {} requests arrived \
                 with (a plain echo, a STAMP reflector or an older npt serve)",
                m.far_silent
            )?;
        }
    }
    Ok(())
}

/// `DSCP 46 (EF) bleached to 0 up, arrived down; ECN ECT(0) arrived up (CE 3 of 400), …`.
fn directions(up: &Way, down: &Way) -> String {
    let dscp_of = |w: &Way| w.sent.map(|t| t.dscp);
    let ecn_of = |w: &Way| w.sent.map(|t| t.ecn);
    let field = |name: &str,
                 show: &dyn Fn(u8) -> String,
                 sent: &dyn Fn(&Way) -> Option<u8>,
                 got: &dyn Fn(&Way) -> Option<u8>,
                 fate: &dyn Fn(&Way) -> Fate,
                 ce: bool| {
        let one = |w: &Way, dir: &str, lead: bool| {
            let what = match fate(w) {
                Fate::Arrived => "arrived".to_string(),
                Fate::Bleached => "bleached to 0".to_string(),
                Fate::Rewritten => format!("rewritten to {}", got(w).map_or("?".into(), show)),
                Fate::Mixed => format!("mixed (mostly {})", got(w).map_or("?".into(), show)),
                Fate::Unknown => match (sent(w), got(w)) {
                    (None, Some(g)) => format!("unknown (sent with ?, arrived {})", show(g)),
                    _ => "unknown".to_string(),
                },
            };
            let head = match (lead, sent(w)) {
                (true, Some(s)) => format!("{name} {} ", show(s)),
                (true, None) => format!("{name} "),
                (false, _) => String::new(),
            };
            let marks = if ce && w.packets > 0 {
                format!(" (CE {} of {})", w.ce, w.packets)
            } else {
                String::new()
            };
            format!("{head}{what} {dir}{marks}")
        };
        // The down direction names its own sent value when it differs (--reply-dscp).
        let lead_down = sent(down).is_some() && sent(down) != sent(up);
        format!("{}, {}", one(up, "up", true), one(down, "down", lead_down))
    };
    let dscp = field(
        "DSCP",
        &|d| dscp_name(d),
        &dscp_of,
        &|w| w.arrived.map(|t| t.dscp),
        &|w| w.dscp,
        false,
    );
    let ecn = field(
        "ECN",
        &|e| ecn_name(e).to_string(),
        &ecn_of,
        &|w| w.arrived.map(|t| t.ecn),
        &|w| w.ecn,
        true,
    );
    format!("{dscp}; {ecn}")
}

/// `46 (EF)`, `34 (AF41)`, `8 (CS1)`, `10`.
pub(crate) fn dscp_name(d: u8) -> String {
    let t = tos(Tos { dscp: d, ecn: 0 });
    let t = t.strip_prefix("DSCP ").unwrap_or(&t);
    t.strip_suffix(" ECN 0").unwrap_or(t).to_string()
}

/// ECN codepoints by value (RFC 3168).
pub(crate) fn ecn_name(e: u8) -> &'static str {
    match e {
        1 => "ECT(1)",
        2 => "ECT(0)",
        3 => "CE",
        _ => "Not-ECT",
    }
}

fn tos(t: Tos) -> String {
    let name = match t.dscp {
        46 => " (EF)",
        0 => "",
        d if d % 8 == 0 => return format!("DSCP {d} (CS{}) ECN {}", d / 8, t.ecn),
        d if (10..=38).contains(&d) && d % 2 == 0 && (d % 8) / 2 >= 1 && (d % 8) / 2 <= 3 => {
            return format!("DSCP {d} (AF{}{}) ECN {}", d / 8, (d % 8) / 2, t.ecn)
        }
        _ => "",
    };
    format!("DSCP {}{name} ECN {}", t.dscp, t.ecn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_was_sent_and_what_came_back() {
        let mut m = Marking {
            sent: Some(Tos::of(0xb8)),
            ..Marking::default()
        };
        m.count(0);
        m.count(34 << 2);
        let mut out = Vec::new();
        write_marking(&mut out, &m, true).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "marking    sent DSCP 46 (EF) ECN 0; replies arrived with DSCP 0 ECN 0: 1, \
             DSCP 34 (AF41) ECN 0: 1\n"
        );
        // Asked of the far end: each direction's fate.
        let mut m = Marking {
            sent: Some(Tos::of(0xba)),
            asked: Some(Tos::of(0xba)),
            ..Marking::default()
        };
        for _ in 0..3 {
            m.count_reply(Some(0xba), Some((0x02, 0xba)));
        }
        m.count_reply(Some(0xba), Some((0x03, 0xba)));
        let m = m.block().unwrap();
        let mut out = Vec::new();
        write_marking(&mut out, &m, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.ends_with(
                "           DSCP 46 (EF) bleached to 0 up, arrived down; ECN ECT(0) arrived up \
                 (CE 1 of 4), arrived down (CE 0 of 4)\n"
            ),
            "{text}"
        );
        // A plain echo said nothing: up unknown, down's sender unknown.
        let mut e = Marking {
            sent: Some(Tos::of(0xb8)),
            asked: Some(Tos::of(0xb8)),
            ..Marking::default()
        };
        e.count_reply(Some(0xb8), None);
        let mut out = Vec::new();
        write_marking(&mut out, &e.block().unwrap(), true).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("DSCP 46 (EF) unknown up, unknown (sent with ?, arrived 46 (EF)) down"),
            "{text}"
        );
        assert!(
            text.contains("up unknown: the far end did not say"),
            "{text}"
        );
        let mut out = Vec::new();
        write_marking(&mut out, &Marking::default(), false).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("no per-packet marking over TCP"));
    }
}
