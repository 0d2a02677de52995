//! The OpenMetrics text of [`crate::encode`], written line by line into a `String` instead of
//! through `prometheus-client`'s registry: the same bytes (its 0.23 encoder's, number
//! formatting included: `itoa` for counts, `dtoa` for floats), for callers that render a part
//! of a scrape ahead of time and keep it. `npt monitor` renders each target's series when its
//! round ends and a scrape only concatenates them: at ten thousand targets a scrape through the
//! registry built and sorted a million label strings each time (three quarters of a second).
//!
//! A scrape is its families in name order, each a header ([`header`]) followed by its series,
//! then [`EOF`]. The tests below check every function against [`crate::encode`].

use npt_stats::snapshot::{Family, Kind, Value, DURATION_BUCKETS_S};

/// The last line of every scrape.
pub const EOF: &str = "# EOF\n";

/// The name a family's header and series start with, and its unit if any: counters lose
/// `_total` (series add it back), histograms named `…_seconds` carry the unit.
fn base(name: &str, kind: Kind) -> (&str, Option<&'static str>) {
    match kind {
        Kind::Counter => (name.strip_suffix("_total").unwrap_or(name), None),
        Kind::Gauge => (name, None),
        Kind::Histogram => match name.strip_suffix("_seconds") {
            Some(b) => (b, Some("seconds")),
            None => (name, None),
        },
    }
}

/// A family's `# HELP`, `# TYPE` (and `# UNIT`) lines.
pub fn header(out: &mut String, name: &str, kind: Kind, help: &str) {
    let (b, unit) = base(name, kind);
    let full = |out: &mut String| {
        out.push_str(b);
        if let Some(u) = unit {
            out.push('_');
            out.push_str(u);
        }
    };
    out.push_str("# HELP ");
    full(out);
    out.push(' ');
    out.push_str(help);
    out.push_str("\n# TYPE ");
    full(out);
    out.push_str(match kind {
        Kind::Counter => " counter\n",
        Kind::Gauge => " gauge\n",
        Kind::Histogram => " histogram\n",
    });
    if let Some(u) = unit {
        out.push_str("# UNIT ");
        full(out);
        out.push(' ');
        out.push_str(u);
        out.push('\n');
    }
}

/// `{k="v",…}` (nothing for no labels), with `first` (a bucket's `le`) before the others.
/// Values are written as they are, as `prometheus-client` writes them.
fn labels<K: AsRef<str>, V: AsRef<str>>(out: &mut String, first: Option<&str>, l: &[(K, V)]) {
    if first.is_none() && l.is_empty() {
        return;
    }
    out.push('{');
    let mut comma = false;
    if let Some(le) = first {
        out.push_str("le=\"");
        out.push_str(le);
        out.push('"');
        comma = true;
    }
    for (k, v) in l {
        if comma {
            out.push(',');
        }
        comma = true;
        out.push_str(k.as_ref());
        out.push_str("=\"");
        out.push_str(v.as_ref());
        out.push('"');
    }
    out.push('}');
}

/// One counter series (`_total` is added to a `name` without it, as the registry does).
pub fn counter<K: AsRef<str>, V: AsRef<str>>(out: &mut String, name: &str, l: &[(K, V)], v: u64) {
    out.push_str(name);
    if !name.ends_with("_total") {
        out.push_str("_total");
    }
    labels(out, None, l);
    out.push(' ');
    out.push_str(itoa::Buffer::new().format(v));
    out.push('\n');
}

/// One gauge series.
pub fn gauge<K: AsRef<str>, V: AsRef<str>>(out: &mut String, name: &str, l: &[(K, V)], v: f64) {
    out.push_str(name);
    labels(out, None, l);
    out.push(' ');
    out.push_str(dtoa::Buffer::new().format(v));
    out.push('\n');
}

