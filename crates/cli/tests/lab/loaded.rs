//! `npt probe --under-load` on a path of known capacity (root: network namespaces joined by an
//! emulated link of 10 Mbit/s, 20 ms RTT and a drop-tail queue of 100 or 20 packets). A full
//! queue of 1,500-byte packets drains in 100 × 1500 × 8 / 10 Mbit/s = 120 ms (20 packets:
//! 24 ms); the probe must see the load add delay up to that and no more, the load must move
//! 9–10 Mbit/s, and the recovery phase must return to the idle RTT.
//!
//! With the TCP load the probe's increase is also compared with what the lab's link measured
//! the queue to hold (its waiting times, `npt lab status --json`) during the loaded phase.
//!
//! The TCP load goes up with CUBIC (`--load-congestion cubic`): what a queue holds under load
//! is set by the sender's congestion control, and only this host's can be chosen (this host's
//! default may be BBR, which keeps queues short on purpose; a download is paced by the
//! server's). TCP does not keep a drop-tail queue full (CUBIC's sawtooth after synchronized
//! drops), so with TCP the probe sees *up to* the drain time. A UDP load above the link's rate
//! does keep it full, so with UDP the loaded p50 is checked against the drain time itself
//! (issue 17's ±15 %), and the load's delivered rate and loss against the link's.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{assert_valid, f, json, lab, npt, run, u, Guard};

/// The lab: 10 Mbit/s, 10 ms each way, `queue` packets, `npt serve` behind it.
fn topology(name: &str, queue: u32, serve_extra: &str) -> String {
    format!(
        r#"name = "{name}"
[[node]]
name = "client"
[[node]]
name = "server"
[[link]]
a = "client"
b = "server"
rate = "10mbit"
delay = "10ms"
queue = {queue}
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"{serve_extra}]
ready = "tcp://10.0.1.2:7777"
"#
    )
}

/// The shared lab guard (brought down when dropped) with this file's probes and readings.
struct Lab(lab::Lab);

impl Lab {
    fn up(dir: &Path, name: &str, queue: u32) -> Lab {
        Lab::up_with(dir, name, queue, "")
    }

    /// With `serve_extra` appended to `npt serve`'s arguments (TOML: `, "--token", "S"`).
    fn up_with(dir: &Path, name: &str, queue: u32, serve_extra: &str) -> Lab {
        Lab(lab::Lab::up(dir, name, &topology(name, queue, serve_extra)))
    }

    /// A loaded probe on the client node under [`TCP_LOAD`]; the document (schema-checked)
    /// and the up queue's waiting times read while the load ran: from 2.3 s after the probe
    /// was started to 9.9 s (the lab publishes its stats every 200 ms, so the window is about
    /// 2.1–9.9 s of the probe's loaded phase, 2–10 s).
    fn loaded_probe(&self, dir: &Path) -> (serde_json::Value, [npt_stats::Histogram; 2], f64) {
        let j = dir.join(format!("{}.json", self.0.name()));
        let watch = lab::Watch::start(self.0.name());
        let t0 = Instant::now();
        let mut g = Guard(
            npt()
                .args(self.probe_args(&j, &[TARGET], &TCP_LOAD))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let at = |s: f64| {
            let t = t0 + Duration::from_secs_f64(s);
            std::thread::sleep(t.saturating_duration_since(Instant::now()));
        };
        at(2.3);
        let before = self.queue_wait("client", "server");
        at(9.9);
        let during = self.queue_wait("client", "server").since(&before).unwrap();
        // The recovery phase starts at 10 s; its first 0.3 s drain what the load left queued.
        at(10.3);
        let drained = self.queue_wait("client", "server");
        at(12.8);
        let recovering = self.queue_wait("client", "server").since(&drained).unwrap();
        let until = t0 + Duration::from_secs(60);
        while g.0.try_wait().unwrap().is_none() {
            assert!(Instant::now() < until, "the probe did not end");
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut err = String::new();
        if let Some(mut e) = g.0.stderr.take() {
            std::io::Read::read_to_string(&mut e, &mut err).unwrap();
        }
        assert!(g.0.wait().unwrap().success(), "{err}");
        let late = watch.finish();
        let doc = json(&j);
        assert_valid(&doc, "probe");
        (doc, [during, recovering], late)
    }

    /// A 50 pps UDP probe on the client node under the load `load` (the `--under-load` URL
    /// and the load flags); the document (schema-checked), and how late an echo may read by
    /// the kernel's count of the lab's processes' waits for a CPU ([`lab::Watch`]).
    fn probe_under(&self, dir: &Path, load: &[&str]) -> (serde_json::Value, f64) {
        self.probe_with(dir, &[TARGET], load)
    }

    /// As [`Lab::probe_under`], the probe's target and flags `probe` in place of [`TARGET`].
    fn probe_with(&self, dir: &Path, probe: &[&str], load: &[&str]) -> (serde_json::Value, f64) {
        let j = dir.join(format!("{}.json", self.0.name()));
        let watch = lab::Watch::start(self.0.name());
        let out = run(&self.probe_args(&j, probe, load), Duration::from_secs(120));
        let late = watch.finish();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = json(&j);
        assert_valid(&doc, "probe");
        (doc, late)
    }

    /// `npt lab exec … npt probe PROBE`: a 50 pps UDP probe under `load`, its JSON to `j`.
    fn probe_args<'a>(&'a self, j: &'a Path, probe: &[&'a str], load: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["lab", "exec", self.0.name(), "client", "--", "npt", "probe"];
        args.extend_from_slice(probe);
        args.extend_from_slice(&["--pps", "50", "-q", "--under-load"]);
        args.extend_from_slice(load);
        args.extend_from_slice(&["--json", j.to_str().unwrap()]);
        args
    }

