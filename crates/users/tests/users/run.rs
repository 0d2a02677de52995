//! Real-socket tests of `npt run`'s engine against an in-process `npt serve` (TCP, UDP, QUIC):
//! every activity completes without errors and its result matches the JSON Schema; an added
//! path delay shows up in p50 request latency; a server killed mid-run gives classified
//! errors and a report; an unexpected QUIC certificate is one clear error.

#![cfg(test)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_result::run::RunBody;
use npt_result::workload::{Finished, Stop, Workload};
use npt_server::quic::{start_quic, QuicServer, QuicTls};
use npt_server::{ServeConfig, Server};
use npt_users::config::{GameShape, QuicShape, TransferShape, WebShape};
use npt_users::{Load, Mix, QuicTrust, Range, RunConfig, Shape, Targets};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MS: u64 = 1_000_000;

fn server() -> Server {
    Server::start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..ServeConfig::default()
    })
    .expect("server starts")
}

fn quic_server(s: &Server) -> QuicServer {
    start_quic(
        &s.runtime(),
        "127.0.0.1:0".parse().unwrap(),
        QuicTls::SelfSigned,
        None,
        s.counters(),
    )
    .expect("quic starts")
}

/// Small sizes and short thinks so a few seconds give many requests.
fn small_shape(mix: &str) -> Shape {
    Shape {
        mix: Mix::parse(mix).unwrap(),
        think: Range::new(10 * MS, 50 * MS),
        web: WebShape {
            pages: Range::new(1, 2),
            rounds: Range::new(2, 4),
            request_up: Range::new(200, 2000),
            request_down: Range::new(1024, 16 * 1024),
            pause: Range::new(MS, 5 * MS),
            ..WebShape::default()
        },
        quic: QuicShape {
            resources: Range::new(2, 4),
            doc_down: Range::new(4096, 16 * 1024),
            resource_down: Range::new(1024, 8 * 1024),
            ..QuicShape::default()
        },
        transfer: TransferShape {
            download: Range::new(256 * 1024, 1 << 20),
            upload: Range::new(256 * 1024, 1 << 20),
            chunk: 16 * 1024,
        },
        game: GameShape {
            session: Range::new(300 * MS, 600 * MS),
            tick_hz: Range::new(50, 100),
            size: Range::new(64, 512),
            loss_timeout: Duration::from_millis(500),
        },
    }
}

fn config(
    stream: Vec<SocketAddr>,
    quic: Option<SocketAddr>,
    trust: QuicTrust,
    mix: &str,
    users: u32,
    secs: f64,
) -> RunConfig {
    RunConfig {
        targets: Targets {
            stream,
            quic,
            quic_server_name: "localhost".into(),
            via: None,
            source: Default::default(),
        },
        load: Load::Users {
            users,
            ramp_up: Duration::from_millis(200),
        },
        duration: Duration::from_secs_f64(secs),
        shape: small_shape(mix),
        seed: 1,
        token: 0,
        secret: None,
        timeout: Duration::from_secs(5),
        interval: Duration::from_secs(1),
        quic_trust: trust,
        workers: 2,
    }
}

fn run(mut cfg: RunConfig) -> Finished<RunBody> {
    cfg.run(&Arc::new(Stop::new()), &mut |_| {})
        .expect("run completes")
}

fn document(cfg: &RunConfig, out: &Finished<RunBody>) -> serde_json::Value {
    let doc = npt_result::Document::new(
        "run",
        out.started,
        out.ended,
        out.stopped_by,
        cfg.config(),
        &out.body,
    );
    serde_json::from_slice(&doc.to_json_pretty()).unwrap()
}

fn validate(doc: &serde_json::Value) {
    npt_testkit::schema::assert_valid(doc, "run");
}

#[test]
fn every_activity_completes_without_errors_and_matches_the_schema() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let s = server();
    let q = quic_server(&s);
    // Pin the server's own certificate: the verified path, not --insecure.
    let trust = QuicTrust::Roots(vec![q.cert_der().to_vec()]);
    let cfg = config(
        s.local_addrs().to_vec(),
        Some(q.local_addr()),
        trust,
        "web=1,quic=1,download=1,upload=1,game=1",
        10,
        3.0,
    );
    let out = run(cfg.clone());
    let b = &out.body;
    assert_eq!(b.errors.total_errors, 0, "errors: {:?}", b.errors.by_kind);
    for a in ["web", "quic", "download", "upload", "game"] {
        let x = &b.activities[a];
        assert!(x.requests > 0, "{a}: no requests");
        assert_eq!(x.errors, 0);
    }
    for p in ["tcp", "quic", "udp"] {
        assert!(b.latency[p].p50_ms > 0.0, "{p}");
        assert_eq!(b.protocols[p].latency_ms.count, b.protocols[p].requests);
    }
    assert!(b.protocols["tcp"].connect_ms.count > 0);
    assert!(b.protocols["quic"].handshake_ms.count > 0);
    assert!(b.activities["download"].ttfb_ms.is_some());
    assert!(b.activities["download"].transfer_bps.unwrap() > 0.0);
    let g = b.activities["game"].game.as_ref().unwrap();
    assert_eq!(g.packets.received + g.packets.lost, g.packets.sent);
    // Also for sessions the end of the run cut off: RTTs and counts are handed over together.
    assert_eq!(b.activities["game"].requests, g.packets.received);
    assert!(!b.intervals.is_empty());
    assert_eq!(
        b.intervals.iter().map(|i| i.completed).sum::<u64>(),
        b.summary.requests,
        "the series adds up to the totals"
    );
    // Serialized histograms decode to the same counts (exact merge later).
    let h = npt_stats::Histogram::from_serialized(&b.histograms["proto.tcp.latency"]).unwrap();
    assert_eq!(h.count(), b.protocols["tcp"].requests);
    assert_eq!(out.stopped_by.name(), "duration");
    validate(&document(&cfg, &out));
}

