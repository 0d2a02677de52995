//! The DSCP/ECN marking of a test's packets, each way: what npt sent with (`--dscp`, `--tos`,
//! `--ecn`), what each request arrived with as the far end tells (`npt serve`, asked with the
//! wire's `MARK` flag), what the far end sent each reply with and what the
//! reply arrived with, as this host's kernel tells (`IP_RECVTOS`, `IPV6_RECVTCLASS`). From
//! those, per direction ([`Way`]): the DSCP and the ECN codepoint arrived as sent, were
//! rewritten (to what) or bleached (to 0), and how many packets arrived marked CE. A far end
//! that does not say (a plain echo, a STAMP reflector, an older `npt serve`) leaves the up
//! direction unknown — never guessed. A value that adds: parts of a run merge exactly.

use std::ops::AddAssign;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A TOS byte split into its two fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Tos {
    /// Differentiated Services code point, 0-63 (the TOS byte's upper six bits).
    #[schemars(range(max = 63))]
    pub dscp: u8,
    /// Explicit Congestion Notification, 0-3 (the lower two bits; 3 is CE).
    #[schemars(range(max = 3))]
    pub ecn: u8,
}

impl Tos {
    pub fn of(byte: u8) -> Tos {
        Tos {
            dscp: byte >> 2,
            ecn: byte & 3,
        }
    }

    pub fn byte(self) -> u8 {
        (self.dscp << 2) | (self.ecn & 3)
    }
}

/// Packets that arrived with one marking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TosCount {
    #[schemars(range(max = 63))]
    pub dscp: u8,
    #[schemars(range(max = 3))]
    pub ecn: u8,
    pub packets: u64,
}

/// What was sent with and what came back, each way.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Marking {
    /// The marking every packet was sent with (`--dscp`, `--tos`, `--ecn`); absent: the
    /// kernel's default (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<Tos>,
    /// Datagrams received by the marking they arrived with, where the OS tells (UDP): replies,
    /// late and duplicate ones, the far end's flow report; ordered by DSCP, then ECN. Empty
    /// over TCP (a byte stream has no per-packet marking to read).
    #[serde(default)]
    pub received: Vec<TosCount>,
    /// The marking the replies were asked to carry (`--reply-dscp`, `--reply-ecn`; by default
    /// the one sent). Absent: not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<Tos>,
    /// On-time replies by the marking the far end says their request arrived with (`npt
    /// serve` answers it when asked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub far_received: Vec<TosCount>,
    /// On-time replies by the marking the far end says it sent them with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub far_sent: Vec<TosCount>,
    /// On-time replies by the marking they arrived with here (as `received`, but only the
    /// replies the far end's figures are of).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<TosCount>,
    /// On-time replies to requests that asked, which said nothing of their marking: a plain
    /// echo, a STAMP reflector or an older `npt serve` answered.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub far_silent: u64,
    /// Client to far end: the marking as sent, as it arrived, CE marks. Absent when nothing was
    /// asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<Way>,
    /// Far end to client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down: Option<Way>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// What happened to one field (DSCP or ECN) on one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Fate {
    /// Every packet arrived with the value it was sent with (for ECN: or CE, a congestion
    /// mark on an ECN-capable packet).
    Arrived,
    /// Every packet arrived with one other value, not 0.
    Rewritten,
    /// Every packet arrived with 0 (DSCP default / Not-ECT) though sent with another.
    Bleached,
    /// Packets arrived with different values.
    Mixed,
    /// Nobody said: what was sent or what arrived is not known (a far end that does not tell).
    Unknown,
}

/// One direction's marking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Way {
    /// The marking sent this way; absent when not known (down from a far end that does not
    /// say what it sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<Tos>,
    /// The marking most packets arrived with, CE marks left out of the ECN count (a packet
    /// marked CE arrived ECN-capable); absent when nobody said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrived: Option<Tos>,
    pub dscp: Fate,
    pub ecn: Fate,
    /// Packets whose arrival marking is known this way.
    pub packets: u64,
    /// Of those, how many arrived marked CE (congestion experienced).
    pub ce: u64,
}

