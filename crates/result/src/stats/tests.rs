//! The pieces stats values are made of, and the ping's split property (pings have no `npt
//! merge`, so it is checked here at the level merge works at: each part's body read back,
//! added, summarized). The other kinds' split properties run through `npt merge` itself, in
//! `npt-report`'s `tests/report/merge_split`.

// Counts drawn below 8 and 500, and small positive rates times seconds: their conversions
// cannot truncate or lose a sign.
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use npt_stats::Histogram;

use super::*;
use crate::interval::{Interval, IntervalAcc, Intervals};
use crate::ping::PingBody;

/// xorshift64*: a seeded stream of numbers for the split tests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn ping_parts_read_back_and_added_are_the_whole() {
    for seed in 1..=40u64 {
        let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let k = 1 + r.below(8) as usize;
        let mut parts = vec![PingStats::default(); k];
        let mut whole = PingStats::default();
        for _ in 0..r.below(500) {
            let p = r.below(k as u64) as usize;
            let rtt = 10_000 + r.below(50_000_000);
            let what = r.below(4);
            for s in [&mut parts[p], &mut whole] {
                match what {
                    0 | 1 => {
                        s.sent += 1;
                        s.received += 1;
                        s.rtt.record(rtt);
                    }
                    2 => s.sent += 1,
                    _ => {
                        s.sent += 1;
                        s.late += (rtt >> 3) & 1;
                        s.errors.record("timeout", || "timeout".into());
                    }
                }
            }
        }
        let meta = PingMeta {
            target: "udp://127.0.0.1:7".into(),
            proto: "udp".into(),
            addresses: vec!["127.0.0.1:7".into()],
            measured_from: None,
            answered_by: None,
            setup: None,
        };
        let bodies: Vec<PingBody> = parts.iter().map(|s| s.summarize(&meta)).collect();
        let mut merged = PingStats::default();
        for b in &bodies {
            let (s, m) = PingStats::from_body(b).unwrap();
            assert_eq!(m, meta);
            merged += &s;
        }
        let (got, want) = (merged.summarize(&meta), whole.summarize(&meta));
        assert_eq!(
            Histogram::from_serialized(&got.histogram)
                .unwrap()
                .summary(),
            Histogram::from_serialized(&want.histogram)
                .unwrap()
                .summary()
        );
        let json = |b: &PingBody| {
            let mut v = serde_json::to_value(b).unwrap();
            v["histogram"] = serde_json::Value::Null;
            v
        };
        assert_eq!(json(&got), json(&want), "seed {seed} k {k}");
    }
}

#[test]
fn a_histogram_that_does_not_decode_is_named() {
    let mut saved = crate::Histograms::new();
    saved.insert("rtt".into(), Histogram::new().to_serialized());
    let mut bad = Histogram::new().to_serialized();
    bad.data = "not base64!".into();
    saved.insert("proto.tcp.latency".into(), bad);
    let e = HistMap::from_saved(&saved).unwrap_err();
    assert_eq!(e.name, "proto.tcp.latency");
    assert!(
        e.to_string().starts_with("histogram proto.tcp.latency: "),
        "{e}"
    );
}

#[test]
fn hist_maps_add_by_name() {
    let mut a = HistMap::default();
    a.record("x", 1_000);
    let mut b = HistMap::default();
    b.record("x", 2_000);
    b.record("y", 3_000);
    a += &b;
    assert_eq!(a.summary("x").count, 2);
    assert_eq!(a.summary_opt("y").map(|s| s.count), Some(1));
    assert_eq!(a.summary("absent"), Summary::default());
    assert_eq!(a.names().collect::<Vec<_>>(), ["x", "y"]);
    assert_eq!(a.saved(["y", "absent"]).len(), 1);
}

#[test]
fn a_weighted_mean_of_one_part_is_its_value() {
    let one = WeightedMean::of(0.1 + 0.2, 3.0);
    assert_eq!(one.value(), 0.1 + 0.2);
    let mut two = WeightedMean::default();
    two += &one;
    assert_eq!(two.value(), one.value(), "the default adds nothing");
    two += &WeightedMean::of(1.0, 1.0);
    assert_eq!(two.value(), ((0.1 + 0.2) * 3.0 + 1.0) / 4.0);
    let mut none = WeightedMean::of(5.0, 0.0);
    none += &WeightedMean::of(7.0, 0.0);
    assert_eq!(none.value(), 0.0, "several parts without weight");
}

