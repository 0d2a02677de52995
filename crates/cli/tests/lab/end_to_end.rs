//! `npt lab` end to end: bad topology files exit 2 naming the field (no root needed); with root,
//! paths of known delay, loss and rate read back as that delay, loss and rate through npt's own
//! `ping` (TCP and ICMP) and `probe`, `first_packet_ms` is connect + one echo in every pacing mode, a second
//! `up` is refused, and nothing (namespace, process) is left after `down`, SIGTERM or `run`.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::lab::{self, pair, Lab, SchedWait};
use common::{f, npt, run, Guard};

/// Labs measure time: one at a time, so two tests' traffic does not compete for the CPU.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Root tests skip, visibly, when not root (CI is root, so there they run); the others take
/// this module's turn (`common::turn`: no other module's lab beside them), and those that
/// measure hold [`SERIAL`] for their whole run too. A test that only brings labs up and down
/// and checks what is left (`require_root!(unmeasured)`) runs beside them: it reads no time,
/// rate or loss, and the ones that do already share this box with other labs.
macro_rules! require_root {
    () => {
        require_root!(unmeasured);
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    };
    (unmeasured) => {
        if lab::skipped(module_path!()) {
            return;
        }
        let _turn = common::turn(module_path!());
    };
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn namespaces(lab: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("npt-{lab}-")))
        .map(str::to_string)
        .collect()
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Runs `npt ARGS --json FILE` on the client node, which must succeed; the document,
/// checked against the schema of its kind (ARGS' first word).
fn measure(lab: &Lab, dir: &Path, args: &[&str]) -> serde_json::Value {
    lab.npt_json("client", args, &dir.join("measured.json"), args[0])
}

/// [`measure`], and how late its echoes may read by what the kernel counted of the client's
/// and the lab's services' waits for a CPU meanwhile ([`Lab::echo_wait_ms`]).
fn measure_late(lab: &Lab, dir: &Path, args: &[&str]) -> (serde_json::Value, f64) {
    let pids = lab.service_pids();
    let w0 = SchedWait::read(&pids);
    let (doc, client) = lab.npt_json_waited("client", args, &dir.join("measured.json"), args[0]);
    (doc, Lab::echo_wait_ms(&pids, &w0, &client))
}

#[test]
fn bad_topologies_exit_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let base = pair("bad", "delay = \"1ms\"");
    let cases: Vec<(String, &str)> =
        vec![
        (
            base.replace("name = \"server\"\n[[link]]", "name = \"client\"\n[[link]]"),
            "node[1].name",
        ),
        (base.replace("b = \"server\"", "b = \"nowhere\""), "link[0].b"),
        (
            base.replace("node = \"server\"", "node = \"mars\""),
            "service[0].node",
        ),
        (base.replace("delay = \"1ms\"", "delay = \"-5ms\""), "delay"),
        (base.replace("delay = \"1ms\"", "loss = \"101%\""), "loss"),
        (base.replace("delay = \"1ms\"", "rate = \"fast\""), "rate"),
        (base.replace("delay = \"1ms\"", "colour = \"red\""), "link[0].colour"),
        (
            base.clone()
                + "[workload]\nkind = \"ping\"\n[[scenario]]\nname = \"x\"\nnode = \"client\"\n\
                   target = \"tcp://10.9.9.9:7777\"\n",
            "scenario[0].target",
        ),
        // A hop measured from an agent no node has, and one without the agents' token.
        (
            format!("hop_token = \"S\"\n{base}")
                + "[workload]\nkind = \"ping\"\n[[scenario]]\nname = \"x\"\n\
                   node = \"client\"\ntarget = \"tcp://10.0.1.2:7777\"\n\
                   hops = [{ from = \"npt://10.9.9.9:7777\", to = \"tcp://10.0.1.2:7777\" }]\n",
            "scenario[0].hops",
        ),
        (
            base.clone()
                + "[workload]\nkind = \"ping\"\n[[scenario]]\nname = \"x\"\nnode = \"client\"\n\
                   target = \"tcp://10.0.1.2:7777\"\n\
                   hops = [{ from = \"npt://10.0.1.2:7777\", to = \"tcp://10.0.1.1:7777\" }]\n",
            "hop_token: missing",
        ),
    ];
    for (i, (text, field)) in cases.iter().enumerate() {
        let file = write(dir.path(), &format!("bad{i}.toml"), text);
        let out = run(
            &["lab", "check", file.to_str().unwrap()],
            Duration::from_secs(10),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "case {i} ({field}): {err}");
        assert!(
            err.contains(field),
            "case {i}: {err:?} does not name {field}"
        );
    }
    // Nothing was created by any of them.
    assert!(namespaces("bad").is_empty());
}

