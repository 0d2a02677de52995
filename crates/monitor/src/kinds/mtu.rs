//! What a monitor keeps of `npt mtu` rounds: a path MTU is not a sum of samples, so its value
//! is, each way, the rounds' largest datagrams as a histogram (in bytes: the histogram's unit
//! here is a byte, not a nanosecond — what the `mtu_up_bytes`/`mtu_down_bytes` figures and
//! alerts read: a tunnel whose MTU dropped from 1472 to 1372 shows as a step), the bracket all
//! the rounds agree on (a size that crossed proves the path carried it, a size lost after
//! every try that it did not carry it), the rounds counted by verdict, and the counts of every
//! round added. The chart's latency is the probes' round trips, as in one run's result.
//!
//! A round whose bracket does not meet the round's before it in either direction (a size
//! crossed that the earlier round lost, or the reverse: the path's MTU changed) is counted as
//! `changed` — exactly, however rounds and rollups are added, as each value keeps its first
//! and its last round's brackets. When a later bracket does not meet the range's, that
//! direction keeps the later one.

use std::collections::BTreeMap;

use npt_result::common::{Errors, NptLatency};
use npt_result::mtu::{MtuBody, MtuDirection, MtuRounds, MtuRoundsDirection, MtuSummary};
use npt_stats::{ErrorCounts, Histogram};
use serde::{Deserialize, Serialize};

/// The rounds of both directions, and their counts added.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MtuSum {
    /// Client to far end (against a plain echo: the round trip).
    pub up: DirectionSum,
    /// Far end to client.
    pub down: DirectionSum,
    /// Rounds added, those whose bracket did not meet the round's before them (either way),
    /// those that ran out of time.
    pub rounds: u64,
    pub changed: u64,
    pub timed_out: u64,
    /// The answers' round trips, ns.
    pub rtt: Histogram,
    pub errors: ErrorCounts,
}

/// One direction's rounds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DirectionSum {
    /// Each round's largest datagram that crossed, in BYTES (not ns); a round where nothing
    /// crossed records nothing.
    pub sizes: Histogram,
    /// The bracket the rounds agree on: the largest datagram any round saw cross, the smallest
    /// any round lost after every try, bytes.
    pub largest_datagram: Option<u32>,
    pub smallest_lost: Option<u32>,
    /// The first and the last round's own brackets (what a change is counted against).
    pub first: Bracket,
    pub last: Bracket,
    /// Rounds by verdict (`icmp`, `black_hole`, `local`, `max_crossed`, `nothing_crossed`,
    /// `unreadable`), and the latest round's.
    pub verdicts: BTreeMap<String, u64>,
    pub verdict: String,
    /// Rounds whose down bracket was capped by what crossed up.
    pub capped_by_up: u64,
    /// Datagrams sent and answered, sizes lost, contradicted and clamped, added.
    pub sent: u64,
    pub answered: u64,
    pub lost_sizes: u64,
    pub contradicted: u64,
    pub clamped: u64,
    /// The largest fragment any round's probes arrived in (IP bytes).
    pub largest_fragment: Option<u32>,
    /// The latest round's ICMP or interface MTU, and the router that sent the ICMP.
    pub icmp_mtu: Option<u32>,
    pub icmp_from: Option<String>,
    pub local_mtu: Option<u32>,
}

/// One round's bracket: the largest datagram that crossed, the smallest lost, bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bracket {
    pub crossed: Option<u32>,
    pub lost: Option<u32>,
}

impl Bracket {
    /// True when both could be true of one path: nothing crossed that the other lost.
    fn meets(self, o: Bracket) -> bool {
        let below = |c: Option<u32>, l: Option<u32>| matches!((c, l), (Some(c), Some(l)) if c >= l);
        !below(self.crossed, o.lost) && !below(o.crossed, self.lost)
    }
}

