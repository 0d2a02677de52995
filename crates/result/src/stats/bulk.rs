//! A bulk run's measurements (`npt bulk`, capacity) as a value that adds ([`BulkStats`]) and
//! its body ([`BulkStats::summarize`]), for `npt bulk` at the end and for `npt merge`.
//!
//! The RTT under load comes from its histogram ([`crate::bulk::hist::RTT`]), so it merges
//! exactly. Parts of a segmented bulk run side by side, each with its share of the streams (or
//! of the UDP rate), so bytes, goodput, retransmits, datagram counts, the asked rate and the
//! delivered rate add; the measured phase is the longest part's; the UDP jitter merges as the
//! stats crate's `JitterMean` weighted by the datagrams that arrived. Streams keep their order,
//! the parts' streams after one another and numbered again from 0, in the totals and in each
//! interval's `streams`.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use npt_stats::JitterMean;
use serde::{Deserialize, Serialize};

use super::{BodyError, HistMap, Stats};
use crate::bulk::{hist, BulkBody, BulkSummary, StreamInterval, StreamTotal, UdpBulk};
use crate::common::{jitter_mean, Directions, ErrorStats, NptLatency};
use crate::health::Health;
use crate::interval::{Interval, Intervals};

/// What the parts of one bulk run share: its configuration as the summary states it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BulkMeta {
    pub target: String,
    /// `tcp`, `quic` or `udp`.
    pub protocol: String,
    /// `up`, `down` or `both`.
    pub direction: String,
}

impl BulkMeta {
    pub fn of(s: &BulkSummary) -> BulkMeta {
        BulkMeta {
            target: s.target.clone(),
            protocol: s.protocol.clone(),
            direction: s.direction.clone(),
        }
    }
}

/// UDP at a rate: what was sent and what arrived, as values that add.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpStats {
    pub rate_bps: f64,
    pub size: u32,
    pub sent: u64,
    pub received: u64,
    /// Refused by the server's budget, when it said (parts that did not say add nothing).
    pub refused: Option<u64>,
    pub delivered_bps: f64,
    pub jitter: JitterMean,
    pub sends_behind_schedule: u64,
    /// The sender's stalls added up, ms; of parts side by side, the worst part's (each part's
    /// share of the rate is off by at most its own stalls' share of the run).
    #[serde(default)]
    pub stalled_ms: f64,
}

impl AddAssign<&UdpStats> for UdpStats {
    fn add_assign(&mut self, rhs: &UdpStats) {
        self.rate_bps += rhs.rate_bps;
        self.size = self.size.max(rhs.size);
        self.sent += rhs.sent;
        self.received += rhs.received;
        self.refused = match (self.refused, rhs.refused) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.delivered_bps += rhs.delivered_bps;
        self.jitter += &rhs.jitter;
        self.sends_behind_schedule += rhs.sends_behind_schedule;
        self.stalled_ms = self.stalled_ms.max(rhs.stalled_ms);
    }
}

/// A bulk run's measurements.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BulkStats {
    /// Streams each way that were asked for (a UDP flow is one).
    pub streams: u32,
    /// The measured phase's length.
    pub duration_s: f64,
    pub bytes: Directions,
    /// Each stream's bytes over its own clock (an upload: the responder's), added.
    pub goodput_bps: Directions,
    pub retransmits: Option<u64>,
    /// The RTT under load ([`hist::RTT`]).
    pub histograms: HistMap,
    pub udp: Option<UdpStats>,
    pub failed_streams: u32,
    /// One per stream, in order.
    pub stream_totals: Vec<StreamTotal>,
    pub errors: ErrorStats,
    pub health: Health,
    pub intervals: Intervals,
    /// Each interval's per-stream parts, by interval index (the joined records carry none).
    pub interval_streams: BTreeMap<u32, Vec<StreamInterval>>,
}

