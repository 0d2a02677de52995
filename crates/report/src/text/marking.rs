//! The text line of a result's DSCP/ECN marking: what was sent with and what came back.

use std::io::{self, Write};

use npt_result::marking::{Marking, Tos};

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
    writeln!(w, "marking    {sent}; {back}")
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
        let mut out = Vec::new();
        write_marking(&mut out, &Marking::default(), false).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("no per-packet marking over TCP"));
    }
}
