//! Where a monitor keeps its history, behind a small trait ([`Store`]) so that rollups, the
//! range reports and the dashboard's queries are written once and tested both in memory
//! ([`memory::Memory`]) and on the SQLite file users get ([`sqlite::Sqlite`]).
//!
//! Four levels: each round as it ran ([`RoundRow`]), and rollups of one minute, one hour and
//! one day ([`RollupRow`]), each the sum of the level below — stats values added one after
//! another ([`crate::kinds::KindStats::then`]), so a day's percentiles are those of every
//! sample that day, not an average of averages. Besides: the targets, each distinct workload
//! config a round ran with, the events (start, stop, gaps, reloads, alerts, store errors),
//! each alert's state, and a few marks (how far each level is rolled up and pruned, the last
//! sign of life).

pub mod blob;
mod layout;
pub mod memory;
mod migrate;
pub use migrate::KEPT_KEY;
pub mod sqlite;

use crate::kinds::{Figures, Kind};
use crate::round::Status;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store: {0}")]
    Sqlite(String),
    /// The disk is full or the file cannot be written (read-only, permissions).
    #[error("store cannot be written: {0}")]
    Unwritable(String),
    #[error("store: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// Whether writing may work again later (a full disk freed, a file made writable).
    pub fn transient(&self) -> bool {
        matches!(self, StoreError::Unwritable(_))
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// A level of the history: rounds, or rollups of a fixed span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Round,
    Minute,
    Hour,
    Day,
}

impl Level {
    pub const ROLLUPS: [Level; 3] = [Level::Minute, Level::Hour, Level::Day];
    pub const ALL: [Level; 4] = [Level::Round, Level::Minute, Level::Hour, Level::Day];

    /// The span of one bucket (ms); 0 for rounds.
    pub fn ms(self) -> i64 {
        match self {
            Level::Round => 0,
            Level::Minute => 60_000,
            Level::Hour => 3_600_000,
            Level::Day => 86_400_000,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::Round => "round",
            Level::Minute => "minute",
            Level::Hour => "hour",
            Level::Day => "day",
        }
    }

    pub fn parse(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.name() == s)
    }

    /// The level each bucket of this one is summed from.
    pub fn below(self) -> Level {
        match self {
            Level::Round | Level::Minute => Level::Round,
            Level::Hour => Level::Minute,
            Level::Day => Level::Hour,
        }
    }

    /// The start of the bucket holding `t` (UTC-aligned); `t` itself for rounds.
    pub fn floor(self, t: i64) -> i64 {
        match self.ms() {
            0 => t,
            s => t.div_euclid(s) * s,
        }
    }
}

/// A target as the store knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetRow {
    pub id: i64,
    pub name: String,
    pub kind: Kind,
}

/// One round.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundRow {
    pub target: i64,
    pub due_ms: i64,
    pub start_ms: i64,
    pub end_ms: i64,
    pub lateness_ns: u64,
    pub status: Status,
    pub detail: Option<String>,
    pub figures: Figures,
    /// The round's config ([`Store::config_id`]), for rounds that measured.
    pub config: Option<i64>,
    /// The encoded stats value ([`crate::kinds::KindStats::encode`]); left out of reads that
    /// ask without.
    pub stats: Option<Vec<u8>>,
}

/// One bucket of a rollup level: the sum of the rows below it.
#[derive(Clone, Debug, PartialEq)]
pub struct RollupRow {
    pub target: i64,
    pub level: Level,
    pub start_ms: i64,
    /// Rounds of any status in the bucket, those that measured, and those with no answer.
    pub rounds: u64,
    pub measured: u64,
    pub unreachable: u64,
    /// Lateness of the bucket's rounds: the worst (ns).
    pub lateness_max_ns: u64,
    /// When its first round started and its last ended (wall ms): the span it measured.
    pub first_ms: i64,
    pub last_ms: i64,
    pub figures: Figures,
    pub stats: Option<Vec<u8>>,
}

/// Something that happened to the monitor or a target.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub ts_ms: i64,
    /// `start`, `stop`, `gap`, `reload`, `reload_refused`, `alert_firing`, `alert_resolved`,
    /// `notify_failed`, `store_error`, `store_recovered`, `dropped`.
    pub kind: String,
    pub target: Option<String>,
    pub rule: Option<String>,
    /// A gap's or an alert's end, where it has one.
    pub until_ms: Option<i64>,
    pub detail: String,
}

/// An alert rule's state for one target, as kept across restarts.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertRow {
    pub target: String,
    pub rule: String,
    pub firing: bool,
    pub since_ms: i64,
    pub streak: u32,
    pub value: Option<f64>,
}

/// The history, whatever holds it. Writes that go together are one transaction.
pub trait Store: Send {
    /// The target's id, made on first use.
    fn target_id(&mut self, name: &str, kind: Kind) -> Result<i64>;
    fn targets(&self) -> Result<Vec<TargetRow>>;
    /// The id of a round config (its `KindMeta` and workload config as JSON), made on first use.
    fn config_id(&mut self, target: i64, meta: &str, config: &str) -> Result<i64>;
    /// A config's `(meta, config)` JSON.
    fn config(&self, id: i64) -> Result<Option<(String, String)>>;
    /// The id of the target's newest config.
    fn latest_config(&self, target: i64) -> Result<Option<i64>>;
    /// A text setting of the store (`vantage` …).
    fn meta(&self, key: &str) -> Result<Option<String>>;
    fn set_meta(&mut self, key: &str, value: &str) -> Result<()>;