/// One histogram series: `buckets` as [`Value::Histogram`] holds them (per bucket of
/// [`DURATION_BUCKETS_S`], then the one above), written cumulative.
pub fn histogram<K: AsRef<str>, V: AsRef<str>>(
    out: &mut String,
    name: &str,
    l: &[(K, V)],
    buckets: &[u64],
    sum: f64,
    count: u64,
) {
    out.push_str(name);
    out.push_str("_sum");
    labels(out, None, l);
    out.push(' ');
    out.push_str(dtoa::Buffer::new().format(sum));
    out.push('\n');
    out.push_str(name);
    out.push_str("_count");
    labels(out, None, l);
    out.push(' ');
    out.push_str(itoa::Buffer::new().format(count));
    out.push('\n');
    let mut total = 0u64;
    let inf = buckets.last().copied().unwrap_or(0);
    let bounds = DURATION_BUCKETS_S
        .iter()
        .zip(buckets)
        .map(|(b, n)| (Some(*b), *n));
    for (bound, n) in bounds.chain([(None, inf)]) {
        total += n;
        out.push_str(name);
        out.push_str("_bucket");
        let mut d = dtoa::Buffer::new();
        labels(out, Some(bound.map_or("+Inf", |b| d.format(b))), l);
        out.push(' ');
        out.push_str(itoa::Buffer::new().format(total));
        out.push('\n');
    }
}

/// One series of a family named `name`, whatever its kind.
pub fn series<K: AsRef<str>, V: AsRef<str>>(out: &mut String, name: &str, l: &[(K, V)], v: &Value) {
    match v {
        Value::Counter(c) => counter(out, name, l, *c),
        Value::Gauge(g) => gauge(out, name, l, *g),
        Value::Histogram {
            buckets,
            sum,
            count,
        } => histogram(out, name, l, buckets, *sum, *count),
    }
}

/// A whole family of a [`crate::Snapshot`]: its header and every series in label order.
pub fn family(out: &mut String, name: &str, f: &Family) {
    header(out, name, f.kind, &f.help);
    for (l, v) in &f.series {
        series(out, name, l, v);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Snapshot, Source};
    use npt_stats::Histogram;

    fn registry(s: &Snapshot) -> String {
        let s = s.clone();
        let source: Source = Arc::new(move |out: &mut Snapshot| out.merge(&s));
        crate::encode(&source)
    }

    fn mine(s: &Snapshot) -> String {
        let mut out = String::new();
        for (name, f) in s.families() {
            family(&mut out, name, f);
        }
        out.push_str(EOF);
        out
    }

    #[test]
    fn every_kind_of_series_is_written_as_the_registry_writes_it() {
        let mut s = Snapshot::new();
        let mut h = Histogram::new();
        for ns in [40_000, 3_000_000, 3_100_000, 70_000_000, 20_000_000_000] {
            h.record(ns);
        }
        let l = [("vantage", "hk"), ("target", "relay-1"), ("kind", "ping")];
        s.histogram("npt_x_latency_seconds", "Latency.", &l, &h);
        s.histogram("npt_x_latency_seconds", "Latency.", &[("vantage", "b")], &h);
        s.histogram("npt_x_wait_seconds", "Unlabelled.", &[], &Histogram::new());
        s.counter("npt_x_rounds_total", "Rounds.", &l, 0);
        s.counter("npt_x_rounds_total", "Rounds.", &[("a", "1")], u64::MAX);
        s.counter("npt_x_plain_total", "No labels.", &[], 7);
        for (i, v) in [
            0.0,
            1.0,
            -1.5,
            600.0,
            0.02,
            1e-9,
            1.234_567_890_123e21,
            1_764_400_000.123,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
        ]
        .into_iter()
        .enumerate()
        {
            let i = i.to_string();
            s.gauge("npt_x_gauge", "Gauges.", &[("i", i.as_str())], v);
            s.gauge("npt_x_last_p50_seconds", "A gauge in seconds.", &l, v);
        }
        s.gauge("npt_x_bare", "A bare gauge.", &[], 2.5);
        let want = registry(&s);
        assert!(
            want.contains("# UNIT npt_x_latency_seconds seconds"),
            "{want}"
        );
        assert_eq!(mine(&s), want);
    }

    #[test]
    fn an_empty_scrape_is_its_last_line() {
        assert_eq!(mine(&Snapshot::new()), registry(&Snapshot::new()));
    }
}
