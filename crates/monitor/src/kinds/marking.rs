//! What a marked probe round's figures say of its marking each way ([`Figures::marking_up`],
//! [`Figures::marking_down`]: the round's own `up`/`down` of
//! [`npt_result::marking::Marking`]) — whether it arrived as sent and the share marked CE —
//! as the `bleached` and `ce_pct` alerts, the `/metrics` gauges and the dashboard read them.
//! A way whose fate nobody told (a far end that does not say) counts neither way.

use npt_result::marking::{Fate, Way};

use super::Figures;

impl Figures {
    /// Each way's marking, up then down, where the round has one.
    pub fn marking(&self) -> [(&'static str, Option<&Way>); 2] {
        [
            ("up", self.marking_up.as_ref()),
            ("down", self.marking_down.as_ref()),
        ]
    }

    /// 1 when the marking did not arrive as sent one way or both (DSCP or ECN bleached,
    /// rewritten or mixed), 0 when it arrived as sent each way it is known; `None` for a round
    /// with no known marking (none asked, or a far end that does not say). What the `bleached`
    /// alert reads.
    pub fn bleached(&self) -> Option<f64> {
        let known: Vec<bool> = self
            .marking()
            .into_iter()
            .filter_map(|(_, w)| as_sent(w?))
            .collect();
        (!known.is_empty()).then(|| if known.contains(&false) { 1.0 } else { 0.0 })
    }

    /// The larger direction's [`ce_pct`] (%): what the `ce_pct` alert reads.
    pub fn ce_pct(&self) -> Option<f64> {
        self.marking()
            .into_iter()
            .filter_map(|(_, w)| ce_pct(w?))
            .max_by(f64::total_cmp)
    }
}

/// Whether a way's marking arrived as sent, DSCP and ECN both; `None` when its fate is not
/// known (the far end did not say, nothing arrived).
pub fn as_sent(w: &Way) -> Option<bool> {
    (w.dscp != Fate::Unknown && w.ecn != Fate::Unknown)
        .then_some(w.dscp == Fate::Arrived && w.ecn == Fate::Arrived)
}

/// Of a way's packets whose arrival marking was read, the share that arrived marked CE (%);
/// `None` where none was read or none was sent ECN-capable (a Not-ECT packet is never marked:
/// a 0 there would say nothing).
pub fn ce_pct(w: &Way) -> Option<f64> {
    (w.packets > 0 && (w.sent.is_some_and(|t| t.ecn != 0) || w.ce > 0))
        .then(|| 100.0 * w.ce as f64 / w.packets as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::KindStats;
    use npt_result::stats::ProbeStats;

    /// A probe round that asked its far end for a marking: each way's fate and CE count in its
    /// figures, which `bleached` and `ce_pct` read; rounds add into a rollup's; a round that
    /// asked nothing, or whose far end said nothing, has neither figure.
    #[test]
    fn a_marked_probe_round_says_each_way() {
        use npt_result::marking::{Marking, Tos};
        let ef0 = Tos { dscp: 46, ecn: 2 };
        // Each reply: the TOS byte the far end says its request arrived with, and the one the
        // reply arrived with here (the far end sent it EF, ECT(0)).
        let round = |replies: &[(u8, u8)]| {
            let mut s = ProbeStats {
                marking: Marking {
                    sent: Some(ef0),
                    asked: Some(ef0),
                    ..Marking::default()
                },
                ..ProbeStats::default()
            };
            for &(far, here) in replies {
                s.marking.count_reply(Some(here), Some((far, 0xba)));
            }
            KindStats::Probe(Box::new(s))
        };
        // Bleached up (the far end saw DSCP 0, one of four CE), arrived down.
        let bleached = round(&[(0x02, 0xba), (0x02, 0xba), (0x02, 0xba), (0x03, 0xba)]);
        let f = bleached.figures();
        let up = f.marking_up.unwrap();
        assert_eq!(
            (up.dscp, up.ecn, up.ce, up.packets),
            (Fate::Bleached, Fate::Arrived, 1, 4)
        );
        assert_eq!(f.marking_down.unwrap().dscp, Fate::Arrived);
        assert_eq!((f.bleached(), f.ce_pct()), (Some(1.0), Some(25.0)));
        // Arrived as sent each way, two of four CE down: the larger share.
        let arrived = round(&[(0xba, 0xba), (0xba, 0xba), (0xba, 0xbb), (0xba, 0xbb)]);
        let f = arrived.figures();
        assert_eq!((f.bleached(), f.ce_pct()), (Some(0.0), Some(50.0)));
        // A minute of one bleached round and one arrived: mixed up, not as sent.
        let mut minute = bleached.clone();
        minute.then(&arrived).unwrap();
        let f = minute.figures();
        assert_eq!(f.marking_up.unwrap().dscp, Fate::Mixed);
        assert_eq!(f.bleached(), Some(1.0));
        // Nothing asked; a plain echo that said nothing (no way known, no packet sent ECT).
        let plain = KindStats::Probe(Box::default()).figures();
        assert_eq!(
            (plain.marking_up, plain.bleached(), plain.ce_pct()),
            (None, None, None)
        );
        let ef = Some(Tos { dscp: 46, ecn: 0 });
        let mut s = ProbeStats {
            marking: Marking {
                sent: ef,
                asked: ef,
                ..Marking::default()
            },
            ..ProbeStats::default()
        };
        s.marking.count_reply(Some(0xb8), None);
        let f = KindStats::Probe(Box::new(s)).figures();
        assert_eq!(f.marking_up.unwrap().dscp, Fate::Unknown);
        assert_eq!((f.bleached(), f.ce_pct()), (None, None));
    }
}