#[test]
fn delay_reads_back_in_ping_and_probe() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let up = Lab::up(dir.path(), "tdelay", &pair("tdelay", "delay = \"50ms\""));
    let (ping, late) = measure_late(
        &up,
        dir.path(),
        &[
            "ping",
            "tcp://10.0.1.2:7777",
            "--count",
            "10",
            "--interval",
            "50ms",
            "-q",
        ],
    );
    // 100 ms configured, held to the lab's own figure (what it delivered) within 1 ms.
    let p50 = f(&ping, "/latency/tcp/p50_ms");
    lab::assert_path_late("ping", p50, up.rtt_ms(0, "client", "server"), late);

    let (probe, late) = measure_late(
        &up,
        dir.path(),
        &[
            "probe",
            "udp://10.0.1.2:7777",
            "--count",
            "300",
            "--mode",
            "rate",
            "--pps",
            "100",
        ],
    );
    let p50 = f(&probe, "/latency/udp/p50_ms");
    lab::assert_path_late("probe", p50, up.rtt_ms(0, "client", "server"), late);

    // The host's own ICMP echo over the same link: the server node's kernel answers, no
    // process of the lab's in the way but the link's pump.
    let (icmp, late) = measure_late(
        &up,
        dir.path(),
        &["ping", "icmp://10.0.1.2", "-c", "10", "-i", "50ms", "-q"],
    );
    assert_eq!(icmp["summary"]["received"], 10, "{icmp}");
    let p50 = f(&icmp, "/latency/icmp/p50_ms");
    eprintln!("icmp p50 {p50:.3} ms");
    lab::assert_path_late("icmp", p50, up.rtt_ms(0, "client", "server"), late);
}

#[test]
fn first_packet_is_connect_plus_one_echo_in_every_mode() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let up = Lab::up(dir.path(), "tfirst", &pair("tfirst", "delay = \"25ms\""));
    let modes: [&[&str]; 3] = [
        &["--mode", "interval", "--interval", "200ms"],
        &["--mode", "rate", "--pps", "5"],
        &["--ping-pong"],
    ];
    for m in modes {
        let mut args = vec!["probe", "tcp://10.0.1.2:7777", "--count", "4"];
        args.extend_from_slice(m);
        let (doc, late) = measure_late(&up, dir.path(), &args);
        let (connect, first) = (
            f(&doc, "/summary/connect_ms"),
            f(&doc, "/summary/first_packet_ms"),
        );
        // Connect is one RTT (50 ms), the first echo one more — and nothing else. The paced
        // modes send every 200 ms, so a wait for the schedule would add up to 200 ms; the
        // bounds leave 10 ms for a busy box scheduling the client and the server's first
        // accept late (the link's own error is microseconds), and what the kernel says the
        // client and the server waited for a CPU per echo on a busier one.
        assert!(
            (49.5..=60.0 + late).contains(&connect),
            "{m:?}: connect {connect} ms, {late:.3} ms of waits per echo"
        );
        let echo = first - connect;
        assert!(
            (49.5..=60.0 + late).contains(&echo),
            "{m:?}: first packet {first} ms = connect {connect} + {echo}, want + ~50 \
             ({late:.3} ms of waits per echo)"
        );
    }
}

#[test]
fn loss_reads_back_in_probe() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let up = Lab::up(dir.path(), "tloss", &pair("tloss", "loss = \"1%\""));
    let before = applied(up.name(), "dropped_loss");
    let doc = measure(
        &up,
        dir.path(),
        &[
            "probe",
            "udp://10.0.1.2:7777",
            "--count",
            "20000",
            "--mode",
            "rate",
            "--pps",
            "5000",
        ],
    );
    let loss = f(&doc, "/summary/loss_pct");
    // 1 % each way is 1.99 % round trip; 20,000 packets put 2 sigma at about ±0.2 %.
    assert!((1.5..=2.5).contains(&loss), "round-trip loss {loss} %");
    // And exactly the packets the link says it dropped (both directions).
    let lost = common::u(&doc, "/summary/lost");
    let drops = settled(up.name(), "dropped_loss", before + lost) - before;
    assert_eq!(lost, drops, "probe lost vs link drops");
}

/// Runs `f` on a thread inside namespace `ns`.
fn in_ns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
    std::thread::spawn(move || {
        // SAFETY: setns on a namespace file we hold; affects only this thread.
        assert_eq!(
            unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) },
            0
        );
        f()
    })
}

