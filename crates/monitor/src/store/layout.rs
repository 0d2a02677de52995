//! The store's tables as SQL sees them: their definitions, the current layout's version, how
//! a row's key packs its target and start, and how figures become columns and back. Shared by
//! [`super::sqlite`], which reads and writes them, and [`super::migrate`], which fills them
//! from the first layout.

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row};

use super::{Level, Result, StoreError};
use crate::kinds::Figures;

/// The layout's version, in `meta`: a file of a later version is refused, not misread.
pub const SCHEMA: &str = "npt.monitor.v2";

pub(super) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS target (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL, UNIQUE (name, kind));
CREATE TABLE IF NOT EXISTS config (
    id INTEGER PRIMARY KEY, target INTEGER NOT NULL, meta TEXT NOT NULL, config TEXT NOT NULL,
    UNIQUE (target, meta, config));
CREATE TABLE IF NOT EXISTS round (
    id INTEGER PRIMARY KEY, due_before INTEGER NOT NULL,
    took_ms INTEGER NOT NULL, lateness_ns INTEGER NOT NULL, status TEXT NOT NULL, detail TEXT,
    config INTEGER,
    count INTEGER NOT NULL, sent INTEGER NOT NULL, lost INTEGER NOT NULL, errors INTEGER NOT NULL,
    min_ns INTEGER NOT NULL, p1_ns INTEGER NOT NULL, p10_ns INTEGER NOT NULL,
    p50_ns INTEGER NOT NULL, p90_ns INTEGER NOT NULL, p99_ns INTEGER NOT NULL,
    max_ns INTEGER NOT NULL, mean REAL NOT NULL, bytes INTEGER NOT NULL, extra TEXT,
    stats BLOB);
CREATE TABLE IF NOT EXISTS event (
    id INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL, kind TEXT NOT NULL, target TEXT, rule TEXT,
    until_ms INTEGER, detail TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS event_ts ON event (ts_ms);
CREATE TABLE IF NOT EXISTS alert (
    target TEXT NOT NULL, rule TEXT NOT NULL, firing INTEGER NOT NULL, since_ms INTEGER NOT NULL,
    streak INTEGER NOT NULL, value REAL, PRIMARY KEY (target, rule)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mark (name TEXT PRIMARY KEY, ms INTEGER NOT NULL) WITHOUT ROWID;
";

/// A rollup level's table: `first_after`/`last_after` are the span it measured, as ms after
/// its start. Like `round`, a rowid table keyed by [`key`]: its rows are stored whole in their
/// page up to ~16 KB (a WITHOUT ROWID table's spill to an overflow page past a quarter of a
/// page, and a day's stats value is often 4 KB).
pub(super) fn rollup_table(level: Level) -> String {
    let name = table(level);
    format!(
        "CREATE TABLE IF NOT EXISTS {name} (
    id INTEGER PRIMARY KEY, rounds INTEGER NOT NULL, measured INTEGER NOT NULL, unreachable INTEGER NOT NULL,
    lateness_max_ns INTEGER NOT NULL, first_after INTEGER NOT NULL, last_after INTEGER NOT NULL,
    count INTEGER NOT NULL, sent INTEGER NOT NULL, lost INTEGER NOT NULL, errors INTEGER NOT NULL,
    min_ns INTEGER NOT NULL, p1_ns INTEGER NOT NULL, p10_ns INTEGER NOT NULL,
    p50_ns INTEGER NOT NULL, p90_ns INTEGER NOT NULL, p99_ns INTEGER NOT NULL,
    max_ns INTEGER NOT NULL, mean REAL NOT NULL, bytes INTEGER NOT NULL, extra TEXT,
    stats BLOB);"
    )
}

/// Bits of a row's key that hold its start (ms since the epoch, up to the year 2109); the
/// target's id is above them.
pub(super) const SHIFT: u32 = 42;
pub(super) const MASK: i64 = (1 << SHIFT) - 1;

/// A row's key: its target and its start in one integer, the table's rowid — so a target's
/// rows are one range, in time order, with no index beside the table.
pub(super) fn key(target: i64, start_ms: i64) -> i64 {
    (target << SHIFT) | start_ms.clamp(0, MASK)
}

/// The key's target and start, as the first two columns read.
pub(super) const KEY: &str = "id >> 42, id & 4398046511103";

/// The table of a level's rows.
pub(super) fn table(level: Level) -> &'static str {
    match level {
        Level::Round => "round",
        Level::Minute => "rollup_minute",
        Level::Hour => "rollup_hour",
        Level::Day => "rollup_day",
    }
}

pub(super) const FIGURES: &str =
    "count, sent, lost, errors, min_ns, p1_ns, p10_ns, p50_ns, p90_ns, p99_ns, max_ns, mean, \
     bytes, extra";

pub(super) fn err(e: rusqlite::Error) -> StoreError {
    use rusqlite::ffi::ErrorCode as C;
    match &e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            C::DiskFull
            | C::ReadOnly
            | C::CannotOpen
            | C::SystemIoFailure
            | C::PermissionDenied
            | C::DatabaseBusy
            | C::DatabaseLocked => StoreError::Unwritable(e.to_string()),
            C::DatabaseCorrupt | C::NotADatabase => StoreError::Corrupt(e.to_string()),
            _ => StoreError::Sqlite(e.to_string()),
        },
        _ => StoreError::Sqlite(e.to_string()),
    }
}