/// What an mtu body is summarized with: the round's target and search bounds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MtuMeta {
    pub target: String,
    pub address: String,
    pub headers: u32,
    pub max: u32,
    pub far_end: String,
    pub via: Option<String>,
    pub via_header: u32,
}

impl DirectionSum {
    fn of(d: &MtuDirection) -> DirectionSum {
        let mut sizes = Histogram::new();
        if let Some(l) = d.largest_datagram {
            sizes.record(u64::from(l).max(1));
        }
        let own = Bracket {
            crossed: d.largest_datagram,
            lost: d.smallest_lost,
        };
        DirectionSum {
            sizes,
            largest_datagram: d.largest_datagram,
            smallest_lost: d.smallest_lost,
            first: own,
            last: own,
            verdicts: [(d.verdict.clone(), 1)].into(),
            verdict: d.verdict.clone(),
            capped_by_up: u64::from(d.capped_by_up),
            sent: u64::from(d.sent),
            answered: u64::from(d.answered),
            lost_sizes: u64::from(d.lost_sizes),
            contradicted: u64::from(d.contradicted),
            clamped: u64::from(d.clamped),
            largest_fragment: d.largest_fragment,
            icmp_mtu: d.icmp_mtu,
            icmp_from: d.icmp_from.clone(),
            local_mtu: d.local_mtu,
        }
    }

    /// Adds a later round's (or rollup's) direction; true when its first round's bracket did
    /// not meet this one's last round's.
    fn then(&mut self, later: &DirectionSum) -> bool {
        let changed = !self.last.meets(later.first);
        let crossed = self.largest_datagram.max(later.largest_datagram);
        let lost = min(self.smallest_lost, later.smallest_lost);
        if matches!((crossed, lost), (Some(c), Some(l)) if c >= l) {
            self.largest_datagram = later.largest_datagram;
            self.smallest_lost = later.smallest_lost;
        } else {
            self.largest_datagram = crossed;
            self.smallest_lost = lost;
        }
        self.last = later.last;
        self.sizes += &later.sizes;
        for (v, n) in &later.verdicts {
            *self.verdicts.entry(v.clone()).or_default() += n;
        }
        self.verdict.clone_from(&later.verdict);
        self.capped_by_up += later.capped_by_up;
        self.sent += later.sent;
        self.answered += later.answered;
        self.lost_sizes += later.lost_sizes;
        self.contradicted += later.contradicted;
        self.clamped += later.clamped;
        self.largest_fragment = self.largest_fragment.max(later.largest_fragment);
        self.icmp_mtu = later.icmp_mtu;
        self.icmp_from.clone_from(&later.icmp_from);
        self.local_mtu = later.local_mtu;
        changed
    }

    /// The size figure of these rounds (one round's own; a rollup's median), bytes.
    pub fn figure(&self) -> Option<f64> {
        (!self.sizes.is_empty()).then(|| self.sizes.quantile_ns(0.5) as f64)
    }

    /// The direction one run of these rounds would have written, over `hdr` header bytes.
    pub fn direction(&self, hdr: u32) -> MtuDirection {
        let sat = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let (lo, hi) = (self.largest_datagram, self.smallest_lost);
        MtuDirection {
            verdict: self.verdict.clone(),
            largest_datagram: lo,
            largest_packet: lo.map(|l| l.saturating_add(hdr)),
            smallest_lost: hi,
            settled: match (lo, hi) {
                (Some(l), Some(h)) => h == l + 1,
                (Some(_), None) => true,
                _ => false,
            },
            icmp_mtu: self.icmp_mtu,
            icmp_from: self.icmp_from.clone(),
            local_mtu: self.local_mtu,
            largest_fragment: self.largest_fragment,
            clamped: sat(self.clamped),
            capped_by_up: self.capped_by_up > 0,
            sent: sat(self.sent),
            answered: sat(self.answered),
            lost_sizes: sat(self.lost_sizes),
            contradicted: sat(self.contradicted),
        }
    }

