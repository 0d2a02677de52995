//! A histogram in as few bytes as its recorded buckets need, for stores that keep one per
//! round and per rollup (`npt monitor`). Every histogram here has the same bucket layout
//! (1 ns lowest, three significant digits), so nothing of the layout is written: only which
//! buckets hold values and how many. Exact: a histogram read back equals the one written
//! (every bucket's count, and the clamped count).
//!
//! Layout: `varint(clamped)`, then from bucket 0 upwards a run of empty buckets as
//! `varint((n << 1) | 1)` and a recorded bucket as `varint(count << 1)` — HdrHistogram's own V2
//! count array (zero runs and counts in one varint stream), less its 40-byte header: a dense
//! day's histogram is about a byte per bucket, which deflate takes further, and a sparse one a
//! gap and a count per value. An empty histogram with nothing clamped is zero bytes. A
//! 5-sample round is about a dozen bytes where the V2 deflate serialization, base64 and its
//! JSON wrapper took ~140.
//!
//! [`collect`] and [`provide`] make [`Histogram`]'s serde form a reference into a side table
//! of these bytes for the time of a closure: a store serializes a workload's stats value (JSON)
//! through them and keeps the table beside it.

use std::cell::RefCell;

use crate::{Histogram, StatsError};

/// Buckets per half-magnitude at three significant digits (2048 sub-buckets, half of them new
/// at each power of two), with 1 ns the lowest value: hdrhistogram's own index arithmetic.
const HALF_MAG: u32 = 10;
const HALF: u64 = 1 << HALF_MAG;
const LZ_BASE: u32 = 64 - HALF_MAG - 1;

/// The index of the bucket holding `v`.
fn index(v: u64) -> u64 {
    let bucket = LZ_BASE - (v | (2 * HALF - 1)).leading_zeros();
    let sub = v >> bucket;
    ((u64::from(bucket) + 1) << HALF_MAG) + sub - HALF
}

/// The lowest value of bucket `i` (recording it lands in bucket `i`).
fn value(i: u64) -> Option<u64> {
    let (bucket, sub) = match (i >> HALF_MAG).checked_sub(1) {
        Some(b) => (b, (i & (HALF - 1)) + HALF),
        None => (0, i & (HALF - 1)),
    };
    sub.checked_shl(u32::try_from(bucket).ok()?)
        .filter(|v| v >> bucket == sub && *v <= crate::HIGHEST_NS)
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        // NO-PANIC: the low 7 bits of a u64 fit a u8.
        #[allow(clippy::cast_possible_truncation)]
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    #[allow(clippy::cast_possible_truncation)]
    out.push(v as u8);
}

fn get(b: &mut &[u8]) -> Result<u64, StatsError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some((&x, rest)) = b.split_first() else {
            return Err(StatsError::Decode("compact histogram cut short".into()));
        };
        *b = rest;
        v |= u64::from(x & 0x7f) << shift;
        if x & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(StatsError::Decode(
        "compact histogram varint too long".into(),
    ))
}

/// The histogram's recorded buckets as bytes.
pub fn encode(h: &Histogram) -> Vec<u8> {
    let mut out = Vec::new();
    if h.is_empty() && h.clamped == 0 {
        return out;
    }
    put(&mut out, h.clamped);
    let mut next = 0u64;
    for v in h.get().iter_recorded() {
        let i = index(v.value_iterated_to());
        if i > next {
            put(&mut out, ((i - next) << 1) | 1);
        }
        put(&mut out, v.count_at_value() << 1);
        next = i + 1;
    }
    out
}

/// A histogram from [`encode`]'s bytes; bytes that do not decode are an error, never a panic.
pub fn decode(mut b: &[u8]) -> Result<Histogram, StatsError> {
    let mut h = Histogram::default();
    if b.is_empty() {
        return Ok(h);
    }
    h.clamped = get(&mut b)?;
    let mut next = 0u64;
    while !b.is_empty() {
        let x = get(&mut b)?;
        if x & 1 == 1 {
            next = next
                .checked_add(x >> 1)
                .ok_or_else(|| StatsError::Decode("compact histogram index overflows".into()))?;
            continue;
        }
        let v =
            value(next).ok_or_else(|| StatsError::Decode(format!("bucket {next} out of range")))?;
        h.get_mut()
            .record_n(v, x >> 1)
            .map_err(|e| StatsError::Decode(format!("{e:?}")))?;
        next += 1;
    }
    Ok(h)
}

/// Where [`Histogram`]'s serde goes on this thread: nowhere special, or a side table.
enum Side {
    Off,
    /// Serializing: each histogram's [`encode`]d bytes, length-prefixed, in order; how many.
    Write(Vec<u8>, usize),
    /// Deserializing: the side table's histograms.
    Read(Vec<Vec<u8>>),
}

thread_local! {
    static SIDE: RefCell<Side> = const { RefCell::new(Side::Off) };
}