    /// The direction `from` → `to` of `npt lab status --json`.
    fn direction(&self, from: &str, to: &str) -> serde_json::Value {
        let s = self.0.status();
        s["links"][0]["directions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["from"] == from && d["to"] == to)
            .unwrap_or_else(|| panic!("no direction {from} > {to} in {s}"))
            .clone()
    }

    /// The bottleneck queue's waiting times from `from` to `to` so far (ns).
    fn queue_wait(&self, from: &str, to: &str) -> npt_stats::Histogram {
        let d = self.direction(from, to);
        let h: npt_stats::SerializedHistogram =
            serde_json::from_value(d["queue_wait"].clone()).unwrap();
        npt_stats::Histogram::from_serialized(&h).unwrap()
    }
}

/// The probe's target: `npt serve` across the bottleneck.
const TARGET: &str = "udp://10.0.1.2:7777";

/// 4 CUBIC streams up: 2 s idle, 8 s loaded, 3 s recovery.
const TCP_LOAD: [&str; 13] = [
    "tcp://10.0.1.2:7777",
    "--load-streams",
    "4",
    "--load-direction",
    "up",
    "--load-congestion",
    "cubic",
    "--load-idle",
    "2s",
    "--load-duration",
    "8s",
    "--load-recovery",
    "3s",
];

impl Lab {
    /// Packets the bottleneck queue dropped from `from` to `to` so far, once the counter stops
    /// moving (the status is republished every few 100 ms; waiting at most 5 s).
    fn queue_drops(&self, from: &str, to: &str) -> u64 {
        let read = || u(&self.direction(from, to), "/applied/dropped_queue");
        let until = Instant::now() + Duration::from_secs(5);
        let mut last = read();
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let now = read();
            if now == last || Instant::now() > until {
                return now;
            }
            last = now;
        }
    }
}

/// (idle p50, loaded p50, loaded p99, recovery p50) in ms.
fn phases(doc: &serde_json::Value) -> (f64, f64, f64, f64) {
    (
        f(doc, "/under_load/phases/0/rtt_ms/p50"),
        f(doc, "/under_load/phases/1/rtt_ms/p50"),
        f(doc, "/under_load/phases/1/rtt_ms/p99"),
        f(doc, "/under_load/phases/2/rtt_ms/p50"),
    )
}

