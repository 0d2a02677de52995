//! Measurement values that add up: latency histograms, their summaries, jitter and error
//! counts. Each task keeps its own and they are merged at the end (`total += &part`), exactly:
//! percentiles always come from the merged histogram, never from averages of averages.
//!
//! Latencies are recorded in nanoseconds into HDR histograms that resolve 1 µs .. 1 h at three
//! significant digits (docs/measurement.md, "Percentiles come from HDR histograms"). Values above an hour are clamped and counted.
#![deny(clippy::indexing_slicing)] // decodes histograms from result files: see `[workspace.lints]`

pub mod compact;
mod counts;
mod errors;
mod jitter;
pub mod snapshot;
mod summary;
pub mod uncertainty;

pub use summary::Summary;

use std::ops::AddAssign;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use counts::PacketCounts;
pub use errors::{ErrorCounts, ErrorKind, EXAMPLES_PER_KIND};
pub use jitter::{Jitter, JitterMean};
pub use snapshot::Snapshot;
pub use uncertainty::{t95, Interval, Z95};

/// Lowest value told apart from zero, in ns. The measurement rules ask for 1 µs .. 1 h at three
/// significant digits; resolving from 1 ns keeps three digits even for the 10–50 µs round trips
/// of loopback, at a cost of ~256 KiB per histogram instead of ~190 KiB.
pub const LOWEST_NS: u64 = 1;
/// Highest value recorded: 1 h, in ns.
pub const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
/// Significant decimal digits kept at every magnitude.
pub const SIGFIG: u8 = 3;
/// How serialized histograms are encoded in result documents.
pub const ENCODING: &str = "hdr-v2-deflate-base64";

#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error("histogram encoding {0:?} is not {ENCODING}")]
    Encoding(String),
    #[error("histogram data is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("histogram data does not decode: {0}")]
    Decode(String),
    #[error("histogram is not a later reading of the one subtracted: {0}")]
    NotLater(String),
}

/// Highest value a new histogram has room for before it grows. A histogram is sized lazily:
/// it starts with the buckets for 1 ns .. ~16 µs (~24 KiB instead of ~256 KiB for the whole
/// range) and grows only as far as the values recorded into it reach, never past
/// [`HIGHEST_NS`]. Bucket boundaries depend only on the lowest value and the significant
/// digits, so every histogram records and merges exactly as a full-range one would; only
/// memory differs. That matters where many are alive at once (one per open stage per client).
const INITIAL_HIGHEST_NS: u64 = 16_384;

/// A latency histogram in nanoseconds. Mergeable with `+=`. Serializes as its
/// [`SerializedHistogram`], so values that hold histograms (a workload's stats) serialize too
/// — or, inside [`compact::collect`], as a reference into a side table of compact bytes; it
/// deserializes from either (the reference inside [`compact::provide`]).
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    /// Allocated at the first value: a histogram nothing was recorded into costs nothing,
    /// which matters where thousands exist at once and most stay empty (a probe session per
    /// `npt run` game user, whose RTTs go to the run's shared histograms instead).
    h: Option<hdrhistogram::Histogram<u64>>,
    clamped: u64,
}

