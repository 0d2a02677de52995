//! Why this exists: a server's budget refusing part of a test is not the path losing it, and
//! a user must be told which is which. Against `npt serve --limit-local` (the limits every
//! public address gets: 200 packets a second per source socket), on loopback where the path
//! loses nothing: a minimal REFLECT client at 1,000 packets a second (the server's side of
//! `npt probe`), `npt bulk udp://` at 20 Mbit/s and `npt ping udp://` past the limit all read
//! path loss 0 and refused = exactly what the server's exit summary counted, and the text says
//! so in one line with the fix.

#![cfg(test)]

use crate::common;
use crate::serve_util;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use common::{assert_valid, json, run, u};
use npt_wire::frame::{Header, Kind};
use npt_wire::reflect::{self, REFLECT};
use serve_util::{exit_summary, logged, serve, Served};

const LIMIT: Duration = Duration::from_secs(60);

/// Stops the server with SIGINT and returns its exit summary's `udp refused: rate` count.
fn refused_at_exit(s: &Served) -> u64 {
    logged(&exit_summary(s), "udp refused:", "rate")
}

/// Runs `npt ARGS --json FILE` (bounded), the document checked against `kind`'s schema; the
/// output (text on stdout and stderr) and the document.
fn npt_json(args: &[&str], kind: &str) -> (std::process::Output, String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut all = args.to_vec();
    all.extend(["--json", out.to_str().unwrap()]);
    let o = run(&all, LIMIT);
    let doc = json(&out);
    assert_valid(&doc, kind);
    let t = text(&o);
    (o, t, doc)
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The server's side of `npt probe --pps 1000 -n 2000`: every frame asks for REFLECT; the
/// flow report at the end (asked once the budget has refilled) says how many were refused,
/// and that number, the replies and nothing else make up what was sent.
#[test]
fn a_reflect_flow_at_1000_pps_reads_refused_not_lost() {
    let s = serve(1024, &["--limit-local"]);
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(s.tcp).unwrap();
    c.set_nonblocking(true).unwrap();
    let (sent, mut replies, mut notices) = (2000u64, 0u64, 0u64);
    let mut buf = [0u8; 2048];
    let mut f = [0u8; 64];
    let mut drain = |replies: &mut u64, notices: &mut u64| {
        while let Ok(n) = c.recv(&mut buf) {
            let h = Header::decode(&buf[..n]).unwrap();
            if reflect::read_notice(&h).is_some() {
                *notices += 1;
            } else if reflect::read_reply(&h, &buf[..n]).is_some() {
                *replies += 1;
            }
        }
    };
    let start = Instant::now();
    for seq in 0..sent {
        while start.elapsed() < Duration::from_millis(seq) {
            std::thread::sleep(Duration::from_micros(200));
        }
        Header {
            kind: Kind::Echo,
            flags: REFLECT,
            frame_len: 64,
            reply_len: 0,
            flow: 1,
            status: 0,
            seq,
            send_ts: 1,
            token: 0,
        }
        .encode(&mut f)
        .unwrap();
        c.send(&f).unwrap();
        drain(&mut replies, &mut notices);
    }
    std::thread::sleep(Duration::from_millis(300));
    drain(&mut replies, &mut notices);
    let mut q = [0u8; reflect::FLOW_QUERY_LEN];
    reflect::write_query(&mut q, 1, 0, 1).unwrap();
    c.send(&q).unwrap();
    c.set_nonblocking(false).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let n = c.recv(&mut buf).expect("a flow report");
    let report = reflect::read_report(&Header::decode(&buf[..n]).unwrap(), &buf[..n]).unwrap();
    assert_eq!(report.received, replies, "every answer arrived");
    assert_eq!(
        report.received + report.refused,
        sent,
        "path loss 0: {report:?}"
    );
    assert!(
        report.refused > sent / 2,
        "{report:?}: most were over the budget"
    );
    assert!(
        notices >= 1 && notices < report.refused / 10,
        "{notices} notices"
    );
    assert_eq!(
        refused_at_exit(&s),
        report.refused,
        "the server's own count"
    );
}

#[test]
fn bulk_udp_at_20_mbit_reads_refused_not_lost() {
    let s = serve(1024, &["--limit-local"]);
    let target = format!("udp://{}", s.tcp);
    let (_, t, doc) = npt_json(&["bulk", &target, "--rate", "20mbit", "-t", "2s"], "bulk");
    let udp = &doc["summary"]["udp"];
    let refused = u(&doc, "/summary/udp/refused_by_server");
    assert_eq!(u(&doc, "/summary/udp/lost"), 0, "path loss: {udp}");
    assert_eq!(udp["loss_pct"], 0.0);
    assert_eq!(
        u(&doc, "/summary/udp/received") + refused,
        u(&doc, "/summary/udp/sent"),
        "{udp}"
    );
    assert!(refused > u(&doc, "/summary/udp/sent") / 2, "{udp}");
    let line = t
        .lines()
        .find(|l| l.starts_with("refused "))
        .unwrap_or_default();
    assert!(
        line.contains(&format!("{refused} datagrams")) && line.contains("--token"),
        "{t}"
    );
    assert!(line.contains("--limit-local"), "{line}");
    assert_eq!(refused_at_exit(&s), refused, "the server's own count");
}

/// Ping's attempts are 5 ms apart (its timer's floor is about 4 ms), so the server's limit is
/// lowered to 50 a second for it (an explicit limit applies to loopback too).
#[test]
fn ping_udp_reads_refused_not_lost() {
    let s = serve(1024, &["--source-pps", "50"]);
    let target = format!("udp://{}", s.tcp);
    let args = ["ping", &target, "-c", "400", "-i", "5ms", "-q"];
    let (_, t, doc) = npt_json(&args, "ping");
    let sm = &doc["summary"];
    let refused = u(&doc, "/summary/refused_by_server");
    assert_eq!(
        (u(&doc, "/summary/lost"), sm["loss_pct"].as_f64()),
        (0, Some(0.0)),
        "{sm}"
    );
    assert_eq!(u(&doc, "/summary/received") + refused, 400, "{sm}");
    assert!(refused > 100, "{sm}");
    assert_eq!(
        doc["errors"]["total_errors"], 0,
        "a refusal is not an error"
    );
    assert!(
        t.contains(&format!("refused    {refused} attempts by the server")),
        "{t}"
    );
    // The server refused them, and perhaps a flow query or two asked before its budget refilled.
    let at_exit = refused_at_exit(&s);
    assert!(
        (refused..=refused + 3).contains(&at_exit),
        "{at_exit} vs {refused}"
    );
}

/// A server that wants `--token`: every attempt of a ping without it is refused, noticed, and
/// the line says what to do.
#[test]
fn ping_without_the_token_is_told_so() {
    let s = serve(1024, &["--token", "s3cret"]);
    let target = format!("udp://{}", s.tcp);
    let (o, t, doc) = npt_json(&["ping", &target, "-c", "3", "-i", "50ms"], "ping");
    assert_eq!(u(&doc, "/summary/refused_by_server"), 3, "{t}");
    assert_eq!(u(&doc, "/summary/lost"), 0);
    assert!(
        t.contains("refused by") && t.contains("it wants --token"),
        "{t}"
    );
    assert!(!o.status.success(), "nothing was answered");
}
