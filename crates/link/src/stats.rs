//! What a link actually applied, as a value that adds up: packet and byte counts in and out,
//! drops by cause, duplicates, reorderings, an HDR histogram of the delay error (when the
//! runtime really released each packet minus when it was due) and one of the bottleneck
//! queue's waiting time (from a packet's arrival to the start of its serialization), so that a
//! loaded test can compare what a probe saw with what the queue really held. One per link direction; the
//! lab merges them with `+=` and serializes them with the histogram, so saved stats merge
//! exactly later.

use std::ops::AddAssign;
use std::time::Duration;

use npt_stats::{Histogram, SerializedHistogram, StatsError};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A release this much after its due time counts as late (`released_late`): the box, not the
/// link's configuration, delayed the packet — by as much as the tester's own threshold for a
/// send behind schedule, so a figure read through a late link is suspect in the same way.
pub const LATE_RELEASE: Duration = Duration::from_millis(1);

/// Counters and the delay-error histogram of one link direction. Mergeable with `+=`.
#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    packets_in: u64,
    bytes_in: u64,
    packets_out: u64,
    bytes_out: u64,
    dropped_loss: u64,
    dropped_queue: u64,
    duplicated: u64,
    reordered: u64,
    released_early: u64,
    ce_marked: u64,
    delay_error: Histogram,
    queue_wait: Histogram,
}

/// The numbers of [`LinkStats`] a person reads: counters and delay error in µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkSummary {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub dropped_loss: u64,
    pub dropped_queue: u64,
    pub duplicated: u64,
    pub reordered: u64,
    /// Releases reported before their due time (a runtime bug if ever non-zero).
    pub released_early: u64,
    /// Releases recorded in the delay-error histogram.
    pub delay_error_count: u64,
    /// Releases more than [`LATE_RELEASE`] (1 ms) after their due time.
    #[serde(default)]
    pub released_late: u64,
    pub delay_error_p50_us: f64,
    pub delay_error_p99_us: f64,
    pub delay_error_max_us: f64,
    /// Packets that passed the bottleneck (a link with a `rate`) and their waiting time in its
    /// queue, arrival to the start of their serialization, ms.
    #[serde(default)]
    pub queue_wait_count: u64,
    #[serde(default)]
    pub queue_wait_p50_ms: f64,
    #[serde(default)]
    pub queue_wait_p99_ms: f64,
    #[serde(default)]
    pub queue_wait_max_ms: f64,
    /// ECN-capable packets the link marked CE (a link with an `ecn` threshold).
    #[serde(default)]
    pub ce_marked: u64,
}

