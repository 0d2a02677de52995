//! From samples to the result: the collector is fed, every tick, what each stream has
//! published ([`Snapshot`]), and closes an interval record ([`Interval`]) every `interval` —
//! each stream's bytes and bits/s in it, its retransmits in it, its last RTT, RTT variance,
//! window and delivery rate, the RTT samples of the interval as `latency_ms` — and builds the
//! `kind = "bulk"` body at the end. Pure: it takes `now` and numbers, never a socket or a
//! clock, so its arithmetic is tested with made-up samples.
//!
//! Bytes are cumulative per stream, so an interval's share is a difference and nothing is lost
//! between ticks. An upload's goodput is the responder's count over the responder's own time
//! (its report says both), so the bytes still in flight or in a socket buffer at the end are
//! not counted as delivered.

use npt_result::error::ErrorKind;

use npt_result::bulk::{hist, BulkBody, StreamInterval, StreamTotal};
use npt_result::common::ErrorStats;
use npt_result::interval::Interval;
use npt_result::probe::{Directions, Health};
use npt_result::series::{Series, KEEP};
use npt_result::stats::bulk::UdpStats;
use npt_result::stats::{BulkMeta, BulkStats, Stats};
use npt_stats::{ErrorCounts, Histogram, JitterMean};
use npt_wire::bulk::Direction;

use crate::{Reading, UdpCounts};

/// One stream as the collector samples it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Payload bytes that arrived so far.
    pub bytes: u64,
    /// Up: the responder's clock at its last report (ns since it began), 0 if none.
    pub reported_ns: u64,
    pub reading: Reading,
    pub udp: Option<UdpCounts>,
    /// The error kind it ended with, if any.
    pub failed: Option<ErrorKind>,
}

/// What the body says about the run besides the samples.
#[derive(Clone, Debug, Default)]
pub struct Meta {
    pub target: String,
    pub protocol: String,
    pub direction: String,
    pub streams: u32,
    /// UDP: asked rate (bits/s) and datagram size.
    pub udp: Option<(f64, u32)>,
    /// TCP, QUIC: each stream's pace (`--rate`), bits/s.
    pub rate_bps: Option<f64>,
    /// TCP: the congestion control read back on each stream (by stream index).
    pub congestion: Vec<Option<String>>,
}

#[derive(Default)]
pub(crate) struct Acc {
    pub(crate) dir: Option<Direction>,
    at_start: Snapshot,
    pub(crate) last: Snapshot,
    rtt_sum_ns: f64,
    rtt_n: u64,
    error: Option<(ErrorKind, String)>,
}

pub struct Collector {
    interval_ns: u64,
    iv_start: u64,
    index: u32,
    pub(crate) streams: Vec<Acc>,
    iv_hist: Histogram,
    /// The RTT samples of the closed intervals.
    pub(crate) total: Histogram,
    intervals: Series<Interval>,
    /// The goodput of the last closed interval, each way (bits/s).
    pub(crate) last_bps: Directions,
}

impl Collector {
    /// A collector for streams going `dirs` (one per stream, in stream order).
    pub fn new(dirs: &[Direction], interval_ns: u64) -> Collector {
        Collector {
            interval_ns: interval_ns.max(1),
            iv_start: 0,
            index: 0,
            streams: dirs
                .iter()
                .map(|&d| Acc {
                    dir: Some(d),
                    ..Acc::default()
                })
                .collect(),
            iv_hist: Histogram::new(),
            total: Histogram::new(),
            intervals: Series::new(KEEP),
            last_bps: Directions::default(),
        }
    }

    /// The streams' state at `now` (ns since the start). Returns the interval it closed, if
    /// `now` ended one.
    pub fn sample(&mut self, now: u64, snaps: &[Snapshot]) -> Option<Interval> {
        for (a, s) in self.streams.iter_mut().zip(snaps) {
            if s.reading.generation != a.last.reading.generation {
                if let Some(rtt) = s.reading.rtt_ns.filter(|&r| r > 0) {
                    self.iv_hist.record(rtt);
                    a.rtt_sum_ns += rtt as f64;
                    a.rtt_n += 1;
                }
            }
            a.last = *s;
        }
        // Intervals end on a fixed grid (the n-th at n × interval), so a late tick does not
        // shift every interval after it.
        if now >= (u64::from(self.index) + 1).saturating_mul(self.interval_ns) {
            return Some(self.close(now));
        }
        None
    }

