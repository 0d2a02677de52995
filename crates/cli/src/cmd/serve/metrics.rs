//! `npt serve --metrics ADDR`: the responder's counters in OpenMetrics text, read from its
//! atomics on each scrape (nothing on the echo path changes). Kept out of `serve/mod.rs` so the
//! mapping from `npt_server::Counters` to metric names is in one short place.
//!
//! Not exported: open connections — the server keeps that count private to its accept loop.

use std::sync::Arc;

use npt_metrics::{Snapshot, Source};
use npt_server::Counters;

/// The scrape source for a running server's counters.
pub fn source(counters: Arc<Counters>) -> Source {
    Arc::new(move |s: &mut Snapshot| fill(s, &counters))
}

fn fill(s: &mut Snapshot, c: &Counters) {
    let g = Counters::get;
    let udp = [("transport", "udp")];
    let rx = "Packets received by npt serve (UDP datagrams).";
    s.counter("npt_serve_packets_received_total", rx, &udp, g(&c.udp_rx));
    let tx = "Packets sent by npt serve (UDP datagrams).";
    s.counter("npt_serve_packets_sent_total", tx, &udp, g(&c.udp_tx));
    let rxb = "Payload bytes received by npt serve.";
    let txb = "Payload bytes sent by npt serve.";
    s.counter(
        "npt_serve_bytes_received_total",
        rxb,
        &udp,
        g(&c.udp_rx_bytes),
    );
    s.counter("npt_serve_bytes_sent_total", txb, &udp, g(&c.udp_tx_bytes));
    let dscp = "UDP datagrams received, by the DSCP they arrived with (IP_RECVTOS).";
    for (d, n) in c.udp_marking.dscp() {
        let v = d.to_string();
        s.counter(
            "npt_serve_dscp_packets_received_total",
            dscp,
            &[("transport", "udp"), ("dscp", v.as_str())],
            n,
        );
    }
    let ecn = "UDP datagrams received, by ECN codepoint (not-ect, ect1, ect0, ce).";
    let ecn_counts = c.udp_marking.ecn();
    for (name, n) in npt_server::marking::ECN_NAMES.iter().zip(ecn_counts) {
        s.counter(
            "npt_serve_ecn_packets_received_total",
            ecn,
            &[("transport", "udp"), ("ecn", name)],
            n,
        );
    }
    for (transport, sc) in [("tcp", &c.tcp), ("quic", &c.quic)] {
        let l = [("transport", transport)];
        s.counter("npt_serve_bytes_received_total", rxb, &l, g(&sc.rx_bytes));
        s.counter("npt_serve_bytes_sent_total", txb, &l, g(&sc.tx_bytes));
    }
    s.counter(
        "npt_serve_connections_accepted_total",
        "Connections accepted (QUIC: connections; its streams are npt_serve_streams_total).",
        &[("transport", "tcp")],
        g(&c.tcp_accepted),
    );
    s.counter(
        "npt_serve_connections_accepted_total",
        "Connections accepted (QUIC: connections; its streams are npt_serve_streams_total).",
        &[("transport", "quic")],
        g(&c.quic_conns),
    );
    s.counter(
        "npt_serve_streams_total",
        "QUIC streams served.",
        &[("transport", "quic")],
        g(&c.quic_streams),
    );
    let refused = "Datagrams, requests or connections refused or closed, by transport and reason.";
    for (reason, v) in [
        ("token", &c.udp_refused_token),
        ("rate", &c.udp_refused_rate),
        ("loop", &c.udp_refused_loop),
        ("malformed", &c.udp_malformed),
        ("callbacks", &c.udp_idle_refused),
    ] {
        s.counter(
            "npt_serve_refused_total",
            refused,
            &[("transport", "udp"), ("reason", reason)],
            g(v),
        );
    }
    s.counter(
        "npt_serve_refused_total",
        refused,
        &[("transport", "tcp"), ("reason", "conns")],
        g(&c.tcp_refused_conns),
    );
    for (transport, sc) in [("tcp", &c.tcp), ("quic", &c.quic)] {
        for (reason, v) in [
            ("token", &sc.refused_token),
            ("budget", &sc.refused_budget),
            ("malformed", &sc.malformed),
            ("idle", &sc.closed_idle),
            ("stalled_read", &sc.stalled_read),
            ("stalled_write", &sc.stalled_write),
            ("reset", &sc.reset),
            ("callbacks", &sc.refused_callbacks),
        ] {
            s.counter(
                "npt_serve_refused_total",
                refused,
                &[("transport", transport), ("reason", reason)],
                g(v),
            );
        }
    }
    for (reason, v) in [
        ("failed_handshake", &c.quic_handshake_failed),
        ("handshake_timeout", &c.quic_handshake_timeout),
        ("aborted", &c.quic_aborted),
        ("lost", &c.quic_lost),
    ] {
        s.counter(
            "npt_serve_refused_total",
            refused,
            &[("transport", "quic"), ("reason", reason)],
            g(v),
        );
    }
    s.counter(
        "npt_serve_hop_requests_total",
        "Hop agent requests measured and answered.",
        &[],
        g(&c.hop.answered),
    );
    s.counter(
        "npt_serve_hop_attempts_total",
        "Attempts (connects, echoes, handshakes) the hop agent made for them.",
        &[],
        g(&c.hop.attempts),
    );
    s.counter(
        "npt_serve_hop_mtu_searches_total",
        "Path-MTU searches the hop agent ran and answered (npt trace --mtu).",
        &[],
        g(&c.hop.mtu_searches),
    );
    s.counter(
        "npt_serve_hop_mtu_probes_total",
        "Datagrams those searches sent (up probes and down requests).",
        &[],
        g(&c.hop.mtu_probes),
    );
    for (reason, v) in c.hop.refusals() {
        s.counter(
            "npt_serve_refused_total",
            refused,
            &[("transport", "hop"), ("reason", reason)],
            v,
        );
    }
    let stamp = [("transport", "stamp")];
    let st = &c.stamp;
    s.counter("npt_serve_packets_received_total", rx, &stamp, g(&st.rx));
    s.counter("npt_serve_packets_sent_total", tx, &stamp, g(&st.tx));
    s.counter(
        "npt_serve_bytes_received_total",
        rxb,
        &stamp,
        g(&st.rx_bytes),
    );
    s.counter("npt_serve_bytes_sent_total", txb, &stamp, g(&st.tx_bytes));
    s.counter(
        "npt_serve_stamp_sessions_total",
        "Stateful STAMP sessions the reflector created.",
        &[],
        g(&st.sessions),
    );
    for (reason, v) in st.refusals() {
        let reason = reason.replace('-', "_");
        s.counter(
            "npt_serve_refused_total",
            refused,
            &[("transport", "stamp"), ("reason", reason.as_str())],
            v,
        );
    }
    s.counter(
        "npt_serve_reflected_total",
        "UDP replies that carried their flow's counts and stamps (clients that ask, REFLECT).",
        &udp,
        g(&c.udp_reflected),
    );
    s.counter(
        "npt_serve_marked_total",
        "UDP replies sent with the DSCP/ECN their client asked for, saying what the request arrived with (MARK).",
        &udp,
        g(&c.udp_marked),
    );
    s.counter(
        "npt_serve_flow_reports_total",
        "Flow queries answered with a flow's totals.",
        &udp,
        g(&c.udp_flow_reports),
    );
    s.counter(
        "npt_serve_idle_callbacks_total",
        "Idle callbacks sent after their gap (npt lifetime).",
        &udp,
        g(&c.udp_idle_callbacks),
    );
    s.counter(
        "npt_serve_idle_callbacks_total",
        "Idle callbacks sent after their gap (npt lifetime).",
        &[("transport", "tcp")],
        g(&c.tcp.idle_callbacks),
    );
    for (result, v) in [
        ("up", &c.udp_mtu_up),
        ("down", &c.udp_mtu_down),
        ("too_big", &c.udp_mtu_too_big),
    ] {
        s.counter(
            "npt_serve_mtu_probes_total",
            "MTU probes (npt mtu): up ones answered, down ones sent DF set, down ones too big for this host's interface (answered short).",
            &[("transport", "udp"), ("result", result)],
            g(v),
        );
    }
    let notices = "Refusal notices (header-only answers to refused frames that asked): sent, or held back by their rate limit.";
    for (result, v) in [
        ("sent", &c.udp_notices_sent),
        ("suppressed", &c.udp_notices_suppressed),
    ] {
        s.counter(
            "npt_serve_notices_total",
            notices,
            &[("transport", "udp"), ("result", result)],
            g(v),
        );
    }
    s.gauge(
        "npt_serve_flows",
        "Flows the UDP responder counts right now (its flow table is bounded per socket, docs/serve.md).",
        &udp,
        g(&c.udp_flows_live) as f64,
    );
    let flows = "Flows started; frames of flows a full table could not take (answered without counts); idle flows forgotten to make room.";
    for (event, v) in [
        ("started", &c.udp_flows),
        ("untracked", &c.udp_flows_untracked),
        ("evicted", &c.udp_flows_evicted),
    ] {
        s.counter(
            "npt_serve_flow_table_total",
            flows,
            &[("transport", "udp"), ("event", event)],
            g(v),
        );
    }
    s.counter(
        "npt_serve_clamped_total",
        "Answers sent with fewer bytes than asked (no amplification).",
        &[],
        g(&c.udp_clamped),
    );
    s.counter(
        "npt_serve_errors_total",
        "Send/receive errors, by transport (TCP: failed accepts).",
        &udp,
        g(&c.udp_errors),
    );
    s.counter(
        "npt_serve_errors_total",
        "Send/receive errors, by transport (TCP: failed accepts).",
        &[("transport", "tcp")],
        g(&c.tcp_accept_errors),
    );
    s.counter(
        "npt_serve_errors_total",
        "Send/receive errors, by transport (TCP: failed accepts).",
        &stamp,
        g(&st.errors),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn counters_are_read_on_scrape() {
        let c = Arc::new(Counters::default());
        let src = source(c.clone());
        c.udp_rx.fetch_add(5, Ordering::Relaxed);
        c.udp_refused_rate.fetch_add(2, Ordering::Relaxed);
        let text = npt_metrics::encode(&src);
        assert!(
            text.contains("npt_serve_packets_received_total{transport=\"udp\"} 5"),
            "{text}"
        );
        assert!(
            text.contains("npt_serve_refused_total{transport=\"udp\",reason=\"rate\"} 2"),
            "{text}"
        );
    }

    #[test]
    fn stamp_traffic_and_refusals_are_exported() {
        let c = Arc::new(Counters::default());
        let src = source(c.clone());
        c.stamp.rx.fetch_add(4, Ordering::Relaxed);
        c.stamp.refused_loop.fetch_add(1, Ordering::Relaxed);
        c.stamp.refused_sessions.fetch_add(2, Ordering::Relaxed);
        let text = npt_metrics::encode(&src);
        for want in [
            "npt_serve_packets_received_total{transport=\"stamp\"} 4",
            "npt_serve_refused_total{transport=\"stamp\",reason=\"loop\"} 1",
            "npt_serve_refused_total{transport=\"stamp\",reason=\"sessions_full\"} 2",
            "npt_serve_stamp_sessions_total 0",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
    }

    #[test]
    fn notices_and_flow_table_pressure_are_exported() {
        let c = Arc::new(Counters::default());
        let src = source(c.clone());
        c.udp_notices_sent.fetch_add(4, Ordering::Relaxed);
        c.udp_notices_suppressed.fetch_add(96, Ordering::Relaxed);
        c.udp_flows_live.fetch_add(3, Ordering::Relaxed);
        c.udp_flows_untracked.fetch_add(7, Ordering::Relaxed);
        let text = npt_metrics::encode(&src);
        for want in [
            "npt_serve_notices_total{transport=\"udp\",result=\"sent\"} 4",
            "npt_serve_notices_total{transport=\"udp\",result=\"suppressed\"} 96",
            "npt_serve_flows{transport=\"udp\"} 3",
            "npt_serve_flow_table_total{transport=\"udp\",event=\"untracked\"} 7",
            "npt_serve_flow_table_total{transport=\"udp\",event=\"evicted\"} 0",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
    }

    #[test]
    fn hop_agent_requests_and_refusals_are_exported() {
        let c = Arc::new(Counters::default());
        let src = source(c.clone());
        c.hop.answered.fetch_add(2, Ordering::Relaxed);
        c.hop.attempts.fetch_add(10, Ordering::Relaxed);
        c.hop.refused_target.fetch_add(3, Ordering::Relaxed);
        c.hop.mtu_searches.fetch_add(1, Ordering::Relaxed);
        c.hop.mtu_probes.fetch_add(31, Ordering::Relaxed);
        let text = npt_metrics::encode(&src);
        for want in [
            "npt_serve_hop_requests_total 2",
            "npt_serve_hop_attempts_total 10",
            "npt_serve_hop_mtu_searches_total 1",
            "npt_serve_hop_mtu_probes_total 31",
            "npt_serve_refused_total{transport=\"hop\",reason=\"target\"} 3",
            "npt_serve_refused_total{transport=\"hop\",reason=\"replay\"} 0",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
    }
}
