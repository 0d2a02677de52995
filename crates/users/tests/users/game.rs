//! `npt run`'s game is measured by `npt probe`'s session: against an in-test UDP echo that
//! drops every 7th datagram and sends every 5th twice, the run result's loss and duplicate
//! counts are exactly what the echo did, and `received + lost == sent`; and `--token` still
//! opens a keyed `npt serve` for the game (handshake, then sealed frames) and a wrong secret
//! does not.

#![cfg(test)]

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use npt_result::run::RunBody;
use npt_result::workload::{Finished, Stop, Workload};
use npt_server::{ServeConfig, Server};
use npt_users::config::GameShape;
use npt_users::{Load, Mix, QuicTrust, Range, RunConfig, Shape, Targets};
use npt_wire::frame::{self, Header, Kind};

const MS: u64 = 1_000_000;

/// What the echo did, counted over every datagram it received.
#[derive(Debug, Default)]
struct Did {
    received: u64,
    dropped: u64,
    duplicated: u64,
}

/// A UDP echo on loopback that answers framed `Echo` datagrams as `npt serve` does (same
/// bytes, kind flipped to `EchoReply`), except that the n-th datagram it receives (counting
/// from 1, over all senders) is not answered when `n % drop_every == 0` and answered twice
/// when `n % dup_every == 0` (dropping wins).
fn echo(drop_every: u64, dup_every: u64, stop: Arc<AtomicBool>) -> (SocketAddr, JoinHandle<Did>) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let addr = sock.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let mut did = Did::default();
        let mut buf = vec![0u8; 70_000];
        let give_up = Instant::now() + Duration::from_secs(120);
        while !stop.load(Ordering::Relaxed) && Instant::now() < give_up {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            let d = &mut buf[..n];
            match Header::decode(d) {
                Ok(h) if h.kind == Kind::Echo => {}
                _ => continue,
            }
            did.received += 1;
            if did.received % drop_every == 0 {
                did.dropped += 1;
                continue;
            }
            frame::set_kind_status(d, Kind::EchoReply, 0);
            sock.send_to(d, from).unwrap();
            if did.received % dup_every == 0 {
                did.duplicated += 1;
                sock.send_to(d, from).unwrap();
            }
        }
        did
    });
    (addr, t)
}

fn config(target: SocketAddr, users: u32, secs: f64) -> RunConfig {
    RunConfig {
        targets: Targets {
            stream: vec![target],
            quic: None,
            quic_server_name: "localhost".into(),
            via: None,
            source: Default::default(),
        },
        load: Load::Users {
            users,
            ramp_up: Duration::from_millis(300),
        },
        duration: Duration::from_secs_f64(secs),
        shape: Shape {
            mix: Mix::parse("game=1").unwrap(),
            // After its one game session a user's next would start after the run's end, so
            // it leaves: every session ends (drain included) well before the run does.
            think: Range::new(100_000 * MS, 100_000 * MS),
            game: GameShape {
                session: Range::new(400 * MS, 800 * MS),
                tick_hz: Range::new(50, 100),
                size: Range::new(64, 512),
                loss_timeout: Duration::from_secs(1),
            },
            ..Shape::default()
        },
        seed: 7,
        token: 0,
        secret: None,
        timeout: Duration::from_secs(5),
        interval: Duration::from_secs(1),
        quic_trust: QuicTrust::Insecure,
        workers: 2,
    }
}

fn run(mut cfg: RunConfig) -> Finished<RunBody> {
    cfg.run(&Arc::new(Stop::new()), &mut |_| {})
        .expect("run completes")
}

#[test]
fn the_game_counts_exactly_what_the_echo_dropped_and_duplicated() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, echo_thread) = echo(7, 5, stop.clone());
    let users = 6;
    let out = run(config(addr, users, 4.0));
    stop.store(true, Ordering::Relaxed);
    let did = echo_thread.join().expect("echo thread");
    let b = &out.body;
    eprintln!("echo {did:?}");
    assert_eq!(b.errors.total_errors, 0, "{:?}", b.errors.by_kind);
    // No session was cut off by the end, so every packet's fate is in the result.
    assert_eq!(b.summary.sessions_started, users as u64);
    assert_eq!(b.summary.sessions_completed, users as u64);
    let a = &b.activities["game"];
    let g = a.game.as_ref().unwrap();
    assert!(did.dropped > 5 && did.duplicated > 5, "{did:?}");
    assert_eq!(
        g.packets.sent, did.received,
        "every packet the echo saw was counted"
    );
    assert_eq!(g.packets.lost, did.dropped);
    assert_eq!(g.packets.duplicated, did.duplicated);
    assert_eq!(
        g.packets.late, 0,
        "loopback answers within the 1 s loss timeout"
    );
    assert_eq!(g.packets.received + g.packets.lost, g.packets.sent);
    assert_eq!(a.requests, g.packets.received);
    assert_eq!(b.protocols["udp"].requests, g.packets.received);
    assert_eq!(b.protocols["udp"].latency_ms.count, g.packets.received);
    assert!((g.loss_pct - did.dropped as f64 * 100.0 / did.received as f64).abs() < 1e-9);
    // Each session's first reply starts its RFC 3550 estimator; every later one is a sample.
    assert_eq!(g.jitter_samples, Some(g.packets.received - users as u64));
    assert_eq!(
        b.intervals.iter().map(|i| i.completed).sum::<u64>(),
        g.packets.received,
        "the series adds up to the totals"
    );
}

#[test]
fn the_token_opens_a_keyed_server_for_the_game_and_a_wrong_one_does_not() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let s = Server::start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        token: Some("s3cret".into()),
        ..ServeConfig::default()
    })
    .unwrap();
    let mut cfg = config(s.local_addrs()[0], 3, 2.5);
    cfg.secret = Some("s3cret".into());
    let with = run(cfg.clone());
    let b = &with.body;
    assert_eq!(b.errors.total_errors, 0, "{:?}", b.errors.by_kind);
    let g = b.activities["game"].game.as_ref().unwrap();
    assert!(g.packets.received > 0);
    assert_eq!(
        (g.packets.received + g.packets.lost, g.packets.duplicated),
        (g.packets.sent, 0)
    );
    assert_eq!(b.activities["game"].requests, g.packets.received);
    // The server stays silent to a wrong proof: each session's handshake times out.
    cfg.secret = Some("wrong".into());
    cfg.timeout = Duration::from_millis(800);
    let wrong = run(cfg);
    assert_eq!(wrong.body.summary.requests, 0);
    assert_eq!(wrong.body.activities["game"].errors, 3, "one per session");
}
