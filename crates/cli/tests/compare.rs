//! Why this exists: `npt compare` must put a forwarded path beside the direct one with the
//! delay the forwarder really adds, against the theoretical latency given, and refuse bad input
//! naming it. The forwarder is written here: it holds each chunk 5 ms in each direction.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::*;

const DELAY: Duration = Duration::from_millis(5);

/// Copies `from` → `to`, holding each chunk `DELAY` (bounded by the 30 s life of the test).
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let end = Instant::now() + Duration::from_secs(30);
    let _ = from.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 16 * 1024];
    while Instant::now() < end {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        std::thread::sleep(DELAY);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// A TCP forwarder to `upstream` that adds `DELAY` each way.
fn delaying_forwarder(upstream: SocketAddr) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming().take(8) {
            let Ok(c) = c else { return };
            let Ok(u) = TcpStream::connect(upstream) else {
                return;
            };
            let _ = (c.set_nodelay(true), u.set_nodelay(true));
            let (c2, u2) = (c.try_clone().unwrap(), u.try_clone().unwrap());
            std::thread::spawn(move || pump(c, u));
            std::thread::spawn(move || pump(u2, c2));
        }
    });
    addr
}

#[test]
fn a_forwarded_path_shows_the_delay_it_adds() {
    let (_srv, addr) = serve(&[]);
    let fwd = delaying_forwarder(addr);
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, target) in [("direct", addr), ("forwarded", fwd)] {
        let f = dir.path().join(format!("{name}.json"));
        let out = run(
            &[
                "probe",
                &format!("tcp://{target}"),
                "--ping-pong",
                "-n",
                "100",
                "--size",
                "200",
                "-q",
                "--json",
                f.to_str().unwrap(),
            ],
            Duration::from_secs(30),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        files.push(f);
    }
    let table = dir.path().join("cmp.json");
    let md = dir.path().join("cmp.md");
    let out = run(
        &[
            "compare",
            files[0].to_str().unwrap(),
            files[1].to_str().unwrap(),
            "--baseline",
            "direct",
            "--hops",
            "forwarded=5+5",
            "--json",
            table.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("scenario"), "{text}");
    let t = json(&table);
    assert_eq!(t["baseline"], "direct");
    let fw = &t["scenarios"][1];
    assert_eq!(fw["name"], "forwarded");
    assert_eq!(fw["theoretical_ms"], 10.0);
    // The forwarder holds each message 5 ms each way: +10 ms over direct, a little more for
    // its own wakeups, never less.
    let extra = fw["vs_baseline_ms"].as_f64().unwrap();
    assert!(
        (9.9..14.0).contains(&extra),
        "forwarded is {extra} ms over direct\n{text}"
    );
    assert!(fw["overhead_ms"].as_f64().unwrap() > -0.5, "{fw}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.starts_with("| scenario | avg (ms)"), "{md}");
}

#[test]
fn bad_input_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{ not json").unwrap();
    let old = dir.path().join("old.json");
    std::fs::write(&old, r#"{"schema": "npt.result.v0", "kind": "probe"}"#).unwrap();
    for (args, want) in [
        (
            vec![junk.to_str().unwrap()],
            "junk.json: not a result document",
        ),
        (vec![old.to_str().unwrap()], "npt.result.v0"),
        (
            vec!["/no/such/file.json"],
            "/no/such/file.json: cannot read",
        ),
    ] {
        let mut a = vec!["compare"];
        a.extend(args);
        let out = run(&a, Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{err}");
    }
}