impl AddAssign<&BulkStats> for BulkStats {
    fn add_assign(&mut self, rhs: &BulkStats) {
        // The right side's streams come after this side's.
        let offset = u32::try_from(self.stream_totals.len()).unwrap_or(u32::MAX);
        self.streams += rhs.streams;
        self.duration_s = self.duration_s.max(rhs.duration_s);
        self.bytes += &rhs.bytes;
        self.goodput_bps += &rhs.goodput_bps;
        self.retransmits = match (self.retransmits, rhs.retransmits) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.histograms += &rhs.histograms;
        self.udp = match (self.udp, rhs.udp) {
            (Some(mut a), Some(b)) => {
                a += &b;
                Some(a)
            }
            (a, b) => a.or(b),
        };
        self.failed_streams += rhs.failed_streams;
        self.stream_totals
            .extend(rhs.stream_totals.iter().map(|t| StreamTotal {
                index: t.index.saturating_add(offset),
                ..t.clone()
            }));
        self.errors += &rhs.errors;
        self.health += &rhs.health;
        self.intervals += &rhs.intervals;
        for (k, parts) in &rhs.interval_streams {
            self.interval_streams
                .entry(*k)
                .or_default()
                .extend(parts.iter().map(|s| StreamInterval {
                    index: s.index.saturating_add(offset),
                    ..s.clone()
                }));
        }
    }
}

impl BulkStats {
    /// A part's interval records: the series, and each record's per-stream parts.
    pub fn set_intervals(&mut self, records: Vec<Interval>) {
        self.interval_streams = records
            .iter()
            .filter_map(|r| Some((r.index, r.streams.clone()?)))
            .collect();
        self.intervals = Intervals::of(records);
    }
}

impl UdpStats {
    /// A later run's UDP flow after this one over `a` and `b` seconds: counts add, the asked
    /// and delivered rates are over the summed time.
    fn then(&mut self, a: f64, later: &UdpStats, b: f64) {
        let rate = super::over_time(self.rate_bps, a, later.rate_bps, b);
        let delivered = super::over_time(self.delivered_bps, a, later.delivered_bps, b);
        *self += later;
        self.rate_bps = rate;
        self.delivered_bps = delivered;
    }
}

impl Stats for BulkStats {
    type Body = BulkBody;
    type Meta = BulkMeta;

    /// Rounds of one bulk test: the same streams again (`streams` stays), the measured phases
    /// add, goodput and the UDP rates are over the summed time.
    fn then(&mut self, later: &BulkStats) {
        let (a, b) = (self.duration_s, later.duration_s);
        let streams = self.streams.max(later.streams);
        let goodput = super::directions_over_time(&self.goodput_bps, a, &later.goodput_bps, b);
        let mut udp = self.udp.take();
        match (&mut udp, &later.udp) {
            (Some(x), Some(y)) => x.then(a, y, b),
            (x @ None, y) => *x = *y,
            (Some(_), None) => {}
        }
        *self += later;
        self.streams = streams;
        self.duration_s = a + b;
        self.goodput_bps = goodput;
        self.udp = udp;
    }

    fn from_body(b: &BulkBody) -> Result<(BulkStats, BulkMeta), BodyError> {
        let s = &b.summary;
        let intervals = Intervals::of(b.intervals.clone());
        intervals
            .check()
            .map_err(|(name, source)| BodyError { name, source })?;
        let mut stats = BulkStats {
            streams: s.streams,
            duration_s: s.duration_s,
            bytes: s.bytes,
            goodput_bps: s.goodput_bps,
            retransmits: s.retransmits,
            histograms: HistMap::from_saved(&b.histograms)?,
            udp: s.udp.as_ref().map(|u| UdpStats {
                rate_bps: u.rate_bps,
                size: u.size,
                sent: u.sent,
                received: u.received,
                refused: u.refused_by_server,
                delivered_bps: u.delivered_bps,
                jitter: jitter_mean(u.jitter_ms, Some(u.received), u.received),
                sends_behind_schedule: u.sends_behind_schedule,
                stalled_ms: u.stalled_ms,
            }),
            failed_streams: s.failed_streams,
            stream_totals: b.streams.clone(),
            errors: ErrorStats::from_block(&b.errors, b.streams.len().max(1) as u64),
            health: b.health,
            ..BulkStats::default()
        };
        stats.set_intervals(b.intervals.clone());
        Ok((stats, BulkMeta::of(s)))
    }