// NO-PANIC: the bounds are constants that `new_with_bounds` accepts.
#[allow(clippy::expect_used)]
fn empty_hdr() -> hdrhistogram::Histogram<u64> {
    let mut h = hdrhistogram::Histogram::new_with_bounds(LOWEST_NS, INITIAL_HIGHEST_NS, SIGFIG)
        .expect("constant bounds are valid");
    h.auto(true);
    h
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram::default()
    }

    /// The recorded values; one shared empty histogram while nothing was recorded.
    fn get(&self) -> &hdrhistogram::Histogram<u64> {
        static EMPTY: std::sync::OnceLock<hdrhistogram::Histogram<u64>> =
            std::sync::OnceLock::new();
        self.h
            .as_ref()
            .unwrap_or_else(|| EMPTY.get_or_init(empty_hdr))
    }

    fn get_mut(&mut self) -> &mut hdrhistogram::Histogram<u64> {
        self.h.get_or_insert_with(empty_hdr)
    }

    /// Records one latency of `ns` nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    #[inline]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        let v = if ns > HIGHEST_NS {
            self.clamped += n;
            HIGHEST_NS
        } else {
            ns
        };
        // Cannot fail: the histogram grows (auto-resize) up to v <= HIGHEST_NS.
        let _ = self.get_mut().record_n(v, n);
    }

    pub fn count(&self) -> u64 {
        self.get().len()
    }

    pub fn is_empty(&self) -> bool {
        self.get().is_empty()
    }

    /// Values above one hour that were recorded as one hour.
    pub fn clamped(&self) -> u64 {
        self.clamped
    }

    /// The value at quantile `q` (0..=1) in ns.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        self.get().value_at_quantile(q)
    }

    pub fn max_ns(&self) -> u64 {
        self.get().max()
    }

    pub fn min_ns(&self) -> u64 {
        self.get().min()
    }

    pub fn mean_ns(&self) -> f64 {
        self.get().mean()
    }

    /// How far the recorded values reach above `over_ns`, added up (ns): Σ max(0, v − over).
    /// Each value stands for its HDR bucket's middle, as [`Histogram::mean_ns`] does.
    pub fn excess_sum_ns(&self, over_ns: u64) -> f64 {
        let h = self.get();
        h.iter_recorded()
            .map(|v| {
                let value = h.median_equivalent(v.value_iterated_to());
                value.saturating_sub(over_ns) as f64 * v.count_at_value() as f64
            })
            .sum()
    }

    /// The mean of the values at or below quantile `q` (0..=1), in ns: the "trimmed mean" of
    /// the IETF responsiveness draft (`q` = 0.95 drops the slowest 5 % before averaging).
    /// Each recorded value stands for its HDR bucket's middle, as [`Histogram::mean_ns`] does;
    /// 0 when the histogram is empty.
    pub fn trimmed_mean_ns(&self, q: f64) -> f64 {
        let h = self.get();
        if h.is_empty() {
            return 0.0;
        }
        // NO-PANIC: float-to-int `as` saturates; the count is at least 1.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let keep = ((h.len() as f64 * q.clamp(0.0, 1.0)).ceil() as u64).max(1);
        let (mut n, mut sum) = (0u64, 0.0f64);
        for v in h.iter_recorded() {
            let take = v.count_at_value().min(keep - n);
            sum += h.median_equivalent(v.value_iterated_to()) as f64 * take as f64;
            n += take;
            if n >= keep {
                break;
            }
        }
        sum / n as f64
    }

    /// Counts per bucket for explicit upper bounds `bounds_ns` (ascending, inclusive), plus
    /// one last count above the highest bound: what an OpenMetrics histogram exports. One pass
    /// over the recorded values (at most a few thousand distinct ones), so it can run on every
    /// scrape.
    pub fn bucket_counts(&self, bounds_ns: &[u64]) -> Vec<u64> {
        let mut out = vec![0u64; bounds_ns.len() + 1];
        for v in self.get().iter_recorded() {
            // A recorded value stands for its whole HDR bucket; its highest equivalent value
            // is what "at most `le`" compares (3 significant digits).
            let value = self.get().highest_equivalent(v.value_iterated_to());
            let i = bounds_ns.partition_point(|&b| b < value);
            if let Some(n) = out.get_mut(i) {
                *n += v.count_at_value();
            }
        }
        out
    }

    pub fn reset(&mut self) {
        if let Some(h) = &mut self.h {
            h.reset();
        }
        self.clamped = 0;
    }

    /// The histogram in a form that merges exactly after a JSON round trip.
    // NO-PANIC: the serializer fails only on a failed write, and a `Vec` write does not fail.
    #[allow(clippy::expect_used)]
    pub fn to_serialized(&self) -> SerializedHistogram {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(self.get(), &mut bytes)
            .expect("serializing into a Vec cannot fail");
        SerializedHistogram {
            encoding: ENCODING.to_string(),
            unit: "ns".to_string(),
            clamped: self.clamped,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    pub fn from_serialized(s: &SerializedHistogram) -> Result<Histogram, StatsError> {
        if s.encoding != ENCODING {
            return Err(StatsError::Encoding(s.encoding.clone()));
        }
        let bytes = base64::engine::general_purpose::STANDARD.decode(&s.data)?;
        let decoded: hdrhistogram::Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| StatsError::Decode(format!("{e:?}")))?;
        let mut out = Histogram::default();
        out.get_mut()
            .add(&decoded)
            .map_err(|e| StatsError::Decode(format!("{e:?}")))?;
        out.clamped = s.clamped;
        Ok(out)
    }
}

impl Histogram {
    /// The values recorded between an `earlier` reading of this same histogram and now: two
    /// snapshots of a growing histogram subtract into the interval's. Refused (and `self`
    /// left as it was) when `earlier` holds values this one does not.
    pub fn since(&self, earlier: &Histogram) -> Result<Histogram, StatsError> {
        let mut out = self.clone();
        if let Some(e) = &earlier.h {
            out.get_mut()
                .subtract(e)
                .map_err(|x| StatsError::NotLater(format!("{x:?}")))?;
        }
        out.clamped = self.clamped.saturating_sub(earlier.clamped);
        Ok(out)
    }
}

