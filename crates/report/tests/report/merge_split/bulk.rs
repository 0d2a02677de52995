//! A bulk run's recorded samples: RTT readings under load and bytes that arrived, in
//! intervals; per part its streams (each with its totals and its share of every interval),
//! goodput over its own clock, retransmits, UDP counts at its share of the rate, failed
//! streams and health.

use npt_result::bulk::{hist, StreamInterval, StreamTotal};
use npt_result::common::Directions;
use npt_result::interval::IntervalAcc;
use npt_result::stats::bulk::UdpStats;
use npt_result::stats::{BulkMeta, BulkStats};
use npt_stats::JitterMean;
use rand::Rng;

use super::{health, ns, rng, shape, under, Rule, Split};

pub fn rule(path: &[&str]) -> Rule {
    // A jitter the document keeps as a mean, weighted back by the datagrams that arrived.
    if under(path, &["summary", "udp", "jitter_ms"]) {
        Rule::Approx
    } else {
        Rule::Exact
    }
}

pub fn recorded(seed: u64) -> (Split<BulkStats>, BulkMeta) {
    let mut r = rng(seed);
    let (k, n) = shape(&mut r);
    let udp = r.gen_bool(0.3);
    let meta = BulkMeta {
        target: "tcp://127.0.0.1:7777".into(),
        protocol: if udp { "udp" } else { "tcp" }.into(),
        direction: if udp { "up" } else { "both" }.into(),
    };
    let m = r.gen_range(1..=4u32);
    let mut split = Split::<BulkStats>::new(k);
    // Each part's streams, and where they start in the whole (counted here, not by `+=`).
    let mut streams = Vec::with_capacity(k);
    for p in 0..k {
        let n_p: u32 = if udp { 1 } else { r.gen_range(1..=4) };
        let failed = r.gen_range(0..=n_p.min(1));
        let mut agent = BulkStats {
            streams: n_p,
            duration_s: r.gen_range(1.0..100.0),
            goodput_bps: Directions {
                up: r.gen_range(0.0..1e9),
                down: r.gen_range(0.0..1e9),
            },
            retransmits: (!udp && r.gen_bool(0.8)).then(|| r.gen_range(0..1000)),
            udp: udp.then(|| {
                let sent = r.gen_range(0..100_000);
                let received = r.gen_range(0..=sent);
                UdpStats {
                    rate_bps: r.gen_range(1e6..1e9),
                    size: 1200,
                    sent,
                    received,
                    refused: r.gen_bool(0.7).then(|| r.gen_range(0..=sent - received)),
                    delivered_bps: r.gen_range(0.0..1e9),
                    jitter: JitterMean::from_value(r.gen_range(0.0..5e6), received),
                    sends_behind_schedule: r.gen_range(0..10),
                    stalled_ms: r.gen_range(0.0..200.0),
                }
            }),
            failed_streams: failed,
            stream_totals: (0..n_p)
                .map(|i| StreamTotal {
                    index: i,
                    direction: if i % 2 == 0 { "down" } else { "up" }.into(),
                    bytes: r.gen_range(0..1 << 30),
                    goodput_bps: r.gen_range(0.0..1e9),
                    retransmits: (!udp).then(|| r.gen_range(0..100)),
                    rtt_ms: r.gen_bool(0.8).then(|| r.gen_range(0.01..200.0)),
                    // The pace and the congestion control, which the summary takes from the
                    // streams, so a merge must give the whole run's.
                    rate_bps: (!udp && r.gen_bool(0.5)).then(|| r.gen_range(1e6..1e8)),
                    congestion: (!udp && i % 2 == 1)
                        .then(|| ["cubic", "bbr"][r.gen_range(0..2)].to_string()),
                    error: (i < failed).then(|| "reset".to_string()),
                })
                .collect(),
            health: health(&mut r),
            ..BulkStats::default()
        };
        agent.errors.attempts = u64::from(n_p);
        if failed > 0 {
            agent
                .errors
                .by_kind
                .record("reset", || "connection reset".into());
        }
        split.agent(p, &agent);
        streams.push(n_p);
    }
    // Samples: an RTT reading and the bytes of one stream of one part in one interval.
    let mut accs: Vec<Vec<IntervalAcc>> = (0..=k)
        .map(|_| (0..m).map(|_| IntervalAcc::with_bytes()).collect())
        .collect();
    let mut shares: Vec<Vec<Vec<u64>>> = streams
        .iter()
        .map(|&n_p| vec![vec![0; n_p as usize]; m as usize])
        .collect();
    for _ in 0..n {
        let (p, iv, rtt) = (r.gen_range(0..k), r.gen_range(0..m) as usize, ns(&mut r));
        let stream = r.gen_range(0..streams[p]) as usize;
        let (up, down) = if stream % 2 == 1 {
            (r.gen_range(0..1 << 20), 0)
        } else {
            (0, r.gen_range(0..1 << 20))
        };
        split.record(p, |s| {
            s.histograms.record(hist::RTT, rtt);
            s.bytes += &Directions::bytes(up, down);
        });
        for a in [p, k] {
            accs[a][iv].latency.record(rtt);
            accs[a][iv].record_bytes(up, down);
        }
        shares[p][iv][stream] += up + down;
    }
    let part_streams = |p: usize, iv: usize, offset: u32| -> Vec<StreamInterval> {
        shares[p][iv]
            .iter()
            .enumerate()
            .map(|(i, &bytes)| StreamInterval {
                index: offset + i as u32,
                bytes,
                bps: bytes as f64 * 8.0,
                ..StreamInterval::default()
            })
            .collect()
    };
    for (p, accs) in accs.iter_mut().enumerate() {
        let recs = accs
            .iter_mut()
            .enumerate()
            .map(|(i, a)| {
                let mut rec = a.close(i as u32, i as f64, i as f64 + 1.0, 1.0);
                rec.bandwidth_bps = rec.bytes.map(|b| Directions {
                    up: b.up * 8.0,
                    down: b.down * 8.0,
                });
                rec.streams = Some(if p < k {
                    part_streams(p, i, 0)
                } else {
                    // The whole: every part's streams, numbered on.
                    let mut all = Vec::new();
                    let mut offset = 0;
                    for (q, &n_q) in streams.iter().enumerate() {
                        all.extend(part_streams(q, i, offset));
                        offset += n_q;
                    }
                    all
                });
                rec
            })
            .collect();
        let target = if p < k {
            &mut split.parts[p]
        } else {
            &mut split.whole
        };
        target.set_intervals(recs);
    }
    (split, meta)
}