#[test]
fn rate_caps_a_tcp_stream() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let _up = Lab::up(
        dir.path(),
        "tcap",
        &pair("tcap", "rate = \"10mbit\"\ndelay = \"5ms\""),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = in_ns("npt-tcap-server", move || {
        let l = TcpListener::bind("10.0.1.2:9999").unwrap();
        tx.send(()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = vec![0u8; 65536];
        let start = Instant::now();
        let (mut counted, mut t1) = (0u64, None);
        // Skip the first second (slow start), then count four seconds.
        while start.elapsed() < Duration::from_secs(5) {
            let n = match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if start.elapsed() >= Duration::from_secs(1) {
                t1.get_or_insert_with(Instant::now);
                counted += n as u64;
            }
        }
        counted as f64 * 8.0 / t1.map_or(1.0, |t| t.elapsed().as_secs_f64())
    });
    rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let source = in_ns("npt-tcap-client", || {
        let mut s = TcpStream::connect("10.0.1.2:9999").unwrap();
        s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        let buf = vec![0x5au8; 65536];
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(6) {
            if s.write_all(&buf).is_err() {
                break;
            }
        }
    });
    let bps = sink.join().unwrap();
    drop(source.join());
    let mbit = bps / 1e6;
    assert!(
        (9.0..=10.0).contains(&mbit),
        "TCP goodput {mbit:.2} Mbit/s through a 10mbit link"
    );
}

#[test]
fn second_up_refused_and_nothing_left_after_down_or_sigterm() {
    require_root!(unmeasured);
    let dir = tempfile::tempdir().unwrap();
    let text = pair("tleak", "delay = \"1ms\"");
    let file = write(dir.path(), "tleak.toml", &text);
    let f_ = file.to_str().unwrap();
    // The host's own links and routes: a lab adds nothing to them, and leaves nothing.
    let host = || {
        let l = Command::new("ip")
            .args(["-o", "link"])
            .output()
            .unwrap()
            .stdout;
        let r = Command::new("ip").args(["route"]).output().unwrap().stdout;
        let names: Vec<String> = String::from_utf8_lossy(&l)
            .lines()
            .filter_map(|x| x.split(':').nth(1).map(|n| n.trim().to_string()))
            .collect();
        (names, String::from_utf8_lossy(&r).into_owned())
    };
    let host_before = host();
    for how in ["down", "sigterm"] {
        let out = run(&["lab", "up", f_], Duration::from_secs(60));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(namespaces("tleak").len(), 2);
        let again = run(&["lab", "up", f_], Duration::from_secs(60));
        assert_eq!(again.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&again.stderr).contains("already up"));
        let status: serde_json::Value = serde_json::from_slice(
            &run(
                &["lab", "status", "tleak", "--json"],
                Duration::from_secs(10),
            )
            .stdout,
        )
        .unwrap();
        let service_pid = status["services"][0]["pid"].as_i64().unwrap() as i32;
        assert!(alive(service_pid));
        let daemon: i32 = std::fs::read_to_string("/run/npt-lab/tleak/pid")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        if how == "down" {
            let out = run(&["lab", "down", "tleak"], Duration::from_secs(30));
            assert!(out.status.success());
        } else {
            // SAFETY: signalling the lab's daemon.
            unsafe { libc::kill(daemon, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(20);
            while alive(daemon) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        assert!(!alive(daemon), "{how}: lab process still running");
        assert!(!alive(service_pid), "{how}: service still running");
        assert!(
            namespaces("tleak").is_empty(),
            "{how}: namespaces left: {:?}",
            namespaces("tleak")
        );
    }
    // A lab killed outright leaves namespaces behind; `down` removes them.
    let out = run(&["lab", "up", f_], Duration::from_secs(60));
    assert!(out.status.success());
    let daemon: i32 = std::fs::read_to_string("/run/npt-lab/tleak/pid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: as above.
    unsafe { libc::kill(daemon, libc::SIGKILL) };
    while alive(daemon) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = run(&["lab", "down", "tleak"], Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(namespaces("tleak").is_empty());
    assert_eq!(host(), host_before, "host links or routes changed");

    // A service that dies before it is ready: `up` fails, naming it, and removes what it made.
    let bad = text.replace(
        "cmd = [\"npt\", \"serve\", \"--listen\", \"0.0.0.0:7777\"]",
        "cmd = [\"sh\", \"-c\", \"echo no luck; exit 3\"]",
    );
    assert_ne!(bad, text);
    let badf = write(dir.path(), "tleak-bad.toml", &bad);
    let out = run(
        &["lab", "up", badf.to_str().unwrap()],
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("serve") && err.contains("no luck"), "{err}");
    assert!(
        namespaces("tleak").is_empty(),
        "namespaces left after a failed up"
    );
    assert_eq!(host(), host_before);
}

#[test]
fn run_tears_down_on_sigint() {
    require_root!(unmeasured);
    let dir = tempfile::tempdir().unwrap();
    let text = pair("tint", "delay = \"1ms\"")
        + "[workload]\nkind = \"probe\"\nargs = [\"--count\", \"100000\", \"--mode\", \"rate\", \"--pps\", \"100\"]\n\
           [[scenario]]\nname = \"long\"\nnode = \"client\"\ntarget = \"udp://10.0.1.2:7777\"\n";
    let file = write(dir.path(), "tint.toml", &text);
    // In a Guard: a failed test must not leave `lab run` (and its lab) running.
    let mut guard = Guard(
        npt()
            .args(["lab", "run", file.to_str().unwrap(), "--out-dir"])
            .arg(dir.path().join("out"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child = &mut guard.0;
    // Wait until the scenario runs (the compare runner's line), then interrupt.
    let mut err = child.stderr.take().unwrap();
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut buf = [0u8; 256];
    while !seen.contains("results and logs") && Instant::now() < deadline {
        match err.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    assert!(namespaces("tint").len() == 2, "lab not up: {seen}");
    // SAFETY: signalling our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "lab run did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
    assert!(
        namespaces("tint").is_empty(),
        "namespaces left: {:?}",
        namespaces("tint")
    );
}

/// Sums `applied.KEY` over every direction of every link.
fn applied(lab: &str, key: &str) -> u64 {
    let out = run(&["lab", "status", lab, "--json"], Duration::from_secs(10));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    s["links"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["directions"].as_array().unwrap().iter())
        .map(|d| d["applied"][key].as_u64().unwrap())
        .sum()
}

/// `applied(KEY)` once the lab's published counters reach `want` — they are refreshed every
/// 200 ms, so a read right after a run may lag — or after 3 s, whatever they are then.
fn settled(lab: &str, key: &str, want: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let v = applied(lab, key);
        if v == want || Instant::now() >= deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn duplicates_reordering_and_jitter_read_back() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let up = Lab::up(
        dir.path(),
        "tdup",
        &pair(
            "tdup",
            "delay = \"10ms\"\njitter = \"2ms\"\nduplicate = \"1%\"\nreorder = \"1%\"",
        ),
    );
    let (dup0, reo0) = (applied("tdup", "duplicated"), applied("tdup", "reordered"));
    let (doc, late) = measure_late(
        &up,
        dir.path(),
        &[
            "probe",
            "udp://10.0.1.2:7777",
            "--count",
            "5000",
            "--mode",
            "rate",
            "--pps",
            "1000",
        ],
    );
    // Every copy a link made is one extra reply at the client (no loss on this link).
    let seen = common::u(&doc, "/summary/duplicated");
    let dup = settled("tdup", "duplicated", dup0 + seen) - dup0;
    assert!(dup > 0);
    assert_eq!(seen, dup, "probe duplicates vs link copies");
    let reo = applied("tdup", "reordered") - reo0;
    let seen = common::u(&doc, "/summary/reordered");
    assert!(
        reo > 0 && seen > 0,
        "link reordered {reo}, probe saw {seen}"
    );
    // The link counts packets that overtook; the probe counts, as RFC 4737 does, the packets
    // that arrive after a higher sequence number — the overtaken ones. A packet that skips a
    // 10 ± 2 ms hold at 1,000 pps overtakes about 8 to 12 — more when a busy box bunches the
    // probe's sends, fewer when it spreads them.
    assert!(
        seen >= reo * 4 && seen <= reo * 20,
        "probe saw {seen} reordered, the links made {reo} packets overtake"
    );
    // 10 ms ± 2 ms each way: RTT p50 the configured 20 ms (a reordered packet skips the
    // delay). The tail belongs to the probe and server being scheduled on a busy box, so it is
    // the links' own delay error that is bounded: the 2 ms p99.
    let p50 = f(&doc, "/latency/udp/p50_ms");
    lab::assert_path_late("rtt", p50, up.rtt_ms(0, "client", "server"), late);
    let out = run(
        &["lab", "status", "tdup", "--json"],
        Duration::from_secs(10),
    );
    let st: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for d in st["links"][0]["directions"].as_array().unwrap() {
        let e = d["applied"]["delay_error_p99_us"].as_f64().unwrap();
        assert!(e <= 2000.0, "delay error p99 {e} µs");
    }
}

#[test]
fn not_root_is_refused_with_exit_2() {
    require_root!(unmeasured);
    // Run the same binary as an unprivileged user (setpriv drops to nobody's uid and gid).
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let file = write(
        dir.path(),
        "tnoroot.toml",
        &pair("tnoroot", "delay = \"1ms\""),
    );
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_npt"))
        .args(["lab", "up", file.to_str().unwrap()])
        .output()
        .expect("setpriv (util-linux) runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs root"), "{err}");
    assert!(namespaces("tnoroot").is_empty());
}
