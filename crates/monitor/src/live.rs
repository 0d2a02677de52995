//! What the running monitor knows now, shared with its listener: each target's last round and
//! counters, the alert states, and the totals a scrape shows. Updated once per finished round
//! by the driver's loop; read by the dashboard ([`crate::dashboard`]) and the metrics
//! ([`crate::metrics`]). Per target it keeps counters and the scrape's bucket counts (a few
//! hundred bytes), never a whole histogram, so ten thousand targets cost little.
//!
//! Each target sits behind its own `Arc`: a reader (a scrape, the page) takes the lock only to
//! copy ten thousand pointers — a fraction of a millisecond — and renders from them afterwards,
//! so the driver's loop, which updates the view after every round, never waits on a render.
//! Its series for a scrape are rendered when its round ends and kept beside it
//! ([`crate::metrics::Fragment`]): a scrape copies ten thousand pointers to those and
//! concatenates them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use npt_stats::{Histogram, Snapshot};

use crate::kinds::{Figures, Kind};
use crate::round::{Round, Status};
use crate::store::AlertRow;

/// One target as the listener sees it.
#[derive(Clone, Debug)]
pub struct TargetLive {
    pub name: String,
    pub kind: Kind,
    pub url: String,
    pub group: Option<String>,
    pub every: Duration,
    /// The last round that ended: its status, figures, when, and why it failed.
    pub last: Option<Last>,
    pub rounds: BTreeMap<Status, u64>,
    pub sent: u64,
    pub lost: u64,
    /// Of `sent`, refused by the server (not loss).
    pub refused: u64,
    pub errors: u64,
    /// The headline latency of every round, as the scrape's buckets.
    pub latency: Snapshot,
    /// The target's usual median: a moving average of its rounds' p50 (weight 1/16 each), the
    /// baseline the page ranks a round's p99 against.
    pub base_p50_ms: Option<f64>,
    /// Still watched (false after a reload removed it; its history stays).
    pub active: bool,
    /// Its series as a scrape shows them, rendered when any of the above changed.
    pub metrics: Arc<crate::metrics::Fragment>,
}

#[derive(Clone, Debug)]
pub struct Last {
    pub status: Status,
    pub figures: Figures,
    pub start_ms: i64,
    pub end_ms: i64,
    pub detail: Option<String>,
}

/// Everything the listener reads.
#[derive(Debug)]
pub struct Live {
    pub vantage: String,
    pub started_ms: i64,
    targets: Mutex<BTreeMap<String, Arc<TargetLive>>>,
    alerts: Mutex<Vec<AlertRow>>,
    /// Every round's start lateness (ns).
    lateness: Mutex<Histogram>,
    pub writer: Arc<crate::writer::Counts>,
    pub notify: Arc<crate::notify::Counts>,
}

/// Name of the latency histogram a scrape shows per target, and its help.
pub const LATENCY: &str = "npt_monitor_latency_seconds";
pub const LATENCY_HELP: &str = "Headline latency of every round of the target (ping and probe: \
RTT; http: request latency; bulk: RTT under load; trace: RTT through the chain).";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Live {
    pub fn new(
        vantage: &str,
        started_ms: i64,
        writer: Arc<crate::writer::Counts>,
        notify: Arc<crate::notify::Counts>,
    ) -> Live {
        Live {
            vantage: vantage.to_string(),
            started_ms,
            targets: Mutex::default(),
            alerts: Mutex::default(),
            lateness: Mutex::default(),
            writer,
            notify,
        }
    }

    /// The watched targets after a start or reload: new ones are added, kept ones updated,
    /// dropped ones marked inactive.
    pub fn set_targets(&self, list: &[crate::config::TargetPlan]) {
        let mut t = lock(&self.targets);
        for v in t.values_mut() {
            Arc::make_mut(v).active = false;
        }
        for p in list {
            let e = t.entry(p.name.clone()).or_insert_with(|| {
                Arc::new(TargetLive {
                    name: p.name.clone(),
                    kind: p.kind,
                    url: p.url.clone(),
                    group: None,
                    every: p.every,
                    last: None,
                    rounds: BTreeMap::new(),
                    sent: 0,
                    lost: 0,
                    refused: 0,
                    errors: 0,
                    latency: Snapshot::new(),
                    base_p50_ms: None,
                    active: true,
                    metrics: Arc::default(),
                })
            });
            let e = Arc::make_mut(e);
            e.kind = p.kind;
            e.url = p.url.clone();
            e.group = p.group.clone();
            e.every = p.every;
            e.active = true;
        }
        for v in t.values_mut() {
            let e = Arc::make_mut(v);
            e.metrics = Arc::new(crate::metrics::render(&self.vantage, e));
        }
    }

    /// A round ended; `headline` is its latency histogram (decoded on the round's thread).
    pub fn on_round(&self, r: &Round, headline: Option<&Histogram>) {
        if r.status.measured() || r.status.unreachable() {
            lock(&self.lateness).record(r.lateness_ns.max(1));
        }
        let mut t = lock(&self.targets);
        let Some(e) = t.get_mut(&r.target) else {
            return;
        };
        // A copy only while a reader still holds the old one (a scrape rendering).
        let e = Arc::make_mut(e);
        *e.rounds.entry(r.status).or_default() += 1;
        e.sent += r.figures.sent;
        e.lost += r.figures.lost;
        e.refused += r.figures.refused;
        e.errors += r.figures.errors;
        if let Some(h) = headline {
            e.latency.histogram(LATENCY, LATENCY_HELP, &[], h);
        }
        if r.status.measured() && r.figures.count > 0 {
            let p = r.figures.p50_ms;
            e.base_p50_ms = Some(e.base_p50_ms.map_or(p, |b| b + (p - b) / 16.0));
        }
        if r.status != Status::Skipped {
            e.last = Some(Last {
                status: r.status,
                figures: r.figures.clone(),
                start_ms: r.start_ms,
                end_ms: r.end_ms,
                detail: r.detail.clone(),
            });
        }
        e.metrics = Arc::new(crate::metrics::render(&self.vantage, e));
    }

    pub fn set_alerts(&self, rows: Vec<AlertRow>) {
        *lock(&self.alerts) = rows;
    }

    pub fn alerts(&self) -> Vec<AlertRow> {
        lock(&self.alerts).clone()
    }

    /// Every target, in name order: pointers copied under the lock, read after it.
    pub fn targets(&self) -> Vec<Arc<TargetLive>> {
        lock(&self.targets).values().cloned().collect()
    }

    /// Every target's series for a scrape, in name order: pointers copied under the lock.
    pub fn fragments(&self) -> Vec<Arc<crate::metrics::Fragment>> {
        lock(&self.targets)
            .values()
            .map(|t| t.metrics.clone())
            .collect()
    }

    /// Lateness of every round so far.
    pub fn lateness(&self) -> Histogram {
        lock(&self.lateness).clone()
    }
}