    fn summarize(&self, m: &BulkMeta) -> BulkBody {
        let rtt = self
            .histograms
            .get(hist::RTT)
            .filter(|h| !h.is_empty())
            .map(|h| h.summary());
        let mut latency = BTreeMap::new();
        if let Some(s) = &rtt {
            latency.insert(m.protocol.clone(), NptLatency::from(s));
        }
        let udp = self.udp.map(|u| {
            let refused = u.refused.unwrap_or(0);
            let lost = u.sent.saturating_sub(u.received).saturating_sub(refused);
            UdpBulk {
                rate_bps: u.rate_bps,
                size: u.size,
                sent: u.sent,
                received: u.received,
                lost,
                loss_pct: crate::loss_pct(lost, u.sent.saturating_sub(refused)),
                refused_by_server: u.refused,
                delivered_bps: u.delivered_bps,
                jitter_ms: u.jitter.value_ns() / 1e6,
                sends_behind_schedule: u.sends_behind_schedule,
                stalled_ms: u.stalled_ms,
                tester_limited: crate::bulk::tester_limited(u.stalled_ms, self.duration_s, lost),
            }
        });
        let (rate_bps, rate_achieved_pct) = crate::bulk::pace_of(&self.stream_totals);
        let summary = BulkSummary {
            target: m.target.clone(),
            protocol: m.protocol.clone(),
            direction: m.direction.clone(),
            streams: self.streams,
            duration_s: self.duration_s,
            bytes: self.bytes,
            goodput_bps: self.goodput_bps,
            goodput_mbps: (self.goodput_bps.up + self.goodput_bps.down) / 1e6,
            retransmits: self.retransmits,
            rtt_ms: rtt,
            rate_bps,
            rate_achieved_pct,
            congestion: crate::bulk::congestion_of(&self.stream_totals),
            udp,
            failed_streams: self.failed_streams,
        };
        let intervals = self
            .intervals
            .joined()
            .into_iter()
            .map(|mut r| {
                r.streams = Some(
                    self.interval_streams
                        .get(&r.index)
                        .cloned()
                        .unwrap_or_default(),
                );
                r
            })
            .collect();
        BulkBody {
            summary,
            streams: self.stream_totals.clone(),
            health: self.health,
            latency,
            errors: self.errors.block(),
            histograms: rtt
                .map(|_| self.histograms.saved([hist::RTT]))
                .unwrap_or_default(),
            intervals,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_stats::Histogram;

    fn part(bytes: f64, rtts: &[u64], streams: u32) -> BulkStats {
        let mut s = BulkStats {
            streams,
            duration_s: 10.0,
            bytes: Directions {
                up: 0.0,
                down: bytes,
            },
            goodput_bps: Directions {
                up: 0.0,
                down: bytes * 8.0 / 10.0,
            },
            stream_totals: (0..streams)
                .map(|i| StreamTotal {
                    index: i,
                    direction: "down".into(),
                    ..StreamTotal::default()
                })
                .collect(),
            ..BulkStats::default()
        };
        let mut h = Histogram::new();
        for &r in rtts {
            h.record(r);
        }
        s.histograms.add(hist::RTT, &h);
        s.set_intervals(vec![Interval {
            index: 0,
            bytes: Some(s.bytes),
            streams: Some(
                (0..streams)
                    .map(|index| StreamInterval {
                        index,
                        ..StreamInterval::default()
                    })
                    .collect(),
            ),
            histogram: h.to_serialized(),
            ..Interval::default()
        }]);
        s
    }

    /// Two parts add to the body of one run: bytes and goodput add, RTT percentiles come
    /// from the added histogram, streams are numbered on, and a summary read back from the
    /// body gives the same body again.
    #[test]
    fn parts_add_and_a_body_reads_back_to_itself() {
        let mut a = part(1e6, &[1_000_000, 2_000_000], 2);
        a += &part(3e6, &[3_000_000], 1);
        let m = BulkMeta {
            target: "tcp://x:1".into(),
            protocol: "tcp".into(),
            direction: "down".into(),
        };
        let b = a.summarize(&m);
        assert_eq!(b.summary.streams, 3);
        assert_eq!(b.summary.bytes.down, 4e6);
        assert_eq!(b.summary.goodput_mbps, 3.2);
        assert_eq!(b.summary.rtt_ms.unwrap().count, 3);
        assert_eq!(b.latency["tcp"].max_ms.round(), 3.0);
        let idx: Vec<u32> = b.streams.iter().map(|s| s.index).collect();
        assert_eq!(idx, [0, 1, 2]);
        let iv = &b.intervals[0];
        assert_eq!(iv.bytes.unwrap().down, 4e6);
        assert_eq!(
            iv.streams
                .as_ref()
                .map(|s| s.iter().map(|x| x.index).collect::<Vec<_>>()),
            Some(vec![0, 1, 2])
        );
        let (back, m2) = BulkStats::from_body(&b).unwrap();
        let again = back.summarize(&m2);
        assert_eq!(
            serde_json::to_value(&again).unwrap(),
            serde_json::to_value(&b).unwrap()
        );
    }

    /// UDP parts: counts and rates add, loss is computed again, jitter is weighted by the
    /// datagrams that arrived.
    #[test]
    fn udp_parts_add_their_counts_and_weigh_jitter() {
        let u = |sent, received, jitter_ms: f64, stalled_ms| BulkStats {
            streams: 1,
            duration_s: 10.0,
            udp: Some(UdpStats {
                rate_bps: 10e6,
                size: 1200,
                sent,
                received,
                refused: None,
                delivered_bps: received as f64 * 9600.0 / 10.0,
                jitter: JitterMean::from_value(jitter_ms * 1e6, received),
                sends_behind_schedule: 1,
                stalled_ms,
            }),
            ..BulkStats::default()
        };
        let mut a = u(100, 100, 1.0, 30.0);
        a += &u(100, 50, 4.0, 120.0);
        let b = a.summarize(&BulkMeta::default());
        let x = b.summary.udp.unwrap();
        assert_eq!((x.sent, x.received, x.lost), (200, 150, 50));
        assert_eq!(x.rate_bps, 20e6);
        assert!((x.loss_pct - 25.0).abs() < 1e-9);
        assert!((x.jitter_ms - 2.0).abs() < 1e-9, "(100×1 + 50×4) / 150");
        assert_eq!(x.sends_behind_schedule, 2);
        // The worst part's stalls: 120 ms of 10 s is over 1 %.
        assert_eq!((x.stalled_ms, x.tester_limited), (120.0, true));
        assert!(b.summary.rtt_ms.is_none() && b.histograms.is_empty());
        assert_eq!(x.refused_by_server, None, "no part said");
    }

    /// What the server refused is neither received nor lost, it adds over parts, and the
    /// loss is the path's: of what the server took.
    #[test]
    fn refused_datagrams_are_not_path_loss() {
        let u = |sent, received, refused| BulkStats {
            streams: 1,
            udp: Some(UdpStats {
                sent,
                received,
                refused,
                ..UdpStats::default()
            }),
            ..BulkStats::default()
        };
        let x = u(1000, 300, Some(700))
            .summarize(&BulkMeta::default())
            .summary
            .udp
            .unwrap();
        assert_eq!(
            (x.lost, x.loss_pct, x.refused_by_server),
            (0, 0.0, Some(700))
        );
        let mut a = u(1000, 290, Some(700));
        a += &u(100, 50, None);
        let x = a.summarize(&BulkMeta::default()).summary.udp.unwrap();
        assert_eq!((x.sent, x.received, x.lost), (1100, 340, 60));
        assert_eq!(x.refused_by_server, Some(700));
        assert!((x.loss_pct - 60.0 * 100.0 / 400.0).abs() < 1e-9);
        // Through a document and back: the same numbers.
        let body = a.summarize(&BulkMeta::default());
        let (back, m) = BulkStats::from_body(&body).unwrap();
        assert_eq!(back.udp.unwrap().refused, Some(700));
        assert_eq!(
            serde_json::to_value(back.summarize(&m)).unwrap(),
            serde_json::to_value(&body).unwrap()
        );
    }
}
