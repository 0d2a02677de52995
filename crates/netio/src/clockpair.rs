//! A monotonic clock and the wall clock read at one instant.
//!
//! Why: the kernel stamps arrivals and far ends stamp replies on the wall clock
//! (`CLOCK_REALTIME`), while a tester times its run on a monotonic clock. To carry a wall-clock
//! stamp onto the run's clock it needs the two clocks' difference, and read back to back the two
//! reads are ~50 ns apart — unless the thread is preempted between them, when the difference is
//! off by the preemption: tens of µs to a few hundred on a busy host (181 µs here, once in
//! 60,000 reads, beside iperf3 on loopback and two busy loops). Every delay aged by that pair
//! would carry it. Reading the wall clock between two reads of the monotonic one bounds the
//! error by the bracket; a few tries find a bracket that was not preempted.

/// At most this many bracketed reads, and the bracket width (ns) that ends the search: two
/// reads of the monotonic clock take ~50 ns here, a preemption tens of µs or more.
const READS: usize = 5;
const TIGHT_NS: u64 = 2_000;

/// `(mono, wall)` at one instant: `mono()` (ns since the caller's start) and the wall clock
/// (ns since the Unix epoch), the wall read inside the narrowest bracket of `mono` reads.
pub fn now(mut mono: impl FnMut() -> u64) -> (u64, u64) {
    narrowest(|| {
        let before = mono();
        let wall = crate::rxtime::wall_ns();
        (before, wall, mono())
    })
}

/// The pair from reads `(mono before, wall, mono after)`: the wall clock was read somewhere in
/// the bracket, so pairing it with the bracket's middle is off by at most half its width. The
/// narrowest of up to [`READS`] reads, stopping at the first under [`TIGHT_NS`].
fn narrowest(mut read: impl FnMut() -> (u64, u64, u64)) -> (u64, u64) {
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..READS {
        let (before, wall, after) = read();
        let width = after.saturating_sub(before);
        if best.is_none_or(|(w, _, _)| width < w) {
            best = Some((width, before + width / 2, wall));
        }
        if width < TIGHT_NS {
            break;
        }
    }
    best.map_or((0, 0), |(_, mono, wall)| (mono, wall))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pair_comes_from_the_narrowest_bracket() {
        // The wall clock is mono + 1,000,000,000. First read: preempted 190 µs between the
        // wall read and the second mono read (back to back, the pair would be off by 190 µs;
        // its bracket's middle still by 95); the second bracket is 60 ns wide.
        let reads = [
            (1_000, 1_000_001_050, 191_050),
            (200_000, 1_000_200_030, 200_060),
        ];
        let mut it = reads.iter().copied();
        let mut n = 0;
        let (mono, wall) = narrowest(|| {
            n += 1;
            it.next().unwrap()
        });
        assert_eq!(wall - mono, 1_000_000_000);
        assert_eq!(n, 2, "stops at the first tight bracket");

        // Never tight (brackets 90 … 50 µs, each pair off by its width): the narrowest of them
        // all, and no more than READS reads.
        let mut n = 0;
        let (mono, wall) = narrowest(|| {
            n += 1;
            let width = 100_000 - 10_000 * n;
            (0, 1_000_000_000 + width / 2 + width, width)
        });
        assert_eq!((wall - mono, n), (1_000_050_000, READS as u64));
    }

    #[test]
    fn the_real_clocks_pair_within_a_tight_bracket_on_an_idle_thread() {
        let start = std::time::Instant::now();
        let mono = || u64::try_from(start.elapsed().as_nanos()).unwrap();
        let (m, w) = now(mono);
        let (m2, w2) = now(mono);
        // The two pairs' differences agree to the brackets' widths (the clocks run at one rate
        // over a microsecond; an NTP step in between would break this, and none is running): well
        // under the 100 µs a preempted back-to-back read can be off by on a busy host.
        let (d1, d2) = (w - m, w2 - m2);
        assert!(d1.abs_diff(d2) < 100_000, "{d1} vs {d2}");
    }
}