impl Way {
    /// The direction's figures from what was `sent` (None: unknown) and the arrivals.
    pub fn of(sent: Option<Tos>, arrivals: &[TosCount]) -> Way {
        let packets: u64 = arrivals.iter().map(|c| c.packets).sum();
        let ce: u64 = arrivals
            .iter()
            .filter(|c| c.ecn == 3)
            .map(|c| c.packets)
            .sum();
        let most = |f: &dyn Fn(&TosCount) -> Option<u8>| -> Option<u8> {
            let mut by: [u64; 64] = [0; 64];
            for c in arrivals {
                if let Some(v) = f(c) {
                    if let Some(slot) = by.get_mut(usize::from(v)) {
                        *slot += c.packets;
                    }
                }
            }
            let (v, n) = (0u8..)
                .zip(by)
                .max_by_key(|&(v, n)| (n, std::cmp::Reverse(v)))?;
            (n > 0).then_some(v)
        };
        let dscp = most(&|c| Some(c.dscp));
        // A CE mark is what a marking hop does to an ECN-capable packet: not a rewrite.
        let ecn = most(&|c| (c.ecn != 3).then_some(c.ecn)).or((ce > 0).then_some(3));
        let fate = |sent: Option<u8>, values: Vec<u8>| -> Fate {
            let Some(sent) = sent else {
                return Fate::Unknown;
            };
            match values.as_slice() {
                [] => Fate::Unknown,
                [v] if *v == sent => Fate::Arrived,
                [0] => Fate::Bleached,
                [_] => Fate::Rewritten,
                _ => Fate::Mixed,
            }
        };
        let distinct = |f: &dyn Fn(&TosCount) -> Option<u8>| {
            let mut v: Vec<u8> = arrivals
                .iter()
                .filter(|c| c.packets > 0)
                .filter_map(f)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut ecn_values = distinct(&|c| (c.ecn != 3).then_some(c.ecn));
        if ecn_values.is_empty() && ce > 0 {
            // Every packet marked CE: it was sent ECN-capable and arrived so.
            ecn_values = sent.map(|s| s.ecn).into_iter().collect();
        }
        Way {
            sent,
            arrived: dscp.zip(ecn).map(|(dscp, ecn)| Tos { dscp, ecn }),
            dscp: fate(sent.map(|s| s.dscp), distinct(&|c| Some(c.dscp))),
            ecn: fate(sent.map(|s| s.ecn), ecn_values),
            packets,
            ce,
        }
    }
}

/// Adds `n` packets of marking `t` to a list ordered by DSCP, then ECN.
fn add_to(list: &mut Vec<TosCount>, t: Tos, n: u64) {
    let key = (t.dscp, t.ecn);
    match list.binary_search_by_key(&key, |c| (c.dscp, c.ecn)) {
        Ok(i) => {
            if let Some(c) = list.get_mut(i) {
                c.packets += n;
            }
        }
        Err(i) => list.insert(
            i,
            TosCount {
                dscp: t.dscp,
                ecn: t.ecn,
                packets: n,
            },
        ),
    }
}

fn add_all(list: &mut Vec<TosCount>, from: &[TosCount]) {
    for c in from {
        add_to(
            list,
            Tos {
                dscp: c.dscp,
                ecn: c.ecn,
            },
            c.packets,
        );
    }
}

/// The one marking of a list, when every packet had it.
fn uniform(list: &[TosCount]) -> Option<Tos> {
    match list {
        [c] => Some(Tos {
            dscp: c.dscp,
            ecn: c.ecn,
        }),
        _ => None,
    }
}

impl Marking {
    /// Counts one datagram that arrived with TOS byte `byte`.
    pub fn count(&mut self, byte: u8) {
        self.add(Tos::of(byte), 1);
    }

