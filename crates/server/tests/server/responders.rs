//! Why this exists: the responders are what every measurement bounces off, so their answers
//! (echo, request/response sizes, no amplification, token gate, raw echo) are checked over real
//! loopback sockets on port 0.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use npt_server::{Counters, ServeConfig, Server};
use npt_wire::frame::{status, token_from_secret, Header, Kind, HEADER_LEN};

fn start(token: Option<&str>) -> (Server, SocketAddr) {
    let token = token.map(str::to_string);
    let cfg = ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        token,
        ..ServeConfig::default()
    };
    let s = Server::start(cfg).expect("server starts");
    let a = s.local_addrs()[0];
    (s, a)
}

fn frame(kind: Kind, len: usize, reply_len: u32, seq: u64, token: u64) -> Vec<u8> {
    let mut b = vec![0xAB; len];
    Header {
        kind,
        flags: 0,
        frame_len: len as u32,
        reply_len,
        flow: 1,
        status: 0,
        seq,
        send_ts: 42,
        token,
    }
    .encode(&mut b)
    .unwrap();
    b
}

fn udp_client(server: SocketAddr) -> UdpSocket {
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(server).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    c
}

#[test]
fn udp_echo_framed_and_raw_on_the_tcp_port_number() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (_s, addr) = start(None);
    let c = udp_client(addr);
    let f = frame(Kind::Echo, 100, 0, 7, 0);
    c.send(&f).unwrap();
    let mut buf = [0u8; 2048];
    let n = c.recv(&mut buf).unwrap();
    assert_eq!(n, 100);
    let h = Header::decode(&buf[..n]).unwrap();
    assert_eq!((h.kind, h.seq, h.send_ts), (Kind::EchoReply, 7, 42));
    assert_eq!(&buf[HEADER_LEN..n], &f[HEADER_LEN..]);
    c.send(b"hello plain echo").unwrap();
    let n = c.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"hello plain echo");
}

#[test]
fn udp_request_is_never_answered_with_more_bytes() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(None);
    let c = udp_client(addr);
    c.send(&frame(Kind::Request, 64, 1400, 1, 0)).unwrap();
    let mut buf = [0u8; 2048];
    let n = c.recv(&mut buf).unwrap();
    assert_eq!(n, 64, "clamped to the request's size");
    let h = Header::decode(&buf[..n]).unwrap();
    assert_eq!(
        (h.kind, h.status, h.frame_len),
        (Kind::Response, status::CLAMPED, 64)
    );
    c.send(&frame(Kind::Request, 200, 100, 2, 0)).unwrap();
    assert_eq!(c.recv(&mut buf).unwrap(), 100, "smaller replies are fine");
    assert_eq!(Counters::get(&s.counters().udp_clamped), 1);
}

/// The old clear token is no longer a way in: with `--token` only the keyed handshake opens
/// the server (the `auth` module), the token value of old clients is refused like raw echo.
#[test]
fn udp_token_gate() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let tok = token_from_secret("s3cret");
    let (s, addr) = start(Some("s3cret"));
    let c = udp_client(addr);
    let mut buf = [0u8; 2048];
    c.send(&frame(Kind::Echo, 64, 0, 1, tok + 1)).unwrap();
    c.send(b"raw is refused with a token").unwrap();
    c.send(&frame(Kind::Echo, 64, 0, 2, tok)).unwrap();
    assert!(c.recv(&mut buf).is_err(), "nothing comes back");
    assert_eq!(Counters::get(&s.counters().udp_refused_token), 3);
}

#[test]
fn udp_foreign_and_truncated_datagrams_are_counted_not_answered() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(None);
    let c = udp_client(addr);
    let mut f = frame(Kind::Echo, 64, 0, 1, 1);
    f.truncate(50); // frame_len says 64
    c.send(&f).unwrap();
    c.send(&frame(Kind::EchoReply, 64, 0, 1, 1)).unwrap();
    let mut buf = [0u8; 128];
    assert!(c.recv(&mut buf).is_err());
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while Counters::get(&s.counters().udp_malformed) < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(Counters::get(&s.counters().udp_malformed), 2);
}

#[test]
fn tcp_framed_echo_and_request_response_pipelined() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (_s, addr) = start(None);
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = frame(Kind::Echo, 1000, 0, 1, 0);
    out.extend(frame(Kind::Request, 300, 200_000, 2, 0));
    out.extend(frame(Kind::Echo, 48, 0, 3, 0));
    c.write_all(&out).unwrap();
    let mut hdr = [0u8; HEADER_LEN];
    let mut body = vec![0u8; 300_000];
    let mut seen = Vec::new();
    for _ in 0..3 {
        c.read_exact(&mut hdr).unwrap();
        let h = Header::decode(&hdr).unwrap();
        c.read_exact(&mut body[..h.frame_len as usize - HEADER_LEN])
            .unwrap();
        seen.push((h.kind, h.seq, h.frame_len));
    }
    assert_eq!(
        seen,
        vec![
            (Kind::EchoReply, 1, 1000),
            (Kind::Response, 2, 200_000),
            (Kind::EchoReply, 3, 48)
        ]
    );
}

#[test]
fn tcp_raw_echo_and_token_gate() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (_s, addr) = start(None);
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(b"ab").unwrap();
    c.write_all(b"cdef").unwrap();
    let mut buf = [0u8; 6];
    c.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"abcdef");

    let (s2, addr2) = start(Some("s3cret"));
    let mut c = TcpStream::connect(addr2).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let tok = token_from_secret("s3cret");
    c.write_all(&frame(Kind::Echo, 64, 0, 1, tok)).unwrap();
    let mut b = [0u8; 64];
    assert_eq!(
        c.read(&mut b).unwrap_or(0),
        0,
        "the old clear token: closed without an answer"
    );
    assert_eq!(Counters::get(&s2.counters().tcp.refused_token), 1);
}