/// Puts `side` in place for the time of `f` (restored after, even on a panic).
fn with_side<T>(side: Side, f: impl FnOnce() -> T) -> (T, Side) {
    struct Restore(Option<Side>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(s) = self.0.take() {
                SIDE.with(|c| *c.borrow_mut() = s);
            }
        }
    }
    let mut restore = Restore(Some(SIDE.with(|c| c.replace(side))));
    let out = f();
    let mine = SIDE.with(|c| c.replace(restore.0.take().unwrap_or(Side::Off)));
    (out, mine)
}

/// Runs `f` (a serialization) with every [`Histogram`] written as a reference (`"#3"`) into
/// a side table of their [`encode`]d bytes, returned beside: raw bytes deflate well (runs of
/// neighbouring buckets look alike) where base64 text would not.
pub fn collect<T>(f: impl FnOnce() -> T) -> (T, Vec<u8>) {
    match with_side(Side::Write(Vec::new(), 0), f) {
        (out, Side::Write(side, _)) => (out, side),
        (out, _) => (out, Vec::new()),
    }
}

/// Runs `f` (a deserialization) with the references [`collect`] wrote resolved in `side`.
pub fn provide<T>(mut side: &[u8], f: impl FnOnce() -> T) -> Result<T, StatsError> {
    let mut all = Vec::new();
    while !side.is_empty() {
        let n = usize::try_from(get(&mut side)?)
            .map_err(|_| StatsError::Decode("side table entry too long".into()))?;
        let (h, rest) = side
            .split_at_checked(n)
            .ok_or_else(|| StatsError::Decode("side table cut short".into()))?;
        all.push(h.to_vec());
        side = rest;
    }
    Ok(with_side(Side::Read(all), f).0)
}

/// In [`collect`]: the reference this histogram is written as.
pub(crate) fn put_side(h: &Histogram) -> Option<String> {
    SIDE.with(|c| match &mut *c.borrow_mut() {
        Side::Write(side, n) => {
            *n += 1;
            let b = encode(h);
            put(side, b.len() as u64);
            side.extend_from_slice(&b);
            Some(format!("#{}", *n - 1))
        }
        _ => None,
    })
}

/// In [`provide`]: the histogram a reference names.
pub(crate) fn get_side(reference: &str) -> Result<Histogram, StatsError> {
    let i: usize = reference
        .strip_prefix('#')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| StatsError::Decode(format!("not a histogram reference: {reference:?}")))?;
    SIDE.with(|c| match &*c.borrow() {
        Side::Read(all) => all
            .get(i)
            .ok_or_else(|| {
                StatsError::Decode(format!("no histogram {reference} in the side table"))
            })
            .and_then(|b| decode(b)),
        _ => Err(StatsError::Decode(format!(
            "histogram reference {reference} outside a side table"
        ))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_index_is_hdrhistogram_s() {
        let h = crate::empty_hdr();
        let mut v = 1u64;
        while v <= crate::HIGHEST_NS {
            let xs = [v, v + 1, v * 3 / 2, h.highest_equivalent(v)];
            for x in xs.into_iter().filter(|&x| x <= crate::HIGHEST_NS) {
                let back = value(index(x)).unwrap();
                assert_eq!(back, h.lowest_equivalent(x), "{x}");
            }
            v = v * 5 / 4 + 1;
        }
        assert_eq!(value(index(crate::HIGHEST_NS) + 4096), None);
    }

    #[test]
    fn round_trip_is_exact_and_small() {
        let mut h = Histogram::new();
        assert!(encode(&h).is_empty());
        assert!(decode(&[]).unwrap() == h);
        for (i, v) in [
            20_013_000u64,
            20_013_001,
            21_000_000,
            55,
            1,
            3_599_999_999_999,
        ]
        .into_iter()
        .enumerate()
        {
            h.record_n(v, i as u64 + 1);
        }
        h.record(7_200 * 1_000_000_000); // clamped
        let b = encode(&h);
        assert!(b.len() < 40, "{}", b.len());
        assert!(decode(&b).unwrap() == h);
        let mut five = Histogram::new();
        for ms in [20, 21, 22, 25, 31] {
            five.record(ms * 1_000_000 + 12_345);
        }
        assert!(encode(&five).len() <= 16, "{}", encode(&five).len());
        for bad in [
            &[0x80u8][..],
            &[
                0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 2,
            ],
        ] {
            assert!(decode(bad).is_err());
        }
    }

    #[test]
    fn a_side_table_carries_the_histograms_of_a_value() {
        let mut a = Histogram::new();
        a.record(20_000_000);
        let v = vec![a.clone(), Histogram::new(), a.clone()];
        let (json, side) = collect(|| serde_json::to_string(&v).unwrap());
        assert_eq!(json, r##"["#0","#1","#2"]"##);
        let back: Vec<Histogram> = provide(&side, || serde_json::from_str(&json).unwrap()).unwrap();
        assert!(back == v);
        assert!(
            provide(&side, || serde_json::from_str::<Histogram>(r##""#3""##))
                .unwrap()
                .is_err()
        );
        assert!(
            serde_json::from_str::<Histogram>(r##""#0""##).is_err(),
            "no table, no histogram"
        );
        assert!(provide(&[9, 1], || ()).is_err());
    }
}