#[test]
fn a_saved_distribution_stands_for_all_once_it_is_in() {
    let mut recorded = Dist::default();
    recorded.record(1_000_000);
    let mut other = Dist::default();
    other.record(3_000_000);
    let mut all = recorded.clone();
    all += &other;
    assert_eq!(all.summary().count, 2);
    let saved = Dist::Saved(recorded.summary());
    let mut first = Dist::default();
    first += &saved;
    first += &Dist::Saved(other.summary());
    assert_eq!(first.summary(), recorded.summary());
}

fn record(index: u32, completed: u64, jitter: Option<(f64, Option<u64>)>) -> Interval {
    let mut h = Histogram::new();
    for i in 0..completed {
        h.record(1_000_000 + i);
    }
    Interval {
        index,
        start_s: f64::from(index),
        end_s: f64::from(index) + 1.0,
        completed,
        rate_per_s: completed as f64,
        latency_ms: h.summary(),
        sent: Some(completed + 1),
        lost: Some(1),
        loss_pct: Some(100.0 / (completed + 1) as f64),
        jitter_ms: jitter.map(|j| j.0),
        jitter_samples: jitter.and_then(|j| j.1),
        status: Some([("200".to_string(), completed)].into()),
        histogram: h.to_serialized(),
        ..Interval::default()
    }
}

#[test]
fn intervals_join_by_index_and_one_part_is_kept_as_written() {
    let mut a = Intervals::of(vec![record(0, 3, Some((1.0, Some(2)))), record(1, 1, None)]);
    let b = Intervals::of(vec![record(0, 1, Some((4.0, Some(1))))]);
    a += &b;
    let joined = a.joined();
    assert_eq!(joined.len(), 2);
    let j = &joined[0];
    assert_eq!((j.completed, j.sent, j.lost), (4, Some(6), Some(2)));
    assert_eq!(j.loss_pct, Some(2.0 * 100.0 / 6.0));
    assert_eq!(j.rate_per_s, 4.0);
    assert_eq!(j.latency_ms.count, 4);
    assert_eq!((j.jitter_ms, j.jitter_samples), (Some(2.0), Some(3)));
    assert_eq!(j.status.as_ref().unwrap()["200"], 4);
    assert_eq!(
        joined[1],
        record(1, 1, None),
        "an index one part has is that part's"
    );
    // A part without jitter samples (an older file): weighted by replies, no sample count.
    let mut old = Intervals::of(vec![record(0, 3, Some((1.0, None)))]);
    old += &Intervals::of(vec![record(0, 1, Some((4.0, Some(1))))]);
    let j = &old.joined()[0];
    assert_eq!((j.jitter_ms, j.jitter_samples), (Some(7.0 / 4.0), None));
}

#[test]
fn an_open_interval_closes_counts_and_empties() {
    let mut acc = IntervalAcc::with_status();
    acc.record_completed(2_000_000);
    acc.record_status(200);
    acc.record_status(200);
    acc.record_status(503);
    acc.errors += 1;
    let r = acc.close(4, 4.0, 4.5, 0.5);
    assert_eq!(
        (r.index, r.completed, r.errors, r.rate_per_s),
        (4, 1, 1, 2.0)
    );
    let codes = r.status.unwrap();
    assert_eq!((codes["200"], codes["503"]), (2, 1));
    assert!(r.bytes.is_none());
    let again = acc.close(5, 4.5, 5.0, 0.5);
    assert_eq!((again.completed, again.errors), (0, 0));
    assert_eq!(again.status, Some(Default::default()));
    let mut bytes = IntervalAcc::with_bytes();
    bytes.record_bytes(3, 4);
    assert_eq!(
        bytes.close(0, 0.0, 1.0, 1.0).bytes.map(|b| (b.up, b.down)),
        Some((3.0, 4.0))
    );
}

