//! The responder's view of one flow's sequence numbers: whether an arrival is new, a
//! duplicate, or below the highest seen (reordered). The client knows only what came back;
//! this is what the responder saw on the way *up*, so the two can be told apart.
//!
//! Bounded: the highest sequence number and a bitmap of the [`SPAN`] numbers below it (40
//! bytes). An arrival older than that is counted as reordered, not as a duplicate: it cannot be
//! told apart any more, and a reorder that deep is far rarer than a duplicate that old.

/// How far below the highest sequence number arrivals are remembered.
pub const SPAN: u64 = 256;

/// What an arrival was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Above everything seen before (or the first).
    New,
    /// Below the highest seen, and not seen before (or too old to tell).
    Reordered,
    /// Seen before.
    Duplicate,
}

/// Highest sequence number seen, and which of the [`SPAN`] below it arrived.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    highest: Option<u64>,
    /// Bit `k` (word `k / 64`, bit `k % 64`): `highest - k` arrived.
    bits: [u64; 4],
}

impl Seen {
    pub fn on_arrival(&mut self, seq: u64) -> Arrival {
        let Some(highest) = self.highest else {
            self.highest = Some(seq);
            self.bits = [1, 0, 0, 0];
            return Arrival::New;
        };
        if seq > highest {
            self.shift(seq - highest);
            self.bits[0] |= 1;
            self.highest = Some(seq);
            return Arrival::New;
        }
        let back = highest - seq;
        if back >= SPAN {
            return Arrival::Reordered;
        }
        let (w, b) = (usize::try_from(back / 64).unwrap_or(usize::MAX), back % 64);
        let Some(word) = self.bits.get_mut(w) else {
            return Arrival::Reordered;
        };
        if *word & (1 << b) != 0 {
            return Arrival::Duplicate;
        }
        *word |= 1 << b;
        if back == 0 {
            Arrival::New
        } else {
            Arrival::Reordered
        }
    }

    /// Moves the bitmap `by` numbers towards the old end (the highest grew by `by`).
    fn shift(&mut self, by: u64) {
        if by >= SPAN {
            self.bits = [0; 4];
            return;
        }
        let words = usize::try_from(by / 64).unwrap_or(usize::MAX);
        let bits = u32::try_from(by % 64).unwrap_or(0);
        let old = self.bits;
        for (i, out) in self.bits.iter_mut().enumerate() {
            let from = |k: usize| i.checked_sub(k).and_then(|j| old.get(j)).copied();
            let hi = from(words).unwrap_or(0);
            let lo = from(words + 1).unwrap_or(0);
            *out = if bits == 0 {
                hi
            } else {
                (hi << bits) | (lo >> (64 - bits))
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seqs: &[u64]) -> Vec<Arrival> {
        let mut s = Seen::default();
        seqs.iter().map(|&q| s.on_arrival(q)).collect()
    }

    use Arrival::{Duplicate as D, New as N, Reordered as R};

    #[test]
    fn in_order_duplicates_and_reorders() {
        assert_eq!(run(&[0, 1, 2, 3]), [N, N, N, N]);
        assert_eq!(run(&[0, 2, 1, 1, 2, 3]), [N, N, R, D, D, N]);
        assert_eq!(run(&[5, 5]), [N, D], "a duplicate of the highest");
        assert_eq!(run(&[10, 3]), [N, R], "the first need not be 0");
    }

    #[test]
    fn the_window_spans_256_numbers_across_words() {
        for gap in [1u64, 63, 64, 65, 127, 128, 200, 255] {
            let mut s = Seen::default();
            assert_eq!(s.on_arrival(1000), N);
            assert_eq!(s.on_arrival(1000 + gap), N);
            assert_eq!(s.on_arrival(1000), D, "gap {gap}: still remembered");
            if gap > 1 {
                assert_eq!(s.on_arrival(1001), R, "gap {gap}");
                assert_eq!(s.on_arrival(1001), D, "gap {gap}");
            }
        }
        let mut s = Seen::default();
        s.on_arrival(1000);
        s.on_arrival(1256);
        assert_eq!(
            s.on_arrival(1000),
            R,
            "256 below: too old to tell, counted new"
        );
        let mut s = Seen::default();
        s.on_arrival(0);
        s.on_arrival(10_000);
        assert_eq!(s.on_arrival(9_999), R, "a jump clears the window");
        assert_eq!(s.on_arrival(10_000), D);
    }

    #[test]
    fn a_long_run_with_every_number_twice_finds_every_duplicate() {
        let mut s = Seen::default();
        let (mut dups, mut reord) = (0, 0);
        for q in 0..10_000u64 {
            for x in [q, q.saturating_sub(100)] {
                match s.on_arrival(x) {
                    D => dups += 1,
                    R => reord += 1,
                    N => {}
                }
            }
        }
        assert_eq!((dups, reord), (10_000, 0));
    }
}