    /// Counts one on-time reply: the TOS byte it arrived with here (None: the OS did not say),
    /// and what the far end said (`far`: the byte its request arrived with, the byte it sent
    /// the reply with), or None when it said nothing.
    pub fn count_reply(&mut self, here: Option<u8>, far: Option<(u8, u8)>) {
        match far {
            Some((seen, sent)) => {
                add_to(&mut self.far_received, Tos::of(seen), 1);
                add_to(&mut self.far_sent, Tos::of(sent), 1);
            }
            None => self.far_silent += 1,
        }
        if let Some(b) = here {
            add_to(&mut self.replies, Tos::of(b), 1);
        }
    }

    /// Sets [`Marking::up`] and [`Marking::down`] from the counts (when a marking was asked of
    /// the far end; a run that asked nothing keeps the block it always had).
    pub fn settle(&mut self) {
        if self.asked.is_none() {
            return;
        }
        let sent = self.sent.unwrap_or_default();
        self.up = Some(Way::of(Some(sent), &self.far_received));
        self.down = Some(Way::of(uniform(&self.far_sent), &self.replies));
    }

    fn add(&mut self, t: Tos, n: u64) {
        let key = (t.dscp, t.ecn);
        match self
            .received
            .binary_search_by_key(&key, |c| (c.dscp, c.ecn))
        {
            Ok(i) => {
                if let Some(c) = self.received.get_mut(i) {
                    c.packets += n;
                }
            }
            Err(i) => self.received.insert(
                i,
                TosCount {
                    dscp: t.dscp,
                    ecn: t.ecn,
                    packets: n,
                },
            ),
        }
    }

    /// Nothing to say: sent unmarked, asked nothing, and nothing came back marked.
    pub fn is_plain(&self) -> bool {
        self.sent.is_none()
            && self.asked.is_none()
            && self.received.iter().all(|c| c.dscp == 0 && c.ecn == 0)
    }

    /// The block a result carries, its directions settled: none when [`Marking::is_plain`].
    pub fn block(&self) -> Option<Marking> {
        (!self.is_plain()).then(|| {
            let mut m = self.clone();
            m.settle();
            m
        })
    }
}

impl AddAssign<&Marking> for Marking {
    fn add_assign(&mut self, rhs: &Marking) {
        if self.sent.is_none() {
            self.sent = rhs.sent;
        }
        if self.asked.is_none() {
            self.asked = rhs.asked;
        }
        add_all(&mut self.received, &rhs.received);
        add_all(&mut self.far_received, &rhs.far_received);
        add_all(&mut self.far_sent, &rhs.far_sent);
        add_all(&mut self.replies, &rhs.replies);
        self.far_silent += rhs.far_silent;
        if self.up.is_some() || rhs.up.is_some() {
            self.settle();
        }
    }
}

/// One direction's marking reads added — a trace segment's, over a monitor's rounds or a
/// compare row's runs: what each read's [`Way`] says arrived, its packets at the marking it
/// names and its CE marks apart, so that the sum is judged by [`Way::of`], the rule of one
/// read. A read whose DSCP or ECN arrived mixed says only its most common marking: its packets
/// count there, and the field stays mixed in the sum. One read's sum says what the read said.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaySum {
    /// The latest read's marking sent this way; absent when not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<Tos>,
    /// Packets by the marking they arrived with, ordered by DSCP, then ECN.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrivals: Vec<TosCount>,
    /// Reads added, and those whose DSCP or ECN arrived mixed.
    pub reads: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mixed_dscp: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mixed_ecn: u64,
}

impl WaySum {
    /// One read's direction.
    pub fn of(w: &Way) -> WaySum {
        let mut arrivals = Vec::new();
        if let Some(a) = w.arrived {
            // Every packet CE-marked reads as arrived ECN 3.
            let ce = if a.ecn == 3 {
                w.packets
            } else {
                w.ce.min(w.packets)
            };
            for (ecn, n) in [(a.ecn, w.packets - ce), (3, ce)] {
                if n > 0 {
                    add_to(&mut arrivals, Tos { dscp: a.dscp, ecn }, n);
                }
            }
        }
        WaySum {
            sent: w.sent,
            arrivals,
            reads: 1,
            mixed_dscp: u64::from(w.dscp == Fate::Mixed),
            mixed_ecn: u64::from(w.ecn == Fate::Mixed),
        }
    }

