//! The agent's rules on frames built by the codec, with a fake measurer: no socket is opened.

use super::*;

use npt_wire::hop::{open_reply, request_frame, HopProto};

fn key() -> SessionKey {
    SessionKey::from_bytes(&[5; 32])
}

fn req(host: &str) -> HopRequest {
    HopRequest {
        proto: HopProto::Tcp,
        host: host.into(),
        port: 7777,
        attempts: 3,
        interval_us: 10_000,
        timeout_us: 100_000,
        size: 0,
        tos: 0,
    }
}

fn agent_with(allow: &str, limits: HopLimits, m: Measurer) -> HopAgent {
    HopAgent::new(
        Some(HopAgentConfig {
            allow: AllowList::parse(allow).unwrap(),
            limits,
            measure: m,
        }),
        Arc::new(Counters::default()),
    )
}

/// A measurer that answers every attempt in `attempt × 1 ms`.
fn fake() -> Measurer {
    Measurer::new(|r, _| {
        (1..=u64::from(r.attempts))
            .map(|i| Sample::Rtt(i * 1_000_000))
            .collect()
    })
}

fn agent(allow: &str) -> HopAgent {
    agent_with(allow, HopLimits::default(), fake())
}

fn frame(r: &HopRequest, seq: u64) -> Vec<u8> {
    request_frame(r, 1, seq, 0, Some(&key())).unwrap()
}

async fn ask(a: &HopAgent, s: &mut HopSession, f: &[u8]) -> Answer {
    let hdr: [u8; HEADER_LEN] = f[..HEADER_LEN].try_into().unwrap();
    a.answer(s, &hdr, &f[HEADER_LEN..], Some(&key())).await
}

