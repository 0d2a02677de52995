//! `npt bulk` end to end over loopback against `npt serve`: TCP both ways, UDP at a rate and
//! QUIC streams write documents the schema accepts and that read back through `npt report`;
//! bad flags exit 2 naming the flag, a refused or silent target is a classified error, Ctrl-C
//! still writes the report, and a server that treats this host as a stranger holds bulk to its
//! reply budget (the lab test checks the numbers on an emulated link, with root).
#![cfg(test)] // clippy.toml: test helpers count as tests
#![allow(clippy::cast_possible_wrap)] // small test values

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{assert_valid, f, json, npt, run, serve, u, Guard};

const LIMIT: Duration = Duration::from_secs(60);

fn bulk(args: &[&str], out: &std::path::Path) -> (std::process::Output, serde_json::Value) {
    let mut a = vec!["bulk"];
    a.extend_from_slice(args);
    a.extend(["--json", out.to_str().unwrap()]);
    let o = run(&a, LIMIT);
    let doc = json(out);
    assert_valid(&doc, "bulk");
    (o, doc)
}

#[test]
fn tcp_both_ways_reports_every_stream_and_reads_back() {
    let (_s, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b.json");
    let target = format!("tcp://{addr}");
    let (o, doc) = bulk(
        &[
            &target,
            "-P",
            "2",
            "--direction",
            "both",
            "--duration",
            "2s",
            "--interval",
            "500ms",
        ],
        &out,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(doc["kind"], "bulk");
    assert_eq!(doc["summary"]["direction"], "both");
    assert_eq!(doc["streams"].as_array().unwrap().len(), 4);
    assert!(
        f(&doc, "/summary/goodput_bps/down") > 1e8,
        "{}",
        doc["summary"]
    );
    assert!(
        f(&doc, "/summary/goodput_bps/up") > 1e8,
        "{}",
        doc["summary"]
    );
    // The kernel's view: retransmits are counted (a number, maybe 0) and an RTT was sampled.
    assert!(doc["summary"]["retransmits"].is_u64());
    assert!(u(&doc, "/summary/rtt_ms/count") > 0);
    let ivs = doc["intervals"].as_array().unwrap();
    assert!((4..=5).contains(&ivs.len()), "{} intervals", ivs.len());
    for iv in ivs {
        assert_eq!(iv["streams"].as_array().unwrap().len(), 4);
    }
    let up_stream = &ivs[1]["streams"][2];
    assert!(up_stream["cwnd"].as_u64().unwrap() > 0, "{up_stream}");
    // The interval lines add up to about the total (each way).
    let down: f64 = ivs
        .iter()
        .map(|i| i["bytes"]["down"].as_f64().unwrap())
        .sum();
    assert_eq!(down, f(&doc, "/summary/bytes/down"));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("kernel rtt"), "{text}");
    let r = run(&["report", out.to_str().unwrap()], LIMIT);
    assert!(r.status.success());
    let again = String::from_utf8_lossy(&r.stdout);
    assert!(
        again.contains("npt bulk tcp://") && again.contains("retransmits"),
        "{again}"
    );
}

#[test]
fn udp_at_a_rate_delivers_the_rate_on_loopback() {
    let (_s, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("u.json");
    let target = format!("udp://{addr}");
    let (o, doc) = bulk(
        &[
            &target,
            "--rate",
            "20mbit",
            "--size",
            "1000",
            "--duration",
            "2s",
        ],
        &out,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let udp = &doc["summary"]["udp"];
    assert_eq!(udp["size"], 1000);
    let sent = u(&doc, "/summary/udp/sent");
    // 2 s at 20 Mbit/s of 1000-byte datagrams is 5,000, plus a report request every 100 ms.
    assert!((4_900..=5_200).contains(&sent), "{udp}");
    assert!(f(&doc, "/summary/udp/loss_pct") < 1.0, "{udp}");
    let delivered = f(&doc, "/summary/udp/delivered_bps");
    assert!((18e6..22e6).contains(&delivered), "{udp}");
    assert!(u(&doc, "/summary/rtt_ms/count") > 0, "report round trips");
}

/// UDP down from a server on loopback (trusted without a token): the rate arrives, nothing
/// is lost on an idle loopback, and the pulls' round trips are sampled.
#[test]
fn udp_down_delivers_the_rate_on_loopback() {
    let (_s, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.json");
    let target = format!("udp://{addr}");
    let (o, doc) = bulk(
        &[
            &target,
            "--direction",
            "down",
            "--rate",
            "50mbit",
            "--duration",
            "2s",
        ],
        &out,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(doc["summary"]["direction"], "down");
    let delivered = f(&doc, "/summary/udp/delivered_bps");
    assert!((47.5e6..52.5e6).contains(&delivered), "{delivered}");
    let sent = u(&doc, "/summary/udp/sent");
    assert!(
        u(&doc, "/summary/udp/received") * 100 >= sent * 99,
        "{}",
        doc["summary"]
    );
    assert!(u(&doc, "/summary/rtt_ms/count") > 0);
    assert!(f(&doc, "/summary/bytes/down") > 0.0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("udp down at 50.00 Mbit/s"), "{text}");
}

/// `npt serve` on loopback with a QUIC listener too: the server and its TCP and QUIC
/// addresses, read from its ready lines ("listening on tcp+udp ADDR", "… on quic ADDR").
fn serve_tcp_quic() -> (Guard, String, String) {
    let mut child = npt()
        .args(["serve", "--listen", "127.0.0.1:0", "--quic", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let g = Guard(child);
    let (mut tcp, mut quic) = (None, None);
    for l in BufReader::new(stdout).lines().take(4).map_while(Result::ok) {
        let addr = l.rsplit(' ').next().map(str::to_string);
        if l.contains("listening on tcp") {
            tcp = addr;
        } else if l.contains("listening on quic") {
            quic = addr;
        }
        if tcp.is_some() && quic.is_some() {
            break;
        }
    }
    (
        g,
        tcp.expect("a tcp address"),
        quic.expect("a quic address"),
    )
}

#[test]
fn quic_streams_move_bytes_both_ways() {
    let (_g, _, quic) = serve_tcp_quic();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.json");
    let target = format!("quic://{quic}");
    let (o, doc) = bulk(
        &[
            &target,
            "--insecure",
            "-P",
            "2",
            "--direction",
            "both",
            "--duration",
            "1500ms",
        ],
        &out,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(doc["summary"]["protocol"], "quic");
    assert!(
        f(&doc, "/summary/goodput_bps/down") > 1e6,
        "{}",
        doc["summary"]
    );
    assert!(
        f(&doc, "/summary/goodput_bps/up") > 1e6,
        "{}",
        doc["summary"]
    );
    assert_eq!(u(&doc, "/summary/failed_streams"), 0);
}

/// `--rate` on streams over loopback, which could carry far more: each stream holds the pace
/// it was given each way (up paced here, down by npt serve, which says it does), TCP and QUIC
/// alike, and the result reports the pace, what was achieved, and (TCP, the streams sent) the
/// congestion control the kernel ran. The lab test (lab_rate.rs) checks it on a bottleneck.
#[test]
fn streams_at_a_rate_hold_it_on_loopback() {
    let (_g, tcp, quic) = serve_tcp_quic();
    let dir = tempfile::tempdir().unwrap();
    for target in [format!("tcp://{tcp}"), format!("quic://{quic}")] {
        let out = dir.path().join("paced.json");
        let mut args = vec![target.as_str()];
        if target.starts_with("quic") {
            args.push("--insecure");
        }
        let (o, doc) = bulk(
            &[
                &args[..],
                &[
                    "-P",
                    "2",
                    "--rate",
                    "5mbit",
                    "--direction",
                    "both",
                    "--duration",
                    "3s",
                ],
            ]
            .concat(),
            &out,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let s = &doc["summary"];
        assert_eq!(f(&doc, "/summary/rate_bps"), 5e6, "{s}");
        for way in ["up", "down"] {
            // Two streams at 5 Mbit/s: 10 each way, where loopback carries gigabits. The
            // bucket never runs ahead of the rate (its first write, 2 ms of it, goes at once),
            // so that is a ceiling. Under it only by what this host's CPU withheld (the pace is
            // not made up after a stall over 20 ms): with the workspace's tests in parallel, a
            // debug QUIC stack at 20 Mbit/s a stream got 75 % of it. lab_rate.rs checks the
            // pace to ±5 % on a quiet path.
            let mbit = f(&doc, &format!("/summary/goodput_bps/{way}")) / 1e6;
            assert!(
                (7.5..=10.1).contains(&mbit),
                "{target} {way}: {mbit:.2} Mbit/s"
            );
        }
        let pct = f(&doc, "/summary/rate_achieved_pct");
        assert!((75.0..=101.0).contains(&pct), "{target}: {pct} %");
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("paced at 5.00 Mbit/s each"), "{text}");
        if target.starts_with("tcp") {
            // Read back from the sockets: the sending streams', the system's default here.
            let cc = s["congestion"].as_str().expect("congestion reported");
            let default =
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
            assert_eq!(cc, default.trim(), "{s}");
            for st in doc["streams"].as_array().unwrap() {
                assert_eq!(st["rate_bps"], 5e6, "{st}");
                assert_eq!(
                    st["congestion"].is_string(),
                    st["direction"] == "up",
                    "{st}"
                );
            }
        } else {
            assert!(s.get("congestion").is_none(), "{s}");
        }
    }
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    for (args, flag) in [
        (vec!["tcp://127.0.0.1:9", "--streams", "0"], "--streams"),
        (vec!["tcp://127.0.0.1:9", "--streams", "1025"], "--streams"),
        (vec!["udp://127.0.0.1:9", "--rate", "lots"], "--rate"),
        // UDP runs one way at a time: a down flow is pulled by requests that go up.
        (
            vec![
                "udp://127.0.0.1:9",
                "--rate",
                "5mbit",
                "--direction",
                "both",
            ],
            "--direction",
        ),
        (vec!["udp://127.0.0.1:9", "--rate", "5 apples"], "--rate"),
        (vec!["udp://127.0.0.1:9", "--rate", "0mbit"], "--rate"),
        (
            vec!["tcp://127.0.0.1:9", "--duration", "never"],
            "--duration",
        ),
        // A stream's pace needs a unit and must be positive, as UDP's rate.
        (vec!["tcp://127.0.0.1:9", "--rate", "5"], "--rate"),
        (vec!["tcp://127.0.0.1:9", "-b", "0kbit"], "--rate"),
        (vec!["tcp://127.0.0.1:9", "--size", "1200"], "--size"),
        // A congestion control the kernel offers, on a stream this host sends.
        (
            vec![
                "tcp://127.0.0.1:9",
                "--congestion",
                "no-such-cc",
                "--direction",
                "up",
            ],
            "--congestion",
        ),
        (vec!["tcp://127.0.0.1:9", "-C", "cubic"], "--congestion"),
        (
            vec!["quic://127.0.0.1:9", "--insecure", "-C", "cubic"],
            "--congestion",
        ),
    ] {
        let mut a = vec!["bulk"];
        a.extend(args.iter().copied());
        let o = run(&a, LIMIT);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

#[test]
fn a_refused_target_is_a_classified_error() {
    // A port nobody listens on: bind one, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let target = format!("tcp://127.0.0.1:{port}");
    let (o, doc) = bulk(&[&target, "-P", "3", "--duration", "5s"], &out);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        doc["stopped_by"], "error",
        "every stream failed: no need to wait 5 s"
    );
    assert_eq!(u(&doc, "/errors/by_kind/refused/count"), 3);
    assert_eq!(f(&doc, "/errors/error_rate"), 1.0);
}

#[test]
fn a_udp_target_that_never_reports_is_a_timeout_even_in_a_short_run() {
    // A socket that takes the datagrams and never answers, held open for the run; the run
    // (1 s) ends before --timeout (5 s), so only the final report's wait can tell.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = format!("udp://{}", silent.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("u.json");
    let (o, doc) = bulk(&[&target, "--rate", "1mbit", "-t", "1s"], &out);
    assert_eq!(o.status.code(), Some(1), "nothing is known to have arrived");
    assert_eq!(u(&doc, "/errors/by_kind/timeout/count"), 1, "{doc}");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("no bulk report"), "{text}");
    drop(silent);
}

#[test]
fn ctrl_c_stops_the_streams_and_still_writes_the_report() {
    let (_s, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.json");
    let child = npt()
        .args([
            "bulk",
            &format!("tcp://{addr}"),
            "-P",
            "2",
            "--duration",
            "60s",
        ])
        .args(["--json", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut g = Guard(child);
    // Wait for the first interval line, then interrupt.
    let mut lines = BufReader::new(g.0.stdout.take().unwrap()).lines();
    let first = lines.nth(1).unwrap().unwrap();
    assert!(first.starts_with('['), "{first}");
    let t = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let status = g.0.wait().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(status.success());
    let doc = json(&out);
    assert_valid(&doc, "bulk");
    assert_eq!(doc["stopped_by"], "signal");
    assert!(f(&doc, "/summary/goodput_bps/down") > 0.0);
}

/// A server that treats this host as a stranger (`--limit-local`, a 4 Mbit/s reply budget):
/// eight streams down for 2 s get the budget, not the path — the bucket's one second plus
/// two seconds of refill, 1.5 MB — and so do eight streams up; the server counts the wait.
#[test]
fn a_stranger_cannot_make_serve_send_or_take_more_than_its_budget() {
    let (s, addr) = serve(&["--limit-local", "--reply-mbps", "4"]);
    let dir = tempfile::tempdir().unwrap();
    for dir_flag in ["down", "up"] {
        let out = dir.path().join(format!("{dir_flag}.json"));
        let target = format!("tcp://{addr}");
        let (o, doc) = bulk(
            &[
                &target,
                "-P",
                "8",
                "--direction",
                dir_flag,
                "--duration",
                "2s",
            ],
            &out,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let bytes = f(&doc, &format!("/summary/bytes/{dir_flag}"));
        assert!(bytes > 100_000.0, "{dir_flag}: {bytes}");
        // 0.5 MB of bucket + 2 s × 0.5 MB/s, and one chunk per stream in flight.
        assert!(bytes < 1_500_000.0 + 8.0 * 131_072.0, "{dir_flag}: {bytes}");
    }
    drop(s);
}

/// `--token`: the keyed handshake opens every stream (and this host is then trusted); without
/// it the server refuses, which is a classified error. `--via`: through a SOCKS5 proxy, with
/// the token inside the tunnel.
#[test]
fn with_a_token_and_through_a_socks5_proxy() {
    let (_s, addr) = serve(&["--token", "s3cret"]);
    let dir = tempfile::tempdir().unwrap();
    let target = format!("tcp://{addr}");
    let out = dir.path().join("t.json");
    let (o, doc) = bulk(
        &[
            &target,
            "--token",
            "s3cret",
            "-P",
            "2",
            "--direction",
            "both",
            "--duration",
            "1s",
        ],
        &out,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(f(&doc, "/summary/goodput_bps/up") > 1e6 && f(&doc, "/summary/goodput_bps/down") > 1e6);
    let out = dir.path().join("n.json");
    let (o, doc) = bulk(&[&target, "--duration", "1s"], &out);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(u(&doc, "/errors/total_errors"), 1, "{}", doc["errors"]);
    if !npt_testkit::proxies::have("/usr/bin/microsocks") {
        return;
    }
    let port = npt_testkit::process::free_port();
    let _m = npt_testkit::proxies::microsocks(port, Some(("npt", "pw")));
    let via = format!("socks5://npt:pw@127.0.0.1:{port}");
    let out = dir.path().join("v.json");
    let (o, doc) = bulk(
        &[
            &target,
            "--token",
            "s3cret",
            "--via",
            &via,
            "--duration",
            "1s",
        ],
        &out,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(f(&doc, "/summary/goodput_bps/down") > 1e6);
    assert_eq!(
        doc["config"]["via"],
        format!("socks5://npt:***@127.0.0.1:{port}")
    );
}

#[test]
fn udp_through_a_socks5_udp_relay_both_ways() {
    // CI installs dante-server (./test.sh); `have` panics without it unless NPT_SKIP_PROXIES.
    if !npt_testkit::proxies::have("/usr/sbin/danted") {
        return;
    }
    let (_s, addr) = serve(&[]);
    // A keyed server: the handshake goes through the relay too.
    let (_k, keyed) = serve(&["--token", "s3cret"]);
    let port = npt_testkit::process::free_port();
    let _d = npt_testkit::proxies::danted(port);
    let via = format!("socks5://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let runs = [
        (addr, "up", None),
        (addr, "down", None),
        (keyed, "up", Some("s3cret")),
        (keyed, "down", Some("s3cret")),
    ];
    for (addr, dir_flag, token) in runs {
        let target = format!("udp://{addr}");
        let out = dir
            .path()
            .join(format!("{dir_flag}-{}.json", token.is_some()));
        let mut args = vec![
            target.as_str(),
            "--rate",
            "2mbit",
            "--direction",
            dir_flag,
            "-t",
            "1s",
            "--via",
            &via,
        ];
        if let Some(t) = token {
            args.extend(["--token", t]);
        }
        let (o, doc) = bulk(&args, &out);
        assert!(o.status.success(), "{dir_flag}: {}", doc["errors"]);
        // 2 Mbit/s of 1,200-byte datagrams through a relay on loopback: all of it, give or
        // take the datagrams of the last report period.
        let delivered = f(&doc, "/summary/udp/delivered_bps");
        assert!(
            (1.8e6..2.2e6).contains(&delivered),
            "{dir_flag}: {delivered}"
        );
        assert_eq!(doc["config"]["via"], via);
    }
}