/// Equal when the same values were recorded: every bucket's count, and the clamped count,
/// whatever range each histogram has grown to (their serializations may differ in that).
impl PartialEq for Histogram {
    fn eq(&self, other: &Histogram) -> bool {
        let recorded = |h: &Histogram| {
            h.get()
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        self.clamped == other.clamped
            && self.count() == other.count()
            && recorded(self) == recorded(other)
    }
}

impl Serialize for Histogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match compact::put_side(self) {
            Some(reference) => s.serialize_str(&reference),
            None => self.to_serialized().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Histogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Histogram, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = Histogram;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a serialized histogram (an object, or a reference into a side table)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Histogram, E> {
                compact::get_side(v).map_err(E::custom)
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, m: M) -> Result<Histogram, M::Error> {
                let s = SerializedHistogram::deserialize(
                    serde::de::value::MapAccessDeserializer::new(m),
                )?;
                Histogram::from_serialized(&s).map_err(serde::de::Error::custom)
            }
        }
        d.deserialize_any(Either)
    }
}

impl From<Histogram> for SerializedHistogram {
    fn from(h: Histogram) -> SerializedHistogram {
        h.to_serialized()
    }
}

impl TryFrom<SerializedHistogram> for Histogram {
    type Error = StatsError;
    fn try_from(s: SerializedHistogram) -> Result<Histogram, StatsError> {
        Histogram::from_serialized(&s)
    }
}

impl AddAssign<&Histogram> for Histogram {
    fn add_assign(&mut self, rhs: &Histogram) {
        // Same lowest value and precision on both sides, and self grows to rhs's range, so
        // adding cannot fail.
        if let Some(r) = &rhs.h {
            let _ = self.get_mut().add(r);
        }
        self.clamped += rhs.clamped;
    }
}

