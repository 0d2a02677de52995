//! Nothing lost: a result path that cannot be written is refused before anything is sent (exit
//! 2 naming the flag — the receiving socket proves nothing arrived), and a result whose write
//! still fails at the end (its directory removed during the run) is kept in a temporary file
//! that stderr names, with the report still printed (exit 1).
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{npt, run, serve, Guard};

const LIMIT: Duration = Duration::from_secs(30);

/// Runs `npt args` against `target` and checks it refused `flag` before sending: exit 2, the
/// flag named on stderr, nothing on stdout. `nothing_arrived` then proves the rest.
fn refused_before_sending(args: &[&str], flag: &str) {
    let out = run(args, LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(flag), "{args:?} names {flag}: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed nothing");
}

/// After the process has exited, anything it sent to a loopback socket is already queued there.
fn no_datagram(sock: &UdpSocket) {
    sock.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 2048];
    let e = sock.recv(&mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock, "a datagram arrived");
}

fn no_connection(l: &TcpListener) {
    l.set_nonblocking(true).unwrap();
    let e = l.accept().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock, "a connection arrived");
}

#[test]
fn a_bad_output_path_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let missing = format!("{d}/no/such/dir/x.json");
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let u = format!("udp://{}", udp.local_addr().unwrap());
    let t = format!("tcp://{}", tcp.local_addr().unwrap());
    let url = format!("http://{}/", tcp.local_addr().unwrap());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["probe", &u, "-n", "5", "--json", &missing], "--json"),
        (vec!["probe", &t, "-n", "5", "--json", d], "--json"),
        (
            vec!["probe", &u, "-n", "5", "--packets", &missing],
            "--packets",
        ),
        (
            vec!["probe", &u, "--format", "json", "--packets", "-"],
            "--packets",
        ),
        (vec!["bulk", &t, "-t", "1s", "--json", &missing], "--json"),
        (
            vec!["bulk", &u, "--rate", "1mbit", "-t", "1s", "--json", d],
            "--json",
        ),
        (vec!["ping", &u, "-c", "2", "--json", &missing], "--json"),
        (
            vec!["ping", &t, "-c", "2", "--packets", &missing],
            "--packets",
        ),
        (vec!["http", &url, "-d", "1s", "--json", &missing], "--json"),
        (vec!["run", &t, "-d", "1s", "--json", &missing], "--json"),
        (vec!["trace", &t, "--json", &missing], "--json"),
    ];
    for (args, flag) in &cases {
        refused_before_sending(args, flag);
    }
    no_datagram(&udp);
    no_connection(&tcp);
}

#[test]
fn compare_merge_and_report_check_their_files_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let missing = format!("{d}/no/x");
    // A result file to compare and render: a real one, from a ping that nothing answered.
    let ping = format!("{d}/ping.json");
    let out = run(
        &["ping", "tcp://127.0.0.1:1", "-c", "1", "--json", &ping],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1));
    for (args, flag) in [
        (vec!["compare", &ping, "--html", &missing], "--html"),
        (vec!["compare", &ping, "--markdown", d], "--markdown"),
        (vec!["report", &ping, "-o", &missing], "--output"),
        (vec!["merge", &ping, "--json", &missing], "--json"),
    ] {
        refused_before_sending(&args, flag);
    }
    // A scenario file whose --json cannot be written runs nothing and creates nothing.
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let toml = common::write_file(
        dir.path(),
        "s.toml",
        &format!(
            "[workload]\nkind = \"probe\"\nargs = [\"-n\", \"3\"]\n\n[[scenario]]\nname = \"a\"\n\
             target = \"udp://{}\"\n",
            udp.local_addr().unwrap()
        ),
    );
    let out_dir = format!("{d}/results");
    refused_before_sending(
        &["compare", &toml, "--out-dir", &out_dir, "--json", &missing],
        "--json",
    );
    assert!(!Path::new(&out_dir).exists(), "no results directory made");
    no_datagram(&udp);
}

/// Starts `npt args` with stdout piped and returns it once a line matching `started` shows
/// the run is under way.
fn start_until(args: &[&str], started: &str) -> (Guard, BufReader<std::process::ChildStdout>) {
    let mut child = npt()
        .args(args)
        .env("TMPDIR", std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let guard = Guard(child);
    let mut line = String::new();
    for _ in 0..50 {
        line.clear();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if line.contains(started) {
            return (guard, stdout);
        }
    }
    panic!("{args:?} never printed {started:?}");
}

/// The temporary file stderr says the result is kept in.
fn kept_path(err: &str) -> PathBuf {
    let at = err
        .find("the result is kept in ")
        .expect("stderr names the kept file");
    let rest = &err[at + "the result is kept in ".len()..];
    PathBuf::from(rest.lines().next().unwrap().trim())
}

/// The run's directory disappears mid-run: the result is not lost.
fn kept_when_the_directory_goes(kind: &str, args: &[&str], started: &str, report: &str) {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let json = sub.join("r.json");
    let mut full: Vec<&str> = args.to_vec();
    full.extend(["--json", json.to_str().unwrap()]);
    let (mut guard, mut stdout) = start_until(&full, started);
    std::fs::remove_dir(&sub).expect("the check left nothing in it");
    let status = guard.0.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    guard
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("npt {kind}: cannot write")), "{err}");
    assert!(rest.contains(report), "the report still printed: {rest}");
    let kept = kept_path(&err);
    let doc = common::json(&kept);
    assert_eq!(doc["kind"], kind);
    common::assert_valid(&doc, kind);
    std::fs::remove_file(&kept).unwrap();
}

#[test]
fn a_result_that_cannot_be_written_at_the_end_is_kept() {
    let (_srv, addr) = serve(&[]);
    let u = format!("udp://{addr}");
    let t = format!("tcp://{addr}");
    kept_when_the_directory_goes(
        "probe",
        &["probe", &u, "-n", "150", "--pps", "100"],
        "[stage",
        "packets    sent 150",
    );
    kept_when_the_directory_goes(
        "ping",
        &["ping", &u, "-c", "4", "-i", "100ms"],
        "seq=1 ",
        "4 sent",
    );
    kept_when_the_directory_goes("bulk", &["bulk", &t, "-t", "2s"], "0.00-", "npt bulk ");
}
