//! Truth per direction (root: network namespaces joined by emulated links whose two directions
//! differ). A link that loses 3 % client → server and nothing back must read up loss 3 ± 0.5 %,
//! down ≤ 0.2 %, and the losses must be exactly the packets the lab's link dropped (its own
//! per-direction counters, `npt lab status --json`); a link of 30 ms one way and 10 ms back
//! must read one-way delay 30 and 10 ± 0.5 ms (lab namespaces read one clock) and an RTT of
//! 40; jitter on one direction only must show in that direction's delay variation only. The
//! same through a socat UDP relay and through danted (SOCKS5 UDP ASSOCIATE) on a relay node.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::path::Path;

use common::{f, lab, u};

/// The client's link: 3 % loss and 30 ms up, 10 ms and no loss down.
const ASYMMETRIC: &str = r#"[link.a_to_b]
delay = "30ms"
loss = "3%"
[link.b_to_a]
delay = "10ms"
"#;

/// The client's link: 10 ms each way, 5 ms of jitter up only.
const JITTER_UP: &str = r#"delay = "10ms"
[link.a_to_b]
jitter = "5ms"
"#;

/// A relay on the path: none (client — server), socat forwarding UDP, or danted.
#[derive(Clone, Copy, PartialEq)]
enum Relay {
    None,
    Socat,
    Danted,
}

/// The topology: `client` — link 1 (`impair`) — `server` directly, or — `relay` — plain link 2
/// — `server` with the relay's service on `relay`; `npt serve` on `server`.
fn topology(name: &str, impair: &str, relay: Relay, dir: &Path) -> String {
    let serve = |at: &str| {
        format!(
            "[[service]]\nname = \"serve\"\nnode = \"server\"\n\
             cmd = [\"npt\", \"serve\", \"--listen\", \"0.0.0.0:7777\"]\nready = \"tcp://{at}:7777\"\n"
        )
    };
    if relay == Relay::None {
        return format!(
            "name = \"{name}\"\n[[node]]\nname = \"client\"\n[[node]]\nname = \"server\"\n\
             [[link]]\na = \"client\"\nb = \"server\"\n{impair}{}",
            serve("10.0.1.2")
        );
    }
    let service = match relay {
        Relay::Socat => "cmd = [\"socat\", \"UDP-LISTEN:7000,bind=10.0.1.2,reuseaddr\", \
                         \"UDP:10.0.2.2:7777\"]\nready = \"udp://10.0.1.2:7000\"\n"
            .to_string(),
        _ => {
            let conf = dir.join(format!("{name}-danted.conf"));
            lab::danted_conf(&conf);
            format!(
                "cmd = [\"/usr/sbin/danted\", \"-f\", \"{}\"]\nready = \"tcp://10.0.1.2:1080\"\n",
                conf.display()
            )
        }
    };
    format!(
        "name = \"{name}\"\n[[node]]\nname = \"client\"\n[[node]]\nname = \"relay\"\n\
         [[node]]\nname = \"server\"\n[[link]]\na = \"client\"\nb = \"relay\"\n{impair}\
         [[link]]\na = \"relay\"\nb = \"server\"\n{}[[service]]\nname = \"relay\"\n\
         node = \"relay\"\n{service}",
        serve("10.0.2.2")
    )
}

/// The probe's target and flags for a path through `relay`.
fn target(relay: Relay) -> Vec<&'static str> {
    match relay {
        Relay::None => vec!["udp://10.0.1.2:7777"],
        Relay::Socat => vec!["udp://10.0.1.2:7000"],
        Relay::Danted => vec!["udp://10.0.2.2:7777", "--via", "socks5://10.0.1.2:1080"],
    }
}

