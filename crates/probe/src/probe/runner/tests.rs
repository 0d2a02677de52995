//! Unit tests of the runner's result building: the load split, error_rate over packets sent,
//! and TCP connect / first packet as histograms with their means beside them.

use super::*;
use npt_wire::Fill;

/// The body the runner writes for these totals.
fn build_body(
    cfg: &ProbeConfig,
    t: &Totals,
    tcp: &[TcpTimes],
    intervals: Vec<Record>,
    wall_s: f64,
) -> ProbeBody {
    probe_stats(cfg, t, tcp, intervals, (0.0, 0.0), wall_s).summarize(&probe_meta(cfg))
}

fn tcp_config() -> ProbeConfig {
    ProbeConfig {
        proto: Proto::Tcp,
        target: "127.0.0.1:9".into(),
        addr: "127.0.0.1:9".parse().unwrap(),
        raw: false,
        token: None,
        stamp_key: None,
        size: 64,
        fill: Fill::Random,
        verify: false,
        pacing: PacingSpec::Interval {
            interval: Duration::from_millis(1),
        },
        loss_timeout: Duration::from_secs(1),
        count: Some(10),
        duration: None,
        clients: 2,
        threads: 1,
        stage: StageSpec::Packets(10),
        behind_threshold: Duration::from_millis(1),
        via: None,
        under_load: None,
        rx_stamp: Default::default(),
        spin: false,
        clock: crate::probe::session::ClockSync::None,
        source: Default::default(),
        mark: None,
        on_waiting: Default::default(),
    }
}

#[test]
fn error_rate_is_errors_over_packets_sent() {
    let mut t = Totals {
        packets: npt_stats::PacketCounts {
            sent: 8,
            ..Default::default()
        },
        ..Totals::default()
    };
    t.errors.record("reset", || "connection reset".into());
    t.errors.record("reset", || "connection reset".into());
    let b = build_body(&tcp_config(), &t, &[], Vec::new(), 1.0);
    assert_eq!(b.errors.total_errors, 2);
    assert_eq!(b.errors.attempts, Some(8));
    assert_eq!(b.errors.error_rate, 0.25);
    // Nothing could be sent at all (every flow refused): each error is its own attempt.
    let mut t = Totals::default();
    t.errors.record("refused", || "connection refused".into());
    let b = build_body(&tcp_config(), &t, &[], Vec::new(), 1.0);
    assert_eq!(b.errors.error_rate, 1.0);
}

#[test]
fn tcp_connect_and_first_packet_are_histograms_with_the_mean_beside() {
    let ms = 1_000_000u64;
    let flow = |connect: Option<u64>, echo: Option<u64>| TcpTimes {
        connect_start: 0,
        connect_ns: connect,
        first_echo_ns: echo,
        proxy: None,
    };
    let tcp = [
        flow(Some(2 * ms), Some(ms)),
        flow(Some(4 * ms), Some(3 * ms)),
        flow(Some(9 * ms), None),
        flow(None, None),
    ];
    let b = build_body(&tcp_config(), &Totals::default(), &tcp, Vec::new(), 1.0);
    let s = &b.summary;
    let p = s.phases_ms.as_ref().expect("tcp phases");
    assert_eq!((p.connect.count, p.first_packet.count), (3, 2));
    assert!(
        (s.connect_ms.unwrap() - 5.0).abs() < 0.01,
        "{:?}",
        s.connect_ms
    );
    assert!((s.first_packet_ms.unwrap() - 5.0).abs() < 0.01);
    assert_eq!(s.connect_ms, Some(p.connect.mean));
    assert!((p.connect.max - 9.0).abs() < 0.01 && (p.first_packet.min - 3.0).abs() < 0.01);
    let h = Histogram::from_serialized(&b.histograms[hist::CONNECT]).unwrap();
    assert_eq!(h.summary(), p.connect);
    // UDP has neither.
    let mut udp = tcp_config();
    udp.proto = Proto::Udp;
    let b = build_body(&udp, &Totals::default(), &[], Vec::new(), 1.0);
    assert!(b.summary.phases_ms.is_none() && !b.histograms.contains_key(hist::CONNECT));
}

/// quic-tun's latency test's figures beside npt's: its clock started after `connect`
/// returned, so its first packet is the first echo alone and its total runs from the
/// connection up to the last reply.
#[test]
fn tcp_first_echo_and_total_after_connect_are_quic_tuns() {
    let ms = 1_000_000u64;
    let flow = |start: u64, connect: Option<u64>, echo: Option<u64>| TcpTimes {
        connect_start: start,
        connect_ns: connect,
        first_echo_ns: echo,
        proxy: None,
    };
    // One client: connect 3 ms from t=10 ms, first echo 2 ms, last reply at t=1010 ms.
    let one = [flow(10 * ms, Some(3 * ms), Some(2 * ms))];
    let t = Totals {
        last_reply: Some(1010 * ms),
        ..Totals::default()
    };
    let b = build_body(&tcp_config(), &t, &one, Vec::new(), 1.0);
    let s = &b.summary;
    // Means of HDR histograms (3 significant digits).
    let near = |v: Option<f64>, want: f64| (v.unwrap() - want).abs() < 0.01;
    assert!(near(s.first_echo_ms, 2.0), "{:?}", s.first_echo_ms);
    assert!(near(s.first_packet_ms, 5.0), "{:?}", s.first_packet_ms);
    assert_eq!(s.total_ms, Some(1000.0));
    assert_eq!(
        s.total_after_connect_ms,
        Some(997.0),
        "total less the connect"
    );
    let p = s.phases_ms.as_ref().unwrap();
    assert_eq!(p.first_echo.unwrap().count, 1);
    assert!(b.histograms.contains_key(hist::FIRST_ECHO));
    // Several flows: the first echo's mean over flows that got one; the total after connect
    // from the first connection up (flow 2's at 12 ms, before flow 1's at 13 ms), the total
    // from the first connect started (flow 1's at 10 ms).
    let two = [
        flow(10 * ms, Some(3 * ms), Some(2 * ms)),
        flow(11 * ms, Some(ms), Some(4 * ms)),
        flow(12 * ms, None, None),
    ];
    let b = build_body(&tcp_config(), &t, &two, Vec::new(), 1.0);
    let s = &b.summary;
    assert!(near(s.first_echo_ms, 3.0), "{:?}", s.first_echo_ms);
    assert_eq!(s.total_ms, Some(1000.0));
    assert_eq!(s.total_after_connect_ms, Some(998.0));
    // No reply at all: neither total.
    let b = build_body(&tcp_config(), &Totals::default(), &one, Vec::new(), 1.0);
    assert_eq!(
        (b.summary.total_ms, b.summary.total_after_connect_ms),
        (None, None)
    );
}

#[test]
fn split_is_even_and_complete() {
    let parts: Vec<u64> = (0..3).map(|i| split(10, 3, i)).collect();
    assert_eq!(parts, vec![4, 3, 3]);
    assert_eq!((0..7).map(|i| split(5, 7, i)).sum::<u64>(), 5);
}