/// Two TCP probe parts with the kernel's view, saved and read back (as `npt merge` does),
/// add up to the view of both: retransmits and segments summed, the RTT samples' histogram
/// added exactly, the variance weighted by samples, the lowest RTT the lower.
#[test]
fn probe_kernel_views_read_back_and_added_are_the_whole() {
    use crate::probe::hist;
    use crate::tcpinfo::TcpKernelStats;
    let part = |retrans: u64, rtt_ms: u64, n: u64, var_ms: f64| {
        let mut s = ProbeStats {
            clients: 1,
            ..ProbeStats::default()
        };
        let mut h = Histogram::new();
        for _ in 0..n {
            h.record(rtt_ms * 1_000_000);
        }
        s.histograms.add(hist::TCP_RTT, &h);
        s.tcp_info = Some(TcpKernelStats {
            scope: "target".into(),
            connections: 1,
            retransmits: retrans,
            data_segments_out: Some(1000),
            rttvar_ns: WeightedMean::of(var_ms * 1e6, n as f64),
            min_rtt_ns: Some(rtt_ms as f64 * 1e6),
        });
        s
    };
    let meta = ProbeMeta {
        protocol: "tcp".into(),
        ..ProbeMeta::default()
    };
    let mut merged = ProbeStats::default();
    for p in [part(10, 20, 30, 1.0), part(30, 40, 10, 5.0)] {
        let saved = p.summarize(&meta);
        let json = serde_json::to_value(&saved).unwrap();
        let back: crate::probe::ProbeBody = serde_json::from_value(json).unwrap();
        let (s, _) = ProbeStats::from_body(&back).unwrap();
        merged += &s;
    }
    let k = merged.summarize(&meta).summary.tcp_info.unwrap();
    assert_eq!((k.connections, k.retransmits), (2, 40));
    assert_eq!(
        (k.data_segments_out, k.retransmit_pct),
        (Some(2000), Some(2.0))
    );
    assert_eq!(k.rtt_ms.count, 40);
    assert!((k.rtt_ms.p50 - 20.0).abs() < 0.1, "{:?}", k.rtt_ms);
    // 30 samples at 1 ms, 10 at 5 ms.
    assert!((k.rttvar_ms - 2.0).abs() < 1e-9, "{}", k.rttvar_ms);
    assert_eq!(k.min_rtt_ms, Some(20.0));
}

/// Two loaded probes (agents of one run, `npt merge`): the phase histograms add exactly, the
/// loads' goodput adds, and one part read back from its body summarizes to the same block.
#[test]
fn loaded_probe_parts_add_and_read_back() {
    use crate::probe::hist;
    use crate::stats::probe::{LoadStats, ProbeMeta, ProbeStats};
    let part = |loaded_ms: u64, down: f64| {
        let mut s = ProbeStats {
            clients: 1,
            ..ProbeStats::default()
        };
        for (name, ms) in hist::PHASES.iter().zip([20, loaded_ms, 21]) {
            for _ in 0..100 {
                s.histograms.record(name, ms * 1_000_000);
            }
        }
        s.under_load = Some(LoadStats {
            phases: vec![
                ("idle".into(), 0.0, 5.0),
                ("loaded".into(), 5.0, 15.0),
                ("recovery".into(), 15.0, 20.0),
            ],
            goodput_bps: crate::common::Directions { up: 0.0, down },
            retransmits: Some(loaded_ms),
            congestion: Some(if loaded_ms > 100 { "cubic" } else { "bbr" }.into()),
            ..LoadStats::default()
        });
        s
    };
    let meta = ProbeMeta::default();
    let one = part(140, 9e6).summarize(&meta);
    let u = one.under_load.as_ref().unwrap();
    assert_eq!(u.phases[1].rtt_ms.count, 100);
    assert!((u.increase_p50_ms.unwrap() - 120.0).abs() < 0.2, "{u:?}");
    assert!((u.increase_p50_x.unwrap() - 7.0).abs() < 0.02);
    // Every loaded RTT is 140 ms: the trimmed mean is that, 60000 / 140 RPM.
    assert!(
        (u.rpm.unwrap() - 60_000.0 / 140.0).abs() < 1.0,
        "{:?}",
        u.rpm
    );
    let (back, m) = ProbeStats::from_body(&one).unwrap();
    let again = back.summarize(&m);
    let v = again.under_load.as_ref().unwrap();
    assert_eq!(
        (v.phases[1].rtt_ms.p50, v.rpm, v.goodput_bps.down),
        (u.phases[1].rtt_ms.p50, u.rpm, 9e6)
    );
    assert_eq!(
        (v.retransmits, v.congestion.as_deref()),
        (Some(140), Some("cubic"))
    );
    let mut both = part(140, 9e6);
    both += &part(60, 1e6);
    let b = both.summarize(&meta);
    let w = b.under_load.as_ref().unwrap();
    assert_eq!(w.phases[1].rtt_ms.count, 200);
    assert_eq!(w.goodput_bps.down, 10e6);
    // The loads' retransmits add; the congestion controls they ran are both named.
    assert_eq!(
        (w.retransmits, w.congestion.as_deref()),
        (Some(200), Some("bbr,cubic"))
    );
    assert_eq!(
        w.phases.len(),
        3,
        "the plan is the first part's, not doubled"
    );
}