/// Up a lab of `impair` through `relay`, probe it with `n` packets at `pps` from the
/// client; the document and link 1's counts up and down during the probe.
fn probe(
    name: &str,
    impair: &str,
    relay: Relay,
    n: u64,
    pps: u64,
) -> Option<(serde_json::Value, [(u64, u64); 2])> {
    if lab::skipped(name) {
        return None;
    }
    let _turn = common::turn(module_path!());
    if relay == Relay::Danted && !Path::new("/usr/sbin/danted").exists() {
        panic!("danted is not installed (apt-get install dante-server; .ci/run does)");
    }
    let dir = tempfile::tempdir().unwrap();
    let l = lab::Lab::up(dir.path(), name, &topology(name, impair, relay, dir.path()));
    let far = if relay == Relay::None {
        "server"
    } else {
        "relay"
    };
    let before = [
        l.settled_counts(0, "client", far),
        l.settled_counts(0, far, "client"),
    ];
    let (count, rate) = (n.to_string(), pps.to_string());
    let mut args = vec!["probe"];
    args.extend(target(relay));
    args.extend(["--pps", &rate, "-n", &count, "-q"]);
    let doc = l.npt_json("client", &args, &dir.path().join("probe.json"), "probe");
    let after = [
        l.settled_counts(0, "client", far),
        l.settled_counts(0, far, "client"),
    ];
    let delta = |i: usize| (after[i].0 - before[i].0, after[i].1 - before[i].1);
    Some((doc, [delta(0), delta(1)]))
}

/// Loss: up 3 ± 0.5 %, down ≤ 0.2 %, exact, and every loss one the lab's link dropped. The
/// link also carries the flow query at the end (and its retries, if one was dropped) and,
/// through danted, the SOCKS5 control connection: up to all of those but the answered query
/// may be among the drops (on a direct link with one query, the drops are the losses).
fn check_loss(what: &str, d: &serde_json::Value, link: [(u64, u64); 2]) {
    let sent = u(d, "/summary/sent");
    let dirs = &d["summary"]["directions"];
    assert_eq!(dirs["exact"], true, "{what}: {dirs}");
    let (up, down) = (
        u(d, "/summary/directions/up/lost"),
        u(d, "/summary/directions/down/lost"),
    );
    let (up_pct, down_pct) = (
        f(d, "/summary/directions/up/loss_pct"),
        f(d, "/summary/directions/down/loss_pct"),
    );
    eprintln!("{what}: up lost {up} ({up_pct:.3} %), down {down} ({down_pct:.3} %); link {link:?}");
    assert!((up_pct - 3.0).abs() <= 0.5, "{what}: up {up_pct} %");
    assert!(down_pct <= 0.2, "{what}: down {down_pct} %");
    assert_eq!(
        u(d, "/summary/lost"),
        up + down,
        "{what}: total = up + down"
    );
    assert_eq!(u(d, "/summary/refused_by_server"), 0);
    let ((up_in, up_dropped), (_, down_dropped)) = (link[0], link[1]);
    let extra = up_in - sent;
    assert!(extra >= 1, "{what}: the query crossed the link");
    assert!(
        (up..up + extra).contains(&up_dropped),
        "{what}: the link dropped {up_dropped} up, the probe lost {up} (+ {extra} other packets)"
    );
    assert_eq!(
        down_dropped, down,
        "{what}: the link dropped {down_dropped} down"
    );
}

/// One-way delay 30 and 10 ± 0.5 ms, RTT 40, on one clock.
fn check_owd(what: &str, d: &serde_json::Value) {
    assert_eq!(d["summary"]["directions"]["clock"], "same-host", "{what}");
    let up = f(d, "/summary/directions/up/owd_ms/p50");
    let down = f(d, "/summary/directions/down/owd_ms/p50");
    let rtt = f(d, "/summary/rtt_ms/p50");
    eprintln!("{what}: one-way delay p50 up {up:.3} ms, down {down:.3} ms, rtt {rtt:.3} ms");
    assert!((up - 30.0).abs() <= 0.5, "{what}: up {up} ms");
    assert!((down - 10.0).abs() <= 0.5, "{what}: down {down} ms");
    // The round trip is the two ways and the far end's dwell (a relay's user-space hops are in
    // the one-way delays): at least the links' 40 ms, and on a busy box no more than the
    // parts measured beside it (p50s of different packets: 1 ms of slack).
    let dwell = f(d, "/summary/directions/dwell_ms/p50");
    assert!(rtt >= 39.5, "{what}: rtt {rtt} ms");
    assert!(
        rtt <= up + down + dwell + 1.0,
        "{what}: rtt {rtt} ms against up {up} + down {down} + dwell {dwell}"
    );
    assert_eq!(u(d, "/summary/directions/owd_negative"), 0, "{what}");
}

