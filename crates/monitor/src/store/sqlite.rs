//! The history in one SQLite file (rusqlite, the bundled SQLite: nothing to install), in WAL
//! mode: the monitor's writer commits each batch of rounds as one transaction while the
//! dashboard and `npt report --from` read through connections of their own without blocking
//! it. `synchronous = NORMAL`: a committed round survives the process being killed (it is in
//! the WAL); only a power cut may lose the last commits, which the docs say.
//!
//! Figures are columns (charts read them without decoding anything), the latencies as whole
//! nanoseconds (what the histograms hold; a few bytes where a float takes eight) and times as
//! offsets from the row's start; each row's stats value is a compact blob ([`super::blob`])
//! read only by rollups and range reports. Each rollup level has a table of its own. Pruning
//! gives the freed pages back to the file system (incremental auto-vacuum), so the file is as
//! large as what retention keeps. A store of the first layout is migrated in place when it is
//! opened to write ([`super::migrate`]). A full disk or a file that cannot be written is
//! [`StoreError::Unwritable`], which the writer treats as transient.

use std::path::Path;
use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OpenFlags, OptionalExtension, Row};

use super::{AlertRow, Event, Level, Result, RollupRow, RoundRow, Store, StoreError, TargetRow};
use crate::kinds::{Figures, Kind};
use crate::round::Status;

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
/// page up to ~8 KB (a WITHOUT ROWID table's spill to an overflow page past ~2 KB, and a day's
/// stats value is often that large).
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
const MASK: i64 = (1 << SHIFT) - 1;

/// A row's key: its target and its start in one integer, the table's rowid — so a target's
/// rows are one range, in time order, with no index beside the table.
fn key(target: i64, start_ms: i64) -> i64 {
    (target << SHIFT) | start_ms.clamp(0, MASK)
}

/// The key's target and start, as the first two columns read.
const KEY: &str = "id >> 42, id & 4398046511103";

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

pub struct Sqlite {
    db: Connection,
    /// What opening it did to a store of an earlier layout, to tell the user.
    migrated: Option<String>,
    /// A store of the first layout read through views: rows are found by target and start.
    first: bool,
}

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

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn u(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A latency figure (ms, as [`Figures`] has it: whole nanoseconds over 1e6) as the whole
/// nanoseconds it came from; [`ms`] gives back the same float.
fn ns(ms: f64) -> i64 {
    // NO-PANIC: a float-to-int `as` saturates (and the latencies are at most an hour).
    #[allow(clippy::cast_possible_truncation)]
    let v = (ms * 1e6).round() as i64;
    v
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// The figures' optional parts, as the `extra` column's JSON (NULL when there are none).
fn extra(f: &Figures) -> Option<String> {
    if f.rpm.is_none() && f.goodput_bps.is_none() && f.segments_ms.is_empty() && f.refused == 0 {
        return None;
    }
    serde_json::to_string(&serde_json::json!({
        "rpm": f.rpm,
        "goodput_bps": f.goodput_bps,
        "segments_ms": f.segments_ms,
        "refused": f.refused,
    }))
    .ok()
}

/// The figures as the values of [`FIGURES`], in order.
fn figure_values(f: &Figures) -> [Value; 14] {
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
fn figures(r: &Row<'_>, at: usize) -> rusqlite::Result<Figures> {
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
        f.segments_ms = x["segments_ms"]
            .as_array()
            .map(|a| a.iter().map(serde_json::Value::as_f64).collect())
            .unwrap_or_default();
    }
    Ok(f)
}

impl Sqlite {
    /// Opens (or creates) the store at `path` for writing: WAL, its tables, its version. A
    /// store of the first layout is migrated in place ([`Sqlite::migrated`] says so).
    pub fn open(path: &Path) -> Result<Sqlite> {
        let db = Connection::open(path).map_err(err)?;
        db.busy_timeout(Duration::from_secs(5)).map_err(err)?;
        // Both take effect only on a new file (a migrated one is vacuumed into them). Larger
        // pages hold more rows with their stats blob each (WITHOUT ROWID tables); the
        // incremental auto-vacuum lets pruning shrink the file.
        db.pragma_update(None, "page_size", 8192).map_err(err)?;
        db.pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .map_err(err)?;
        let mode: String = db
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Sqlite(format!(
                "{}: cannot use WAL (journal mode {mode})",
                path.display()
            )));
        }
        db.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        let migrated = match schema(&db)? {
            Layout::Current => None,
            Layout::First => Some(super::migrate::first(&db)?),
            Layout::New => {
                create(&db)?;
                db.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema', ?1)",
                    params![SCHEMA],
                )
                .map_err(err)?;
                None
            }
        };
        create(&db)?;
        Ok(Sqlite {
            db,
            migrated,
            first: false,
        })
    }

    /// What opening the file did to a store an earlier npt wrote (migrated it), if anything.
    pub fn migrated(&self) -> Option<&str> {
        self.migrated.as_deref()
    }

    /// Opens an existing store to read (`npt report --from`, the dashboard's queries). A store
    /// of the first layout is read as it is, through views of the current one.
    pub fn open_read(path: &Path) -> Result<Sqlite> {
        if !path.exists() {
            return Err(StoreError::Sqlite(format!(
                "{}: no such file",
                path.display()
            )));
        }
        let db = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err)?;
        db.busy_timeout(Duration::from_secs(5)).map_err(err)?;
        let first = match schema(&db)? {
            Layout::Current => false,
            Layout::First => {
                super::migrate::views(&db)?;
                true
            }
            Layout::New => return Err(StoreError::Corrupt("not an npt monitor store".into())),
        };
        Ok(Sqlite {
            db,
            migrated: None,
            first,
        })
    }

    /// Where a target's rows in `[from, to)` are: its key range, or (a first-layout store)
    /// its target and start columns.
    fn range(&self) -> &'static str {
        if self.first {
            "target = ?1 AND start_ms >= ?2 AND start_ms < ?3"
        } else {
            "id >= ?1 AND id < ?2"
        }
    }

    fn params(&self, target: i64, from: i64, to: i64) -> Vec<i64> {
        if self.first {
            vec![target, from, to]
        } else {
            vec![key(target, from), key(target, to)]
        }
    }

    /// Limits the file to `pages` pages (as a full disk would): for tests of the backlog.
    pub fn limit_pages(&self, pages: u64) -> Result<()> {
        self.db
            .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
            .map_err(err)
    }

    /// Copies the WAL into the main file (the writer does it now and then; SQLite does too).
    pub fn checkpoint(&self) -> Result<()> {
        self.db
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(err)
    }
}

