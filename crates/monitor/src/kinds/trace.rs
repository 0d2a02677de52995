//! What a monitor keeps of `npt trace` rounds. A trace has no `Stats` value of its own (it is
//! not merged): [`TraceSum`] keeps each leg's ping value and adds legs by position, and its
//! body comes from `TraceStats::summarize`, the trace command's own.
//!
//! A round with `--mtu` or `--dscp` also read each segment's path MTU and marking each way;
//! each segment keeps them as values that add exactly, round after round: its MTU searches as
//! an mtu target's rounds ([`super::mtu::MtuSum`]: each way's sizes, the bracket the rounds
//! agree on, their verdicts counted) and its marking reads as each way's arrivals
//! ([`npt_result::marking::WaySum`]). A range's body writes `segments[].mtu` and
//! `segments[].marking` as one run would, by the rules one search and one read are written
//! with ([`super::mtu::DirectionSum::direction`], [`npt_result::marking::Way::of`]). Rounds
//! stored before these were kept read as rounds without them.

use npt_result::any::AnyBody;
use npt_result::stats::trace::{LegStats, TraceMeta, TraceStats};
use npt_result::stats::{PingStats, Stats};
use npt_result::trace::{SegmentMarking, SegmentMtu, TraceBody};
use npt_stats::{ErrorCounts, Histogram};
use serde::{Deserialize, Serialize};

use super::mtu::MtuSum;
use super::{KindError, KindMeta};
use npt_result::marking::WaySum;

/// A trace's legs as values that add by position.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TraceSum {
    pub segments: Vec<Leg>,
    pub chain: Option<Leg>,
    /// Errors of the whole trace by kind (a saved trace keeps them for all legs together).
    pub errors: ErrorCounts,
}

/// One leg of a trace: who measured it, what, its ping value, and (segments of a round with
/// `--mtu`, `--dscp`) its path MTU and marking reads.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Leg {
    pub from: String,
    pub to: String,
    pub addresses: Vec<String>,
    pub stats: PingStats,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<Box<MtuReads>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marking: Option<Box<MarkReads>>,
}

/// A segment's path-MTU searches, added.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MtuReads {
    /// `udp://HOST:PORT` searched, and the header bytes under a datagram (the latest search's).
    pub to: String,
    pub headers: u32,
    /// The searches that read both ways, as an mtu target's rounds (`rounds` 0: none did).
    pub searched: MtuSum,
    /// Searches that failed, and the latest one's why (`KIND: message`).
    #[serde(default)]
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A segment's marking reads, added.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MarkReads {
    /// `udp://HOST:PORT` read.
    pub to: String,
    /// The reads that said both ways (`reads` 0: none did).
    pub up: WaySum,
    pub down: WaySum,
    /// Reads that failed, and the latest one's why.
    #[serde(default)]
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A failed read's `error` as a range says it: one run's own words, or with how many of the
/// range's reads failed.
fn failure(error: Option<&String>, failed: u64, read: u64) -> Option<String> {
    let e = error?;
    Some(if read == 0 && failed == 1 {
        e.clone()
    } else {
        format!("{e} ({failed} of {} reads failed)", failed + read)
    })
}

impl MtuReads {
    fn of(m: &SegmentMtu) -> MtuReads {
        let searched = match (&m.up, &m.down) {
            (Some(up), Some(down)) => MtuSum::of_directions(up, down),
            _ => MtuSum::default(),
        };
        MtuReads {
            to: m.to.clone(),
            headers: m.headers,
            failed: u64::from(searched.rounds == 0),
            error: m.error.clone(),
            searched,
        }
    }

    fn then(&mut self, later: &MtuReads) {
        if later.searched.rounds > 0 {
            self.headers = later.headers;
        }
        self.to.clone_from(&later.to);
        self.searched.then(&later.searched);
        self.failed += later.failed;
        if later.error.is_some() {
            self.error.clone_from(&later.error);
        }
    }

    /// The segment's `mtu` as one search of these would have written it.
    pub fn body(&self) -> SegmentMtu {
        let s = &self.searched;
        let some = s.rounds > 0;
        SegmentMtu {
            to: self.to.clone(),
            headers: self.headers,
            up: some.then(|| s.up.direction(self.headers)),
            down: some.then(|| s.down.direction(self.headers)),
            error: failure(self.error.as_ref(), self.failed, s.rounds),
        }
    }

    /// The size figure of one way (a round's own; a rollup's median of its rounds').
    fn figure(&self, up: bool) -> Option<f64> {
        let s = &self.searched;
        if up {
            s.up.figure()
        } else {
            s.down.figure()
        }
    }
}