/// Jitter up only, probed at 200 pps (5 ms apart, so the jitter's curve moves between
/// packets): up's IPDV is many times down's (which is only the box's and the relay's
/// wake-ups), up's delays go below the configured 10 ms, down's never do — not even the
/// minimum: the link never releases a packet early, a late far end or a late receive only
/// lengthens it, and the probe reads the wall clock against its own inside a bracket (a read
/// preempted between the two clocks once shifted 100 ms of down delays 190 µs short, p1
/// 9.871 ms, on a busy 2-core host).
fn check_jitter_up(what: &str, d: &serde_json::Value) {
    let p = |x: &str| f(d, &format!("/summary/directions/{x}"));
    let (ipdv_up, ipdv_down) = (p("up/ipdv_ms/p50"), p("down/ipdv_ms/p50"));
    let (min_up, min_down) = (p("up/owd_ms/min"), p("down/owd_ms/min"));
    let (p1_up, p1_down) = (owd_ms_at(d, "owd_up", 0.01), owd_ms_at(d, "owd_down", 0.01));
    eprintln!(
        "{what}: ipdv p50 up {ipdv_up:.3} down {ipdv_down:.3} ms; owd min up {min_up:.3} down \
         {min_down:.3} ms, p1 up {p1_up:.3} down {p1_down:.3} ms"
    );
    assert!(ipdv_up >= 0.1 && ipdv_up >= 4.0 * ipdv_down, "{what}");
    assert!(
        p1_up <= 9.0,
        "{what}: up went below 10 ms with its jitter: p1 {p1_up}"
    );
    assert!(
        min_down >= 9.95,
        "{what}: down went below 10 ms: min {min_down}, p1 {p1_down}"
    );
}

/// The one-way delay (ms) at quantile `q` of the probe's histogram `name` (`owd_up`,
/// `owd_down`).
fn owd_ms_at(d: &serde_json::Value, name: &str, q: f64) -> f64 {
    let s: npt_stats::SerializedHistogram =
        serde_json::from_value(d["histograms"][name].clone()).expect("a serialized histogram");
    let h = npt_stats::Histogram::from_serialized(&s).expect("a readable histogram");
    std::time::Duration::from_nanos(h.quantile_ns(q)).as_secs_f64() * 1e3
}

#[test]
fn loss_and_delay_up_and_down_on_a_direct_link() {
    let Some((d, link)) = probe("tdirloss", ASYMMETRIC, Relay::None, 10_000, 1000) else {
        return;
    };
    check_loss("direct", &d, link);
    check_owd("direct", &d);
}

#[test]
fn jitter_one_way_shows_that_way_only() {
    let Some((d, _)) = probe("tdirjit", JITTER_UP, Relay::None, 1000, 200) else {
        return;
    };
    check_jitter_up("direct", &d);
}

#[test]
fn the_same_through_a_socat_udp_relay() {
    // socat without fork: its UDP-LISTEN serves the first peer only, which is the probe (the
    // lab's udp:// readiness check only looks for the bound socket). With fork it may fork
    // twice for one client when the second datagram reaches the parent before the first child
    // connected — on a busy box even twice in a row — and the server then sees two flows.
    let Some((d, link)) = probe("tdirsocat", ASYMMETRIC, Relay::Socat, 10_000, 1000) else {
        return;
    };
    check_loss("socat", &d, link);
    check_owd("socat", &d);
    let Some((d, _)) = probe("tdirsocatj", JITTER_UP, Relay::Socat, 1000, 200) else {
        return;
    };
    check_jitter_up("socat", &d);
}

