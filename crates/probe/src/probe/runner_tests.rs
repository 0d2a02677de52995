//! Unit tests of the runner's result building: the load split, error_rate over packets sent,
//! and TCP connect / first packet as histograms with their means beside them.

use super::*;

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

#[test]
fn split_is_even_and_complete() {
    let parts: Vec<u64> = (0..3).map(|i| split(10, 3, i)).collect();
    assert_eq!(parts, vec![4, 3, 3]);
    assert_eq!((0..7).map(|i| split(5, 7, i)).sum::<u64>(), 5);
}
