//! The `kernel` line of a TCP probe's text report: what the tester's kernel saw of its
//! connections (`TCP_INFO`), because the echo's own loss count is 0 on a TCP path that drops
//! packets — TCP resends them, and only the retransmits and the RTT show it. The line says
//! how far that view reaches: this host's sends to its first hop (the target, or the first
//! forwarder or proxy in front of it); a relay behind it retransmits on its own connections.

use std::io::{self, Write};

use npt_result::tcpinfo::{TcpKernel, SCOPE_PROXY};

use super::ms;

/// `kernel     retransmits 12 of 1003 data segments (1.196%)  rtt p50 … ms …`.
pub fn write_kernel(w: &mut dyn Write, k: &TcpKernel) -> io::Result<()> {
    let share = match (k.data_segments_out, k.retransmit_pct) {
        (Some(n), Some(p)) => format!(" of {n} data segments ({p:.3}%)"),
        _ => String::new(),
    };
    let min = k
        .min_rtt_ms
        .map(|m| format!("  min {} ms", ms(m)))
        .unwrap_or_default();
    let scope = if k.scope == SCOPE_PROXY {
        "  first hop only: tester → proxy"
    } else {
        "  this host's sends to its first hop: the target, or the first forwarder in front of it"
    };
    writeln!(
        w,
        "kernel     retransmits {}{share}  rtt p50 {} p99 {} max {} ms  rttvar {} ms{min}  \
         (TCP_INFO, {} samples, {} connection{}){scope}",
        k.retransmits,
        ms(k.rtt_ms.p50),
        ms(k.rtt_ms.p99),
        ms(k.rtt_ms.max),
        ms(k.rttvar_ms),
        k.rtt_ms.count,
        k.connections,
        if k.connections == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_stats::Summary;

    #[test]
    fn the_line_says_what_tcp_hid_and_how_far_it_sees() {
        let mut k = TcpKernel {
            scope: "target".into(),
            connections: 1,
            retransmits: 12,
            data_segments_out: Some(1000),
            retransmit_pct: Some(1.2),
            rtt_ms: Summary {
                count: 50,
                p50: 20.4,
                p99: 25.0,
                max: 31.0,
                ..Summary::default()
            },
            rttvar_ms: 1.5,
            min_rtt_ms: Some(20.0),
        };
        let mut out = Vec::new();
        write_kernel(&mut out, &k).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(
            line.starts_with(
                "kernel     retransmits 12 of 1000 data segments (1.200%)  rtt p50 20.40"
            ),
            "{line}"
        );
        assert!(
            line.contains(
                "(TCP_INFO, 50 samples, 1 connection)  this host's sends to its first hop: the \
                 target, or the first forwarder in front of it\n"
            ),
            "{line}"
        );
        k.scope = "proxy".into();
        k.data_segments_out = None;
        k.retransmit_pct = None;
        let mut out = Vec::new();
        write_kernel(&mut out, &k).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(line.starts_with("kernel     retransmits 12  rtt"), "{line}");
        assert!(line.ends_with("first hop only: tester → proxy\n"), "{line}");
    }
}