#[test]
fn the_same_through_danted() {
    let Some((d, link)) = probe("tdirdante", ASYMMETRIC, Relay::Danted, 10_000, 1000) else {
        return;
    };
    assert_eq!(d["summary"]["proxy"]["via"], "socks5://10.0.1.2:1080");
    check_loss("danted", &d, link);
    check_owd("danted", &d);
    let Some((d, _)) = probe("tdirdantej", JITTER_UP, Relay::Danted, 1000, 200) else {
        return;
    };
    check_jitter_up("danted", &d);
}

/// A plain echo at the far end — socat returning each datagram unchanged, no `npt serve` — on
/// a link that loses 2 % each way: with no flag the probe counts every echo as a reply, names
/// the far end `echo`, and its loss is exactly the packets the lab's link dropped, both ways
/// together (a plain echo says nothing of what it saw, so there is no split; and no flow query
/// crosses the link, since the far end never reflected). socat moves at most one packet per
/// step (`-b 64`, the probe's size): its PIPE is a stream, and with a larger block it returns
/// two requests that queued together as one datagram — the probe splits them back into two
/// replies, but the lab then counts one datagram where two replies crossed, and a drop of it
/// loses two.
#[test]
fn a_plain_echo_reads_the_labs_loss_exactly() {
    let name = "tdirecho";
    if lab::skipped(name) {
        return;
    }
    let _turn = common::turn(module_path!());
    let topology = format!(
        "name = \"{name}\"\n[[node]]\nname = \"client\"\n[[node]]\nname = \"server\"\n\
         [[link]]\na = \"client\"\nb = \"server\"\nloss = \"2%\"\n[[service]]\nname = \"echo\"\n\
         node = \"server\"\ncmd = [\"socat\", \"-b\", \"64\", \
         \"UDP-LISTEN:7777,bind=10.0.1.2,reuseaddr\", \"PIPE\"]\nready = \"udp://10.0.1.2:7777\"\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let l = lab::Lab::up(dir.path(), name, &topology);
    let counts = || {
        [
            l.settled_counts(0, "client", "server"),
            l.settled_counts(0, "server", "client"),
        ]
    };
    let before = counts();
    let args = [
        "probe",
        "udp://10.0.1.2:7777",
        "--pps",
        "1000",
        "-n",
        "3000",
        "-q",
    ];
    let d = l.npt_json("client", &args, &dir.path().join("probe.json"), "probe");
    let after = counts();
    let (up_in, up_dropped) = (after[0].0 - before[0].0, after[0].1 - before[0].1);
    let (down_in, down_dropped) = (after[1].0 - before[1].0, after[1].1 - before[1].1);
    let (sent, received, lost) = (
        u(&d, "/summary/sent"),
        u(&d, "/summary/received"),
        u(&d, "/summary/lost"),
    );
    eprintln!(
        "plain echo: sent {sent} received {received} lost {lost} (late {}); link up {up_in} in, \
         {up_dropped} dropped; down {down_in} in, {down_dropped} dropped",
        u(&d, "/summary/late")
    );
    assert_eq!(d["summary"]["far_end"], "echo");
    assert_eq!(d["summary"]["round_trip_only"], "echo");
    assert_eq!(u(&d, "/summary/foreign"), 0);
    assert_eq!(up_in, sent, "only the probe's packets crossed the link up");
    assert_eq!(
        down_in,
        up_in - up_dropped,
        "the echo returned what reached it, one for one"
    );
    assert!(
        up_dropped > 0 && down_dropped > 0,
        "the link lost both ways"
    );
    assert_eq!(received + lost, sent);
    assert_eq!(
        lost,
        up_dropped + down_dropped,
        "loss is what the lab dropped"
    );
}
