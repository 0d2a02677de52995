//! `npt mtu` over loopback (MTU 65,536, so nothing on it is too big): against `npt serve`
//! every size crosses each way, the document is a valid `mtu` result and `npt report` prints
//! it back as the run did (and its CSV has each direction's figure); a stranger's down request shorter than the size it asks for is
//! answered no larger than itself (clamped, `npt serve --limit-local`); against a plain echo
//! the round trip is read and the down direction is said to be unreadable; a TCP target and a
//! --max out of range are exit 2.

#![cfg(test)]

use crate::common;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use common::{assert_valid, json, run, scratch, serve};
use npt_wire::frame::{status, Header, Kind};
use npt_wire::mtu::{self, Direction, Mtu, MTU_LEN};

#[test]
fn every_size_crosses_loopback_each_way_and_reads_back() {
    let (_s, addr) = serve(&[]);
    let file = scratch().join("mtu-loopback.json");
    let t0 = Instant::now();
    let target = format!("udp://{addr}");
    let out = run(
        &[
            "mtu",
            &target,
            "--max",
            "9000",
            "--json",
            file.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(
        text.contains("up: 9000 bytes (IP 9028) crossed, the largest tried"),
        "{text}"
    );
    let doc = json(&file);
    assert_valid(&doc, "mtu");
    for d in ["up", "down"] {
        assert_eq!(doc["summary"][d]["verdict"], "max_crossed", "{d}");
        assert_eq!(doc["summary"][d]["largest_datagram"], 9000, "{d}");
    }
    assert_eq!(doc["summary"]["far_end"], "npt-serve");
    let report = run(&["report", file.to_str().unwrap()], Duration::from_secs(10));
    assert_eq!(String::from_utf8_lossy(&report.stdout), text);
    let csv = run(
        &["report", file.to_str().unwrap(), "--format", "csv"],
        Duration::from_secs(10),
    );
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .ends_with(",up_largest_datagram,up_verdict,down_largest_datagram,down_verdict"));
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .ends_with(",9000,max_crossed,9000,max_crossed"),
        "{csv}"
    );
}

#[test]
fn a_strangers_down_probe_is_no_larger_than_its_request() {
    let (_s, addr) = serve(&["--limit-local"]);
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut buf = [0u8; 4096];
    // A short request asking for 1,400 bytes: answered with its own 68.
    c.send(&mtu::request(
        5,
        1,
        2,
        &Mtu::ask(Direction::Down, 1400),
        MTU_LEN,
    ))
    .unwrap();
    let n = c.recv(&mut buf).unwrap();
    let (h, body): (Header, Mtu) = mtu::read(&buf[..n]).unwrap();
    assert_eq!(
        (n, h.kind, h.status),
        (MTU_LEN, Kind::MtuReply, status::CLAMPED)
    );
    assert_eq!((body.direction, body.received), (Direction::Down, 68));
    // Padded to the size it asks for: the whole size.
    c.send(&mtu::request(
        5,
        2,
        2,
        &Mtu::ask(Direction::Down, 1400),
        1400,
    ))
    .unwrap();
    let n = c.recv(&mut buf).unwrap();
    assert_eq!(
        (n, mtu::read(&buf[..n]).unwrap().0.status),
        (1400, status::OK)
    );
    // An up probe: a short answer saying what arrived, whole.
    c.send(&mtu::request(5, 3, 2, &Mtu::ask(Direction::Up, 0), 3000))
        .unwrap();
    let n = c.recv(&mut buf).unwrap();
    let (_, body) = mtu::read(&buf[..n]).unwrap();
    assert_eq!((n, body.received, body.frag), (MTU_LEN, 3000, 0));
    assert!(
        body.pmtu >= 1280,
        "the responder's path MTU toward us: {}",
        body.pmtu
    );
}

#[test]
fn a_plain_echo_reads_the_round_trip_only() {
    let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = echo.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 65_536];
        while let Ok((n, from)) = echo.recv_from(&mut buf) {
            let _ = echo.send_to(&buf[..n], from);
        }
    });
    let file = scratch().join("mtu-echo.json");
    let out = run(
        &[
            "mtu",
            &format!("udp://{addr}"),
            "--json",
            file.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("plain echo") && text.contains("round trip: 1472 bytes"),
        "{text}"
    );
    let doc = json(&file);
    assert_eq!(doc["summary"]["far_end"], "echo");
    assert_eq!(doc["summary"]["up"]["largest_datagram"], 1472);
    assert_eq!(doc["summary"]["down"]["verdict"], "unreadable");
}

#[test]
fn bad_flags_exit_2_naming_them() {
    for (args, name) in [
        (&["mtu", "tcp://127.0.0.1:9"][..], "udp://HOST:PORT"),
        (&["mtu", "udp://127.0.0.1:9", "--max", "10"][..], "--max"),
    ] {
        let out = run(args, Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(name), "{err}");
    }
}
