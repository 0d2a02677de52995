//! Stores an earlier npt wrote stay readable and keep everything: the first layout
//! (`npt.monitor.v1`: one `rollup` table for every level, latencies as float milliseconds,
//! absolute times in every row) is migrated in place when a monitor opens it to write — every
//! round and rollup copied into the current tables in one transaction, then the file vacuumed
//! into its new size — and read as it is, through temporary views of the current layout, when
//! it is opened to read. The stats values are not rewritten: [`super::blob`] reads the first
//! layout's as they are, and retention replaces them.

use rusqlite::Connection;

use super::layout::{create, err, table, SCHEMA, SHIFT};
use super::{Level, Result};

/// The first layout's version.
pub const FIRST: &str = "npt.monitor.v1";

const NS: [&str; 7] = ["min", "p1", "p10", "p50", "p90", "p99", "max"];

/// The current layout's figure columns, from the first layout's.
fn figures() -> String {
    let ns: Vec<String> = NS
        .iter()
        .map(|c| format!("CAST(round({c} * 1e6) AS INTEGER) AS {c}_ns"))
        .collect();
    format!(
        "count, sent, lost, errors, {}, mean, bytes, extra, stats",
        ns.join(", ")
    )
}

/// The first layout's rounds in `from`, as rows of the current `round` table (`view`: with
/// their target and start as columns too, to be found by).
fn rounds(from: &str, view: bool) -> String {
    let keys = if view { "target, start_ms," } else { "" };
    format!(
        "SELECT (target << {SHIFT}) | start_ms AS id, {keys} start_ms - due_ms AS due_before, end_ms - start_ms AS took_ms, lateness_ns, status, \
         detail, config, {} FROM {from}",
        figures()
    )
}

/// The first layout's rollups of `level` in `from`, as rows of the level's current table.
fn rollups(from: &str, level: Level, view: bool) -> String {
    let keys = if view { "target, start_ms," } else { "" };
    format!(
        "SELECT (target << {SHIFT}) | start_ms AS id, {keys} rounds, measured, unreachable, \
         lateness_max_ns, \
         first_ms - start_ms AS first_after, last_ms - start_ms AS last_after, {} FROM {from} \
         WHERE level = '{}'",
        figures(),
        level.name()
    )
}