impl MarkReads {
    fn of(m: &SegmentMarking) -> MarkReads {
        match (&m.up, &m.down) {
            (Some(up), Some(down)) => MarkReads {
                to: m.to.clone(),
                up: WaySum::of(up),
                down: WaySum::of(down),
                failed: 0,
                error: m.error.clone(),
            },
            _ => MarkReads {
                to: m.to.clone(),
                failed: 1,
                error: m.error.clone(),
                ..MarkReads::default()
            },
        }
    }

    fn then(&mut self, later: &MarkReads) {
        self.to.clone_from(&later.to);
        self.up.add(&later.up);
        self.down.add(&later.down);
        self.failed += later.failed;
        if later.error.is_some() {
            self.error.clone_from(&later.error);
        }
    }

    /// The segment's `marking` as one read of these would have written it.
    pub fn body(&self) -> SegmentMarking {
        let read = self.up.reads.min(self.down.reads);
        SegmentMarking {
            to: self.to.clone(),
            up: (read > 0).then(|| self.up.way()),
            down: (read > 0).then(|| self.down.way()),
            error: failure(self.error.as_ref(), self.failed, read),
        }
    }
}

/// `b` added after `a`, either absent.
fn add<T: Clone>(a: &mut Option<Box<T>>, b: Option<&T>, then: fn(&mut T, &T)) {
    match (a.as_mut(), b) {
        (Some(a), Some(b)) => then(a, b),
        (None, Some(b)) => *a = Some(Box::new(b.clone())),
        (_, None) => {}
    }
}

impl Leg {
    fn then(&mut self, later: &Leg) {
        self.stats.then(&later.stats);
        add(&mut self.mtu, later.mtu.as_deref(), MtuReads::then);
        add(&mut self.marking, later.marking.as_deref(), MarkReads::then);
    }

    fn of(
        l: &npt_result::trace::Leg,
        rtt: Option<&npt_stats::SerializedHistogram>,
        name: &str,
    ) -> Result<Leg, KindError> {
        let rtt = match rtt {
            Some(h) => Histogram::from_serialized(h)
                .map_err(|e| KindError::Body(format!("histogram {name}: {e}")))?,
            None => Histogram::new(),
        };
        Ok(Leg {
            from: l.from.clone(),
            to: l.to.clone(),
            addresses: l.addresses.clone(),
            stats: PingStats {
                sent: l.summary.sent,
                received: l.summary.received,
                late: l.summary.late,
                refused: l.summary.refused_by_server,
                rtt,
                errors: ErrorCounts::default(),
                ..PingStats::default()
            },
            mtu: l.mtu.as_ref().map(|m| Box::new(MtuReads::of(m))),
            marking: l.marking.as_ref().map(|m| Box::new(MarkReads::of(m))),
        })
    }
}

impl TraceSum {
    /// A round's value and description, from its document.
    pub fn of_body(b: &TraceBody) -> Result<(TraceSum, KindMeta), KindError> {
        let segments = b
            .segments
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let name = npt_result::trace::hist::segment(i);
                Leg::of(l, b.histograms.get(&name), &name)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let chain = b
            .chain
            .as_ref()
            .map(|l| {
                let name = npt_result::trace::hist::CHAIN;
                Leg::of(l, b.histograms.get(name), name)
            })
            .transpose()?;
        let sum = TraceSum {
            segments,
            chain,
            errors: b.errors.by_kind.clone(),
        };
        let meta = KindMeta::Trace {
            target: b.target.clone(),
            proto: b.proto.clone(),
        };
        Ok((sum, meta))
    }

    pub fn then(&mut self, later: &TraceSum) {
        for (i, l) in later.segments.iter().enumerate() {
            match self.segments.get_mut(i) {
                Some(mine) => mine.then(l),
                None => self.segments.push(l.clone()),
            }
        }
        match (&mut self.chain, &later.chain) {
            (Some(a), Some(b)) => a.stats.then(&b.stats),
            (a @ None, b) => a.clone_from(b),
            (Some(_), None) => {}
        }
        self.errors += &later.errors;
    }

    /// The smallest size any segment carried one way (`up`: toward the target), bytes: a
    /// round's own, a rollup's the smallest of its segments' medians; `None` without `--mtu`.
    pub fn mtu_figure(&self, up: bool) -> Option<f64> {
        self.segments
            .iter()
            .filter_map(|l| l.mtu.as_ref()?.figure(up))
            .reduce(f64::min)
    }