/// Forwards TCP to `upstream`, delaying every chunk by `delay` in each direction without
/// limiting throughput (each chunk is released `delay` after it was read), like a long link.
fn delay_forwarder(
    rt: &tokio::runtime::Runtime,
    upstream: SocketAddr,
    delay: Duration,
) -> SocketAddr {
    let l = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = l.local_addr().unwrap();
    rt.spawn(async move {
        while let Ok((c, _)) = l.accept().await {
            tokio::spawn(async move {
                let Ok(s) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = c.set_nodelay(true);
                let _ = s.set_nodelay(true);
                let (cr, cw) = c.into_split();
                let (sr, sw) = s.into_split();
                tokio::spawn(pipe(cr, sw, delay));
                pipe(sr, cw, delay).await;
            });
        }
    });
    addr
}

async fn pipe(
    mut r: tokio::net::tcp::OwnedReadHalf,
    mut w: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((at, buf)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if w.write_all(&buf).await.is_err() {
                break;
            }
        }
        let _ = w.shutdown().await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx
                    .send((tokio::time::Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// The test: a forwarder adding 20 ms each way must move p50 request latency by
/// 40 ms. Tolerance: −2 ms (timers never fire early, so less is a measurement error) to
/// +15 ms (scheduling on a shared 2-core machine; the direct p50 on loopback is < 5 ms).
#[test]
fn an_added_path_delay_moves_p50_by_that_delay() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let s = server();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let fwd = delay_forwarder(&rt, s.local_addrs()[0], Duration::from_millis(20));
    let direct = run(config(
        s.local_addrs().to_vec(),
        None,
        QuicTrust::Insecure,
        "web=1",
        5,
        3.0,
    ));
    let delayed = run(config(
        vec![fwd],
        None,
        QuicTrust::Insecure,
        "web=1",
        5,
        3.0,
    ));
    assert_eq!(direct.body.errors.total_errors, 0);
    assert_eq!(delayed.body.errors.total_errors, 0);
    let d = direct.body.activities["web"].latency_ms.p50;
    let f = delayed.body.activities["web"].latency_ms.p50;
    let added = f - d;
    eprintln!("p50 direct {d:.3} ms, via 20 ms each way {f:.3} ms, added {added:.3} ms");
    assert!(
        (38.0..=55.0).contains(&added),
        "p50 direct {d:.3} ms, via forwarder {f:.3} ms: added {added:.3} ms, expected 40 (−2/+15)"
    );
    // NPT's block says the same thing.
    assert!((delayed.body.latency["tcp"].p50_ms - f).abs() < 1e-9);
    // connect through the forwarder is local (it accepts at once); first request pays the
    // handshake exchange and the first round: at least 2 × 40 ms.
    assert!(delayed.body.protocols["tcp"].first_request_ms.min >= 78.0);
}

#[test]
fn a_server_killed_mid_run_gives_classified_errors_and_a_report() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let s = server();
    let cfg = config(
        s.local_addrs().to_vec(),
        None,
        QuicTrust::Insecure,
        "web=3,game=1",
        8,
        3.0,
    );
    let cfg2 = cfg.clone();
    let t = std::thread::spawn(move || run(cfg2));
    std::thread::sleep(Duration::from_millis(1200));
    let killed = Instant::now();
    drop(s);
    assert!(
        killed.elapsed() < Duration::from_secs(5),
        "server stops promptly"
    );
    let out = t.join().expect("run thread");
    let b = &out.body;
    eprintln!(
        "after kill: {} requests, errors {:?}",
        b.summary.requests, b.errors.by_kind
    );
    assert_eq!(
        out.stopped_by.name(),
        "duration",
        "the run went on to its end"
    );
    assert!(b.summary.requests > 0, "requests before the kill");
    assert!(b.errors.total_errors > 0, "errors after the kill");
    let known = ["refused", "reset", "closed", "timeout", "protocol", "io"];
    for (kind, k) in b.errors.by_kind.iter() {
        assert!(
            known.contains(&kind),
            "unclassified kind {kind}: {:?}",
            k.examples
        );
        assert!(!k.examples.is_empty());
    }
    assert!(
        b.errors.by_kind.get("refused") > 0,
        "{:?}",
        b.errors.by_kind
    );
    // Errors land in the intervals after the kill, requests before it.
    let first = &b.intervals[0];
    assert!(first.completed > 0 && first.errors == 0);
    let doc = document(&cfg, &out);
    validate(&doc);
    let path = std::env::temp_dir().join(format!("npt-run-killed-{}.json", std::process::id()));
    npt_result::write_atomic(&path, &serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let back: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(back["errors"]["total_errors"], b.errors.total_errors);
    let _ = std::fs::remove_file(path);
}

#[test]
fn an_unexpected_quic_certificate_is_one_clear_error() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let s = server();
    let q = quic_server(&s);
    let other = quic_server(&s);
    let mut cfg = config(
        vec![],
        Some(q.local_addr()),
        QuicTrust::Roots(vec![other.cert_der().to_vec()]),
        "quic=1",
        2,
        1.0,
    );
    let err = match cfg.run(&Arc::new(Stop::new()), &mut |_| {}) {
        Ok(_) => panic!("a run trusting another certificate must not start"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("not trusted") && err.contains("--insecure"),
        "{err}"
    );
}

#[test]
fn the_token_opens_the_server_and_its_absence_is_an_error() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let s = Server::start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        token: Some("s3cret".into()),
        ..ServeConfig::default()
    })
    .unwrap();
    let q = s
        .start_quic("127.0.0.1:0".parse().unwrap(), QuicTls::SelfSigned)
        .unwrap();
    let c = s.counters();
    // TCP and QUIC alike: the keyed handshake on every connection and every stream.
    for (stream, quic, mix) in [
        (s.local_addrs().to_vec(), None, "web=1"),
        (vec![], Some(q.local_addr()), "quic=1"),
    ] {
        let mut cfg = config(stream, quic, QuicTrust::Insecure, mix, 3, 1.5);
        cfg.secret = Some("s3cret".into());
        let with = run(cfg.clone());
        assert!(with.body.summary.requests > 0, "{mix}");
        assert_eq!(with.body.errors.total_errors, 0, "{mix}");
        cfg.secret = Some("wrong".into());
        let wrong = run(cfg.clone());
        assert_eq!(wrong.body.summary.requests, 0, "{mix}");
        assert!(wrong.body.errors.total_errors > 0, "{mix}");
        // The old clear token value alone no longer opens it.
        cfg.secret = None;
        cfg.token = npt_wire::frame::token_from_secret("s3cret");
        let without = run(cfg);
        assert_eq!(without.body.summary.requests, 0, "{mix}");
        assert!(without.body.errors.total_errors > 0, "{mix}");
    }
    // The QUIC refusals are counted on QUIC's own counters.
    let g = npt_server::Counters::get;
    assert!(g(&c.quic.refused_handshake) > 0, "wrong secret");
    assert!(g(&c.quic.refused_token) > 0, "no handshake");
    assert!(g(&c.quic.rx_bytes) > 0 && g(&c.quic.tx_bytes) > 0);
}

