//! Which idle gaps to try next: a coarse ladder up to `--max`, then parallel bisection inside
//! the bracket until it is no wider than the resolution. Pure arithmetic on ns; the flows that
//! try the gaps are [`crate::search`]'s.
//!
//! The bracket is the longest gap a flow survived (`lo`, the responder's own hold) and the
//! shortest one it did not survive above that (`hi`). A survivor is proof (its callback came);
//! an expiry may be a lost callback (a busy box drops a datagram), so a flow gone at a gap at
//! or below `lo` does not move the bracket and is counted as inconsistent, and `hi` is taken
//! only when a second expiry within the resolution above it confirms it — until then the
//! flows above it go on, and the next round tries gaps just above it.

/// Flows of the first round, spread geometrically from [`FIRST_GAP_NS`] to `--max`.
pub const LADDER: usize = 24;
/// Flows of each later round, spread evenly inside the bracket.
pub const PER_ROUND: usize = 12;
/// Flows of a round just above an upper end that stands on one expiry.
pub const CHECKS: u64 = 2;
/// Rounds after the ladder, at most.
pub const MAX_REFINE: u32 = 4;
/// The ladder's shortest gap.
pub const FIRST_GAP_NS: u64 = 1_000_000_000;
/// The resolution's floor when none is given: 1 s, or 2 % of the lifetime when that is more.
pub const DEFAULT_RESOLUTION_NS: u64 = 1_000_000_000;

/// The bracket so far and the rounds it took.
#[derive(Clone, Debug)]
pub struct Plan {
    max: u64,
    resolution: Option<u64>,
    lo: u64,
    survived: bool,
    gone: Vec<u64>,
    rounds: u32,
}

impl Plan {
    /// A search up to `max` ns; `resolution` ns, or the default's rule.
    pub fn new(max: u64, resolution: Option<u64>) -> Plan {
        Plan {
            max: max.max(1_000_000),
            resolution,
            lo: 0,
            survived: false,
            gone: Vec::new(),
            rounds: 0,
        }
    }

    /// The longest gap survived, ns (0 when none).
    pub fn lo(&self) -> u64 {
        self.lo
    }

    /// Whether any flow survived its gap.
    pub fn survived(&self) -> bool {
        self.survived
    }

    /// The shortest gap not survived above the longest survived, ns.
    pub fn hi(&self) -> Option<u64> {
        self.gone.iter().copied().filter(|g| *g > self.lo).min()
    }

    /// Rounds started so far (the ladder is the first).
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// How narrow the bracket must get, ns.
    pub fn resolution(&self) -> u64 {
        self.resolution
            .unwrap_or_else(|| DEFAULT_RESOLUTION_NS.max(self.lo / 50))
    }

    /// A flow survived an idle `held` ns.
    pub fn alive(&mut self, held: u64) {
        self.lo = self.lo.max(held);
        self.survived = true;
    }

    /// A flow did not survive an idle `gap` ns.
    pub fn gone(&mut self, gap: u64) {
        self.gone.push(gap);
    }

    /// Expiries contradicted by a longer survivor (lost callbacks, most likely): each counted
    /// once, however many flows survived above it.
    pub fn inconsistent(&self) -> u32 {
        let n = self.gone.iter().filter(|g| self.survived && **g <= self.lo);
        u32::try_from(n.count()).unwrap_or(u32::MAX)
    }

    /// The second-shortest gap not survived above `lo`: what confirms `hi`.
    fn second(&self) -> Option<u64> {
        // The two smallest in one pass (asked for every pending flow at every poll).
        let (mut first, mut second) = (None::<u64>, None::<u64>);
        for &g in self.gone.iter().filter(|g| **g > self.lo) {
            if first.is_none_or(|f| g < f) {
                second = first;
                first = Some(g);
            } else if second.is_none_or(|s| g < s) {
                second = Some(g);
            }
        }
        second
    }

    /// Whether `hi` is confirmed: a second expiry within the resolution above it, or `hi` is
    /// `--max` (nothing above it may be tried). One expiry alone may be a lost callback.
    fn confirmed(&self, hi: u64) -> bool {
        hi >= self.max || self.second().is_some_and(|h2| h2 - hi <= self.resolution())
    }

    /// Whether a flow of gap `gap` still pending can narrow the bracket or check its upper
    /// end: above `lo` and below the *second* expiry above it. One expiry may be a lost
    /// callback (a datagram dropped on a busy path); the flows between it and the next one
    /// stay, and if one of them survives, the lost one falls below `lo` and stops counting.
    /// Two expiries in a row are what ends the flows above them.
    pub fn matters(&self, gap: u64) -> bool {
        gap > self.lo && self.second().is_none_or(|h| gap < h)
    }

