//! Why this exists: `npt serve --token` must be useless to anyone without the secret, end to
//! end. `npt probe --token` works over UDP and TCP; a wrong secret gets nothing; and the
//! packets of a real probe run, recorded by a relay on the path and replayed from another
//! socket or again from the same one, are refused and counted in the server's log line.

#![cfg(test)]

use crate::common;
use crate::serve_util;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{run, u};
use serve_util::{logged, serve, until};

const LIMIT: Duration = Duration::from_secs(30);

fn probe(target: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "probe",
        target,
        "-n",
        "50",
        "--pps",
        "500",
        "--loss-timeout",
        "300ms",
        "-q",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    run(&args, LIMIT)
}

#[test]
fn probe_with_the_token_over_udp_and_tcp_and_nothing_without_it() {
    let s = serve(20_000, &["--token", "s3cret"]);
    for proto in ["udp", "tcp"] {
        let target = format!("{proto}://{}", s.tcp);
        let o = probe(&target, &["--token", "s3cret"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(u(&d, "/summary/received"), 50, "{proto}");
        assert_eq!(u(&d, "/summary/foreign"), 0, "{proto}");

        let o = probe(&target, &["--token", "wrong"]);
        assert_eq!(o.status.code(), Some(1), "{proto}");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(all.contains("--token handshake"), "{proto}: {all}");

        // Without the token: UDP frames are refused by the server, which says so (a notice
        // naming --token): exit 3, refused apart from loss. TCP's connection is closed: 1.
        let o = probe(&target, &[]);
        let want = if proto == "udp" { 3 } else { 1 };
        assert_eq!(o.status.code(), Some(want), "{proto} without the token");
        if proto == "udp" {
            let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(
                u(&d, "/summary/refused_by_server"),
                50,
                "udp without the token"
            );
            assert_eq!(u(&d, "/summary/lost"), 0, "udp without the token");
        }
    }
    let settled = until(Duration::from_secs(5), || {
        let e = s.stderr();
        logged(&e, "udp refused:", "handshake") >= 1
            && logged(&e, "tcp refused:", "handshake") >= 1
            && logged(&e, "udp refused:", "token") >= 50
            && logged(&e, "tcp refused:", "token") >= 1
    });
    assert!(settled.is_some(), "{}", s.stderr());
}

/// A relay on the path: forwards the client's datagrams to the server and the server's back,
/// keeping a copy of every client datagram (what an observer captures).
struct Tap {
    sock: Arc<UdpSocket>,
    captured: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Tap {
    fn start(server: SocketAddr) -> Tap {
        let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let captured = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, c, st) = (sock.clone(), captured.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let end = Instant::now() + LIMIT;
            let mut client: Option<SocketAddr> = None;
            let mut buf = [0u8; 65_536];
            while !st.load(Ordering::Relaxed) && Instant::now() < end {
                let Ok((n, from)) = s.recv_from(&mut buf) else {
                    continue;
                };
                if from == server {
                    if let Some(c) = client {
                        let _ = s.send_to(&buf[..n], c);
                    }
                } else {
                    client = Some(from);
                    c.lock().unwrap().push(buf[..n].to_vec());
                    let _ = s.send_to(&buf[..n], server);
                }
            }
        });
        Tap {
            sock,
            captured,
            stop,
            thread: Some(thread),
        }
    }

    fn addr(&self) -> SocketAddr {
        self.sock.local_addr().unwrap()
    }

    /// Stops forwarding; returns the captured datagrams and the relay's socket.
    fn finish(mut self) -> (Vec<Vec<u8>>, Arc<UdpSocket>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let c = std::mem::take(&mut *self.captured.lock().unwrap());
        (c, self.sock.clone())
    }
}

#[test]
fn captured_probe_packets_replayed_are_refused_and_counted() {
    let s = serve(20_000, &["--token", "s3cret"]);
    let tap = Tap::start(s.tcp);
    let o = probe(&format!("udp://{}", tap.addr()), &["--token", "s3cret"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(u(&d, "/summary/received"), 50, "through the relay");
    let (captured, relay) = tap.finish();
    // The 96-byte handshake messages, then the 50 sealed 64-byte frames.
    let frames: Vec<&Vec<u8>> = captured.iter().filter(|p| p.len() == 64).collect();
    assert_eq!(frames.len(), 50);
    assert!(captured.iter().any(|p| p.len() == 96));
    // Replayed from another socket: no session there. From the relay's own socket (the
    // address the session belongs to): every sequence number was seen. Nothing is answered.
    let thief = UdpSocket::bind("127.0.0.1:0").unwrap();
    for sock in [&thief, &*relay] {
        sock.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        for p in &captured {
            sock.send_to(p, s.tcp).unwrap();
        }
        let mut buf = [0u8; 2048];
        let (mut answers, mut notices) = (0, 0);
        while let Ok((n, _)) = sock.recv_from(&mut buf) {
            // A replayed Hello gets a fresh Challenge (stateless, same size); a refused frame
            // at most a 48-byte refusal notice (smaller than the frame, rate-limited per
            // source); nothing else.
            match n {
                96 => answers += 1,
                48 => notices += 1,
                _ => panic!("only a Challenge or a refusal notice may come back, got {n} bytes"),
            }
        }
        assert!(answers <= captured.len() - 50);
        assert!(
            notices <= 5,
            "{notices} notices: at most 5 a second per source"
        );
    }
    // Every sealed packet replayed (the 50 frames and the flow query at the end) is refused
    // once from each socket.
    let sealed = captured.iter().filter(|p| p.len() != 96).count() as u64;
    assert_eq!(sealed, 51, "50 frames and one flow query");
    let settled = until(Duration::from_secs(5), || {
        let e = s.stderr();
        logged(&e, "udp refused:", "unknown-session") >= sealed
            && logged(&e, "udp refused:", "replay") >= sealed
    });
    let e = s.stderr();
    assert!(settled.is_some(), "{}", e.lines().last().unwrap_or(""));
    assert_eq!(logged(&e, "udp refused:", "unknown-session"), sealed);
    assert_eq!(logged(&e, "udp refused:", "replay"), sealed);
    assert_eq!(logged(&e, "udp refused:", "bad-mac"), 0);
}
