//! A histogram allocates its buckets at the first value (thousands of per-session ones may
//! stay empty): an empty one must still read, serialize and merge exactly as a filled-then-
//! emptied one does.

#![cfg(test)]

use npt_stats::{Histogram, Summary};

#[test]
fn an_empty_histogram_reads_serializes_and_merges_like_any_other() {
    let empty = Histogram::new();
    assert!(empty.is_empty());
    assert_eq!(
        (
            empty.count(),
            empty.min_ns(),
            empty.max_ns(),
            empty.quantile_ns(0.5)
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(empty.mean_ns(), 0.0);
    assert_eq!(empty.summary(), Summary::default());
    assert_eq!(empty.bucket_counts(&[1_000, 1_000_000]), vec![0, 0, 0]);
    // Same document as a histogram that held values and was reset.
    let mut reset = Histogram::new();
    reset.record(5_000);
    reset.reset();
    assert_eq!(empty.to_serialized(), reset.to_serialized());
    let back = Histogram::from_serialized(&empty.to_serialized()).unwrap();
    assert!(back.is_empty());

    let mut filled = Histogram::new();
    for ns in [1_000, 2_000, 3_000_000, 7_200_000_000_000] {
        filled.record(ns);
    }
    let before = filled.summary();
    filled += &empty;
    assert_eq!(
        filled.summary(),
        before,
        "adding an empty one changes nothing"
    );
    let mut sum = Histogram::new();
    sum += &filled;
    assert_eq!(sum.summary(), before, "an empty one takes all of another");
    assert_eq!((sum.clamped(), filled.clamped()), (1, 1));
    assert_eq!(
        sum.bucket_counts(&[1_500, 1_000_000]),
        filled.bucket_counts(&[1_500, 1_000_000])
    );
}