/// Which layout a file has.
enum Layout {
    /// Empty: a new store.
    New,
    /// The first layout ([`super::migrate::FIRST`]).
    First,
    Current,
}

fn schema(db: &Connection) -> Result<Layout> {
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

fn round_row(r: &Row<'_>, stats: bool) -> rusqlite::Result<RoundRow> {
    let status: String = r.get(5)?;
    Ok(RoundRow {
        target: r.get(0)?,
        start_ms: r.get(1)?,
        due_ms: r.get::<_, i64>(1)? - r.get::<_, i64>(2)?,
        end_ms: r.get::<_, i64>(1)? + r.get::<_, i64>(3)?,
        lateness_ns: u(r.get(4)?),
        status: Status::parse(&status).unwrap_or(Status::Error),
        detail: r.get(6)?,
        config: r.get(7)?,
        figures: figures(r, 8)?,
        stats: if stats { r.get(22)? } else { None },
    })
}

fn rollup_row(r: &Row<'_>, level: Level, stats: bool) -> rusqlite::Result<RollupRow> {
    Ok(RollupRow {
        target: r.get(0)?,
        level,
        start_ms: r.get(1)?,
        rounds: u(r.get(2)?),
        measured: u(r.get(3)?),
        unreachable: u(r.get(4)?),
        lateness_max_ns: u(r.get(5)?),
        first_ms: r.get::<_, i64>(1)? + r.get::<_, i64>(6)?,
        last_ms: r.get::<_, i64>(1)? + r.get::<_, i64>(7)?,
        figures: figures(r, 8)?,
        stats: if stats { r.get(22)? } else { None },
    })
}

impl Store for Sqlite {
    fn target_id(&mut self, name: &str, kind: Kind) -> Result<i64> {
        let k = kind.name();
        let found: Option<i64> = self
            .db
            .prepare_cached("SELECT id FROM target WHERE name = ?1 AND kind = ?2")
            .and_then(|mut s| s.query_row(params![name, k], |r| r.get(0)).optional())
            .map_err(err)?;
        if let Some(id) = found {
            return Ok(id);
        }
        self.db
            .execute(
                "INSERT INTO target (name, kind) VALUES (?1, ?2)",
                params![name, k],
            )
            .map_err(err)?;
        Ok(self.db.last_insert_rowid())
    }

    fn targets(&self) -> Result<Vec<TargetRow>> {
        let mut s = self
            .db
            .prepare_cached("SELECT id, name, kind FROM target ORDER BY id")
            .map_err(err)?;
        let rows = s
            .query_map([], |r| {
                let kind: String = r.get(2)?;
                Ok((r.get(0)?, r.get(1)?, kind))
            })
            .map_err(err)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, name, kind): (i64, String, String) = row.map_err(err)?;
            if let Some(kind) = Kind::parse(&kind) {
                out.push(TargetRow { id, name, kind });
            }
        }
        Ok(out)
    }

    fn config_id(&mut self, target: i64, meta: &str, config: &str) -> Result<i64> {
        let found: Option<i64> = self
            .db
            .prepare_cached("SELECT id FROM config WHERE target = ?1 AND meta = ?2 AND config = ?3")
            .and_then(|mut s| {
                s.query_row(params![target, meta, config], |r| r.get(0))
                    .optional()
            })
            .map_err(err)?;
        if let Some(id) = found {
            return Ok(id);
        }
        self.db
            .execute(
                "INSERT INTO config (target, meta, config) VALUES (?1, ?2, ?3)",
                params![target, meta, config],
            )
            .map_err(err)?;
        Ok(self.db.last_insert_rowid())
    }

    fn config(&self, id: i64) -> Result<Option<(String, String)>> {
        self.db
            .prepare_cached("SELECT meta, config FROM config WHERE id = ?1")
            .and_then(|mut s| {
                s.query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(err)
    }

    fn latest_config(&self, target: i64) -> Result<Option<i64>> {
        self.db
            .prepare_cached("SELECT max(id) FROM config WHERE target = ?1")
            .and_then(|mut s| s.query_row(params![target], |r| r.get(0)))
            .map_err(err)
    }

    fn meta(&self, key: &str) -> Result<Option<String>> {
        self.db
            .prepare_cached("SELECT value FROM meta WHERE key = ?1")
            .and_then(|mut s| s.query_row(params![key], |r| r.get(0)).optional())
            .map_err(err)
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.db
            .prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![key, value]))
            .map(drop)
            .map_err(err)
    }

    fn put_rounds(&mut self, rows: &[RoundRow]) -> Result<()> {
        let tx = self.db.transaction().map_err(err)?;
        {
            let mut s = tx
                .prepare_cached(&format!(
                    "INSERT OR REPLACE INTO round (id, due_before, took_ms, lateness_ns, status, \
                     detail, config, {FIGURES}, stats) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, \
                     ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)"
                ))
                .map_err(err)?;
            for r in rows {
                let mut v: Vec<Value> = vec![
                    key(r.target, r.start_ms).into(),
                    (r.start_ms - r.due_ms).into(),
                    (r.end_ms - r.start_ms).into(),
                    i(r.lateness_ns).into(),
                    r.status.name().to_string().into(),
                    r.detail.clone().into(),
                    r.config.into(),
                ];
                v.extend(figure_values(&r.figures));
                v.push(r.stats.clone().into());
                s.execute(params_from_iter(v)).map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }

    fn rounds(&self, target: i64, from: i64, to: i64, stats: bool) -> Result<Vec<RoundRow>> {
        let blob = if stats { "stats" } else { "NULL" };
        let mut s = self
            .db
            .prepare_cached(&format!(
                "SELECT {KEY}, due_before, took_ms, lateness_ns, status, detail, config, \
                 {FIGURES}, {blob} FROM round WHERE {} ORDER BY id",
                self.range()
            ))
            .map_err(err)?;
        let rows = s
            .query_map(params_from_iter(self.params(target, from, to)), |r| {
                round_row(r, stats)
            })
            .map_err(err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err)
    }

    fn put_rollups(&mut self, level: Level, rows: &[RollupRow], mark: i64) -> Result<()> {
        let tx = self.db.transaction().map_err(err)?;
        {
            let mut s = tx
                .prepare_cached(&format!(
                    "INSERT OR REPLACE INTO {} (id, rounds, measured, unreachable, \
                     lateness_max_ns, first_after, last_after, {FIGURES}, stats) VALUES (?1, ?2, \
                     ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
                     ?19, ?20, ?21, ?22)",
                    table(level)
                ))
                .map_err(err)?;
            for r in rows {
                let mut v: Vec<Value> = vec![
                    key(r.target, r.start_ms).into(),
                    i(r.rounds).into(),
                    i(r.measured).into(),
                    i(r.unreachable).into(),
                    i(r.lateness_max_ns).into(),
                    (r.first_ms - r.start_ms).into(),
                    (r.last_ms - r.start_ms).into(),
                ];
                v.extend(figure_values(&r.figures));
                v.push(r.stats.clone().into());
                s.execute(params_from_iter(v)).map_err(err)?;
            }
            tx.execute(
                "INSERT OR REPLACE INTO mark (name, ms) VALUES (?1, ?2)",
                params![super::rolled(level), mark],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)
    }

    fn rollups(
        &self,
        target: i64,
        level: Level,
        from: i64,
        to: i64,
        stats: bool,
    ) -> Result<Vec<RollupRow>> {
        let blob = if stats { "stats" } else { "NULL" };
        let mut s = self
            .db
            .prepare_cached(&format!(
                "SELECT {KEY}, rounds, measured, unreachable, lateness_max_ns, first_after, \
                 last_after, {FIGURES}, {blob} FROM {} WHERE {} ORDER BY id",
                table(level),
                self.range()
            ))
            .map_err(err)?;
        let rows = s
            .query_map(params_from_iter(self.params(target, from, to)), |r| {
                rollup_row(r, level, stats)
            })
            .map_err(err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err)
    }

    fn mark(&self, name: &str) -> Result<Option<i64>> {
        self.db
            .prepare_cached("SELECT ms FROM mark WHERE name = ?1")
            .and_then(|mut s| s.query_row(params![name], |r| r.get(0)).optional())
            .map_err(err)
    }

    fn set_mark(&mut self, name: &str, ms: i64) -> Result<()> {
        self.db
            .prepare_cached("INSERT OR REPLACE INTO mark (name, ms) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![name, ms]))
            .map(drop)
            .map_err(err)
    }

    fn prune(&mut self, level: Level, before: i64) -> Result<u64> {
        let targets = self.targets()?;
        let tx = self.db.transaction().map_err(err)?;
        let mut n = 0;
        for t in targets {
            n += tx
                .prepare_cached(&format!(
                    "DELETE FROM {} WHERE id >= ?1 AND id < ?2",
                    table(level)
                ))
                .and_then(|mut s| s.execute(params![key(t.id, 0), key(t.id, before)]))
                .map_err(err)?;
        }
        tx.execute(
            "INSERT OR REPLACE INTO mark (name, ms) VALUES (?1, ?2)",
            params![super::pruned(level), before],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        if n > 0 {
            // The pages the rows held go back to the file system (not only to SQLite's free
            // list), so the file is the size of what is kept.
            self.db
                .execute_batch("PRAGMA incremental_vacuum")
                .map_err(err)?;
        }
        Ok(u64::try_from(n).unwrap_or(u64::MAX))
    }

    fn put_event(&mut self, e: &Event) -> Result<()> {
        self.db
            .prepare_cached(
                "INSERT INTO event (ts_ms, kind, target, rule, until_ms, detail) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    e.ts_ms, e.kind, e.target, e.rule, e.until_ms, e.detail
                ])
            })
            .map(drop)
            .map_err(err)
    }

    fn events(&self, from: i64, to: i64, limit: usize) -> Result<Vec<Event>> {
        let mut s = self
            .db
            .prepare_cached(
                "SELECT ts_ms, kind, target, rule, until_ms, detail FROM event \
                 WHERE ts_ms >= ?1 AND ts_ms < ?2 ORDER BY ts_ms DESC, id DESC LIMIT ?3",
            )
            .map_err(err)?;
        let rows = s
            .query_map(
                params![from, to, i64::try_from(limit).unwrap_or(i64::MAX)],
                |r| {
                    Ok(Event {
                        ts_ms: r.get(0)?,
                        kind: r.get(1)?,
                        target: r.get(2)?,
                        rule: r.get(3)?,
                        until_ms: r.get(4)?,
                        detail: r.get(5)?,
                    })
                },
            )
            .map_err(err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err)
    }

    fn put_alert(&mut self, a: &AlertRow) -> Result<()> {
        self.db
            .prepare_cached(
                "INSERT OR REPLACE INTO alert (target, rule, firing, since_ms, streak, value) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    a.target, a.rule, a.firing, a.since_ms, a.streak, a.value
                ])
            })
            .map(drop)
            .map_err(err)
    }

    fn alerts(&self) -> Result<Vec<AlertRow>> {
        let mut s = self
            .db
            .prepare_cached(
                "SELECT target, rule, firing, since_ms, streak, value FROM alert \
                 ORDER BY target, rule",
            )
            .map_err(err)?;
        let rows = s
            .query_map([], |r| {
                Ok(AlertRow {
                    target: r.get(0)?,
                    rule: r.get(1)?,
                    firing: r.get(2)?,
                    since_ms: r.get(3)?,
                    streak: r.get(4)?,
                    value: r.get(5)?,
                })
            })
            .map_err(err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err)
    }
}