/// Migrates a store of the first layout in place; says what it did.
pub fn first(db: &Connection) -> Result<String> {
    let size = |db: &Connection| -> u64 {
        db.query_row(
            "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0)
    };
    let before = size(db);
    db.execute_batch("BEGIN IMMEDIATE; ALTER TABLE round RENAME TO round_first;")
        .map_err(err)?;
    let copied = (|| -> Result<(usize, usize)> {
        create(db)?;
        let n = db
            .execute(
                &format!("INSERT INTO round {}", rounds("round_first", false)),
                [],
            )
            .map_err(err)?;
        let mut m = 0;
        for l in Level::ROLLUPS {
            m += db
                .execute(
                    &format!("INSERT INTO {} {}", table(l), rollups("rollup", l, false)),
                    [],
                )
                .map_err(err)?;
        }
        db.execute_batch(&format!(
            "DROP TABLE round_first; DROP TABLE rollup; \
             UPDATE meta SET value = '{SCHEMA}' WHERE key = 'schema'; \
             INSERT OR REPLACE INTO meta (key, value) VALUES ('{KEPT_KEY}', '{FIRST}'); COMMIT;"
        ))
        .map_err(err)?;
        Ok((n, m))
    })();
    let (n, m) = match copied {
        Ok(c) => c,
        Err(e) => {
            let _ = db.execute_batch("ROLLBACK");
            return Err(e);
        }
    };
    // Rewritten whole: the dropped tables' pages go, and pruning shrinks the file from now on.
    let vacuumed = db.execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;");
    let after = size(db);
    let mb = |b: u64| b as f64 / 1e6;
    Ok(match vacuumed {
        Ok(()) => format!(
            "migrated from the layout of an earlier npt ({FIRST}) to {SCHEMA}: {n} rounds and \
             {m} rollups kept, the file went from {:.1} to {:.1} MB",
            mb(before),
            mb(after)
        ),
        Err(e) => format!(
            "migrated from the layout of an earlier npt ({FIRST}) to {SCHEMA}: {n} rounds and \
             {m} rollups kept; the file could not be compacted ({e}): it shrinks as retention \
             prunes"
        ),
    })
}

/// The meta key a migrated store keeps the layout it was written in under: the monitor then
/// keeps that version's retention defaults for it ([`crate::config::Retention::for_store`]).
pub const KEPT_KEY: &str = "written_by";

/// Reads a store of the first layout as it is: temporary views of the current tables over
/// its own (a read-only connection may make them; the file is not touched).
pub fn views(db: &Connection) -> Result<()> {
    let mut sql = format!("CREATE TEMP VIEW round AS {};", rounds("main.round", true));
    for l in Level::ROLLUPS {
        sql += &format!(
            "CREATE TEMP VIEW {} AS {};",
            table(l),
            rollups("main.rollup", l, true)
        );
    }
    db.execute_batch(&sql).map_err(err)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use npt_result::stats::PingStats;
    use rusqlite::types::Value;

    use super::*;
    use crate::kinds::{Figures, Kind, KindStats};
    use crate::round::Status;
    use crate::store::memory::Memory;
    use crate::store::sqlite::Sqlite;
    use crate::store::{RoundRow, Store};

    /// The first layout's tables, as the npt before this layout created them.
    const FIRST_TABLES: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS target (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL, UNIQUE (name, kind));
CREATE TABLE IF NOT EXISTS config (
    id INTEGER PRIMARY KEY, target INTEGER NOT NULL, meta TEXT NOT NULL, config TEXT NOT NULL,
    UNIQUE (target, meta, config));
CREATE TABLE IF NOT EXISTS round (
    target INTEGER NOT NULL, start_ms INTEGER NOT NULL, due_ms INTEGER NOT NULL,
    end_ms INTEGER NOT NULL, lateness_ns INTEGER NOT NULL, status TEXT NOT NULL, detail TEXT,
    config INTEGER,
    count INTEGER NOT NULL, sent INTEGER NOT NULL, lost INTEGER NOT NULL, errors INTEGER NOT NULL,
    min REAL NOT NULL, p1 REAL NOT NULL, p10 REAL NOT NULL, p50 REAL NOT NULL, p90 REAL NOT NULL,
    p99 REAL NOT NULL, max REAL NOT NULL, mean REAL NOT NULL, bytes INTEGER NOT NULL, extra TEXT,
    stats BLOB,
    PRIMARY KEY (target, start_ms)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rollup (
    target INTEGER NOT NULL, level TEXT NOT NULL, start_ms INTEGER NOT NULL,
    rounds INTEGER NOT NULL, measured INTEGER NOT NULL, unreachable INTEGER NOT NULL,
    lateness_max_ns INTEGER NOT NULL, first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL,
    count INTEGER NOT NULL, sent INTEGER NOT NULL, lost INTEGER NOT NULL, errors INTEGER NOT NULL,
    min REAL NOT NULL, p1 REAL NOT NULL, p10 REAL NOT NULL, p50 REAL NOT NULL, p90 REAL NOT NULL,
    p99 REAL NOT NULL, max REAL NOT NULL, mean REAL NOT NULL, bytes INTEGER NOT NULL, extra TEXT,
    stats BLOB,
    PRIMARY KEY (target, level, start_ms)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS event (
    id INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL, kind TEXT NOT NULL, target TEXT, rule TEXT,
    until_ms INTEGER, detail TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS event_ts ON event (ts_ms);
CREATE TABLE IF NOT EXISTS alert (
    target TEXT NOT NULL, rule TEXT NOT NULL, firing INTEGER NOT NULL, since_ms INTEGER NOT NULL,
    streak INTEGER NOT NULL, value REAL, PRIMARY KEY (target, rule)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mark (name TEXT PRIMARY KEY, ms INTEGER NOT NULL) WITHOUT ROWID;
";

    const DAY: i64 = 86_400_000;
    const T0: i64 = 1_700_000_000_000 - 1_700_000_000_000 % DAY;

    /// A day and a bit of ping rounds every 5 minutes with varied RTTs, rolled up in memory.
    fn history() -> Memory {
        let mut m = Memory::new();
        let t = m.target_id("relay", Kind::Ping).unwrap();
        let mut x = 7u64;
        let rows: Vec<RoundRow> = (0..320)
            .map(|k| {
                let mut s = PingStats::default();
                for _ in 0..5 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    s.sent += 1;
                    if !x.is_multiple_of(9) {
                        s.received += 1;
                        s.rtt.record(20_000_000 + x % 9_000_000);
                    }
                }
                let ks = KindStats::Ping(s);
                let start = T0 + k * 300_000 + 3;
                RoundRow {
                    target: t,
                    due_ms: start - 3,
                    start_ms: start,
                    end_ms: start + 812,
                    lateness_ns: x % 3_000_000,
                    status: Status::Ok,
                    detail: None,
                    figures: ks.figures(),
                    config: None,
                    stats: Some(ks.encode()),
                }
            })
            .collect();
        m.put_rounds(&rows).unwrap();
        crate::rollup::roll_all(&mut m, T0 + 320 * 300_000, T0).unwrap();
        m
    }

    /// A stats value as the first layout wrote it: the document's JSON, deflated.
    fn first_blob(b: Option<&[u8]>) -> Value {
        let Some(b) = b else { return Value::Null };
        let s = KindStats::decode(b).unwrap();
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&serde_json::to_vec(&s).unwrap()).unwrap();
        Value::Blob(z.finish().unwrap())
    }

    fn figures(f: &Figures) -> Vec<Value> {
        let mut v: Vec<Value> = [f.count, f.sent, f.lost, f.errors]
            .map(|n| Value::Integer(n.cast_signed()))
            .into();
        v.extend(
            [
                f.min_ms, f.p1_ms, f.p10_ms, f.p50_ms, f.p90_ms, f.p99_ms, f.max_ms, f.mean_ms,
            ]
            .map(Value::Real),
        );
        v.extend([Value::Integer(f.bytes.cast_signed()), Value::Null]);
        v
    }

    /// `m`'s history in a file of the first layout, written with that layout's SQL.
    fn first_file(m: &Memory, path: &std::path::Path) {
        let mut db = Connection::open(path).unwrap();
        db.execute_batch(FIRST_TABLES).unwrap();
        let db = db.transaction().unwrap();
        db.execute_batch(&format!(
            "INSERT INTO meta VALUES ('schema', '{FIRST}'); \
             INSERT INTO target VALUES (1, 'relay', 'ping');"
        ))
        .unwrap();
        let q = |n: usize| {
            (1..=n)
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for r in m.rounds(1, i64::MIN, i64::MAX, true).unwrap() {
            let mut v: Vec<Value> = vec![
                r.target.into(),
                r.start_ms.into(),
                r.due_ms.into(),
                r.end_ms.into(),
                r.lateness_ns.cast_signed().into(),
                "ok".to_string().into(),
                Value::Null,
                Value::Null,
            ];
            v.extend(figures(&r.figures));
            v.push(first_blob(r.stats.as_deref()));
            db.execute(
                &format!("INSERT INTO round VALUES ({})", q(v.len())),
                rusqlite::params_from_iter(v),
            )
            .unwrap();
        }
        for l in Level::ROLLUPS {
            for r in m.rollups(1, l, i64::MIN, i64::MAX, true).unwrap() {
                let mut v: Vec<Value> = vec![
                    r.target.into(),
                    l.name().to_string().into(),
                    r.start_ms.into(),
                    r.rounds.cast_signed().into(),
                    r.measured.cast_signed().into(),
                    r.unreachable.cast_signed().into(),
                    r.lateness_max_ns.cast_signed().into(),
                    r.first_ms.into(),
                    r.last_ms.into(),
                ];
                v.extend(figures(&r.figures));
                v.push(first_blob(r.stats.as_deref()));
                db.execute(
                    &format!("INSERT INTO rollup VALUES ({})", q(v.len())),
                    rusqlite::params_from_iter(v),
                )
                .unwrap();
            }
        }
        db.commit().unwrap();
    }

    /// Equal rows, the stats values compared by what they hold (their bytes differ).
    fn same(a: &dyn Store, b: &dyn Store) {
        let value = |s: &Option<Vec<u8>>| {
            s.as_deref().map(|b| {
                let v = KindStats::decode(b).unwrap();
                (v.figures(), v.headline().cloned())
            })
        };
        let (ra, rb) = (
            a.rounds(1, i64::MIN, i64::MAX, true).unwrap(),
            b.rounds(1, i64::MIN, i64::MAX, true).unwrap(),
        );
        assert_eq!(ra.len(), 320);
        assert_eq!(ra.len(), rb.len());
        for (x, y) in ra.iter().zip(&rb) {
            assert_eq!(
                RoundRow {
                    stats: None,
                    ..x.clone()
                },
                RoundRow {
                    stats: None,
                    ..y.clone()
                }
            );
            assert!(value(&x.stats) == value(&y.stats));
        }
        for l in Level::ROLLUPS {
            let (xa, xb) = (
                a.rollups(1, l, i64::MIN, i64::MAX, true).unwrap(),
                b.rollups(1, l, i64::MIN, i64::MAX, true).unwrap(),
            );
            assert!(!xa.is_empty(), "{l:?}");
            assert_eq!(xa.len(), xb.len());
            for (x, y) in xa.iter().zip(&xb) {
                assert_eq!(
                    crate::store::RollupRow {
                        stats: None,
                        ..x.clone()
                    },
                    crate::store::RollupRow {
                        stats: None,
                        ..y.clone()
                    }
                );
                assert!(value(&x.stats) == value(&y.stats));
            }
        }
    }

    /// A store the previous npt wrote is read as it is, then migrated in place with every
    /// round and rollup kept, equal.
    #[test]
    fn a_first_layout_store_reads_and_migrates_with_nothing_lost() {
        let m = history();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        first_file(&m, &path);
        same(&m, &Sqlite::open_read(&path).unwrap());
        let st = Sqlite::open(&path).unwrap();
        let said = st.migrated().unwrap();
        assert!(
            said.contains("migrated from the layout of an earlier npt (npt.monitor.v1)"),
            "{said}"
        );
        assert!(said.contains("320 rounds"), "{said}");
        same(&m, &st);
        // It says it was written by the earlier npt, so the monitor keeps that retention.
        assert_eq!(st.meta(KEPT_KEY).unwrap().as_deref(), Some(FIRST));
        drop(st);
        let again = Sqlite::open(&path).unwrap();
        assert_eq!(again.migrated(), None);
        same(&m, &Sqlite::open_read(&path).unwrap());
    }
}