    /// Records why a stream ended (kind and an example).
    pub fn failed(&mut self, index: usize, kind: ErrorKind, detail: String) {
        if let Some(a) = self.streams.get_mut(index) {
            a.error.get_or_insert((kind, detail));
        }
    }

    fn close(&mut self, now: u64) -> Interval {
        let len_s = (now.saturating_sub(self.iv_start) as f64 / 1e9).max(1e-9);
        let mut bytes = Directions::default();
        let mut streams = Vec::with_capacity(self.streams.len());
        let (mut udp_sent, mut udp_lost, mut udp_got, mut jitter, mut udp) = (0, 0, 0, 0, false);
        let mut udp_refused = 0;
        let mut failed = 0;
        for (i, a) in self.streams.iter_mut().enumerate() {
            let (s, s0) = (a.last, a.at_start);
            let b = s.bytes.saturating_sub(s0.bytes);
            match a.dir {
                Some(Direction::Up) => bytes.up += b as f64,
                _ => bytes.down += b as f64,
            }
            let r = s.reading;
            streams.push(StreamInterval {
                index: u32::try_from(i).unwrap_or(u32::MAX),
                bytes: b,
                bps: b as f64 * 8.0 / len_s,
                retransmits: r
                    .retransmits
                    .map(|x| x.saturating_sub(s0.reading.retransmits.unwrap_or(0))),
                rtt_ms: r.rtt_ns.map(|x| x as f64 / 1e6),
                rttvar_ms: r.rttvar_ns.map(|x| x as f64 / 1e6),
                cwnd: r.cwnd,
                delivery_rate_bps: r.delivery_rate_bps,
            });
            if let (Some(u), Some(u0)) = (s.udp, s0.udp.or(Some(UdpCounts::default()))) {
                udp = true;
                let exp = u.expected.saturating_sub(u0.expected);
                let got = u.received.saturating_sub(u0.received);
                // Refused by the responder's budget: neither arrived nor lost on the path.
                let refused = u
                    .refused
                    .unwrap_or(0)
                    .saturating_sub(u0.refused.unwrap_or(0));
                udp_sent += exp;
                udp_got += got;
                udp_refused += refused;
                udp_lost += exp.saturating_sub(got).saturating_sub(refused);
                jitter = u.jitter_ns;
            }
            if s.failed.is_some() && s0.failed.is_none() {
                failed += 1;
            }
            a.at_start = s;
        }
        let iv = Interval {
            index: self.index,
            start_s: self.iv_start as f64 / 1e9,
            end_s: now as f64 / 1e9,
            completed: udp_got,
            errors: failed,
            rate_per_s: udp_got as f64 / len_s,
            latency_ms: self.iv_hist.summary(),
            sent: udp.then_some(udp_sent),
            lost: udp.then_some(udp_lost),
            loss_pct: udp.then(|| pct(udp_lost, udp_sent.saturating_sub(udp_refused))),
            jitter_ms: udp.then_some(jitter as f64 / 1e6),
            bandwidth_bps: Some(Directions {
                up: bytes.up * 8.0 / len_s,
                down: bytes.down * 8.0 / len_s,
            }),
            bytes: Some(bytes),
            streams: Some(streams),
            histogram: self.iv_hist.to_serialized(),
            ..Interval::default()
        };
        self.total += &self.iv_hist;
        self.iv_hist.reset();
        self.last_bps = iv.bandwidth_bps.unwrap_or_default();
        self.index += 1;
        self.iv_start = now;
        self.intervals.push(iv.clone());
        iv
    }

