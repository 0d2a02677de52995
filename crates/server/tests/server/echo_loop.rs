//! Why this exists: one forged UDP datagram whose source is another echo service used to start
//! an endless ping-pong (~170k packets/s for a self-loop, 92k each way between two servers).
//! These tests forge that datagram with a raw socket (root only) and check the loop ends.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use npt_server::{Counters, ServeConfig, Server};
use npt_testkit::raw::{forge_udp as forge, is_root};

fn start() -> (Server, SocketAddrV4) {
    let s = Server::start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..ServeConfig::default()
    })
    .expect("server starts");
    let SocketAddr::V4(a) = s.local_addrs()[0] else {
        unreachable!("bound to 127.0.0.1")
    };
    (s, a)
}

fn rx(c: &Counters) -> u64 {
    Counters::get(&c.udp_rx)
}

/// Waits until `f` holds (bounded), returning whether it did.
fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}

/// Counts after the traffic has settled: two readings 300 ms apart must agree.
fn settled(counters: &[&AtomicU64]) -> Vec<u64> {
    let read = || {
        counters
            .iter()
            .map(|c| Counters::get(c))
            .collect::<Vec<_>>()
    };
    let mut last = read();
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(300));
        let now = read();
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("traffic never stopped: {last:?}");
}

#[test]
fn a_forged_datagram_between_two_servers_does_not_loop() {
    let _turn = npt_testkit::turn::turn(module_path!());
    if !is_root() {
        eprintln!("SKIPPED a_forged_datagram_between_two_servers_does_not_loop: needs root for a raw socket");
        return;
    }
    let (a, a_addr) = start();
    let (b, b_addr) = start();
    let (ca, cb) = (a.counters(), b.counters());
    // "From B to A": A echoes it to B, B echoes it back, …
    forge(b_addr, a_addr, b"one forged datagram");
    assert!(
        wait_for(Duration::from_secs(2), || rx(&ca) >= 1),
        "A never got the forged datagram"
    );
    let counts = settled(&[
        &ca.udp_rx,
        &cb.udp_rx,
        &ca.udp_refused_loop,
        &cb.udp_refused_loop,
    ]);
    let (rx_a, rx_b, loop_a, loop_b) = (counts[0], counts[1], counts[2], counts[3]);
    eprintln!("A rx {rx_a} refused_loop {loop_a}; B rx {rx_b} refused_loop {loop_b}");
    // The guard cuts the loop after REPEAT_LIMIT rounds at whichever server sees it first.
    let limit = u64::from(npt_server::loopguard::REPEAT_LIMIT);
    assert!(
        rx_a + rx_b <= 2 * limit + 1,
        "loop ran {} packets",
        rx_a + rx_b
    );
    assert_eq!(loop_a + loop_b, 1, "exactly one refusal ends it");
}

#[test]
fn a_forged_datagram_from_the_server_itself_is_not_answered() {
    let _turn = npt_testkit::turn::turn(module_path!());
    if !is_root() {
        eprintln!("SKIPPED a_forged_datagram_from_the_server_itself_is_not_answered: needs root for a raw socket");
        return;
    }
    let (a, a_addr) = start();
    let c = a.counters();
    forge(a_addr, a_addr, b"self loop");
    // And from a well-known port (an RFC 862 echo service on port 7).
    forge(
        SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7),
        a_addr,
        b"echo svc",
    );
    assert!(wait_for(Duration::from_secs(2), || rx(&c) >= 2));
    let counts = settled(&[&c.udp_rx, &c.udp_tx, &c.udp_refused_loop]);
    assert_eq!(counts, vec![2, 0, 2], "rx, tx, refused_loop");
}

#[test]
fn raw_clients_with_numbered_packets_are_still_echoed() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (_a, a_addr) = start();
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(a_addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut buf = [0u8; 64];
    for seq in 0u32..200 {
        sock.send(&seq.to_be_bytes()).unwrap();
        let n = sock.recv(&mut buf).expect("echo");
        assert_eq!(&buf[..n], &seq.to_be_bytes());
    }
    // The same bytes a few times in a row (a retry) are still answered.
    for _ in 0..npt_server::loopguard::REPEAT_LIMIT - 1 {
        sock.send(b"retry").unwrap();
        let n = sock.recv(&mut buf).expect("echo of a retry");
        assert_eq!(&buf[..n], b"retry");
    }
}