pub(super) fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(super) fn u(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A latency figure (ms, as [`Figures`] has it: whole nanoseconds over 1e6) as the whole
/// nanoseconds it came from; [`ms`] gives back the same float.
pub(super) fn ns(ms: f64) -> i64 {
    // NO-PANIC: a float-to-int `as` saturates (and the latencies are at most an hour).
    #[allow(clippy::cast_possible_truncation)]
    let v = (ms * 1e6).round() as i64;
    v
}

pub(super) fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// The figures' optional parts, as the `extra` column's JSON (NULL when there are none).
pub(super) fn extra(f: &Figures) -> Option<String> {
    if f.rpm.is_none()
        && f.goodput_bps.is_none()
        && f.segments_ms.is_empty()
        && f.refused == 0
        && f.mtu_up_bytes.is_none()
        && f.mtu_down_bytes.is_none()
        && f.flagged.is_none()
        && f.marking_up.is_none()
        && f.marking_down.is_none()
    {
        return None;
    }
    let mut x = serde_json::json!({
        "rpm": f.rpm,
        "goodput_bps": f.goodput_bps,
        "segments_ms": f.segments_ms,
        "refused": f.refused,
    });
    // Only an mtu's, a setup's or a marked probe's round: the other rows stay as they were
    // written before.
    let way = |w: Option<npt_result::marking::Way>| w.and_then(|w| serde_json::to_value(w).ok());
    for (k, v) in [
        ("mtu_up_bytes", f.mtu_up_bytes.map(serde_json::Value::from)),
        (
            "mtu_down_bytes",
            f.mtu_down_bytes.map(serde_json::Value::from),
        ),
        ("flagged", f.flagged.map(serde_json::Value::from)),
        ("marking_up", way(f.marking_up)),
        ("marking_down", way(f.marking_down)),
    ] {
        if let Some(v) = v {
            x[k] = v;
        }
    }
    serde_json::to_string(&x).ok()
}

/// The figures as the values of [`FIGURES`], in order.
pub(super) fn figure_values(f: &Figures) -> [Value; 14] {
    [
        i(f.count).into(),
        i(f.sent).into(),
        i(f.lost).into(),
        i(f.errors).into(),
        ns(f.min_ms).into(),
        ns(f.p1_ms).into(),
        ns(f.p10_ms).into(),
        ns(f.p50_ms).into(),
        ns(f.p90_ms).into(),
        ns(f.p99_ms).into(),
        ns(f.max_ms).into(),
        f.mean_ms.into(),
        i(f.bytes).into(),
        extra(f).into(),
    ]
}

/// The figures at column `at` onwards (in [`FIGURES`] order).
pub(super) fn figures(r: &Row<'_>, at: usize) -> rusqlite::Result<Figures> {
    let mut f = Figures {
        count: u(r.get(at)?),
        sent: u(r.get(at + 1)?),
        lost: u(r.get(at + 2)?),
        errors: u(r.get(at + 3)?),
        min_ms: ms(r.get(at + 4)?),
        p1_ms: ms(r.get(at + 5)?),
        p10_ms: ms(r.get(at + 6)?),
        p50_ms: ms(r.get(at + 7)?),
        p90_ms: ms(r.get(at + 8)?),
        p99_ms: ms(r.get(at + 9)?),
        max_ms: ms(r.get(at + 10)?),
        mean_ms: r.get(at + 11)?,
        bytes: u(r.get(at + 12)?),
        ..Figures::default()
    };
    let extra: Option<String> = r.get(at + 13)?;
    if let Some(x) = extra.and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok()) {
        f.rpm = x["rpm"].as_f64();
        f.goodput_bps = x["goodput_bps"].as_f64();
        f.refused = x["refused"].as_u64().unwrap_or(0);
        f.mtu_up_bytes = x["mtu_up_bytes"].as_f64();
        f.mtu_down_bytes = x["mtu_down_bytes"].as_f64();
        f.flagged = x["flagged"].as_u64();
        f.marking_up = serde_json::from_value(x["marking_up"].clone()).ok();
        f.marking_down = serde_json::from_value(x["marking_down"].clone()).ok();
        f.segments_ms = x["segments_ms"]
            .as_array()
            .map(|a| a.iter().map(serde_json::Value::as_f64).collect())
            .unwrap_or_default();
    }
    Ok(f)
}

/// Which layout a file has.
pub(super) enum Layout {
    /// Empty: a new store.
    New,
    /// The first layout ([`super::migrate::FIRST`]).
    First,
    Current,
}

pub(super) fn schema(db: &Connection) -> Result<Layout> {
    let tables: i64 = db
        .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
        .map_err(|e| StoreError::Corrupt(format!("not an npt monitor store: {e}")))?;
    if tables == 0 {
        return Ok(Layout::New);
    }
    let v: Option<String> = db
        .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(|e| StoreError::Corrupt(format!("not an npt monitor store: {e}")))?;
    match v.as_deref() {
        Some(SCHEMA) => Ok(Layout::Current),
        Some(super::migrate::FIRST) => Ok(Layout::First),
        Some(v) => Err(StoreError::Corrupt(format!(
            "store layout {v:?} is not {SCHEMA:?} (written by a later npt?)"
        ))),
        None => Err(StoreError::Corrupt("not an npt monitor store".into())),
    }
}

/// The tables, where they are not yet.
pub(super) fn create(db: &Connection) -> Result<()> {
    db.execute_batch(TABLES).map_err(err)?;
    for l in Level::ROLLUPS {
        db.execute_batch(&rollup_table(l)).map_err(err)?;
    }
    Ok(())
}
