//! One target's part of a scrape, rendered when its round ends and kept until the next: the
//! text of its series in each per-target family. A scrape writes each family's header and the
//! targets' parts of it one after another ([`super::scrape`]), so at ten thousand targets it
//! copies text (8.6 ms in the process) instead of building and sorting a million labels
//! (477 ms, and short-lived strings that stayed in the RSS). A round pays for its target's
//! render on its way into [`crate::live`], within the noise of that step's ~20 µs
//! (`examples/scrape_cost.rs`).
//!
//! The bytes are those the registry writes ([`npt_metrics::text`]); `super::tests` checks a
//! scrape of kept parts against a fresh render through `prometheus-client` after rounds of
//! every kind and status.

use npt_metrics::text;
use npt_stats::snapshot::{Kind, Value};

use crate::live::{TargetLive, LATENCY, LATENCY_HELP};

/// A family every target has a part of.
pub struct Fam {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
}

const fn fam(name: &'static str, kind: Kind, help: &'static str) -> Fam {
    Fam { name, kind, help }
}

pub const ERRORS: Fam = fam(
    "npt_monitor_errors_total",
    Kind::Counter,
    "Errors the target's rounds counted (every kind).",
);
pub const CE: Fam = fam(
    "npt_monitor_last_ce_ratio",
    Kind::Gauge,
    "The last marked probe round's share of packets that arrived marked CE, by direction (sent ECN-capable).",
);
pub const GOODPUT: Fam = fam(
    "npt_monitor_last_goodput_bps",
    Kind::Gauge,
    "The last round's goodput, both ways (bits/s).",
);
pub const LOSS: Fam = fam(
    "npt_monitor_last_loss_ratio",
    Kind::Gauge,
    "The last round's loss: lost / (sent - refused).",
);
pub const MARKING: Fam = fam(
    "npt_monitor_last_marking_arrived",
    Kind::Gauge,
    "1 if the last marked probe round's DSCP and ECN arrived as sent, 0 if bleached, rewritten or mixed, by direction (where the far end said).",
);
pub const MTU: Fam = fam(
    "npt_monitor_last_mtu_bytes",
    Kind::Gauge,
    "The last mtu round's largest datagram that crossed, by direction (bytes of UDP payload).",
);
pub const P50: Fam = fam(
    "npt_monitor_last_p50_seconds",
    Kind::Gauge,
    "The last round's headline latency, its median (exact, from its histogram).",
);
pub const P90: Fam = fam(
    "npt_monitor_last_p90_seconds",
    Kind::Gauge,
    "The last round's headline latency, its 90th percentile (exact).",
);
pub const P99: Fam = fam(
    "npt_monitor_last_p99_seconds",
    Kind::Gauge,
    "The last round's headline latency, its 99th percentile (exact).",
);
pub const LAST_START: Fam = fam(
    "npt_monitor_last_round_timestamp_seconds",
    Kind::Gauge,
    "When the target's last round that measured started (Unix time).",
);
pub const RPM: Fam = fam(
    "npt_monitor_last_rpm",
    Kind::Gauge,
    "The last round's responsiveness under load (round trips per minute).",
);
pub const LATENCY_FAM: Fam = fam(LATENCY, Kind::Histogram, LATENCY_HELP);
pub const LOST: Fam = fam(
    "npt_monitor_lost_total",
    Kind::Counter,
    "Of those, the ones without a (good) answer that the server did not refuse.",
);
pub const REFUSED: Fam = fam(
    "npt_monitor_refused_total",
    Kind::Counter,
    "Of those, the ones the server said it refused (its budget or token): not loss.",
);
pub const ROUNDS: Fam = fam(
    "npt_monitor_rounds_total",
    Kind::Counter,
    "Rounds of the target, by how they ended (ok, no_answer, refused, error, timeout, skipped, budget).",
);
pub const SENT: Fam = fam(
    "npt_monitor_sent_total",
    Kind::Counter,
    "Attempts, packets or requests the target's rounds sent.",
);
pub const UP: Fam = fam(
    "npt_monitor_up",
    Kind::Gauge,
    "1 if the target's last round got an answer, 0 if not (no answer, error, timeout).",
);

/// The per-target families in name order: the order a scrape writes them (and a fragment
/// keeps them).
pub const FAMILIES: [Fam; 17] = [
    ERRORS,
    CE,
    GOODPUT,
    LOSS,
    MARKING,
    MTU,
    P50,
    P90,
    P99,
    LAST_START,
    RPM,
    LATENCY_FAM,
    LOST,
    REFUSED,
    ROUNDS,
    SENT,
    UP,
];

/// One target's series, family by family (`FAMILIES`' order).
#[derive(Clone, Debug, Default)]
pub struct Fragment {
    text: String,
    /// Where each family's part ends in `text`.
    ends: [usize; FAMILIES.len()],
}