/// The status of a reply to `seq` (OK with its reply), or panics on a close.
fn status_of(ans: Answer, seq: u64) -> Result<HopReply, u32> {
    let Answer::Reply(f) = ans else {
        panic!("closed")
    };
    open_reply(&f, seq, Some(&key())).unwrap().1
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn an_allowed_target_is_measured_and_counted() {
    rt().block_on(async {
        let a = agent("10.0.0.0/8");
        let mut s = a.session();
        let f = frame(&req("10.0.3.2"), 1);
        let Answer::Reply(out) = ask(&a, &mut s, &f).await else {
            panic!("closed")
        };
        assert!(out.len() <= f.len(), "never larger than the request");
        let reply = open_reply(&out, 1, Some(&key())).unwrap().1.unwrap();
        assert_eq!(reply.addr, Some("10.0.3.2:7777".parse().unwrap()));
        assert_eq!(
            reply.samples,
            vec![
                Sample::Rtt(1_000_000),
                Sample::Rtt(2_000_000),
                Sample::Rtt(3_000_000)
            ]
        );
        let c = &a.counters.hop;
        assert_eq!(
            (HopCounters::get(&c.answered), HopCounters::get(&c.attempts)),
            (1, 3)
        );
        assert_eq!(c.refusals_total(), 0);
    });
}

#[test]
fn targets_outside_the_list_are_refused_without_measuring() {
    rt().block_on(async {
        let never = Measurer::new(|_, _| panic!("measured a refused target"));
        let a = agent_with(
            "10.0.0.0/8,target.example:7777",
            HopLimits::default(),
            never,
        );
        let mut s = a.session();
        for (seq, host) in [(1, "192.0.2.1"), (2, "169.254.169.254"), (3, "::1")] {
            let got = status_of(ask(&a, &mut s, &frame(&req(host), seq)).await, seq);
            assert_eq!(got, Err(status::NOT_ALLOWED), "{host}");
        }
        // A name an entry could allow (it may resolve into 10/8) resolves outside it
        // (`localhost`, from /etc/hosts), or does not resolve (a 64-byte label is refused by
        // the resolver before any query is sent).
        let got = status_of(ask(&a, &mut s, &frame(&req("localhost"), 4)).await, 4);
        assert_eq!(got, Err(status::NOT_ALLOWED));
        let long = format!("{}.example", "a".repeat(64));
        let got = status_of(ask(&a, &mut s, &frame(&req(&long), 5)).await, 5);
        assert_eq!(got, Err(status::UNRESOLVED));
        let c = &a.counters.hop;
        assert_eq!(HopCounters::get(&c.refused_target), 4);
        assert_eq!(HopCounters::get(&c.refused_unresolved), 1);
        assert_eq!(HopCounters::get(&c.answered), 0);
        // With names only, a name no entry lists is refused without a lookup (a failed lookup
        // would be counted as unresolved instead).
        let never = Measurer::new(|_, _| panic!("measured a refused target"));
        let a = agent_with("target.example:7777", HopLimits::default(), never);
        let mut s = a.session();
        let got = status_of(ask(&a, &mut s, &frame(&req("evil.invalid"), 1)).await, 1);
        assert_eq!(got, Err(status::NOT_ALLOWED));
        let mut r = req("target.example");
        r.port = 22;
        let got = status_of(ask(&a, &mut s, &frame(&r, 2)).await, 2);
        assert_eq!(
            got,
            Err(status::NOT_ALLOWED),
            "the listed name, another port"
        );
        assert_eq!(HopCounters::get(&a.counters.hop.refused_target), 2);
        assert_eq!(HopCounters::get(&a.counters.hop.refused_unresolved), 0);
    });
}

#[test]
fn a_name_is_measured_at_an_address_it_resolves_to_that_is_allowed() {
    rt().block_on(async {
        let a = agent("127.0.0.0/8");
        let mut s = a.session();
        let reply = status_of(ask(&a, &mut s, &frame(&req("localhost"), 1)).await, 1).unwrap();
        assert_eq!(reply.addr, Some("127.0.0.1:7777".parse().unwrap()));
    });
}

#[test]
fn forged_replayed_and_unkeyed_requests_close_the_stream() {
    rt().block_on(async {
        let a = agent("10.0.0.0/8");
        let mut s = a.session();
        let f = frame(&req("10.0.3.2"), 7);
        assert!(matches!(ask(&a, &mut s, &f).await, Answer::Reply(_)));
        assert_eq!(
            ask(&a, &mut s, &f).await,
            Answer::Close,
            "the same frame again"
        );
        // The target changed on the way: the body tag fails.
        let mut bad = frame(&req("10.0.3.2"), 8);
        bad[HEADER_LEN + 20] = b'9';
        assert_eq!(ask(&a, &mut s, &bad).await, Answer::Close);
        // Sealed under another session's key.
        let other = request_frame(
            &req("10.0.3.2"),
            1,
            9,
            0,
            Some(&SessionKey::from_bytes(&[6; 32])),
        )
        .unwrap();
        assert_eq!(ask(&a, &mut s, &other).await, Answer::Close);
        let hdr: [u8; HEADER_LEN] = f[..HEADER_LEN].try_into().unwrap();
        assert_eq!(
            a.answer(&mut s, &hdr, &f[HEADER_LEN..], None).await,
            Answer::Close,
            "no session key"
        );
        let c = &a.counters.hop;
        assert_eq!(HopCounters::get(&c.refused_replay), 1);
        assert_eq!(HopCounters::get(&c.refused_mac), 3);
        assert_eq!(HopCounters::get(&c.answered), 1);
    });
}

#[test]
fn out_of_bounds_and_unpadded_requests_are_bad() {
    rt().block_on(async {
        let a = agent("10.0.0.0/8");
        let mut s = a.session();
        let mut r = req("10.0.3.2");
        r.interval_us = 1;
        let got = status_of(ask(&a, &mut s, &frame(&r, 1)).await, 1);
        assert_eq!(got, Err(status::BAD_REQUEST));
        // Cut to less than the reply it asks for (header re-sealed, so only the length is
        // wrong): refused with a bare header, not answered in full.
        let k = key();
        let mut f = frame(&req("10.0.3.2"), 2);
        let short = HEADER_LEN + 40;
        f.truncate(short);
        f[8..12].copy_from_slice(&(short as u32).to_be_bytes());
        let (h, b) = f.split_at_mut(HEADER_LEN);
        k.seal(npt_wire::auth::Dir::ToServer, h).unwrap();
        k.seal_body(npt_wire::auth::Dir::ToServer, h, b).unwrap();
        let Answer::Reply(out) = ask(&a, &mut s, &f).await else {
            panic!("closed")
        };
        assert_eq!(out.len(), HEADER_LEN);
        assert_eq!(
            open_reply(&out, 2, Some(&k)).unwrap().1,
            Err(status::BAD_REQUEST)
        );
        assert_eq!(HopCounters::get(&a.counters.hop.refused_bad), 2);
    });
}

#[test]
fn a_server_without_the_agent_refuses_and_counts() {
    rt().block_on(async {
        let a = HopAgent::new(None, Arc::new(Counters::default()));
        let mut s = a.session();
        let got = status_of(ask(&a, &mut s, &frame(&req("10.0.3.2"), 1)).await, 1);
        assert_eq!(got, Err(status::DISABLED));
        assert_eq!(HopCounters::get(&a.counters.hop.refused_disabled), 1);
    });
}

#[test]
fn session_rate_then_global_rate() {
    rt().block_on(async {
        let limits = HopLimits {
            session_rate: 0.0,
            session_burst: 3.0,
            global_rate: 0.0,
            global_burst: 5.0,
            ..HopLimits::default()
        };
        let a = agent_with("10.0.0.0/8", limits, fake());
        let mut s1 = a.session();
        let mut got = Vec::new();
        for seq in 1..=5 {
            got.push(status_of(ask(&a, &mut s1, &frame(&req("10.0.0.1"), seq)).await, seq).is_ok());
        }
        assert_eq!(
            got,
            [true, true, true, false, false],
            "the session's burst of 3"
        );
        // A second session has its own bucket, but the agent's burst of 5 is shared.
        let mut s2 = a.session();
        let mut got = Vec::new();
        for seq in 1..=3 {
            got.push(status_of(
                ask(&a, &mut s2, &frame(&req("10.0.0.1"), seq)).await,
                seq,
            ));
        }
        assert!(got[0].is_ok() && got[1].is_ok());
        assert_eq!(got[2], Err(status::BUSY));
        let c = &a.counters.hop;
        assert_eq!(HopCounters::get(&c.refused_rate), 2);
        assert_eq!(HopCounters::get(&c.refused_busy), 1);
        assert_eq!(HopCounters::get(&c.answered), 5);
    });
}

/// Floods that empty the agent's bucket do not shut out a session asking at its own pace: a
/// quiet session (its bucket at least half full) takes from a reserve as large as the agent's
/// burst, a flooding one cannot, and the reserve is bounded. Rates of 0: no refill, exact.
#[test]
fn a_quiet_session_is_answered_when_a_flood_has_emptied_the_agent() {
    rt().block_on(async {
        let limits = HopLimits {
            session_rate: 0.0,
            session_burst: 10.0,
            global_rate: 0.0,
            global_burst: 5.0,
            ..HopLimits::default()
        };
        let a = agent_with("10.0.0.0/8", limits, fake());
        let mut flood = a.session();
        let mut got = Vec::new();
        for seq in 1..=10 {
            got.push(status_of(
                ask(&a, &mut flood, &frame(&req("10.0.0.1"), seq)).await,
                seq,
            ));
        }
        // 5 from the agent's burst, a 6th from the reserve while the flood's own bucket was
        // still half full (5 of 10), then busy.
        assert!(got[..6].iter().all(Result::is_ok), "{got:?}");
        assert!(got[6..].iter().all(|g| *g == Err(status::BUSY)), "{got:?}");
        let mut quiet = a.session();
        let mut got = Vec::new();
        for seq in 1..=5 {
            got.push(status_of(
                ask(&a, &mut quiet, &frame(&req("10.0.0.1"), seq)).await,
                seq,
            ));
        }
        // The reserve's other 4, then nothing: the agent's total stays bounded.
        assert!(got[..4].iter().all(Result::is_ok), "{got:?}");
        assert_eq!(got[4], Err(status::BUSY));
        let c = &a.counters.hop;
        assert_eq!(HopCounters::get(&c.answered), 10);
        assert_eq!(HopCounters::get(&c.refused_busy), 5);
    });
}

#[test]
fn measurements_in_flight_are_capped() {
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let slow = Measurer::new(move |r, _| {
        let _ = started_tx.send(());
        let _ = release_rx.lock().unwrap().recv();
        vec![Sample::Rtt(1); usize::from(r.attempts)]
    });
    let limits = HopLimits {
        max_in_flight: 1,
        ..HopLimits::default()
    };
    let a = Arc::new(agent_with("10.0.0.0/8", limits, slow));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let a1 = a.clone();
        let first = tokio::spawn(async move {
            let mut s = a1.session();
            ask(&a1, &mut s, &frame(&req("10.0.0.1"), 1)).await
        });
        tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
            .await
            .unwrap();
        let mut s = a.session();
        let got = status_of(ask(&a, &mut s, &frame(&req("10.0.0.1"), 1)).await, 1);
        assert_eq!(got, Err(status::BUSY), "one measurement at a time");
        release_tx.send(()).unwrap();
        assert!(status_of(first.await.unwrap(), 1).is_ok());
        // The slot is free again.
        release_tx.send(()).unwrap();
        let got = status_of(ask(&a, &mut s, &frame(&req("10.0.0.1"), 2)).await, 2);
        assert!(got.is_ok());
    });
}