    /// Whether a flow survived `max` (the search went as far as it may).
    pub fn longer_than_max(&self) -> bool {
        self.survived && self.hi().is_none() && self.lo + self.max / 100 >= self.max
    }

    /// The gaps of the next round (ns), or None when the search is done: the bracket is
    /// narrow enough and its upper end confirmed, a flow survived `max`, or the rounds are
    /// used up. A round spreads [`PER_ROUND`] gaps inside the bracket and, while its upper
    /// end stands on one expiry, [`CHECKS`] just above it: if that expiry was a lost
    /// callback, they survive and the next round searches above.
    pub fn next_round(&mut self) -> Option<Vec<u64>> {
        let gaps = if self.rounds == 0 {
            ladder(self.max)
        } else {
            let hi = self.hi()?;
            let res = self.resolution();
            let confirmed = self.confirmed(hi);
            if (hi - self.lo <= res && confirmed) || self.rounds > MAX_REFINE {
                return None;
            }
            let step = (hi - self.lo) / (PER_ROUND as u64 + 1);
            if step == 0 {
                return None;
            }
            let mut gaps: Vec<u64> = (1..=PER_ROUND as u64).map(|j| self.lo + step * j).collect();
            if !confirmed {
                let e = step.min(res / 2).max(1);
                gaps.extend((1..=CHECKS).map(|j| (hi + e * j).min(self.max)));
                gaps.dedup();
            }
            gaps
        };
        self.rounds += 1;
        Some(gaps)
    }
}

/// [`LADDER`] gaps from [`FIRST_GAP_NS`] to `max` (the last one `max` itself), in a geometric
/// progression; evenly spread when `max` is under [`FIRST_GAP_NS`] times the ladder's length.
pub fn ladder(max: u64) -> Vec<u64> {
    let n = LADDER as u64;
    if max <= FIRST_GAP_NS.saturating_mul(n) / 4 {
        return (1..=n).map(|j| max / n * j).collect();
    }
    let ratio = (max as f64 / FIRST_GAP_NS as f64).powf(1.0 / (n - 1) as f64);
    let mut gap = FIRST_GAP_NS as f64;
    (0..n)
        .map(|j| {
            // A float-to-int `as` saturates; the gaps are positive and at most `max`.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let g = if j == n - 1 { max } else { gap as u64 };
            gap *= ratio;
            g
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn the_ladder_spans_one_second_to_max() {
        let l = ladder(120 * S);
        assert_eq!((l.len(), l[0], l[LADDER - 1]), (LADDER, S, 120 * S));
        assert!(l.windows(2).all(|w| w[0] < w[1]));
        let short = ladder(6 * S);
        assert_eq!((short[0], short[LADDER - 1]), (S / 4, 6 * S));
    }

    /// A path that forgets after `t`: each round's gaps settle as it would.
    fn search(t: u64, max: u64, res: Option<u64>) -> Plan {
        let mut p = Plan::new(max, res);
        while let Some(gaps) = p.next_round() {
            for g in gaps {
                if !p.matters(g) {
                    continue;
                }
                if g < t {
                    p.alive(g);
                } else {
                    p.gone(g);
                }
            }
        }
        p
    }

    #[test]
    fn brackets_a_known_timeout_within_the_resolution() {
        for (t, res) in [
            (30 * S, None),
            (5 * S, Some(S / 2)),
            (117 * S, None),
            (S / 3, None),
        ] {
            let p = search(t, 120 * S, res);
            let hi = p.hi().unwrap();
            assert!(p.lo() < t && t <= hi, "{t}: {} {hi}", p.lo());
            assert!(hi - p.lo() <= p.resolution(), "{t}: {} {hi}", p.lo());
            assert!(p.rounds() <= 3, "{t}: {} rounds", p.rounds());
        }
    }

    #[test]
    fn a_flow_that_survives_max_ends_the_search() {
        let p = search(500 * S, 120 * S, None);
        assert!(p.longer_than_max());
        assert_eq!((p.rounds(), p.lo(), p.hi()), (1, 120 * S, None));
    }

    #[test]
    fn a_survivor_outweighs_an_expiry_below_it() {
        let mut p = Plan::new(60 * S, None);
        p.gone(10 * S);
        p.alive(20 * S);
        p.gone(30 * S);
        assert_eq!(
            (p.lo(), p.hi(), p.inconsistent()),
            (20 * S, Some(30 * S), 1)
        );
        // One expiry above the bracket's low end does not end the flows above it: a second
        // one does.
        assert!(!p.matters(15 * S) && p.matters(25 * S) && p.matters(31 * S));
        p.gone(40 * S);
        assert!(p.matters(35 * S) && !p.matters(41 * S));
    }

    #[test]
    fn two_percent_of_a_long_lifetime() {
        let mut p = Plan::new(600 * S, None);
        p.alive(300 * S);
        assert_eq!(p.resolution(), 6 * S);
    }
}