impl LinkStats {
    pub fn packets_in(&self) -> u64 {
        self.packets_in
    }
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }
    /// Packets handed out by `pop_due`, duplicates included.
    pub fn packets_out(&self) -> u64 {
        self.packets_out
    }
    pub fn bytes_out(&self) -> u64 {
        self.bytes_out
    }
    /// Dropped by the loss model.
    pub fn dropped_loss(&self) -> u64 {
        self.dropped_loss
    }
    /// Dropped because the bottleneck queue was full.
    pub fn dropped_queue(&self) -> u64 {
        self.dropped_queue
    }
    /// Extra copies made.
    pub fn duplicated(&self) -> u64 {
        self.duplicated
    }
    /// Packets that skipped the delay and are due before a packet that arrived earlier.
    pub fn reordered(&self) -> u64 {
        self.reordered
    }
    pub fn released_early(&self) -> u64 {
        self.released_early
    }
    /// ECN-capable packets marked CE (`ecn`).
    pub fn ce_marked(&self) -> u64 {
        self.ce_marked
    }
    /// Actual release minus due time, in ns.
    pub fn delay_error(&self) -> &Histogram {
        &self.delay_error
    }
    /// The bottleneck queue's waiting time of each packet that passed it, in ns (empty
    /// without a `rate`).
    pub fn queue_wait(&self) -> &Histogram {
        &self.queue_wait
    }

    pub fn summary(&self) -> LinkSummary {
        let us = |ns: u64| ns as f64 / 1e3;
        let h = &self.delay_error;
        let (p50, p99, max) = if h.is_empty() {
            (0.0, 0.0, 0.0)
        } else {
            (
                us(h.quantile_ns(0.50)),
                us(h.quantile_ns(0.99)),
                us(h.max_ns()),
            )
        };
        let ms = |ns: u64| ns as f64 / 1e6;
        let q = &self.queue_wait;
        let (q50, q99, qmax) = if q.is_empty() {
            (0.0, 0.0, 0.0)
        } else {
            (
                ms(q.quantile_ns(0.50)),
                ms(q.quantile_ns(0.99)),
                ms(q.max_ns()),
            )
        };
        LinkSummary {
            packets_in: self.packets_in,
            bytes_in: self.bytes_in,
            packets_out: self.packets_out,
            bytes_out: self.bytes_out,
            dropped_loss: self.dropped_loss,
            dropped_queue: self.dropped_queue,
            duplicated: self.duplicated,
            reordered: self.reordered,
            released_early: self.released_early,
            delay_error_count: h.count(),
            released_late: late_count(h),
            delay_error_p50_us: p50,
            delay_error_p99_us: p99,
            delay_error_max_us: max,
            queue_wait_count: q.count(),
            queue_wait_p50_ms: q50,
            queue_wait_p99_ms: q99,
            queue_wait_max_ms: qmax,
            ce_marked: self.ce_marked,
        }
    }

    /// Stats put back together from a summary's counters and the two histograms (its
    /// percentiles are recomputed from the histograms): what a saved reading holds.
    pub fn from_parts(s: &LinkSummary, delay_error: Histogram, queue_wait: Histogram) -> LinkStats {
        LinkStats {
            packets_in: s.packets_in,
            bytes_in: s.bytes_in,
            packets_out: s.packets_out,
            bytes_out: s.bytes_out,
            dropped_loss: s.dropped_loss,
            dropped_queue: s.dropped_queue,
            duplicated: s.duplicated,
            reordered: s.reordered,
            released_early: s.released_early,
            ce_marked: s.ce_marked,
            delay_error,
            queue_wait,
        }
    }

    /// What was recorded since `earlier`, a reading of these same stats: two readings of a
    /// running link subtract into the figures of the time between them (one run of a test).
    /// Refused when `earlier` holds values these do not (it was not an earlier reading).
    pub fn since(&self, earlier: &LinkStats) -> Result<LinkStats, StatsError> {
        Ok(LinkStats {
            packets_in: self.packets_in.saturating_sub(earlier.packets_in),
            bytes_in: self.bytes_in.saturating_sub(earlier.bytes_in),
            packets_out: self.packets_out.saturating_sub(earlier.packets_out),
            bytes_out: self.bytes_out.saturating_sub(earlier.bytes_out),
            dropped_loss: self.dropped_loss.saturating_sub(earlier.dropped_loss),
            dropped_queue: self.dropped_queue.saturating_sub(earlier.dropped_queue),
            duplicated: self.duplicated.saturating_sub(earlier.duplicated),
            reordered: self.reordered.saturating_sub(earlier.reordered),
            released_early: self.released_early.saturating_sub(earlier.released_early),
            ce_marked: self.ce_marked.saturating_sub(earlier.ce_marked),
            delay_error: self.delay_error.since(&earlier.delay_error)?,
            queue_wait: self.queue_wait.since(&earlier.queue_wait)?,
        })
    }

    pub(crate) fn record_in(&mut self, len: usize) {
        self.packets_in += 1;
        self.bytes_in = self.bytes_in.saturating_add(len as u64);
    }
    pub(crate) fn record_out(&mut self, len: usize) {
        self.packets_out += 1;
        self.bytes_out = self.bytes_out.saturating_add(len as u64);
    }
    pub(crate) fn record_loss(&mut self) {
        self.dropped_loss += 1;
    }
    pub(crate) fn record_queue_drop(&mut self) {
        self.dropped_queue += 1;
    }
    pub(crate) fn record_ce_mark(&mut self) {
        self.ce_marked += 1;
    }
    pub(crate) fn record_duplicate(&mut self) {
        self.duplicated += 1;
    }
    pub(crate) fn record_reorder(&mut self) {
        self.reordered += 1;
    }
    pub(crate) fn record_queue_wait(&mut self, wait: Duration) {
        self.queue_wait
            .record(u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX));
    }
    pub(crate) fn record_delay_error(&mut self, late: Duration, early: bool) {
        if early {
            self.released_early += 1;
        }
        self.delay_error
            .record(u64::try_from(late.as_nanos()).unwrap_or(u64::MAX));
    }
}

/// Releases in `h` (ns) above [`LATE_RELEASE`].
fn late_count(h: &Histogram) -> u64 {
    if h.is_empty() {
        return 0;
    }
    let late = u64::try_from(LATE_RELEASE.as_nanos()).unwrap_or(u64::MAX);
    h.bucket_counts(&[late]).get(1).copied().unwrap_or(0)
}

impl AddAssign<&LinkStats> for LinkStats {
    fn add_assign(&mut self, o: &LinkStats) {
        self.packets_in += o.packets_in;
        self.bytes_in = self.bytes_in.saturating_add(o.bytes_in);
        self.packets_out += o.packets_out;
        self.bytes_out = self.bytes_out.saturating_add(o.bytes_out);
        self.dropped_loss += o.dropped_loss;
        self.dropped_queue += o.dropped_queue;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
        self.released_early += o.released_early;
        self.ce_marked += o.ce_marked;
        self.delay_error += &o.delay_error;
        self.queue_wait += &o.queue_wait;
    }
}

