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

pub use super::layout::SCHEMA;
use super::layout::{
    create, err, figure_values, figures, i, key, schema, table, u, Layout, FIGURES, KEY,
};
use super::{AlertRow, Event, Level, Result, RollupRow, RoundRow, Store, StoreError, TargetRow};
use crate::kinds::Kind;
use crate::round::Status;

pub struct Sqlite {
    db: Connection,
    /// What opening it did to a store of an earlier layout, to tell the user.
    migrated: Option<String>,
    /// A store of the first layout read through views: rows are found by target and start.
    first: bool,
}

impl Sqlite {
    /// Opens (or creates) the store at `path` for writing: WAL, its tables, its version. A
    /// store of the first layout is migrated in place ([`Sqlite::migrated`] says so).
    pub fn open(path: &Path) -> Result<Sqlite> {
        let db = Connection::open(path).map_err(err)?;
        db.busy_timeout(Duration::from_secs(5)).map_err(err)?;
        // Both take effect only on a new file (a migrated one is vacuumed into the second,
        // and keeps its 8 KB pages: WAL cannot change them). 16 KB pages hold three days' rows
        // (a day's stats value is often 4 KB) where 8 KB ones held one, half empty; the
        // incremental auto-vacuum lets pruning shrink the file.
        db.pragma_update(None, "page_size", 16_384).map_err(err)?;
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
