//! Why this exists: per-source limits must stop a flood without locking out the other clients
//! behind the same address (before, one flooding socket on 127.0.0.1 left a probe from another
//! socket 4 answers out of 200).

#![cfg(test)]

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_server::{Counters, Limits, ServeConfig, Server};

#[test]
fn a_flooding_socket_does_not_lock_out_its_neighbours() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let srv = Server::start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        limits: Limits {
            pps: 1_000.0,
            ..Limits::open()
        },
        exempt_local: false,
        raw_echo: true,
        ..ServeConfig::default()
    })
    .unwrap();
    let addr = srv.local_addrs()[0];
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.connect(addr).unwrap();
            let end = Instant::now() + Duration::from_secs(10);
            let mut sent = 0u64;
            // Bounded in time and count; numbered payloads, so the echo-loop guard stays out.
            // Paced at about 50,000 pps, 50 times the limit: an unpaced flood on this 2-core box
            // fills the server's socket buffer whenever the server thread is descheduled, and
            // the kernel's drops of the neighbour's datagrams are not what this test is about
            // (the limiter's lockout was: 4 of 200 answered).
            while !stop.load(Ordering::Relaxed) && Instant::now() < end && sent < 5_000_000 {
                for _ in 0..50 {
                    let _ = s.send(&sent.to_be_bytes());
                    sent += 1;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            sent
        })
    };
    // Wait until the flood is being refused, so the probe really runs under it.
    let c = srv.counters();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Counters::get(&c.udp_refused_rate) == 0 {
        assert!(Instant::now() < deadline, "the flood was never limited");
        std::thread::sleep(Duration::from_millis(5));
    }
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    probe.connect(addr).unwrap();
    probe
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut answered = 0;
    let mut buf = [0u8; 64];
    for seq in 0u64..200 {
        let msg = (u64::MAX - seq).to_be_bytes();
        probe.send(&msg).unwrap();
        // Drain until our echo (or the timeout): the flooder's echoes go to its own socket.
        if let Ok(n) = probe.recv(&mut buf) {
            answered += u32::from(buf[..n] == msg);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, Ordering::Relaxed);
    let flooded = flood.join().unwrap();
    let refused = Counters::get(&c.udp_refused_rate);
    eprintln!("flood sent {flooded}, refused {refused}; probe answered {answered}/200");
    assert!(refused > 1_000, "the flood was limited");
    assert!(answered >= 195, "the probe was locked out: {answered}/200");
}