    fn rounds(&self) -> MtuRoundsDirection {
        let size = |ns: u64| u32::try_from(ns).ok();
        let some = !self.sizes.is_empty();
        MtuRoundsDirection {
            verdicts: self.verdicts.clone(),
            capped_by_up: self.capped_by_up,
            smallest: some.then(|| size(self.sizes.min_ns())).flatten(),
            largest: some.then(|| size(self.sizes.max_ns())).flatten(),
        }
    }
}

fn min(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl MtuSum {
    /// One round's value and description, from its document.
    pub fn of_body(b: &MtuBody) -> Result<(MtuSum, MtuMeta), String> {
        let s = &b.summary;
        let rtt = Histogram::from_serialized(&b.rtt_histogram)
            .map_err(|e| format!("histogram rtt: {e}"))?;
        let sum = MtuSum {
            timed_out: u64::from(s.timed_out),
            rtt,
            errors: b.errors.by_kind.clone(),
            ..MtuSum::of_directions(&s.up, &s.down)
        };
        let meta = MtuMeta {
            target: b.target.clone(),
            address: b.address.clone(),
            headers: s.headers,
            max: s.max,
            far_end: s.far_end.clone(),
            via: s.via.clone(),
            via_header: s.via_header,
        };
        Ok((sum, meta))
    }

    /// One search's two directions as one round (a trace segment's, [`super::trace`]: no
    /// round trips, no errors of its own).
    pub fn of_directions(up: &MtuDirection, down: &MtuDirection) -> MtuSum {
        MtuSum {
            up: DirectionSum::of(up),
            down: DirectionSum::of(down),
            rounds: 1,
            ..MtuSum::default()
        }
    }

    /// Adds a later round (or rollup) after these.
    pub fn then(&mut self, later: &MtuSum) {
        if self.rounds == 0 {
            self.clone_from(later);
            return;
        }
        let up = self.up.then(&later.up);
        let down = self.down.then(&later.down);
        self.changed += later.changed + u64::from(up || down);
        self.rounds += later.rounds;
        self.timed_out += later.timed_out;
        self.rtt += &later.rtt;
        self.errors += &later.errors;
    }

    /// Datagrams sent both ways.
    pub fn sent(&self) -> u64 {
        self.up.sent + self.down.sent
    }

    /// The body one run of these rounds would have written: the agreed bracket each way, the
    /// latest round's verdicts, the counts added, and the rounds counted
    /// ([`MtuSummary::rounds`]).
    pub fn body(&self, m: &MtuMeta) -> MtuBody {
        MtuBody {
            target: m.target.clone(),
            address: m.address.clone(),
            summary: MtuSummary {
                headers: m.headers,
                max: m.max,
                far_end: m.far_end.clone(),
                timed_out: self.timed_out > 0,
                via: m.via.clone(),
                via_header: m.via_header,
                up: self.up.direction(m.headers),
                down: self.down.direction(m.headers),
                rounds: Some(MtuRounds {
                    rounds: self.rounds,
                    changed: self.changed,
                    timed_out: self.timed_out,
                    up: self.up.rounds(),
                    down: self.down.rounds(),
                }),
            },
            latency: [("udp".to_string(), NptLatency::from(&self.rtt.summary()))].into(),
            errors: Errors::new(self.errors.clone(), self.sent()),
            rtt_histogram: self.rtt.to_serialized(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(verdict: &str, largest: Option<u32>, lost: Option<u32>) -> MtuDirection {
        MtuDirection {
            verdict: verdict.into(),
            largest_datagram: largest,
            smallest_lost: lost,
            sent: 10,
            answered: 7,
            ..MtuDirection::default()
        }
    }

    fn round(up: MtuDirection, down: MtuDirection) -> MtuSum {
        let mut rtt = Histogram::new();
        rtt.record(1_000_000);
        let b = MtuBody {
            target: "udp://192.0.2.1:7777".into(),
            address: "192.0.2.1:7777".into(),
            summary: MtuSummary {
                headers: 28,
                max: 1472,
                far_end: "npt-serve".into(),
                up,
                down,
                ..MtuSummary::default()
            },
            latency: Default::default(),
            errors: Errors::new(ErrorCounts::default(), 20),
            rtt_histogram: rtt.to_serialized(),
        };
        MtuSum::of_body(&b).unwrap().0
    }

    fn meta() -> MtuMeta {
        MtuMeta {
            target: "udp://192.0.2.1:7777".into(),
            headers: 28,
            max: 1472,
            far_end: "npt-serve".into(),
            ..MtuMeta::default()
        }
    }

    #[test]
    fn rounds_narrow_the_bracket_count_verdicts_and_chart_each_size() {
        let mut s = round(
            dir("icmp", Some(1372), Some(1373)),
            dir("black_hole", Some(1370), Some(1380)),
        );
        s.then(&round(
            dir("icmp", Some(1372), Some(1373)),
            dir("black_hole", Some(1372), Some(1376)),
        ));
        assert_eq!((s.rounds, s.changed), (2, 0));
        assert_eq!(
            (s.down.largest_datagram, s.down.smallest_lost),
            (Some(1372), Some(1376))
        );
        assert_eq!((s.up.sizes.count(), s.up.figure()), (2, Some(1372.0)));
        assert_eq!(s.down.sizes.min_ns(), 1370);
        let b = s.body(&meta());
        assert_eq!(b.summary.up.largest_packet, Some(1400));
        assert!(b.summary.up.settled && !b.summary.down.settled);
        assert_eq!((b.summary.up.sent, b.summary.up.answered), (20, 14));
        let r = b.summary.rounds.unwrap();
        assert_eq!(r.rounds, 2);
        assert_eq!(r.up.verdicts, [("icmp".to_string(), 2)].into());
        assert_eq!((r.down.smallest, r.down.largest), (Some(1370), Some(1372)));
        assert_eq!(b.errors.attempts, Some(40));
        // Stored and read back, it adds the same.
        let back: MtuSum = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!((back.up.sizes.count(), back.rtt.count()), (2, 2));
    }

    #[test]
    fn a_changed_mtu_keeps_the_later_bracket_and_is_counted() {
        let mut s = round(
            dir("max_crossed", Some(1472), None),
            dir("max_crossed", Some(1472), None),
        );
        s.then(&round(
            dir("black_hole", Some(1372), Some(1373)),
            dir("max_crossed", Some(1472), None),
        ));
        assert_eq!(s.changed, 1);
        assert_eq!(
            (
                s.up.largest_datagram,
                s.up.smallest_lost,
                s.up.verdict.as_str()
            ),
            (Some(1372), Some(1373), "black_hole")
        );
        assert_eq!(s.down.largest_datagram, Some(1472));
        // A rollup added after: its own change, and none where its first round meets the
        // last round before it — as if its rounds had been added one by one.
        let mut later = round(
            dir("black_hole", Some(1372), Some(1373)),
            dir("max_crossed", Some(1472), None),
        );
        later.then(&round(
            dir("max_crossed", Some(1472), None),
            dir("max_crossed", Some(1472), None),
        ));
        assert_eq!(later.changed, 1);
        s.then(&later);
        assert_eq!((s.rounds, s.changed), (4, 2));
        assert_eq!(s.up.verdicts.get("black_hole"), Some(&2));
        let b = s.body(&meta());
        assert_eq!(b.summary.up.verdict, "max_crossed");
        assert_eq!(b.summary.up.smallest_lost, None);
        // Nothing crossed: no size is charted, the round still counted.
        let none = round(
            dir("nothing_crossed", None, Some(100)),
            dir("unreadable", None, None),
        );
        assert_eq!((none.up.figure(), none.down.figure()), (None, None));
    }
}