    /// Adds a later read (or sum of reads).
    pub fn add(&mut self, later: &WaySum) {
        if later.sent.is_some() {
            self.sent = later.sent;
        }
        add_all(&mut self.arrivals, &later.arrivals);
        self.reads += later.reads;
        self.mixed_dscp += later.mixed_dscp;
        self.mixed_ecn += later.mixed_ecn;
    }

    /// The direction these reads say, by [`Way::of`].
    pub fn way(&self) -> Way {
        let mut w = Way::of(self.sent, &self.arrivals);
        let mixed = |f: &mut Fate, n: u64| {
            if n > 0 && *f != Fate::Unknown {
                *f = Fate::Mixed;
            }
        };
        mixed(&mut w.dscp, self.mixed_dscp);
        mixed(&mut w.ecn, self.mixed_ecn);
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_by_marking_in_order() {
        let mut a = Marking::default();
        assert!(a.is_plain() && a.block().is_none());
        a.count(0);
        assert!(a.is_plain(), "unmarked both ways");
        a.count(46 << 2);
        a.count(46 << 2 | 3);
        let mut b = Marking {
            sent: Some(Tos::of(0xb8)),
            ..Marking::default()
        };
        b.count(46 << 2);
        a += &b;
        assert_eq!(a.sent, Some(Tos { dscp: 46, ecn: 0 }));
        let got: Vec<(u8, u8, u64)> = a
            .received
            .iter()
            .map(|c| (c.dscp, c.ecn, c.packets))
            .collect();
        assert_eq!(got, vec![(0, 0, 1), (46, 0, 2), (46, 3, 1)]);
        assert_eq!(Tos::of(0xb9).byte(), 0xb9);
    }

    fn counts(list: &[(u8, u8, u64)]) -> Vec<TosCount> {
        list.iter()
            .map(|&(dscp, ecn, packets)| TosCount { dscp, ecn, packets })
            .collect()
    }

    #[test]
    fn each_direction_says_arrived_rewritten_or_bleached_and_counts_ce() {
        let ef0 = Some(Tos { dscp: 46, ecn: 2 });
        let w = Way::of(ef0, &counts(&[(46, 2, 90), (46, 3, 10)]));
        assert_eq!(
            (w.dscp, w.ecn, w.packets, w.ce),
            (Fate::Arrived, Fate::Arrived, 100, 10)
        );
        assert_eq!(w.arrived, ef0);
        let w = Way::of(ef0, &counts(&[(0, 2, 100)]));
        assert_eq!((w.dscp, w.ecn), (Fate::Bleached, Fate::Arrived));
        assert_eq!(w.arrived, Some(Tos { dscp: 0, ecn: 2 }));
        let w = Way::of(ef0, &counts(&[(10, 0, 100)]));
        assert_eq!((w.dscp, w.ecn), (Fate::Rewritten, Fate::Bleached));
        let w = Way::of(ef0, &counts(&[(46, 2, 50), (0, 2, 50)]));
        assert_eq!(w.dscp, Fate::Mixed);
        // All CE: ECN-capable all the way, every packet marked.
        let w = Way::of(ef0, &counts(&[(46, 3, 7)]));
        assert_eq!((w.ecn, w.ce), (Fate::Arrived, 7));
        // Nobody said.
        let w = Way::of(ef0, &[]);
        assert_eq!(
            (w.dscp, w.ecn, w.arrived),
            (Fate::Unknown, Fate::Unknown, None)
        );
        let w = Way::of(None, &counts(&[(0, 0, 5)]));
        assert_eq!((w.dscp, w.arrived), (Fate::Unknown, Some(Tos::default())));
    }

    #[test]
    fn replies_settle_into_both_directions_and_merge() {
        let mut a = Marking {
            sent: Some(Tos { dscp: 46, ecn: 2 }),
            asked: Some(Tos { dscp: 46, ecn: 2 }),
            ..Marking::default()
        };
        // Bleached up (the far end saw DSCP 0, one CE), arrived down.
        a.count_reply(Some(0xba), Some((0x02, 0xba)));
        a.count_reply(Some(0xba), Some((0x03, 0xba)));
        let b = a.block().unwrap();
        let up = b.up.unwrap();
        let down = b.down.unwrap();
        assert_eq!(
            (up.dscp, up.ecn, up.ce, up.packets),
            (Fate::Bleached, Fate::Arrived, 1, 2)
        );
        assert_eq!(
            (down.dscp, down.ecn, down.ce),
            (Fate::Arrived, Fate::Arrived, 0)
        );
        let mut m = b.clone();
        m += &b;
        assert_eq!(m.up.unwrap().packets, 4);
        // A plain echo: the far end said nothing, so up is unknown.
        let mut e = Marking {
            sent: Some(Tos { dscp: 46, ecn: 0 }),
            asked: Some(Tos { dscp: 46, ecn: 0 }),
            ..Marking::default()
        };
        e.count_reply(Some(0xb8), None);
        let e = e.block().unwrap();
        assert_eq!(e.far_silent, 1);
        assert_eq!(e.up.unwrap().dscp, Fate::Unknown);
        assert_eq!(e.down.unwrap().sent, None);
        assert_eq!(e.down.unwrap().dscp, Fate::Unknown);
        // JSON names scripts read.
        let j = serde_json::to_value(&b).unwrap();
        assert_eq!(j["up"]["dscp"], "bleached");
        assert_eq!(j["up"]["ce"], 1);
        assert_eq!(j["down"]["arrived"]["dscp"], 46);
    }

    /// A read's direction reads back as it was, mixed or not; reads add into one verdict by
    /// the rule of one read, and a mixed read keeps its field mixed.
    #[test]
    fn reads_of_a_direction_add_by_the_rule_of_one_read() {
        let ef0 = Some(Tos { dscp: 46, ecn: 2 });
        for arrivals in [
            counts(&[(46, 2, 90), (46, 3, 10)]),
            counts(&[(0, 2, 20)]),
            counts(&[(10, 0, 20)]),
            counts(&[(46, 3, 7)]),
            counts(&[(46, 2, 15), (0, 2, 5), (0, 3, 1)]),
            Vec::new(),
        ] {
            let w = Way::of(ef0, &arrivals);
            assert_eq!(WaySum::of(&w).way(), w, "{arrivals:?}");
        }
        let w = Way::of(None, &counts(&[(0, 0, 5)]));
        assert_eq!(WaySum::of(&w).way(), w);
        // Arrived, then bleached: the packets arrived with different DSCPs.
        let mut s = WaySum::of(&Way::of(ef0, &counts(&[(46, 2, 20)])));
        s.add(&WaySum::of(&Way::of(
            ef0,
            &counts(&[(0, 2, 18), (0, 3, 2)]),
        )));
        let w = s.way();
        assert_eq!(
            (w.dscp, w.ecn, w.packets, w.ce, s.reads),
            (Fate::Mixed, Fate::Arrived, 40, 2, 2)
        );
        // Bleached twice: bleached, counts added.
        let b = WaySum::of(&Way::of(ef0, &counts(&[(0, 2, 20)])));
        let mut two = b.clone();
        two.add(&b);
        assert_eq!((two.way().dscp, two.way().packets), (Fate::Bleached, 40));
        // A mixed read, then a uniform one: still mixed.
        let mut m = WaySum::of(&Way::of(ef0, &counts(&[(46, 2, 15), (0, 2, 5)])));
        m.add(&WaySum::of(&Way::of(ef0, &counts(&[(46, 2, 20)]))));
        assert_eq!((m.way().dscp, m.way().ecn), (Fate::Mixed, Fate::Arrived));
        let back: WaySum = serde_json::from_value(serde_json::to_value(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }
}
