//! What a monitor's store weighs after weeks, without waiting weeks: replays the rounds of a
//! real store (`bench/monitor.sh`'s run, its values re-encoded as this npt writes them) as `TARGETS` targets every 10 s for `DAYS` simulated
//! days — synthetic timestamps, the real code paths: `Sqlite::put_rounds` a minute at a time,
//! `rollup::roll_all` to the end of each minute, `writer::prune_all` with the default
//! retention every 10 simulated minutes, as the writer does. Prints the rows each level
//! holds at the end; `bench/monitor.sh` weighs the file's tables.
//!
//!   cargo run --release -p npt-monitor --example store_sim -- FROM.db OUT.db [DAYS] [TARGETS]

use std::path::Path;

use npt_monitor::config::Retention;
use npt_monitor::kinds::KindStats;
use npt_monitor::store::sqlite::Sqlite;
use npt_monitor::store::{Level, RoundRow, Store};

const EVERY_MS: i64 = 10_000;
/// A UTC midnight (2026-01-01), where the simulated history starts.
const T0: i64 = 1_767_225_600_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [from, out, rest @ ..] = args.as_slice() else {
        return Err("usage: store_sim FROM.db OUT.db [DAYS] [TARGETS]".into());
    };
    let days: i64 = rest.first().map_or(Ok(30), |s| s.parse())?;
    let n: usize = rest.get(1).map_or(Ok(2), |s| s.parse())?;

    let src = Sqlite::open_read(Path::new(from))?;
    let mut pool: Vec<RoundRow> = Vec::new();
    let mut kind = None;
    for t in src.targets()? {
        kind.get_or_insert(t.kind);
        if Some(t.kind) == kind {
            pool.extend(src.rounds(t.id, i64::MIN, i64::MAX, true)?);
        }
    }
    let kind = kind.ok_or("the source store has no rounds")?;
    // The values as this npt writes them (the source may be of an earlier layout).
    for r in &mut pool {
        if let Some(b) = &r.stats {
            r.stats = Some(KindStats::decode(b)?.encode());
        }
    }
    if pool.is_empty() {
        return Err("the source store has no rounds".into());
    }

    let _ = std::fs::remove_file(out);
    let mut st = Sqlite::open(Path::new(out))?;
    st.set_mark("created", T0)?;
    let ids = (0..n)
        .map(|i| st.target_id(&format!("sim{i}"), kind))
        .collect::<Result<Vec<_>, _>>()?;
    let retention = Retention::default();
    let per_minute = 60_000 / EVERY_MS;
    let mut next = 0usize;
    for minute in 0..days * 1440 {
        let m0 = T0 + minute * 60_000;
        let mut rows = Vec::new();
        for k in 0..per_minute {
            for &t in &ids {
                let src = &pool[next % pool.len()];
                next += 1;
                let start = m0 + k * EVERY_MS + (src.start_ms - src.due_ms);
                rows.push(RoundRow {
                    target: t,
                    due_ms: m0 + k * EVERY_MS,
                    start_ms: start,
                    end_ms: start + (src.end_ms - src.start_ms),
                    config: None,
                    ..src.clone()
                });
            }
        }
        st.put_rounds(&rows)?;
        let end = m0 + 60_000;
        npt_monitor::rollup::roll_all(&mut st, end, T0)?;
        if minute % 10 == 9 {
            npt_monitor::writer::prune_all(&mut st, &retention, end)?;
        }
    }
    st.checkpoint()?;
    let end = T0 + days * 86_400_000;
    for level in Level::ALL {
        let rows: usize = ids
            .iter()
            .map(|&t| match level {
                Level::Round => st.rounds(t, i64::MIN, end, false).map(|r| r.len()),
                l => st.rollups(t, l, i64::MIN, end, false).map(|r| r.len()),
            })
            .sum::<Result<usize, _>>()?;
        println!("{} {rows}", level.name());
    }
    Ok(())
}
