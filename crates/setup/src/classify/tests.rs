//! The flagging rule on timings written by hand: a path of 50 ms round trips, attempts whose
//! layers took what their protocols need (no flag), and the faults the rule is for — an extra
//! proxy round trip, a TLS 1.2 handshake read against 1.3's one round trip, a 0-RTT the server
//! rejected, a resumption it refused — each flagged, and jitter of a few ms never.

use super::*;

const RTT: u64 = 50_000_000;

fn plan(layers: &[(Layer, f64)]) -> Vec<Plan> {
    layers
        .iter()
        .map(|(l, n)| Plan {
            layer: *l,
            what: l.name().to_string(),
            expected_rtts: *n,
        })
        .collect()
}

/// `n` attempts whose layers took `rtts` round trips each, `jitter` ns apart from one to the
/// next (a sawtooth of 0, +j, −j …).
fn attempts(layers: &[(Layer, f64)], n: usize, jitter: i64) -> Vec<Attempt> {
    (0..n)
        .map(|i| {
            let j = [0, jitter, -jitter][i % 3];
            // NO-PANIC: test figures, all well inside i64 and positive.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let at = |r: f64| ((r * RTT as f64) as i64 + j).max(0) as u64;
            Attempt {
                layers: layers.iter().map(|(l, r)| (*l, at(*r))).collect(),
                rtt_ns: Some(RTT + (j.unsigned_abs())),
                ..Attempt::default()
            }
        })
        .collect()
}

fn flags(v: &Verdict) -> Vec<(&'static str, Option<&str>)> {
    v.layers
        .iter()
        .map(|l| (l.plan.layer.name(), l.flag.as_deref()))
        .collect()
}

#[test]
fn layers_that_take_what_their_protocol_needs_are_not_flagged() {
    let stack = [
        (Layer::TcpConnect, 1.0),
        (Layer::Socks5Greeting, 1.0),
        (Layer::Socks5Connect, 1.0),
        (Layer::Tls, 1.0),
        (Layer::FirstByte, 1.0),
    ];
    let v = classify(&plan(&stack), &attempts(&stack, 20, 3_000_000), false);
    // The histogram keeps 3 significant digits.
    assert!(v.rtt_ns.abs_diff(RTT) < RTT / 1000, "{}", v.rtt_ns);
    assert_eq!(v.completed, 20);
    for l in &v.layers {
        assert!(l.flag.is_none(), "{:?}", flags(&v));
        assert!((l.rtts - 1.0).abs() < 0.07, "{}: {}", l.plan.what, l.rtts);
        assert!(l.rtts_lo <= l.rtts && l.rtts <= l.rtts_hi);
    }
    // The whole setup: 5 round trips.
    let whole = v.setup.quantile_ns(0.5) as f64 / RTT as f64;
    assert!((whole - 5.0).abs() < 0.1, "{whole}");
}

#[test]
fn an_extra_proxy_round_trip_is_flagged_and_names_the_layer() {
    let want = [
        (Layer::TcpConnect, 1.0),
        (Layer::HttpConnect, 1.0),
        (Layer::FirstByte, 1.0),
    ];
    // A proxy that answers CONNECT only after a round trip of its own.
    let got = [
        (Layer::TcpConnect, 1.0),
        (Layer::HttpConnect, 2.0),
        (Layer::FirstByte, 1.0),
    ];
    let v = classify(&plan(&want), &attempts(&got, 10, 1_000_000), false);
    let f = flags(&v);
    assert_eq!(f[0].1, None);
    assert!(
        f[1].1
            .unwrap()
            .starts_with("2.00 round trips where http_connect needs 1"),
        "{f:?}"
    );
    assert_eq!(f[2].1, None);
}

#[test]
fn half_a_round_trip_more_is_noise_until_the_interval_clears_it() {
    let want = [(Layer::Tls, 1.0)];
    // 1.4 round trips: within the tolerance.
    let v = classify(&plan(&want), &attempts(&[(Layer::Tls, 1.4)], 10, 0), false);
    assert!(v.layers[0].flag.is_none());
    // 1.6, but two samples only: the interval spans the whole range, whose low end is the
    // faster attempt — still 1.6, so flagged; one fast outlier among slow ones is not enough
    // to hide it, and one slow among fast ones not enough to raise it.
    let mut a = attempts(&[(Layer::Tls, 1.0)], 9, 0);
    a.extend(attempts(&[(Layer::Tls, 3.0)], 1, 0));
    let v = classify(&plan(&want), &a, false);
    assert!(v.layers[0].flag.is_none(), "{:?}", flags(&v));
}