#[test]
fn a_measurer_that_returns_too_few_samples_still_answers_each_attempt() {
    rt().block_on(async {
        let short = Measurer::new(|_, _| vec![Sample::Rtt(5)]);
        let a = agent_with("10.0.0.0/8", HopLimits::default(), short);
        let mut s = a.session();
        let reply = status_of(ask(&a, &mut s, &frame(&req("10.0.0.1"), 1)).await, 1).unwrap();
        assert_eq!(
            reply.samples,
            vec![Sample::Rtt(5), Sample::Failed("io"), Sample::Failed("io")]
        );
    });
}

fn mtu_req(host: &str) -> HopRequest {
    HopRequest {
        proto: HopProto::Mtu,
        attempts: 1,
        interval_us: 0,
        timeout_us: 5_000_000,
        ..req(host)
    }
}

/// A search that read 1372 each way, having sent 20 datagrams up and 18 down requests.
fn fake_mtu() -> Measurer {
    let way = |sent| MtuWay {
        verdict: Ok("icmp"),
        flags: hop::mtu::SETTLED,
        limit_mtu: Some(1400),
        largest_datagram: Some(1372),
        smallest_lost: Some(1373),
        largest_fragment: None,
        sent,
        answered: 10,
        lost_sizes: 0,
        router: None,
    };
    fake().with_mtu(move |_, _| MtuReply {
        up: way(20),
        down: way(18),
    })
}