#[test]
fn the_open_model_starts_sessions_at_the_arrival_rate() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let s = server();
    let mut cfg = config(
        s.local_addrs().to_vec(),
        None,
        QuicTrust::Insecure,
        "web=1",
        0,
        2.0,
    );
    cfg.load = Load::Arrivals {
        per_sec: 50.0,
        max_active: 1000,
    };
    let out = run(cfg);
    let b = &out.body;
    // Arrivals at k/50 s for k = 0..: 100 of them start before 2 s; allow a few at the edge.
    assert!(
        (95..=100).contains(&b.summary.sessions_started),
        "{}",
        b.summary.sessions_started
    );
    assert_eq!(b.summary.arrivals_dropped, 0);
    assert_eq!(b.errors.total_errors, 0);
}

#[test]
fn several_targets_share_the_users_round_robin() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let a = server();
    let b = server();
    let cfg = config(
        vec![a.local_addrs()[0], b.local_addrs()[0]],
        None,
        QuicTrust::Insecure,
        "web=1",
        4,
        1.5,
    );
    let out = run(cfg);
    assert_eq!(out.body.errors.total_errors, 0);
    let got = |s: &Server| npt_server::Counters::get(&s.counters().tcp_accepted);
    assert!(got(&a) > 0 && got(&b) > 0, "a {} b {}", got(&a), got(&b));
    assert_eq!(out.body.summary.targets.len(), 2);
}