/// Two UDP probe parts with a per-direction split, saved and read back (as `npt merge`
/// does): refusals and each direction's counts add, the histograms (dwell, IPDV and one-way
/// delay each way) add exactly, and the merge is exact only when every part was.
#[test]
fn probe_directions_read_back_and_added_are_the_whole() {
    use crate::directions::{hist, FlowsSettled};
    use crate::stats::directions::DirStats;
    let part = |lost_up: u64, lost_down: u64, refused: u64, exact: bool, owd_ms: u64| {
        let mut s = ProbeStats {
            clients: 1,
            packets: npt_stats::PacketCounts {
                sent: 1000,
                received: 1000 - lost_up - lost_down - refused,
                lost: lost_up + lost_down,
                ..Default::default()
            },
            refused,
            ..ProbeStats::default()
        };
        s.refusal_notices.insert("budget".into(), refused / 10);
        for _ in 0..100 {
            s.histograms.record(hist::OWD_UP, owd_ms * 1_000_000);
            s.histograms.record(hist::OWD_DOWN, 1_000_000);
            s.histograms.record(hist::IPDV_UP, 100_000);
            s.histograms.record(hist::IPDV_DOWN, 0);
            s.histograms.record(hist::DWELL, 20_000);
        }
        s.directions = Some(DirStats {
            flows: FlowsSettled {
                reflected: 1,
                exact: u32::from(exact),
                no_report: u32::from(!exact),
                ..FlowsSettled::default()
            },
            clock: "same-host".into(),
            counts: true,
            lost_up,
            lost_down,
            dup_up: 1,
            stamped: 100,
            ..DirStats::default()
        });
        s
    };
    let meta = ProbeMeta {
        protocol: "udp".into(),
        ..ProbeMeta::default()
    };
    let one = part(30, 10, 500, true, 30).summarize(&meta);
    let d = one.summary.directions.as_ref().unwrap();
    assert!(d.exact);
    assert_eq!((d.up.lost, d.down.lost), (Some(30), Some(10)));
    assert_eq!(d.up.loss_pct, Some(3.0));
    // Down carried the 470 replies the server sent (1000 - 500 refused - 30 lost up).
    assert!((d.down.loss_pct.unwrap() - 1000.0 / 470.0).abs() < 1e-9);
    assert_eq!(one.summary.loss_pct, 8.0, "40 lost of the 500 not refused");
    let mut merged = ProbeStats::default();
    for p in [part(30, 10, 500, true, 30), part(5, 0, 0, false, 10)] {
        let saved = serde_json::to_value(p.summarize(&meta)).unwrap();
        let back: crate::probe::ProbeBody = serde_json::from_value(saved).unwrap();
        let (s, _) = ProbeStats::from_body(&back).unwrap();
        merged += &s;
    }
    let b = merged.summarize(&meta);
    assert_eq!(
        (b.summary.refused_by_server, b.summary.packets.lost),
        (500, 45)
    );
    assert_eq!(b.summary.refusal_notices.get("budget"), Some(&50));
    let d = b.summary.directions.unwrap();
    assert!(!d.exact, "one part was not exact");
    assert_eq!(
        (d.flows.reflected, d.flows.exact, d.flows.no_report),
        (2, 1, 1)
    );
    assert_eq!(
        (d.up.lost, d.down.lost, d.up.duplicated),
        (Some(35), Some(10), Some(2))
    );
    let owd = d.up.owd_ms.unwrap();
    assert_eq!(owd.count, 200);
    assert!(
        (owd.p50 - 10.0).abs() < 0.02 && (owd.max - 30.0).abs() < 0.05,
        "{owd:?}"
    );
    assert_eq!((d.stamped, d.clock.as_str()), (200, "same-host"));
    assert!(b.histograms.contains_key(hist::DWELL));
}

