//! What `npt mtu` prints, and `npt report` prints again: each direction's largest datagram
//! (and IP packet), what stopped a larger one — an ICMP (PMTUD works), nothing (a black hole,
//! with its bracket), an interface — and the fragments the receiving end saw.

use std::io::{self, Write};

use npt_result::mtu::{MtuBody, MtuDirection, MtuRounds, MtuRoundsDirection};

/// The text of an mtu result.
pub fn write_mtu(out: &mut dyn Write, b: &MtuBody) -> io::Result<()> {
    out.write_all(text(b).as_bytes())
}

fn text(body: &MtuBody) -> String {
    let b = &body.summary;
    let mut out = format!(
        "MTU {} ({}): datagrams up to {} bytes, IP packet = datagram + {}\n",
        body.target, body.address, b.max, b.headers
    );
    if let Some(v) = &b.via {
        out.push_str(&format!(
            "  via {v}: its UDP relay in between; sizes are what the far end gets (the client's \
             leg carries {} bytes of SOCKS5 header more)\n",
            b.via_header
        ));
    }
    if let Some(r) = &b.rounds {
        out.push_str(&rounds(r, b.far_end == "echo"));
    }
    if b.far_end == "echo" {
        out.push_str(
            "  far end: a plain echo — the round trip only (the smaller way's limit); down and \
             fragments cannot be read (use npt serve)\n",
        );
        out.push_str(&line("round trip", &b.up, b.headers, false));
    } else {
        out.push_str(&line("up", &b.up, b.headers, false));
        out.push_str(&line("down", &b.down, b.headers, true));
    }
    if b.down.clamped > 0 {
        out.push_str(
            "  down was capped by the request's own size (the responder sends a stranger no more \
             than it brought: use --token)\n",
        );
    }
    if b.timed_out {
        out.push_str("  the search ran out of time (--timeout): brackets may be wide\n");
    }
    out
}

/// A monitor range's rounds: how many, each way's verdicts and sizes, how many changed.
fn rounds(r: &MtuRounds, echo: bool) -> String {
    let way = |name: &str, d: &MtuRoundsDirection| {
        let verdicts: Vec<String> = d.verdicts.iter().map(|(v, n)| format!("{v} {n}")).collect();
        let sizes = match (d.smallest, d.largest) {
            (Some(a), Some(b)) if a == b => format!(", {a} bytes in every round that crossed"),
            (Some(a), Some(b)) => format!(", {a} to {b} bytes"),
            _ => String::new(),
        };
        format!("{name} {}{sizes}", verdicts.join(", "))
    };
    let mut s = format!(
        "  {} rounds, {} changed from the round before (the sizes below are the bracket the \
         rounds agree on, the verdicts the latest round's)\n",
        r.rounds, r.changed
    );
    if echo {
        s.push_str(&format!("    {}\n", way("round trip:", &r.up)));
    } else {
        s.push_str(&format!(
            "    {}; {}\n",
            way("up:", &r.up),
            way("down:", &r.down)
        ));
    }
    if r.timed_out > 0 {
        s.push_str(&format!(
            "    {} rounds ran out of time (--timeout)\n",
            r.timed_out
        ));
    }
    s
}

/// One direction's line, and its fragment line.
fn line(name: &str, d: &MtuDirection, hdr: u32, down: bool) -> String {
    let size = |n: u32| format!("{n} bytes (IP {})", n + hdr);
    let largest = d.largest_datagram.map(size);
    let lost = d.smallest_lost.map(size);
    let mut s = match (d.verdict.as_str(), largest, lost) {
        ("unreadable", ..) => format!("  {name}: cannot be read here"),
        ("max_crossed", Some(l), _) => format!("  {name}: {l} crossed, the largest tried"),
        ("nothing_crossed", ..) => format!("  {name}: nothing crossed"),
        ("icmp", Some(l), Some(x)) => {
            let from = d
                .icmp_from
                .as_ref()
                .map(|a| format!(" from {a}"))
                .unwrap_or_default();
            let mtu = d.icmp_mtu.map(|m| format!(" MTU {m}")).unwrap_or_default();
            let how = if down {
                format!("the responder's kernel learned{mtu} (an ICMP reached it)")
            } else {
                format!("ICMP \"too big\"{from},{mtu}")
            };
            format!("  {name}: largest {l}; {x} refused — PMTUD works: {how}")
        }
        ("black_hole", Some(l), Some(x)) => format!(
            "  {name}: largest {l}; black hole above it: {x} and larger vanished with no ICMP \
             (3 tries each)"
        ),
        ("local", Some(l), Some(x)) => {
            let who = if down {
                "the responder's"
            } else {
                "this host's"
            };
            let mtu = d
                .local_mtu
                .map(|m| format!(" (MTU {m})"))
                .unwrap_or_default();
            format!("  {name}: largest {l}; {x} too big for {who} own interface{mtu}")
        }
        (v, l, x) => format!(
            "  {name}: {v}, largest {}, smallest lost {}",
            l.unwrap_or_else(|| "-".into()),
            x.unwrap_or_else(|| "-".into())
        ),
    };
    if !d.settled && !matches!(d.verdict.as_str(), "unreadable" | "nothing_crossed") {
        s.push_str(" (not settled)");
    }
    s.push('\n');
    if let Some(f) = d.largest_fragment {
        let at = if down { "the client" } else { "the far end" };
        s.push_str(&format!(
            "    fragmented on the way: {at} got probes reassembled (largest fragment {f})\n"
        ));
    }
    if d.capped_by_up {
        s.push_str(
            "    not the down path's own: without --token each down request is as large as the \
             size it asks for, and these are larger than what crossed up (use --token)\n",
        );
    }
    if d.contradicted > 0 {
        s.push_str(&format!(
            "    {} sizes read as lost crossed later (loss on the path, not MTU)\n",
            d.contradicted
        ));
    }
    s
}