impl AddAssign for LinkStats {
    fn add_assign(&mut self, o: LinkStats) {
        *self += &o;
    }
}

/// The serialized form: the summary's fields, flattened, plus the histograms under
/// `delay_error` and `queue_wait` (unit ns) so that saved stats merge exactly. Stats saved
/// before the queue's waiting time was kept read as an empty one.
#[derive(Serialize, Deserialize)]
struct LinkStatsDoc {
    #[serde(flatten)]
    summary: LinkSummary,
    delay_error: SerializedHistogram,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    queue_wait: Option<SerializedHistogram>,
}

impl Serialize for LinkStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        LinkStatsDoc {
            summary: self.summary(),
            delay_error: self.delay_error.to_serialized(),
            queue_wait: Some(self.queue_wait.to_serialized()),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for LinkStats {
    /// Counters and the histogram are read; the percentiles are recomputed from the histogram.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let doc = LinkStatsDoc::deserialize(d)?;
        let delay_error =
            Histogram::from_serialized(&doc.delay_error).map_err(serde::de::Error::custom)?;
        let queue_wait = match &doc.queue_wait {
            Some(q) => Histogram::from_serialized(q).map_err(serde::de::Error::custom)?,
            None => Histogram::default(),
        };
        Ok(LinkStats::from_parts(&doc.summary, delay_error, queue_wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(k: u64) -> LinkStats {
        let mut s = LinkStats::default();
        for i in 0..k {
            s.record_in(100);
            s.record_out(100);
            s.record_delay_error(Duration::from_micros(10 * (i + 1)), false);
            s.record_queue_wait(Duration::from_millis(i));
        }
        s.record_loss();
        s.record_queue_drop();
        s.record_duplicate();
        s.record_reorder();
        s
    }

    #[test]
    fn stats_merge_with_plus_assign() {
        let mut total = sample(3);
        total += &sample(2);
        total += sample(1);
        let s = total.summary();
        assert_eq!(s.packets_in, 6);
        assert_eq!(s.bytes_out, 600);
        assert_eq!(s.dropped_loss, 3);
        assert_eq!(s.dropped_queue, 3);
        assert_eq!(s.duplicated, 3);
        assert_eq!(s.reordered, 3);
        assert_eq!(s.delay_error_count, 6);
        // 10,20,30 + 10,20 + 10 µs: median 10..20, max 30 (HDR: 3 significant digits).
        assert!((s.delay_error_max_us - 30.0).abs() < 0.1, "{s:?}");
        assert!((s.delay_error_p50_us - 20.0).abs() < 10.1, "{s:?}");
        // 0,1,2 + 0,1 + 0 ms of queue: six waits, the longest 2 ms.
        assert_eq!(s.queue_wait_count, 6);
        assert!((s.queue_wait_max_ms - 2.0).abs() < 0.01, "{s:?}");
    }

    #[test]
    fn two_readings_subtract_into_the_time_between_them() {
        let mut s = sample(3);
        let earlier = s.clone();
        s.record_in(100);
        s.record_delay_error(Duration::from_micros(8_700), false);
        s.record_delay_error(Duration::from_micros(900), false);
        s.record_queue_drop();
        let d = s.since(&earlier).unwrap().summary();
        assert_eq!(
            (d.packets_in, d.dropped_queue, d.delay_error_count),
            (1, 1, 2)
        );
        assert_eq!(d.released_late, 1, "8.7 ms is late, 0.9 ms is not");
        assert!((d.delay_error_max_us - 8_700.0).abs() < 10.0, "{d:?}");
        assert_eq!(s.summary().released_late, 1);
        assert!(earlier.since(&s).is_err(), "not an earlier reading");
    }

    #[test]
    fn stats_survive_json_and_merge_exactly_after() {
        let a = sample(50);
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.contains("\"delay_error_p99_us\""), "{json}");
        assert!(json.contains("\"delay_error\":{"), "{json}");
        let back: LinkStats = serde_json::from_str(&json).unwrap();
        assert_eq!(back.summary(), a.summary());
        let mut m1 = a.clone();
        m1 += &a;
        let mut m2 = back.clone();
        m2 += &back;
        assert_eq!(m1.summary(), m2.summary());
        assert!(LinkStats::default().summary().delay_error_max_us == 0.0);
        assert_eq!(back.queue_wait().count(), 50);
        // Stats saved before the queue's waiting time was kept still read.
        let mut old: serde_json::Value = serde_json::from_str(&json).unwrap();
        let o = old.as_object_mut().unwrap();
        for k in [
            "queue_wait",
            "queue_wait_count",
            "queue_wait_p50_ms",
            "queue_wait_p99_ms",
            "queue_wait_max_ms",
        ] {
            o.remove(k);
        }
        let back: LinkStats = serde_json::from_value(old).unwrap();
        assert_eq!((back.packets_in(), back.queue_wait().count()), (50, 0));
    }
}