#[test]
fn the_load_adds_the_queue_and_the_recovery_returns_to_the_base() {
    if lab::skipped("the_load_adds_the_queue_and_the_recovery_returns_to_the_base") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, queue, drain_ms) in [("tload100", 100, 120.0), ("tload20", 20, 24.0)] {
        // A turn per lab: each lab's drop gives its turn back before it goes down.
        let _turn = common::turn_alone(module_path!());
        let lab = Lab::up(dir.path(), name, queue);
        let (doc, [queue, recovering], late) = lab.loaded_probe(dir.path());
        // The link's 20 ms RTT as the lab delivered it.
        let rtt = lab.0.rtt_ms(0, "client", "server");
        drop(lab);
        let (base, loaded, loaded_p99, recovery) = phases(&doc);
        // What the probe saw is what the queue held: its loaded increase is the up queue's
        // median wait over the loaded phase (as the link measured it, per packet) within 5 %
        // of the drain time plus 0.5 ms. Why not closer: the probe samples time 400 times
        // while the queue's histogram has every one of ~6,500 packets, and with 4 CUBIC flows
        // the queue swings over a sawtooth of a few seconds, so the median of 400 correlated
        // samples strays by a ms or so at 100 packets; the window read from the lab misses
        // the first ~0.1–0.3 s of the phase (the streams' slow start); and the probe's reply
        // also waits behind the load's ACKs on the way down (~0.1 ms). Measured: +103.68 ms
        // vs a 103.94 ms median wait (100 packets), +18.42 vs 18.10 ms (20).
        let wait_p50 = queue.quantile_ns(0.5) as f64 / 1e6;
        let add = loaded - base;
        assert!(
            (add - wait_p50).abs() <= drain_ms * 0.05 + 0.5,
            "{name}: loaded p50 +{add:.2} ms vs the up queue's median wait {wait_p50:.2} ms \
             over {} packets",
            queue.count()
        );
        // The base is the link's RTT (up to 2 ms of the end hosts' own), over it only by what
        // the kernel says the lab's processes waited for a CPU per echo.
        assert!(
            (rtt..rtt + 2.0 + late).contains(&base),
            "{name}: idle p50 {base}, the lab's RTT {rtt:.3} ms, {late:.3} ms of waits per echo"
        );
        // The queue adds at most its drain time (+15 %), and the load fills it: its busiest
        // moments reach at least half of it.
        assert!(
            add > 0.0 && add <= drain_ms * 1.15,
            "{name}: loaded p50 {loaded} = base {base} + {add:.1} ms, queue drains in {drain_ms}"
        );
        assert!(
            loaded_p99 - base >= drain_ms * 0.5,
            "{name}: loaded p99 {loaded_p99}, base {base}"
        );
        // Back at the base: 2 ms either side, and over it by what the kernel says the lab's
        // processes waited for a CPU per echo (the load's end still busies a busy box). If
        // not, the lab's own queue over the recovery (from 0.3 s in) says whether a load
        // was still running or the box held the packets.
        assert!(
            recovery > base - 2.0 && recovery < base + 2.0 + late,
            "{name}: recovery p50 {recovery} vs base {base}, {late:.3} ms of waits per echo; \
             the lab's up queue over 10.3–12.8 s: {} packets, wait p50 {:.3} ms, max {:.3} ms",
            recovering.count(),
            recovering.quantile_ns(0.5) as f64 / 1e6,
            recovering.quantile_ns(1.0) as f64 / 1e6,
        );
        let mbit = f(&doc, "/under_load/goodput_bps/up") / 1e6;
        assert!(
            (9.0..=10.0).contains(&mbit),
            "{name}: load {mbit:.2} Mbit/s"
        );
        assert!(f(&doc, "/under_load/increase_p50_x") > 1.0);
        let rpm = f(&doc, "/under_load/rpm");
        let trimmed = f(&doc, "/under_load/rpm_rtt_ms");
        assert!((rpm - 60_000.0 / trimmed).abs() < 1e-6, "{rpm} {trimmed}");
    }
}

/// A UDP load held the 10 Mbit/s bottleneck's queue full: the idle p50 is the base `rtt` (the
/// lab's figure, up to `over` ms above it), the loaded p50 the base plus `drain_ms` within issue 17's ±15 %, the recovery
/// back at the base, and the load delivered 9–10 Mbit/s. (base, added, recovery, delivered.)
fn held_full(
    name: &str,
    doc: &serde_json::Value,
    drain_ms: f64,
    (rtt, over): (f64, f64),
) -> (f64, f64, f64, f64) {
    let (base, loaded, _, recovery) = phases(doc);
    assert!(
        (rtt..rtt + over).contains(&base),
        "{name}: idle p50 {base}, the lab's {rtt:.3} ms + {over:.3}"
    );
    let add = loaded - base;
    assert!(
        (add - drain_ms).abs() <= drain_ms * 0.15,
        "{name}: loaded p50 {loaded} = base {base} + {add:.2} ms, the queue drains in \
         {drain_ms:.2} ms"
    );
    // Back at the base, within 2 ms below and `over` above (as the base is held to the lab's).
    assert!(
        recovery > base - 2.0 && recovery < base + over,
        "{name}: recovery p50 {recovery} vs base {base} (+ {over:.3})"
    );
    let delivered = f(doc, "/under_load/udp/delivered_bps") / 1e6;
    assert!(
        (9.0..=10.0).contains(&delivered),
        "{name}: delivered {delivered:.2} Mbit/s"
    );
    (base, add, recovery, delivered)
}

