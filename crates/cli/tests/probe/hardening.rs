//! Why this exists: regression tests for probe defects found by trying to break it — an
//! interval of 0 that never stopped, a relay run that waited for ever once its warm-up was
//! lost, Ctrl-C ignored by a busy sender, and a second Ctrl-C that could lose a flow's totals.

#![cfg(test)]
#![allow(clippy::cast_possible_wrap)]

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn u(d: &serde_json::Value, p: &str) -> u64 {
    d.pointer(p)
        .and_then(|v| v.as_u64())
        .unwrap_or_else(|| panic!("{p} missing in {d}"))
}

fn sigint(child: &Child) {
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

/// Waits (bounded) for the child to exit; returns its stderr.
fn wait_exit(mut child: Child, limit: Duration) -> (std::process::ExitStatus, String) {
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("npt did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (status, err)
}

/// A UDP port with nothing behind it (bound, then released).
fn dead_udp_port() -> std::net::SocketAddr {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap()
}

#[test]
fn interval_zero_is_refused_on_the_command_line_and_in_the_xml_config() {
    let out = run(
        &[
            "probe",
            "udp://127.0.0.1:9",
            "--mode",
            "interval",
            "--interval",
            "0s",
        ],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--interval 0: must be positive"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("zero.xml");
    std::fs::write(
        &xml,
        r#"<settings><general protocol="udp" clientcount="1" /><target ip="127.0.0.1" port="9" />
        <control mode="count" param="10" /><relay mode="interval" interval="0" /></settings>"#,
    )
    .unwrap();
    let out = run(
        &["probe", "--config", xml.to_str().unwrap()],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("<relay interval> 0"), "{err}");
}

#[test]
fn relay_with_count_ends_when_every_warmup_packet_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("stalled.json");
    let target = format!("udp://{}", dead_udp_port());
    let out = run(
        &[
            "probe",
            &target,
            "--mode",
            "relay",
            "--warmup",
            "10",
            "--count",
            "1000000",
            "--loss-timeout",
            "300ms",
            "-q",
            "--json",
            out_file.to_str().unwrap(),
        ],
        Duration::from_secs(15),
    );
    assert_eq!(out.status.code(), Some(1), "nothing answered");
    let d = json(&out_file);
    assert_valid(&d, "probe");
    assert_eq!(d["stopped_by"], "stalled");
    assert_eq!(u(&d, "/summary/sent"), 10);
    assert_eq!(u(&d, "/summary/lost"), 10);
}

#[test]
fn relay_with_a_wrong_token_ends_too() {
    let (_srv, addr) = serve(&["--token", "right"]);
    let out = run(
        &[
            "probe",
            &format!("udp://{addr}"),
            "--token",
            "wrong",
            "--mode",
            "relay",
            "--warmup",
            "5",
            "--count",
            "1000",
            "--loss-timeout",
            "200ms",
            "-q",
            "--format",
            "json",
        ],
        Duration::from_secs(15),
    );
    // The keyed handshake fails first: the probe ends at once, saying why.
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--token handshake"), "{err}");
}

/// Starts `npt probe` with `args` and waits (bounded by the probe's own first stage) for its
/// first stage line: proof that packets are flowing.
fn probe_until_first_stage(args: &[&str]) -> Child {
    let mut child = npt()
        .arg("probe")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("[stage"), "a stage line first: {line:?}");
    // Keep draining stdout so the probe never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
    });
    child
}

#[test]
fn ctrl_c_stops_a_sender_that_is_always_behind() {
    // 10 M pps is more than this host can send: the schedule is always due.
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("busy.json");
    let target = format!("udp://{addr}");
    let child = probe_until_first_stage(&[
        &target,
        "--pps",
        "10000000",
        "--duration",
        "1h",
        "--report-every",
        "200ms",
        "--loss-timeout",
        "200ms",
        "--json",
        out_file.to_str().unwrap(),
    ]);
    sigint(&child);
    let (status, err) = wait_exit(child, Duration::from_secs(10));
    assert!(status.success(), "{err}");
    let d = json(&out_file);
    assert_valid(&d, "probe");
    assert_eq!(d["stopped_by"], "signal");
    assert_eq!(
        u(&d, "/summary/sent"),
        u(&d, "/summary/received") + u(&d, "/summary/lost")
    );
}

/// A UDP echo that answers each datagram `delay` after it arrived, for at most `life`.
/// Returns its address and the count of datagrams it has received.
fn delaying_udp_echo(
    delay: Duration,
    life: Duration,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(5)))
        .unwrap();
    let addr = sock.local_addr().unwrap();
    let got = std::sync::Arc::new(AtomicU64::new(0));
    let counter = got.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + life;
        let mut queue = std::collections::VecDeque::new();
        let mut buf = [0u8; 2048];
        while Instant::now() < end {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                counter.fetch_add(1, Ordering::Relaxed);
                queue.push_back((Instant::now() + delay, buf[..n].to_vec(), from));
            }
            while matches!(queue.front(), Some((due, _, _)) if *due <= Instant::now()) {
                let (_, data, to) = queue.pop_front().unwrap();
                let _ = sock.send_to(&data, to);
            }
        }
    });
    (addr, got)
}

