//! `npt serve --metrics ADDR`: the responder's counters in OpenMetrics text, read from its
//! atomics on each scrape (nothing on the echo path changes). Kept out of `serve.rs` so the
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
    let tcp = [("transport", "tcp")];
    let rx = "Packets received by npt serve (UDP datagrams).";
    s.counter("npt_serve_packets_received_total", rx, &udp, g(&c.udp_rx));
    let tx = "Packets sent by npt serve (UDP datagrams).";
    s.counter("npt_serve_packets_sent_total", tx, &udp, g(&c.udp_tx));
    let rxb = "Payload bytes received by npt serve.";
    s.counter(
        "npt_serve_bytes_received_total",
        rxb,
        &udp,
        g(&c.udp_rx_bytes),
    );
    s.counter(
        "npt_serve_bytes_received_total",
        rxb,
        &tcp,
        g(&c.tcp_rx_bytes),
    );
    let txb = "Payload bytes sent by npt serve.";
    s.counter("npt_serve_bytes_sent_total", txb, &udp, g(&c.udp_tx_bytes));
    s.counter("npt_serve_bytes_sent_total", txb, &tcp, g(&c.tcp_tx_bytes));
    s.counter(
        "npt_serve_connections_accepted_total",
        "TCP connections accepted.",
        &tcp,
        g(&c.tcp_accepted),
    );
    let refused = "Requests, datagrams or connections refused, by reason.";
    for (reason, v) in [
        ("token", &c.refused_token),
        ("rate", &c.refused_rate),
        ("loop", &c.refused_loop),
        ("conns", &c.refused_conns),
        ("malformed", &c.malformed),
    ] {
        s.counter(
            "npt_serve_refused_total",
            refused,
            &[("reason", reason)],
            g(v),
        );
    }
    s.counter(
        "npt_serve_clamped_total",
        "Answers sent with fewer bytes than asked (no amplification).",
        &[],
        g(&c.clamped),
    );
    s.counter(
        "npt_serve_errors_total",
        "Send/receive errors, by transport.",
        &udp,
        g(&c.udp_errors),
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
        c.refused_rate.fetch_add(2, Ordering::Relaxed);
        let text = npt_metrics::encode(&src);
        assert!(
            text.contains("npt_serve_packets_received_total{transport=\"udp\"} 5"),
            "{text}"
        );
        assert!(
            text.contains("npt_serve_refused_total{reason=\"rate\"} 2"),
            "{text}"
        );
    }
}