#[test]
fn tls_1_2_read_against_1_3_is_flagged() {
    let v = classify(
        &plan(&[(Layer::Tls, 1.0)]),
        &attempts(&[(Layer::Tls, 2.0)], 8, 500_000),
        false,
    );
    assert!(v.layers[0].flag.is_some());
    let v = classify(
        &plan(&[(Layer::Tls, 2.0)]),
        &attempts(&[(Layer::Tls, 2.0)], 8, 500_000),
        false,
    );
    assert!(v.layers[0].flag.is_none());
}

#[test]
fn a_rejected_zero_rtt_is_flagged_on_quic_and_costs_the_first_byte_a_round_trip() {
    let want = [(Layer::Quic, 0.0), (Layer::FirstByte, 1.0)];
    // The request went in 0-RTT (ready at once) but came back a round trip late.
    let mut a = attempts(&[(Layer::Quic, 0.001), (Layer::FirstByte, 2.0)], 6, 0);
    for x in &mut a {
        x.zero_rtt = Some(false);
    }
    let v = classify(&plan(&want), &a, true);
    let f = flags(&v);
    assert!(
        f[0].1
            .unwrap()
            .contains("0-RTT rejected by the server in 6 of 6"),
        "{f:?}"
    );
    assert!(f[1].1.unwrap().starts_with("2.00 round trips"), "{f:?}");
    assert_eq!((v.zero_rtt_sent, v.zero_rtt_accepted), (Some(6), Some(0)));

    // Accepted: no flag, the QUIC layer costs nothing.
    for x in &mut a {
        x.zero_rtt = Some(true);
        x.layers[1].1 = RTT;
    }
    let v = classify(&plan(&want), &a, true);
    assert_eq!(flags(&v), vec![("quic", None), ("first_byte", None)]);
    assert!(v.layers[0].rtts < 0.01);
}

#[test]
fn zero_rtt_not_offered_costs_the_handshake_and_says_so() {
    let want = [(Layer::Quic, 0.0), (Layer::FirstByte, 1.0)];
    let a = attempts(&[(Layer::Quic, 1.0), (Layer::FirstByte, 1.0)], 5, 0);
    let v = classify(&plan(&want), &a, true);
    let f = v.layers[0].flag.as_deref().unwrap();
    assert!(f.contains("1.00 round trips where quic needs 0"), "{f}");
    assert!(f.contains("0-RTT not offered in 5 of 5"), "{f}");
}

#[test]
fn a_refused_resumption_is_flagged_on_tls() {
    let want = [(Layer::TcpConnect, 1.0), (Layer::Tls, 1.0)];
    let mut a = attempts(&[(Layer::TcpConnect, 1.0), (Layer::Tls, 2.0)], 4, 0);
    for x in &mut a {
        x.resumed = Some(false);
    }
    let v = classify(&plan(&want), &a, true);
    let f = v.layers[1].flag.as_deref().unwrap();
    assert!(f.contains("resumption refused in 4 of 4"), "{f}");
    assert_eq!(v.resumed, Some(0));
}

#[test]
fn failed_attempts_count_only_the_layers_they_reached() {
    let want = [(Layer::TcpConnect, 1.0), (Layer::Tls, 1.0)];
    let mut a = attempts(&want, 3, 0);
    a.push(Attempt {
        layers: vec![(Layer::TcpConnect, RTT)],
        ..Attempt::default()
    });
    a.push(Attempt::default());
    let v = classify(&plan(&want), &a, false);
    assert_eq!(v.completed, 3);
    assert_eq!(v.layers[0].hist.count(), 4);
    assert_eq!(v.layers[1].hist.count(), 3);
    assert_eq!(v.setup.count(), 3);
    // No base round trip at all: multiples are 0 and nothing is flagged.
    let none: Vec<Attempt> = a
        .into_iter()
        .map(|mut x| {
            x.rtt_ns = None;
            x
        })
        .collect();
    let v = classify(&plan(&want), &none, false);
    assert_eq!(v.rtt_ns, 0);
    assert!(v.layers.iter().all(|l| l.flag.is_none() && l.rtts == 0.0));
}

#[test]
fn on_a_sub_millisecond_path_computation_is_not_a_round_trip() {
    // Loopback: 0.1 ms round trips, a TLS handshake of 3 ms (its computation): 30 "round
    // trips" that are none, not flagged; an extra 6 ms is.
    let rtt = 100_000;
    let want = plan(&[(Layer::Tls, 1.0)]);
    let at = |tls: u64| Attempt {
        layers: vec![(Layer::Tls, tls)],
        rtt_ns: Some(rtt),
        ..Attempt::default()
    };
    let v = classify(&want, &vec![at(3_000_000); 5], false);
    assert!(v.layers[0].rtts > 25.0 && v.layers[0].flag.is_none());
    let v = classify(&want, &vec![at(6_200_000); 5], false);
    assert!(v.layers[0].flag.is_some());
}