/// Rounds of one workload added one after another (`then`, a monitor's history): counts and
/// histograms add exactly as `+=` adds them, lengths of time add, and every rate is the rate
/// over the summed time — three rounds of 100 pps for 1 s, 2 s and 1 s read as 100 pps over
/// 4 s, not 300 pps (side by side) or the longest phase.
#[test]
fn rounds_one_after_another_add_their_times_and_keep_their_rates() {
    let round = |secs: f64, pps: f64, ms: u64| {
        let mut s = ProbeStats {
            clients: 1,
            packets: npt_stats::PacketCounts {
                sent: (pps * secs) as u64,
                received: (pps * secs) as u64,
                ..Default::default()
            },
            rates: probe::SendRates {
                pps,
                pps_received: pps,
                send_duration_s: secs,
                bandwidth_bps: crate::common::Directions {
                    up: pps * 512.0,
                    down: pps * 512.0,
                },
            },
            total_ms: Some(secs * 1000.0),
            ..ProbeStats::default()
        };
        for _ in 0..s.packets.sent {
            s.histograms.record(crate::probe::hist::RTT, ms * 1_000_000);
        }
        s
    };
    let parts = [
        round(1.0, 100.0, 20),
        round(2.0, 100.0, 50),
        round(1.0, 200.0, 20),
    ];
    let mut seq = parts[0].clone();
    seq.then(&parts[1]);
    seq.then(&parts[2]);
    let mut side = parts[0].clone();
    side += &parts[1];
    side += &parts[2];
    assert_eq!((seq.packets.sent, seq.clients), (500, 1));
    assert_eq!(seq.rates.send_duration_s, 4.0);
    assert_eq!(seq.rates.pps, 125.0, "500 packets over 4 s");
    assert_eq!(seq.rates.bandwidth_bps.up, 125.0 * 512.0);
    assert_eq!(seq.total_ms, Some(4000.0));
    // The histograms are `+=`'s, exactly.
    let (a, b) = (
        seq.histograms.get(crate::probe::hist::RTT).unwrap(),
        side.histograms.get(crate::probe::hist::RTT).unwrap(),
    );
    assert_eq!(a.count(), 500);
    assert!(a == b);
    // Grouping does not matter: (r0 r1) r2 == r0 (r1 r2), as a rollup of rollups needs.
    let mut tail = parts[1].clone();
    tail.then(&parts[2]);
    let mut grouped = parts[0].clone();
    grouped.then(&tail);
    assert_eq!(grouped.rates, seq.rates);

    // Bulk: goodput over the summed measured time; http: requests per second likewise.
    let bulk = |secs: f64, bps: f64| BulkStats {
        streams: 2,
        duration_s: secs,
        goodput_bps: crate::common::Directions { up: 0.0, down: bps },
        ..BulkStats::default()
    };
    let mut b = bulk(1.0, 10e6);
    b.then(&bulk(3.0, 20e6));
    assert_eq!((b.streams, b.duration_s), (2, 4.0));
    assert_eq!(b.goodput_bps.down, 17.5e6);
    let http = |secs: f64, rps: f64| HttpStats {
        connections: 4,
        requests: (secs * rps) as u64,
        rps,
        duration_s: secs,
        ..HttpStats::default()
    };
    let mut h = http(2.0, 50.0);
    h.then(&http(2.0, 150.0));
    assert_eq!((h.connections, h.requests, h.duration_s), (4, 400, 4.0));
    assert_eq!(h.rps, 100.0);
}

/// A block of two connections, set up.
fn two_set_up() -> Option<SetupStats> {
    Some(SetupStats {
        runs: 1,
        attempts: 2,
        completed: 2,
        ..SetupStats::default()
    })
}

/// A kind's setup block (`http`, `ping --setup`): parts of one run (`npt merge`) add their
/// connections and stay one run; rounds (`then`, a monitor's range) count as runs; a round
/// without the block leaves the others' as it is.
fn setup_blocks_add<S: Stats>(part: impl Fn() -> S, block: impl Fn(&S) -> Option<&SetupStats>) {
    let mut merged = part();
    merged += &part();
    let s = block(&merged).unwrap();
    assert_eq!((s.attempts, s.completed, s.runs), (4, 4, 1));
    let mut rounds = part();
    rounds.then(&part());
    rounds.then(&S::default());
    let s = block(&rounds).unwrap();
    assert_eq!((s.attempts, s.runs), (4, 2));
    let mut later = S::default();
    later.then(&part());
    assert_eq!(block(&later).unwrap().runs, 1);
}

#[test]
fn http_setup_blocks_add_as_parts_and_count_as_rounds() {
    let part = || HttpStats {
        setup: two_set_up(),
        ..HttpStats::default()
    };
    setup_blocks_add(part, |s| s.setup.as_ref());
}

#[test]
fn ping_setup_blocks_add_as_parts_and_count_as_rounds() {
    let part = || PingStats {
        setup: two_set_up(),
        ..PingStats::default()
    };
    setup_blocks_add(part, |s| s.setup.as_ref());
}