/// The bottleneck's bit time: 10 Mbit/s, in ms per byte.
const MS_PER_BYTE: f64 = 8.0 / 10e6 * 1e3;
/// The load's datagrams on the link: `--load-size 1472` + 8 (UDP) + 20 (IPv4) = 1,500 bytes,
/// the packet size of issue 17's arithmetic (the emulator serializes what it reads from the
/// TUN: the IP packet, no link framing).
const LOAD_IP: f64 = 1500.0;
/// The probe's packets on the link: 64 bytes (its default `--size`) + 8 + 20.
const PROBE_IP: f64 = 92.0;

/// Issue 17's claim, with a load that holds the queue full: UDP at 20 Mbit/s, twice the
/// link's rate, up, beside a 50 pps UDP probe up the same link.
///
/// The drain time, for the packets actually queued: a probe packet gets into the full queue
/// only right after a departure (before the next load datagram takes the slot), so it finds
/// `queue − 1` load datagrams ahead of it, the first of them already on the wire, and then
/// waits for its own serialization: (queue − 1) × 1,500 B + 92 B at 10 Mbit/s = 118.87 ms with
/// `queue = 100` and 22.87 ms with `queue = 20` (less the part of the head datagram already
/// sent, 0–0.59 ms: datagrams arrive every 0.59 ms). The loaded p50 must be the idle p50 plus
/// that within ±15 % (the issue's 120 ms and 24 ms, which count 100 or 20 whole packets, are
/// inside the same bands). The recovery phase returns to the base within 2 ms. Measured: +115.2
/// and +115.4 ms (100), +22.41 ms (20). What the 100-packet queue lacks of 118.87 ms is the
/// small packets among the ones ahead: the other probe packets (92 B, 50 a second) and the
/// load's report requests (116 B, one per 20 ms) get in as the probe does, about one in four,
/// so some 3 of the 99 places ahead hold ~100 bytes instead of 1,500, 1.1 ms less each.
///
/// The load: the link delivers 10 Mbit/s of 1,500-byte packets, 833.3 a second, of the
/// 1,698.4 datagrams a second sent, so the responder gets 9.81 Mbit/s of datagrams (headers
/// excluded; the probe's 37 kbit/s takes a little of it) and 50.9 % are lost; the loss may
/// stray 3 points from that (the queue's fill at the start and its last packets at the stop,
/// about 2 % of a 6 s load, go either way). Every datagram the load lost and every probe
/// packet lost was dropped by the bottleneck queue on the way up: their sum is the link's
/// count of queue drops in that direction, exactly.
///
/// Down (`--load-direction down`; `npt serve` sends UDP down to `--token` sessions only, so
/// this lab's serve and the probe have one), 100 packets: the probe's *reply* waits in the
/// server's full queue, behind the same 99 load datagrams, and the same checks hold in the
/// other direction. Measured: +114.0 ms, 9.91 Mbit/s delivered, 50.14 % lost.
#[test]
fn a_udp_load_holds_the_queue_full_and_the_probe_reads_its_drain_time() {
    if lab::skipped("a_udp_load_holds_the_queue_full_and_the_probe_reads_its_drain_time") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, queue, way) in [
        ("tloadu100", 100u32, "up"),
        ("tloadu20", 20, "up"),
        ("tloadud100", 100, "down"),
    ] {
        let down = way == "down";
        let token = if down { r#", "--token", "lab-s""# } else { "" };
        // A turn per lab: each lab's drop gives its turn back before it goes down.
        let _turn = common::turn_alone(module_path!());
        let lab = Lab::up_with(dir.path(), name, queue, token);
        let mut load = vec![
            "udp://10.0.1.2:7777",
            "--load-direction",
            way,
            "--load-rate",
            "20mbit",
            "--load-size",
            "1472",
            "--load-idle",
            "2s",
            "--load-duration",
            "6s",
            "--load-recovery",
            "2s",
        ];
        if down {
            // The probe's token, which its load uses too.
            load.extend_from_slice(&["--token", "lab-s"]);
        }
        let (doc, late) = lab.probe_under(dir.path(), &load);
        let rtt = lab.0.rtt_ms(0, "client", "server");
        let drops = if down {
            lab.queue_drops("server", "client")
        } else {
            lab.queue_drops("client", "server")
        };
        drop(lab);
        assert_eq!(doc["under_load"]["load"]["direction"], way);
        let drain_ms = ((f64::from(queue) - 1.0) * LOAD_IP + PROBE_IP) * MS_PER_BYTE;
        // Up to 2 ms over the lab's RTT, and what the kernel says its processes waited per echo.
        held_full(name, &doc, drain_ms, (rtt, 2.0 + late));
        let link_pps = 10e6 / (LOAD_IP * 8.0);
        let sent_pps = 20e6 / (1472.0 * 8.0);
        let want_loss = (1.0 - link_pps / sent_pps) * 100.0;
        let loss = f(&doc, "/under_load/udp/loss_pct");
        assert!(
            (loss - want_loss).abs() <= 3.0,
            "{name}: loss {loss:.2} % vs {want_loss:.2} %"
        );
        let (load_lost, probe_lost) = (u(&doc, "/under_load/udp/lost"), u(&doc, "/summary/lost"));
        assert_eq!(
            load_lost + probe_lost,
            drops,
            "{name}: load lost {load_lost} + probe lost {probe_lost} vs the queue's drops"
        );
    }
}