    /// The body one run of these rounds would have written.
    pub fn body(&self, target: &str, proto: &str) -> AnyBody {
        let leg = |l: &Leg| LegStats {
            from: l.from.clone(),
            to: l.to.clone(),
            addresses: l.addresses.clone(),
            stats: l.stats.clone(),
        };
        let stats = TraceStats {
            segments: self.segments.iter().map(leg).collect(),
            chain: self.chain.as_ref().map(leg),
            rounds: Vec::new(),
            during: None,
        };
        let mut b = stats.summarize(&TraceMeta {
            target: target.to_string(),
            proto: proto.to_string(),
        });
        let attempts = b.errors.attempts.unwrap_or(0);
        b.errors = npt_result::common::Errors::new(self.errors.clone(), attempts);
        // As the trace command does: its searches and reads beside the waterfall.
        for (out, l) in b.segments.iter_mut().zip(&self.segments) {
            out.mtu = l.mtu.as_deref().map(MtuReads::body);
            out.marking = l.marking.as_deref().map(MarkReads::body);
        }
        AnyBody::Trace(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::KindStats;
    use npt_result::marking::{Fate, Tos, TosCount, Way};
    use npt_result::mtu::MtuDirection;

    const EF0: Tos = Tos { dscp: 46, ecn: 2 };

    fn way(dscp: u8, ce: u64) -> Way {
        let mut arrivals = vec![TosCount {
            dscp,
            ecn: 2,
            packets: 20 - ce,
        }];
        if ce > 0 {
            arrivals.push(TosCount {
                dscp,
                ecn: 3,
                packets: ce,
            });
        }
        Way::of(Some(EF0), &arrivals)
    }

    fn dir(verdict: &str, largest: u32, lost: Option<u32>) -> MtuDirection {
        MtuDirection {
            verdict: verdict.into(),
            largest_datagram: Some(largest),
            largest_packet: Some(largest + 28),
            smallest_lost: lost,
            settled: lost.is_none_or(|l| l == largest + 1),
            sent: 12,
            answered: 10,
            ..MtuDirection::default()
        }
    }

    /// A round of three segments, the middle one 1400 bytes and bleaching DSCP up; `ce` CE
    /// marks up on the last; `failed`: the last segment's reads failed.
    fn round(ce: u64, failed: bool) -> AnyBody {
        let leg = |i: usize| LegStats {
            from: if i == 0 {
                "here".into()
            } else {
                format!("npt://r{i}:7777")
            },
            to: format!("udp://h{i}:7777"),
            addresses: vec![],
            stats: {
                let mut s = PingStats {
                    sent: 2,
                    received: 2,
                    ..PingStats::default()
                };
                let ns = 1_000_000 * u64::try_from(i + 1).unwrap();
                s.rtt.record(ns);
                s.rtt.record(ns);
                s
            },
        };
        let stats = TraceStats {
            segments: (0..3).map(leg).collect(),
            ..TraceStats::default()
        };
        let mut b = stats.summarize(&TraceMeta {
            target: "udp://h2:7777".into(),
            proto: "udp".into(),
        });
        for (i, l) in b.segments.iter_mut().enumerate() {
            let to = format!("udp://h{i}:7777");
            let (big, verdict, lost) = if i == 1 {
                (1372, "local", Some(1373))
            } else {
                (1472, "max_crossed", None)
            };
            l.mtu = Some(if failed && i == 2 {
                SegmentMtu {
                    to: to.clone(),
                    headers: 0,
                    up: None,
                    down: None,
                    error: Some("timeout: no answer".into()),
                }
            } else {
                SegmentMtu {
                    to: to.clone(),
                    headers: 28,
                    up: Some(dir(verdict, big, lost)),
                    down: Some(dir(verdict, big, lost)),
                    error: None,
                }
            });
            l.marking = Some(if failed && i == 2 {
                SegmentMarking {
                    to,
                    up: None,
                    down: None,
                    error: Some("timeout: none of 20 marked echoes was answered".into()),
                }
            } else {
                SegmentMarking {
                    to,
                    up: Some(way(
                        if i == 1 { 0 } else { 46 },
                        if i == 2 { ce } else { 0 },
                    )),
                    down: Some(way(46, 0)),
                    error: None,
                }
            });
        }
        AnyBody::Trace(b)
    }

    fn stats(b: &AnyBody) -> KindStats {
        let AnyBody::Trace(b) = b else { unreachable!() };
        let (s, _) = TraceSum::of_body(b).unwrap();
        KindStats::Trace(s)
    }

    fn body(s: &KindStats) -> TraceBody {
        let KindStats::Trace(t) = s else {
            unreachable!()
        };
        let AnyBody::Trace(b) = t.body("udp://h2:7777", "udp") else {
            unreachable!()
        };
        b
    }

    /// One round's range writes the segments' MTU and marking as the round did; rounds add:
    /// each way's sizes and verdicts counted, the arrivals and CE marks added, a failed read
    /// counted with its why; the smallest segment is the round's mtu figure each way.
    #[test]
    fn each_segments_mtu_and_marking_add_round_after_round() {
        let r1 = round(3, false);
        let AnyBody::Trace(one) = &r1 else {
            unreachable!()
        };
        let back = body(&stats(&r1));
        for (a, b) in one.segments.iter().zip(&back.segments) {
            assert_eq!(
                serde_json::to_value(&a.mtu).unwrap(),
                serde_json::to_value(&b.mtu).unwrap()
            );
            assert_eq!(
                a.marking.as_ref().unwrap().up,
                b.marking.as_ref().unwrap().up
            );
            assert_eq!(
                a.marking.as_ref().unwrap().down,
                b.marking.as_ref().unwrap().down
            );
        }
        let mut s = stats(&r1);
        let f = s.figures();
        assert_eq!(
            (f.mtu_up_bytes, f.mtu_down_bytes),
            (Some(1372.0), Some(1372.0))
        );
        // Stored and read back (the store's layout), then two more rounds added.
        s = KindStats::decode(&s.encode()).unwrap();
        s.then(&KindStats::decode(&stats(&round(5, false)).encode()).unwrap())
            .unwrap();
        s.then(&stats(&round(0, true))).unwrap();
        let b = body(&s);
        let m = b.segments[1].mtu.as_ref().unwrap();
        let up = m.up.as_ref().unwrap();
        assert_eq!(
            (up.largest_datagram, up.smallest_lost, up.verdict.as_str()),
            (Some(1372), Some(1373), "local")
        );
        assert_eq!(
            (up.sent, up.answered, up.largest_packet),
            (36, 30, Some(1400))
        );
        assert!(m.error.is_none());
        let last = b.segments[2].mtu.as_ref().unwrap();
        assert_eq!(last.up.as_ref().unwrap().largest_datagram, Some(1472));
        assert_eq!(
            last.error.as_deref(),
            Some("timeout: no answer (1 of 3 reads failed)")
        );
        let mark = b.segments[1].marking.as_ref().unwrap();
        let (up, down) = (mark.up.unwrap(), mark.down.unwrap());
        assert_eq!(
            (up.dscp, up.ecn, up.packets),
            (Fate::Bleached, Fate::Arrived, 60)
        );
        assert_eq!(up.arrived, Some(Tos { dscp: 0, ecn: 2 }));
        assert_eq!((down.dscp, down.packets), (Fate::Arrived, 60));
        let last = b.segments[2].marking.as_ref().unwrap();
        assert_eq!(
            (last.up.unwrap().ce, last.up.unwrap().packets),
            (8, 40),
            "the two reads' CE marks"
        );
        assert!(last
            .error
            .as_deref()
            .unwrap()
            .ends_with("(1 of 3 reads failed)"));
        // The rollup's figure: the smallest segment's median each way.
        let f = s.figures();
        assert_eq!(
            (f.mtu_up_bytes, f.mtu_down_bytes),
            (Some(1372.0), Some(1372.0))
        );
    }

    /// A round stored before segments kept their MTU and marking reads (no such fields) still
    /// reads, adds to one that has them, and its range has neither.
    #[test]
    fn rounds_stored_without_segment_reads_still_read_and_add() {
        let old = serde_json::json!({"kind": "trace", "stats": {
            "segments": [{"from": "here", "to": "udp://h0:7777", "addresses": [],
                "stats": serde_json::to_value(PingStats::default()).unwrap()}],
            "chain": null, "errors": {}}});
        let mut s: KindStats = serde_json::from_value(old).unwrap();
        let KindStats::Trace(t) = &s else {
            unreachable!()
        };
        assert!(t.segments[0].mtu.is_none() && t.segments[0].marking.is_none());
        assert_eq!(s.figures().mtu_up_bytes, None);
        let b = body(&s);
        assert!(b.segments[0].mtu.is_none() && b.segments[0].marking.is_none());
        s.then(&stats(&round(0, false))).unwrap();
        let b = body(&s);
        assert_eq!(
            b.segments[0]
                .mtu
                .as_ref()
                .unwrap()
                .up
                .as_ref()
                .unwrap()
                .largest_datagram,
            Some(1472)
        );
        assert_eq!(b.segments.len(), 3);
    }
}