    fn put_rounds(&mut self, rows: &[RoundRow]) -> Result<()>;
    /// Rounds of `target` that started in `[from, to)`, in order.
    fn rounds(&self, target: i64, from: i64, to: i64, stats: bool) -> Result<Vec<RoundRow>>;

    /// Writes rollups of `level` and moves its mark to `mark`, together.
    fn put_rollups(&mut self, level: Level, rows: &[RollupRow], mark: i64) -> Result<()>;
    /// Rollups of `target` at `level` starting in `[from, to)`, in order.
    fn rollups(
        &self,
        target: i64,
        level: Level,
        from: i64,
        to: i64,
        stats: bool,
    ) -> Result<Vec<RollupRow>>;

    /// A named mark (ms): `rolled.<level>` (every bucket ending by it is rolled up),
    /// `pruned.<level>` (rows starting before it are gone), `alive` (last sign of life).
    fn mark(&self, name: &str) -> Result<Option<i64>>;
    fn set_mark(&mut self, name: &str, ms: i64) -> Result<()>;

    /// Deletes rows of `level` that start before `before`; returns how many.
    fn prune(&mut self, level: Level, before: i64) -> Result<u64>;

    fn put_event(&mut self, e: &Event) -> Result<()>;
    /// Events in `[from, to)`, newest first, at most `limit`.
    fn events(&self, from: i64, to: i64, limit: usize) -> Result<Vec<Event>>;

    fn put_alert(&mut self, a: &AlertRow) -> Result<()>;
    fn alerts(&self) -> Result<Vec<AlertRow>>;
}

/// The mark of how far `level` is rolled up.
pub fn rolled(level: Level) -> String {
    format!("rolled.{}", level.name())
}

/// The mark of where `level`'s rows begin after pruning.
pub fn pruned(level: Level) -> String {
    format!("pruned.{}", level.name())
}

/// A store shared between the writer and its readers (an in-memory store, which has no file
/// for a second connection to open; tests that reach into a store the writer owns).
pub struct Shared<S>(pub std::sync::Arc<std::sync::Mutex<S>>);

impl<S> Shared<S> {
    pub fn new(s: S) -> Shared<S> {
        Shared(std::sync::Arc::new(std::sync::Mutex::new(s)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, S> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<S> Clone for Shared<S> {
    fn clone(&self) -> Shared<S> {
        Shared(self.0.clone())
    }
}

impl<S: Store> Store for Shared<S> {
    fn target_id(&mut self, name: &str, kind: Kind) -> Result<i64> {
        self.lock().target_id(name, kind)
    }
    fn targets(&self) -> Result<Vec<TargetRow>> {
        self.lock().targets()
    }
    fn config_id(&mut self, target: i64, meta: &str, config: &str) -> Result<i64> {
        self.lock().config_id(target, meta, config)
    }
    fn config(&self, id: i64) -> Result<Option<(String, String)>> {
        self.lock().config(id)
    }
    fn latest_config(&self, target: i64) -> Result<Option<i64>> {
        self.lock().latest_config(target)
    }
    fn meta(&self, key: &str) -> Result<Option<String>> {
        self.lock().meta(key)
    }
    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.lock().set_meta(key, value)
    }
    fn put_rounds(&mut self, rows: &[RoundRow]) -> Result<()> {
        self.lock().put_rounds(rows)
    }
    fn rounds(&self, target: i64, from: i64, to: i64, stats: bool) -> Result<Vec<RoundRow>> {
        self.lock().rounds(target, from, to, stats)
    }
    fn put_rollups(&mut self, level: Level, rows: &[RollupRow], mark: i64) -> Result<()> {
        self.lock().put_rollups(level, rows, mark)
    }
    fn rollups(
        &self,
        target: i64,
        level: Level,
        from: i64,
        to: i64,
        stats: bool,
    ) -> Result<Vec<RollupRow>> {
        self.lock().rollups(target, level, from, to, stats)
    }
    fn mark(&self, name: &str) -> Result<Option<i64>> {
        self.lock().mark(name)
    }
    fn set_mark(&mut self, name: &str, ms: i64) -> Result<()> {
        self.lock().set_mark(name, ms)
    }
    fn prune(&mut self, level: Level, before: i64) -> Result<u64> {
        self.lock().prune(level, before)
    }
    fn put_event(&mut self, e: &Event) -> Result<()> {
        self.lock().put_event(e)
    }
    fn events(&self, from: i64, to: i64, limit: usize) -> Result<Vec<Event>> {
        self.lock().events(from, to, limit)
    }
    fn put_alert(&mut self, a: &AlertRow) -> Result<()> {
        self.lock().put_alert(a)
    }
    fn alerts(&self) -> Result<Vec<AlertRow>> {
        self.lock().alerts()
    }
}