#[test]
fn an_mtu_search_is_answered_counted_and_costs_more_than_one_request() {
    rt().block_on(async {
        let a = agent_with("10.0.0.0/8", HopLimits::default(), fake_mtu());
        let mut s = a.session();
        let f = frame(&mtu_req("10.0.3.2"), 1);
        let Answer::Reply(out) = ask(&a, &mut s, &f).await else {
            panic!("closed")
        };
        assert!(out.len() <= f.len(), "never larger than the request");
        let reply = open_reply(&out, 1, Some(&key())).unwrap().1.unwrap();
        let m = reply.mtu.unwrap();
        assert_eq!(
            (m.up.largest_datagram, m.down.smallest_lost),
            (Some(1372), Some(1373))
        );
        let c = &a.counters.hop;
        assert_eq!(
            (
                HopCounters::get(&c.answered),
                HopCounters::get(&c.mtu_searches),
                HopCounters::get(&c.mtu_probes),
                HopCounters::get(&c.attempts)
            ),
            (1, 1, 38, 0)
        );
        // The session's burst of 10 holds two searches of 5 tokens, not a third.
        let got = status_of(ask(&a, &mut s, &frame(&mtu_req("10.0.3.2"), 2)).await, 2);
        assert!(got.is_ok());
        let got = status_of(ask(&a, &mut s, &frame(&mtu_req("10.0.3.2"), 3)).await, 3);
        assert_eq!(got, Err(status::RATE_LIMITED));
    });
}