#[test]
fn a_second_ctrl_c_with_packets_in_flight_keeps_every_flow() {
    let (addr, got) = delaying_udp_echo(Duration::from_millis(500), Duration::from_secs(20));
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("abort.json");
    let child = npt()
        .args([
            "probe",
            &format!("udp://{addr}"),
            "--raw",
            "--pps",
            "2000",
            "--clients",
            "2",
            "--loss-timeout",
            "30s",
            "-q",
            "--json",
            out_file.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Packets are in flight once the echo has some (its replies take 500 ms).
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.load(std::sync::atomic::Ordering::Relaxed) < 100 {
        assert!(Instant::now() < deadline, "the probe never sent");
        std::thread::sleep(Duration::from_millis(5));
    }
    sigint(&child);
    std::thread::sleep(Duration::from_millis(50));
    sigint(&child);
    let (status, err) = wait_exit(child, Duration::from_secs(10));
    assert!(!err.contains("panicked"), "{err}");
    assert!(status.code().is_some(), "exited, not killed: {err}");
    let d = json(&out_file);
    assert_valid(&d, "probe");
    assert_eq!(d["stopped_by"], "abort");
    assert_eq!(u(&d, "/summary/clients"), 2);
    assert!(d["errors"]["by_kind"].get("internal").is_none(), "{d}");
    assert!(
        u(&d, "/summary/lost") > 0,
        "abandoned packets count as lost"
    );
    assert_eq!(
        u(&d, "/summary/sent"),
        u(&d, "/summary/received") + u(&d, "/summary/lost")
    );
}

/// A plain TCP echo that misbehaves: after `extra_after` bytes it inserts one stray byte
/// (`Some`), or answers every byte with garbage (`None`). Serves one connection at a time
/// until the listener is dropped with the returned guard's thread detached.
fn odd_tcp_echo(extra_after: Option<usize>) -> std::net::SocketAddr {
    use std::io::Write;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        // Bounded: a handful of connections (the probe may reconnect), each ends with the peer.
        for conn in l.incoming().take(8) {
            let Ok(mut c) = conn else { return };
            let _ = c.set_read_timeout(Some(Duration::from_secs(20)));
            let mut buf = [0u8; 4096];
            let mut total = 0usize;
            let mut inserted = false;
            while let Ok(n) = c.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let out: Vec<u8> = match extra_after {
                    Some(at) if !inserted && total + n > at => {
                        inserted = true;
                        let cut = at - total;
                        let mut v = buf[..cut].to_vec();
                        v.push(0x00);
                        v.extend_from_slice(&buf[cut..n]);
                        v
                    }
                    Some(_) => buf[..n].to_vec(),
                    None => vec![0x5A; n],
                };
                total += n;
                if c.write_all(&out).is_err() {
                    break;
                }
            }
        }
    });
    addr
}

#[test]
fn a_stray_byte_in_a_tcp_echo_costs_one_reply_not_the_run() {
    let addr = odd_tcp_echo(Some(3 * 100));
    let out = run(
        &[
            "probe",
            &format!("tcp://{addr}"),
            "--raw",
            "--size",
            "100",
            "--ping-pong",
            "--count",
            "50",
            "--loss-timeout",
            "300ms",
            "-q",
            "--format",
            "json",
        ],
        Duration::from_secs(20),
    );
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        u(&d, "/errors/by_kind/protocol/count"),
        1,
        "{}",
        d["errors"]
    );
    // Ping-pong: the reply that lost its first byte to the stray one is the only casualty,
    // and losing it stalls the one-in-flight relay only if nothing else is in flight.
    let (received, lost) = (u(&d, "/summary/received"), u(&d, "/summary/lost"));
    assert!(received >= 3, "replies before the stray byte: {received}");
    assert!(lost <= 1, "lost {lost}");
}

#[test]
fn a_garbage_tcp_echo_is_a_protocol_error_and_the_run_ends_on_time() {
    let addr = odd_tcp_echo(None);
    let out = run(
        &[
            "probe",
            &format!("tcp://{addr}"),
            "--raw",
            "--pps",
            "2000",
            "--duration",
            "2s",
            "--loss-timeout",
            "300ms",
            "-q",
            "--format",
            "json",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(1), "nothing answered");
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        u(&d, "/errors/by_kind/protocol/count") >= 1,
        "{}",
        d["errors"]
    );
    assert!(
        u(&d, "/summary/foreign") < 100,
        "no flood of 'foreign': {}",
        d["summary"]
    );
}