/// The same UDP load and probe through a SOCKS5 relay (danted on a relay node behind the
/// bottleneck, `npt serve --token` on a target behind it), both keyed by `--token`: the probe
/// must read the same drain time, and the relay must add no loss of its own — every datagram
/// lost is one the bottleneck queue dropped (a busy relay may drop a few more; at most 0.5 %
/// of what was sent). Each datagram carries the relay's 10-byte header for an IPv4 target, so
/// the load's datagrams are 10 bytes shorter (1,462) to stay 1,500-byte packets, and the queue
/// holds 99 × 1,500 + 102 bytes. (At 1,472 each one left as two fragments, a full one and a
/// 30-byte one; the queue of 100 packets then held half as many bytes and the probe read +81
/// ms, which is what the link measured its queue to hold.)
#[test]
fn a_udp_load_through_a_socks5_relay_reads_the_same_queue() {
    if lab::skipped("a_udp_load_through_a_socks5_relay_reads_the_same_queue") {
        return;
    }
    let _turn = common::turn_alone(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("danted.conf");
    lab::danted_conf(&conf);
    let name = "tloadsocks";
    let topology = format!(
        r#"name = "{name}"
[[node]]
name = "client"
[[node]]
name = "relay"
[[node]]
name = "target"
[[link]]
a = "client"
b = "relay"
rate = "10mbit"
delay = "10ms"
queue = 100
[[link]]
a = "relay"
b = "target"
[[service]]
name = "serve"
node = "target"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "lab-s"]
ready = "tcp://10.0.2.2:7777"
[[service]]
name = "socks"
node = "relay"
cmd = ["/usr/sbin/danted", "-f", "{}"]
ready = "tcp://10.0.1.2:1080"
"#,
        conf.display()
    );
    let lab = Lab(lab::Lab::up(dir.path(), name, &topology));
    let target = "udp://10.0.2.2:7777";
    let probe = [
        target,
        "--via",
        "socks5://10.0.1.2:1080",
        "--token",
        "lab-s",
    ];
    let load = [
        target,
        "--load-rate",
        "20mbit",
        "--load-size",
        "1462",
        "--load-idle",
        "2s",
        "--load-duration",
        "6s",
        "--load-recovery",
        "2s",
    ];
    let (doc, late) = lab.probe_with(dir.path(), &probe, &load);
    let rtt = lab
        .0
        .path_ms(&[(0, "client"), (0, "relay"), (1, "relay"), (1, "target")]);
    let drops = lab.queue_drops("client", "relay");
    drop(lab);
    assert_eq!(doc["under_load"]["load"]["via"], "socks5://10.0.1.2:1080");
    let drain_ms = (99.0 * LOAD_IP + PROBE_IP + 10.0) * MS_PER_BYTE;
    // Up to 3 ms over the lab's RTT (danted's relaying), and the kernel's waits per echo.
    let (base, add, recovery, delivered) = held_full(name, &doc, drain_ms, (rtt, 3.0 + late));
    let (load_lost, probe_lost) = (u(&doc, "/under_load/udp/lost"), u(&doc, "/summary/lost"));
    let sent = u(&doc, "/under_load/udp/sent") + u(&doc, "/summary/sent");
    let lost = load_lost + probe_lost;
    eprintln!(
        "through danted: idle p50 {base:.2} ms, loaded +{add:.2} ms (drain {drain_ms:.2}), \
         recovery {recovery:.2} ms, delivered {delivered:.2} Mbit/s, lost {lost} of {sent}, \
         queue drops {drops}"
    );
    assert!(
        lost >= drops && (lost - drops) * 200 <= sent,
        "load lost {load_lost} + probe lost {probe_lost} vs the queue's drops {drops} of {sent}"
    );
}