#[test]
fn an_mtu_search_outside_the_list_or_bounds_or_without_a_searcher_is_refused() {
    rt().block_on(async {
        let a = agent_with("10.0.0.0/8", HopLimits::default(), fake_mtu());
        let mut s = a.session();
        let got = status_of(ask(&a, &mut s, &frame(&mtu_req("192.0.2.1"), 1)).await, 1);
        assert_eq!(got, Err(status::NOT_ALLOWED));
        let mut long = mtu_req("10.0.3.2");
        long.timeout_us = 31_000_000;
        let got = status_of(ask(&a, &mut s, &frame(&long, 2)).await, 2);
        assert_eq!(got, Err(status::BAD_REQUEST));
        let mut paced = mtu_req("10.0.3.2");
        paced.interval_us = 1000;
        let got = status_of(ask(&a, &mut s, &frame(&paced, 3)).await, 3);
        assert_eq!(got, Err(status::BAD_REQUEST));
        // A measurer without a searcher (an RTT-only agent) refuses the request.
        let a = agent("10.0.0.0/8");
        let mut s = a.session();
        let got = status_of(ask(&a, &mut s, &frame(&mtu_req("10.0.3.2"), 1)).await, 1);
        assert_eq!(got, Err(status::BAD_REQUEST));
        assert_eq!(HopCounters::get(&a.counters.hop.mtu_searches), 0);
    });
}

#[test]
fn mtu_searches_in_flight_are_capped() {
    rt().block_on(async {
        let limits = HopLimits {
            max_mtu_in_flight: 0,
            ..HopLimits::default()
        };
        let a = agent_with("10.0.0.0/8", limits, fake_mtu());
        let mut s = a.session();
        let got = status_of(ask(&a, &mut s, &frame(&mtu_req("10.0.3.2"), 1)).await, 1);
        assert_eq!(got, Err(status::BUSY));
        // An RTT request still runs.
        let got = status_of(ask(&a, &mut s, &frame(&req("10.0.3.2"), 2)).await, 2);
        assert!(got.is_ok());
    });
}

fn mark_req(host: &str) -> HopRequest {
    HopRequest {
        proto: HopProto::Mark,
        tos: 46 << 2,
        ..req(host)
    }
}

#[test]
fn a_marking_read_is_answered_counted_as_its_echoes_and_bounded_like_them() {
    rt().block_on(async {
        let way = |dscp| MarkWay {
            read: Ok(()),
            sent: Some(0xb8),
            arrived: Some(0),
            dscp,
            ecn: "arrived",
            packets: 3,
            ce: 0,
        };
        let m = fake().with_mark(move |r, _| MarkReply {
            up: way(if r.tos == 0xb8 { "bleached" } else { "mixed" }),
            down: way("arrived"),
        });
        let a = agent_with("10.0.0.0/8", HopLimits::default(), m);
        let mut s = a.session();
        let f = frame(&mark_req("10.0.3.2"), 1);
        let Answer::Reply(out) = ask(&a, &mut s, &f).await else {
            panic!("closed")
        };
        assert!(out.len() <= f.len(), "never larger than the request");
        let reply = open_reply(&out, 1, Some(&key())).unwrap().1.unwrap();
        let m = reply.mark.unwrap();
        assert_eq!((m.up.dscp, m.down.dscp), ("bleached", "arrived"));
        let c = &a.counters.hop;
        let n = u64::from(mark_req("x").attempts);
        assert_eq!(
            (HopCounters::get(&c.answered), HopCounters::get(&c.attempts)),
            (1, n)
        );
        // Outside the list, out of a UDP echo's bounds: refused, unread.
        let got = status_of(ask(&a, &mut s, &frame(&mark_req("192.0.2.1"), 2)).await, 2);
        assert_eq!(got, Err(status::NOT_ALLOWED));
        let big = HopRequest {
            size: 9000,
            ..mark_req("10.0.3.2")
        };
        let got = status_of(ask(&a, &mut s, &frame(&big, 3)).await, 3);
        assert_eq!(got, Err(status::BAD_REQUEST));
        // An agent without a marking reader refuses the request.
        let a = agent("10.0.0.0/8");
        let mut s = a.session();
        let got = status_of(ask(&a, &mut s, &frame(&mark_req("10.0.3.2"), 1)).await, 1);
        assert_eq!(got, Err(status::BAD_REQUEST));
        assert_eq!(HopCounters::get(&a.counters.hop.answered), 0);
    });
}