    /// The last samples at `now`, the stop (a part interval is closed if time passed since
    /// the last one), and the body. `settled`: the streams once settled after the stop, for
    /// the totals only (UDP: the final report, so datagrams in flight at the stop are not
    /// called lost; they arrived after the last interval and are in no interval).
    pub fn finish(
        mut self,
        now: u64,
        snaps: &[Snapshot],
        settled: Option<&[Snapshot]>,
        meta: &Meta,
        health: Health,
    ) -> BulkBody {
        let _ = self.sample(now, snaps);
        // Every byte is in some interval, however short the last one is.
        if now > self.iv_start {
            let _ = self.close(now);
        }
        if let Some(settled) = settled {
            for (a, s) in self.streams.iter_mut().zip(settled) {
                a.last = *s;
            }
        }
        let dur_s = (now as f64 / 1e9).max(1e-9);
        let mut st = BulkStats {
            streams: meta.streams,
            duration_s: dur_s,
            health,
            ..BulkStats::default()
        };
        let mut kinds = ErrorCounts::default();
        for (i, a) in self.streams.iter().enumerate() {
            let s = a.last;
            let up = a.dir == Some(Direction::Up);
            // What arrived over the time it took: an upload on the responder's clock, a UDP
            // download from its first to its last arrival (StreamState::reported_ns).
            let secs = if s.reported_ns > 0 {
                s.reported_ns as f64 / 1e9
            } else {
                dur_s
            };
            let bps = s.bytes as f64 * 8.0 / secs;
            if up {
                st.bytes.up += s.bytes as f64;
                st.goodput_bps.up += bps;
            } else {
                st.bytes.down += s.bytes as f64;
                st.goodput_bps.down += bps;
            }
            if let Some(r) = s.reading.retransmits {
                *st.retransmits.get_or_insert(0) += r;
            }
            let error = a.error.clone().or(s.failed.map(|k| (k, String::new())));
            if let Some((kind, detail)) = &error {
                st.failed_streams += 1;
                kinds.record(kind.name(), || detail.clone());
            }
            st.stream_totals.push(StreamTotal {
                index: u32::try_from(i).unwrap_or(u32::MAX),
                direction: a.dir.map_or("down", Direction::name).to_string(),
                bytes: s.bytes,
                goodput_bps: bps,
                retransmits: s.reading.retransmits,
                rtt_ms: (a.rtt_n > 0).then(|| a.rtt_sum_ns / a.rtt_n as f64 / 1e6),
                rate_bps: meta.rate_bps,
                // Only a sending stream's: a download is the responder's to govern.
                congestion: meta.congestion.get(i).cloned().flatten().filter(|_| up),
                error: error.map(|(k, _)| k.name().to_string()),
            });
        }
        st.errors = ErrorStats {
            by_kind: kinds,
            attempts: self.streams.len().max(1) as u64,
        };
        if !self.total.is_empty() {
            st.histograms.add(hist::RTT, &self.total);
        }
        if let (Some((rate, size)), Some(a)) = (meta.udp, self.streams.first()) {
            let u = a.last.udp.unwrap_or_default();
            let secs = if a.last.reported_ns > 0 {
                a.last.reported_ns as f64 / 1e9
            } else {
                dur_s
            };
            st.udp = Some(UdpStats {
                rate_bps: rate,
                size,
                sent: u.sent,
                received: u.received,
                refused: u.refused,
                delivered_bps: a.last.bytes as f64 * 8.0 / secs,
                jitter: JitterMean::from_value(u.jitter_ns as f64, u.received),
                sends_behind_schedule: u.behind_schedule,
                stalled_ms: u.stalled_ns as f64 / 1e6,
            });
        }
        st.set_intervals(self.intervals.into_vec_logged());
        let m = BulkMeta {
            target: meta.target.clone(),
            protocol: meta.protocol.clone(),
            direction: meta.direction.clone(),
        };
        // The one summarize of a bulk, as `npt merge` calls it.
        st.summarize(&m)
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn snap(bytes: u64, gen: u64, rtt_ms: u64, retr: u64) -> Snapshot {
        Snapshot {
            bytes,
            reading: Reading {
                generation: gen,
                rtt_ns: Some(rtt_ms * 1_000_000),
                retransmits: Some(retr),
                cwnd: Some(10),
                ..Reading::default()
            },
            ..Snapshot::default()
        }
    }

    /// Two streams, one each way, over two intervals: each interval holds its own share of
    /// bytes, retransmits and RTT samples, and the totals add up.
    #[test]
    fn intervals_hold_their_own_share() {
        let mut c = Collector::new(&[Direction::Down, Direction::Up], S);
        assert!(c
            .sample(S / 2, &[snap(1000, 1, 10, 0), snap(0, 1, 20, 0)])
            .is_none());
        let a = c
            .sample(S, &[snap(1_250_000, 2, 10, 0), snap(500_000, 2, 20, 3)])
            .unwrap();
        assert_eq!(a.bytes.unwrap().down, 1_250_000.0);
        assert_eq!(
            a.bandwidth_bps.unwrap().down,
            10e6,
            "1.25 MB in 1 s = 10 Mbit/s"
        );
        assert_eq!(a.bandwidth_bps.unwrap().up, 4e6);
        assert_eq!(a.latency_ms.count, 4, "two readings of two streams");
        let st = a.streams.as_ref().unwrap();
        assert_eq!((st[1].retransmits, st[1].rtt_ms), (Some(3), Some(20.0)));
        // The same reading twice is sampled once.
        let _ = c.sample(
            3 * S / 2,
            &[snap(2_500_000, 2, 10, 0), snap(1_000_000, 2, 20, 5)],
        );
        let b = c
            .sample(
                2 * S,
                &[snap(2_500_000, 3, 30, 0), snap(1_000_000, 3, 20, 5)],
            )
            .unwrap();
        assert_eq!((b.index, b.start_s, b.end_s), (1, 1.0, 2.0));
        assert_eq!(b.bytes.unwrap().down, 1_250_000.0);
        assert_eq!(b.streams.as_ref().unwrap()[1].retransmits, Some(2));
        assert_eq!(b.latency_ms.count, 2);
        let meta = Meta {
            target: "tcp://x:1".into(),
            protocol: "tcp".into(),
            direction: "both".into(),
            streams: 1,
            ..Meta::default()
        };
        let mut last = [snap(2_500_000, 3, 30, 0), snap(1_000_000, 3, 20, 5)];
        last[1].reported_ns = 2 * S;
        let body = c.finish(2 * S, &last, None, &meta, Health::default());
        let s = &body.summary;
        assert_eq!((s.bytes.down, s.bytes.up), (2_500_000.0, 1_000_000.0));
        assert_eq!((s.goodput_bps.down, s.goodput_bps.up), (10e6, 4e6));
        assert_eq!((s.goodput_mbps, s.retransmits), (14.0, Some(5)));
        assert_eq!(s.rtt_ms.unwrap().count, 6);
        assert_eq!(
            body.intervals.len(),
            2,
            "no empty part interval at the very end"
        );
        assert!((body.streams[0].rtt_ms.unwrap() - 50.0 / 3.0).abs() < 1e-9);
        assert!(body.histograms.contains_key(hist::RTT));
        assert_eq!(body.latency["tcp"].max_ms.round(), 30.0);
    }

    /// An upload counts what the responder reported, over the responder's time.
    #[test]
    fn an_upload_is_what_arrived_over_the_responders_time() {
        let c = Collector::new(&[Direction::Up], S);
        let mut s = snap(1_000_000, 1, 10, 0);
        s.reported_ns = S / 2;
        let meta = Meta {
            streams: 1,
            ..Meta::default()
        };
        let body = c.finish(2 * S, &[s], None, &meta, Health::default());
        assert_eq!(
            body.summary.goodput_bps.up, 16e6,
            "1 MB in the reported 0.5 s"
        );
    }

    /// UDP: an interval's loss is what the responder's counts say for it; the total loss is
    /// what the tester sent against what arrived.
    #[test]
    fn udp_loss_per_interval_and_in_total() {
        let mut c = Collector::new(&[Direction::Up], S);
        let u = |sent, received, expected| UdpCounts {
            sent,
            received,
            expected,
            refused: None,
            jitter_ns: 2_000_000,
            behind_schedule: 0,
            stalled_ns: 25_000_000,
        };
        let at = |bytes, rep, counts| Snapshot {
            bytes,
            reported_ns: rep,
            udp: Some(counts),
            ..Snapshot::default()
        };
        let a = c.sample(S, &[at(120_000, S, u(200, 100, 200))]).unwrap();
        assert_eq!((a.sent, a.lost, a.completed), (Some(200), Some(100), 100));
        assert_eq!((a.loss_pct, a.jitter_ms), (Some(50.0), Some(2.0)));
        let b = c
            .sample(2 * S, &[at(300_000, 2 * S, u(400, 250, 400))])
            .unwrap();
        assert_eq!((b.sent, b.lost), (Some(200), Some(50)));
        let meta = Meta {
            protocol: "udp".into(),
            streams: 1,
            udp: Some((1e6, 1200)),
            ..Meta::default()
        };
        // After the stop the last report covers what was still in flight: totals use it,
        // the intervals end at the stop.
        let settled = [at(330_000, 2_200_000_000, u(410, 275, 410))];
        let stop = [at(300_000, 2 * S, u(400, 250, 400))];
        let body = c.finish(2 * S, &stop, Some(&settled), &meta, Health::default());
        let x = body.summary.udp.unwrap();
        assert_eq!((x.sent, x.received, x.lost), (410, 275, 135));
        assert_eq!(x.delivered_bps, 1.2e6, "330 kB over the responder's 2.2 s");
        // 25 ms of stalls in a 2 s run: over 1 %, the run is the tester's.
        assert_eq!((x.stalled_ms, x.tester_limited), (25.0, true));
        assert_eq!(body.intervals.len(), 2);
    }

    /// UDP up against a responder whose budget refused part of the flow: each interval's
    /// refusals are neither received nor path loss, and the totals say how many there were.
    #[test]
    fn refused_datagrams_are_not_path_loss() {
        let mut c = Collector::new(&[Direction::Up], S);
        let u = |sent, received, expected, refused| UdpCounts {
            sent,
            received,
            expected,
            refused: Some(refused),
            jitter_ns: 0,
            behind_schedule: 0,
            stalled_ns: 0,
        };
        let at = |bytes, counts| Snapshot {
            bytes,
            reported_ns: S,
            udp: Some(counts),
            ..Snapshot::default()
        };
        let a = c
            .sample(S, &[at(240_000, u(1000, 200, 1000, 800))])
            .unwrap();
        assert_eq!(
            (a.sent, a.lost, a.loss_pct),
            (Some(1000), Some(0), Some(0.0))
        );
        let b = c
            .sample(2 * S, &[at(480_000, u(2000, 390, 2000, 1600))])
            .unwrap();
        assert_eq!(
            (b.lost, b.loss_pct),
            (Some(10), Some(5.0)),
            "10 of the 200 taken"
        );
        let meta = Meta {
            protocol: "udp".into(),
            streams: 1,
            udp: Some((20e6, 1200)),
            ..Meta::default()
        };
        let end = [at(480_000, u(2000, 390, 2000, 1600))];
        let x = c
            .finish(2 * S, &end, None, &meta, Health::default())
            .summary
            .udp
            .unwrap();
        assert_eq!((x.sent, x.received, x.lost), (2000, 390, 10));
        assert_eq!(x.refused_by_server, Some(1600));
    }

    /// UDP down: the delivered rate is over the arrival window, which runs past the stop while
    /// a full queue drains, not over the run's length (that read 9.91 Mbit/s through a
    /// 9.81 Mbit/s lab link).
    #[test]
    fn udp_down_is_delivered_over_its_arrival_window() {
        let c = Collector::new(&[Direction::Down], S);
        let counts = UdpCounts {
            sent: 1000,
            received: 500,
            expected: 1000,
            refused: None,
            jitter_ns: 0,
            behind_schedule: 0,
            stalled_ns: 0,
        };
        let at = |rep| Snapshot {
            bytes: 600_000,
            reported_ns: rep,
            udp: Some(counts),
            ..Snapshot::default()
        };
        let meta = Meta {
            protocol: "udp".into(),
            direction: "down".into(),
            streams: 1,
            udp: Some((8e6, 1200)),
            ..Meta::default()
        };
        let body = c.finish(
            S,
            &[at(0)],
            Some(&[at(1_200_000_000)]),
            &meta,
            Health::default(),
        );
        let x = body.summary.udp.unwrap();
        assert_eq!(
            x.delivered_bps, 4e6,
            "600 kB over the 1.2 s it took to arrive"
        );
        assert_eq!(body.summary.goodput_bps.down, 4e6);
    }

    #[test]
    fn failed_streams_are_errors_of_their_kind() {
        let mut c = Collector::new(&[Direction::Down, Direction::Down], S);
        c.failed(1, ErrorKind::Refused, "connection refused".into());
        let meta = Meta {
            streams: 2,
            ..Meta::default()
        };
        let body = c.finish(S, &[Snapshot::default(); 2], None, &meta, Health::default());
        assert_eq!(body.summary.failed_streams, 1);
        assert_eq!(body.errors.by_kind.get("refused"), 1);
        assert_eq!(body.errors.error_rate, 0.5);
        assert_eq!(body.streams[1].error.as_deref(), Some("refused"));
    }
}