impl Fragment {
    /// The target's series of family `i` (of [`FAMILIES`]); empty where it has none.
    pub fn part(&self, i: usize) -> &str {
        let start = match i.checked_sub(1) {
            Some(p) => self.ends.get(p).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(i).copied().unwrap_or(start);
        self.text.get(start..end).unwrap_or("")
    }

    pub fn len(&self) -> usize {
        self.text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

/// `t`'s series as a scrape shows them now.
pub fn render(vantage: &str, t: &TargetLive) -> Fragment {
    let mut out = String::with_capacity(3 * 1024);
    let mut ends = [0; FAMILIES.len()];
    let l = [
        ("vantage", vantage),
        ("target", t.name.as_str()),
        ("kind", t.kind.name()),
    ];
    let last = t.last.as_ref().filter(|x| x.status.measured());
    let f = last.map(|x| &x.figures);
    let latency = f.filter(|f| f.count > 0);
    let mut i = 0;
    let mut done = |out: &String| {
        if let Some(e) = ends.get_mut(i) {
            *e = out.len();
        }
        i += 1;
    };
    text::counter(&mut out, ERRORS.name, &l, t.errors);
    done(&out);
    // Each way's marking, in the order of their labels (`direction`), as the registry sorts.
    let ways = f.map(|f| {
        let [up, down] = f.marking();
        [down, up]
    });
    for (direction, w) in ways.iter().flatten() {
        if let Some(pct) = w.and_then(crate::kinds::marking::ce_pct) {
            let ls = [l[0], l[1], l[2], ("direction", *direction)];
            text::gauge(&mut out, CE.name, &ls, pct / 100.0);
        }
    }
    done(&out);
    if let Some(g) = f.and_then(|f| f.goodput_bps) {
        text::gauge(&mut out, GOODPUT.name, &l, g);
    }
    done(&out);
    if let Some(loss) = f.and_then(|f| f.loss_pct()) {
        text::gauge(&mut out, LOSS.name, &l, loss / 100.0);
    }
    done(&out);
    for (direction, w) in ways.iter().flatten() {
        if let Some(ok) = w.and_then(crate::kinds::marking::as_sent) {
            let ls = [l[0], l[1], l[2], ("direction", *direction)];
            text::gauge(&mut out, MARKING.name, &ls, if ok { 1.0 } else { 0.0 });
        }
    }
    done(&out);
    // In the order of their labels (`direction`), as the registry sorts them.
    for (direction, size) in [
        ("down", f.and_then(|f| f.mtu_down_bytes)),
        ("up", f.and_then(|f| f.mtu_up_bytes)),
    ] {
        if let Some(b) = size {
            let ls = [l[0], l[1], l[2], ("direction", direction)];
            text::gauge(&mut out, MTU.name, &ls, b);
        }
    }
    done(&out);
    for (fam, ms) in [
        (&P50, latency.map(|f| f.p50_ms)),
        (&P90, latency.map(|f| f.p90_ms)),
        (&P99, latency.map(|f| f.p99_ms)),
    ] {
        if let Some(ms) = ms {
            text::gauge(&mut out, fam.name, &l, ms / 1e3);
        }
        done(&out);
    }
    if let Some(x) = last {
        text::gauge(&mut out, LAST_START.name, &l, x.start_ms as f64 / 1e3);
    }
    done(&out);
    if let Some(rpm) = f.and_then(|f| f.rpm) {
        text::gauge(&mut out, RPM.name, &l, rpm);
    }
    done(&out);
    if let Some(Value::Histogram {
        buckets,
        sum,
        count,
    }) = t.latency.get(LATENCY, &[])
    {
        text::histogram(&mut out, LATENCY, &l, buckets, *sum, *count);
    }
    done(&out);
    text::counter(&mut out, LOST.name, &l, t.lost);
    done(&out);
    text::counter(&mut out, REFUSED.name, &l, t.refused);
    done(&out);
    // In the order of their labels (the status's name), as the registry sorts them.
    let mut by: Vec<_> = t.rounds.iter().map(|(s, n)| (s.name(), *n)).collect();
    by.sort_unstable();
    for (status, n) in by {
        let ls = [l[0], l[1], l[2], ("status", status)];
        text::counter(&mut out, ROUNDS.name, &ls, n);
    }
    done(&out);
    text::counter(&mut out, SENT.name, &l, t.sent);
    done(&out);
    text::gauge(&mut out, UP.name, &l, up(t));
    done(&out);
    Fragment { text: out, ends }
}

/// `npt_monitor_up`'s value for `t`.
fn up(t: &TargetLive) -> f64 {
    match &t.last {
        Some(x) if x.status.measured() && x.figures.count > 0 => 1.0,
        Some(x) if x.figures.goodput_bps.is_some_and(|g| g > 0.0) => 1.0,
        _ => 0.0,
    }
}