/// A histogram as stored in a result document: an HDR histogram of nanoseconds (1 ns .. 1 h,
/// three significant digits), serialized so that files merge exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SerializedHistogram {
    /// HdrHistogram's V2 deflate serialization in base64, `hdr-v2-deflate-base64` ([`ENCODING`]).
    #[schemars(extend("const" = ENCODING))]
    pub encoding: String,
    /// Unit of the recorded values.
    #[schemars(extend("const" = "ns"))]
    pub unit: String,
    /// Values above the highest trackable (1 h) recorded as 1 h.
    #[serde(default)]
    pub clamped: u64,
    #[schemars(extend("contentEncoding" = "base64"))]
    pub data: String,
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_later_reading_less_an_earlier_one_is_the_interval_between() {
        let mut h = Histogram::new();
        for v in [1_000, 2_000, 3_000] {
            h.record(v);
        }
        let earlier = h.clone();
        for v in [100_000_000, 110_000_000] {
            h.record(v);
        }
        let d = h.since(&earlier).unwrap();
        assert_eq!(d.count(), 2);
        assert!(d.min_ns() >= 99_000_000, "{}", d.min_ns());
        assert!(d.quantile_ns(0.5) >= 99_000_000);
        assert_eq!(h.since(&Histogram::new()).unwrap().count(), 5);
        assert!(earlier.since(&h).is_err());
    }

    #[test]
    fn the_excess_over_a_bound_adds_up() {
        let mut h = Histogram::new();
        for v in [10_000_000, 40_000_000, 150_000_000, 150_000_000] {
            h.record(v);
        }
        // Over 100 ms: two values of 150 ms reach 50 ms past it each.
        let over = h.excess_sum_ns(100_000_000);
        assert!((over - 100e6).abs() < 0.2e6, "{over}");
        assert!((h.excess_sum_ns(0) - 350e6).abs() < 0.5e6);
        assert_eq!(Histogram::new().excess_sum_ns(0), 0.0);
    }

    #[test]
    fn trimmed_mean_drops_the_slowest_tail() {
        let mut h = Histogram::new();
        // 95 values of 10 ms and 5 of 1 s: the 95 % trimmed mean is 10 ms, the mean is not.
        h.record_n(10_000_000, 95);
        h.record_n(1_000_000_000, 5);
        let t = h.trimmed_mean_ns(0.95);
        assert!((t - 10_000_000.0).abs() < 10_000.0, "{t}");
        assert!(h.mean_ns() > 50_000_000.0);
        // Keeping everything is the mean; an empty histogram is 0.
        assert!((h.trimmed_mean_ns(1.0) - h.mean_ns()).abs() / h.mean_ns() < 1e-3);
        assert_eq!(Histogram::new().trimmed_mean_ns(0.95), 0.0);
    }

    #[test]
    fn bucket_counts_split_at_the_bounds() {
        let mut h = Histogram::new();
        for ns in [500, 1_000, 1_500, 2_000_000, 9_000_000_000] {
            h.record(ns);
        }
        assert_eq!(
            h.bucket_counts(&[1_000, 1_000_000, 1_000_000_000]),
            vec![2, 1, 1, 1]
        );
        assert_eq!(Histogram::new().bucket_counts(&[1]), vec![0, 0]);
    }

    use super::*;

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for i in 0..5000u64 {
            let v = (i * 7919) % 3_000_000 + 1000;
            if i % 3 == 0 {
                a.record(v)
            } else {
                b.record(v)
            }
            all.record(v);
        }
        a += &b;
        assert_eq!(a.summary(), all.summary());
    }

    #[test]
    fn lazily_sized_histograms_grow_to_an_hour_and_merge_both_ways() {
        // A small-range histogram merged into a grown one and the other way round gives the
        // same distribution as recording everything into one.
        let (mut small, mut big, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in [10u64, 2_000, 9_000] {
            small.record(v);
            all.record(v);
        }
        for v in [5_000_000u64, 90_000_000_000, HIGHEST_NS, HIGHEST_NS + 5] {
            big.record(v);
            all.record(v);
        }
        let mut a = small.clone();
        a += &big;
        let mut b = big.clone();
        b += &small;
        assert_eq!(a.summary(), all.summary());
        assert_eq!(b.summary(), all.summary());
        assert_eq!(all.clamped(), 1, "above an hour is clamped and counted");
        assert!(all.max_ns() >= HIGHEST_NS && all.max_ns() <= HIGHEST_NS + HIGHEST_NS / 1000);
        let back = Histogram::from_serialized(&small.to_serialized()).unwrap();
        assert_eq!(back.summary(), small.summary());
    }

    #[test]
    fn serialized_round_trip_is_exact() {
        let mut h = Histogram::new();
        for v in [1_000u64, 25_000, 25_000, 3_000_000, 2 * HIGHEST_NS] {
            h.record(v);
        }
        let s = h.to_serialized();
        let json = serde_json::to_string(&s).unwrap();
        let back: SerializedHistogram = serde_json::from_str(&json).unwrap();
        let h2 = Histogram::from_serialized(&back).unwrap();
        assert_eq!(h.summary(), h2.summary());
        assert_eq!(h2.clamped(), 1);
        // A histogram serializes as its serialized form, and reads back as itself.
        let direct: Histogram = serde_json::from_str(&serde_json::to_string(&h).unwrap()).unwrap();
        assert_eq!(direct.summary(), h.summary());
        assert_eq!(serde_json::to_value(&h).unwrap()["data"], json_data(&s));
        let bad = serde_json::json!({"encoding": "x", "unit": "ns", "data": ""});
        assert!(serde_json::from_value::<Histogram>(bad).is_err());
    }

    fn json_data(s: &SerializedHistogram) -> serde_json::Value {
        serde_json::Value::String(s.data.clone())
    }

    #[test]
    fn histograms_are_equal_when_their_counts_are() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        a.record(1_000);
        a.record(50_000_000);
        // b grows to a larger range first, then holds the same values.
        b.record(3_000_000_000);
        b.reset();
        b.record(50_000_000);
        b.record(1_000);
        assert_ne!(a.to_serialized(), b.to_serialized(), "the ranges differ");
        assert_eq!(a, b);
        b.record(1_000);
        assert_ne!(a, b);
        assert_eq!(Histogram::new(), Histogram::default());
    }

    #[test]
    fn bad_serialized_data_is_an_error_not_a_panic() {
        let mut s = Histogram::new().to_serialized();
        s.data = "!!!".into();
        assert!(Histogram::from_serialized(&s).is_err());
        s.data = base64::engine::general_purpose::STANDARD.encode(b"garbage");
        assert!(Histogram::from_serialized(&s).is_err());
        s.encoding = "csv".into();
        assert!(matches!(
            Histogram::from_serialized(&s),
            Err(StatsError::Encoding(_))
        ));
    }

    #[test]
    fn resolves_microseconds() {
        let mut h = Histogram::new();
        h.record(20_000);
        let got = h.quantile_ns(0.5);
        assert!(got.abs_diff(20_000) <= 20, "{got}");
    }
}
