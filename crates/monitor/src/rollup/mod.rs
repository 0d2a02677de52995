//! Rollups: each minute, hour and day of a target's history as the exact sum of the level
//! below (stats values added one round after another, [`KindStats::then`]), and the plan that
//! covers a time range with as few rows as possible for a range report. Sans-IO: everything
//! goes through a [`Store`] and takes the time it runs up to; nothing reads a clock.
//!
//! A bucket is rolled up once every round that started in it has been stored: the writer
//! passes a watermark no later than the start of the oldest round still running, and a level
//! rolls up to where the level below it has been rolled. Rolling is idempotent (a bucket is
//! written again whole), so a restart after `kill -9` simply continues from the marks.

use crate::kinds::KindStats;
use crate::store::{self, Level, Result, RollupRow, Store, StoreError};

/// At most this many buckets are rolled per call (after a long outage the writer calls again):
/// bounds what one call holds and how long it keeps the store.
pub const MAX_BUCKETS: i64 = 1440;

/// One bucket being summed.
#[derive(Default)]
struct Acc {
    rounds: u64,
    measured: u64,
    unreachable: u64,
    lateness_max_ns: u64,
    first_ms: Option<i64>,
    last_ms: Option<i64>,
    stats: Option<KindStats>,
}

impl Acc {
    fn span(&mut self, first: i64, last: i64) {
        self.first_ms = Some(self.first_ms.map_or(first, |f| f.min(first)));
        self.last_ms = Some(self.last_ms.map_or(last, |l| l.max(last)));
    }

    fn add(&mut self, stats: Option<&[u8]>) -> Result<()> {
        let Some(bytes) = stats else {
            return Ok(());
        };
        let s = KindStats::decode(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        match &mut self.stats {
            Some(acc) => acc
                .then(&s)
                .map_err(|e| StoreError::Corrupt(e.to_string()))?,
            None => self.stats = Some(s),
        }
        Ok(())
    }

    fn row(self, target: i64, level: Level, start_ms: i64) -> RollupRow {
        RollupRow {
            target,
            level,
            start_ms,
            rounds: self.rounds,
            measured: self.measured,
            unreachable: self.unreachable,
            lateness_max_ns: self.lateness_max_ns,
            first_ms: self.first_ms.unwrap_or(start_ms),
            last_ms: self.last_ms.unwrap_or(start_ms),
            figures: self
                .stats
                .as_ref()
                .map(KindStats::figures)
                .unwrap_or_default(),
            stats: self.stats.as_ref().map(KindStats::encode),
        }
    }
}

/// The rollup rows of `level` for `target` over the buckets in `[from, to)` (aligned).
pub fn sum_buckets(
    st: &dyn Store,
    target: i64,
    level: Level,
    from: i64,
    to: i64,
) -> Result<Vec<RollupRow>> {
    let mut out = Vec::new();
    let mut cur: Option<(i64, Acc)> = None;
    let push = |start: i64, acc: Acc, out: &mut Vec<RollupRow>| {
        if acc.rounds > 0 {
            out.push(acc.row(target, level, start));
        }
    };
    let mut add = |start: i64,
                   f: &mut dyn FnMut(&mut Acc) -> Result<()>,
                   out: &mut Vec<RollupRow>|
     -> Result<()> {
        let b = level.floor(start);
        match &mut cur {
            Some((s, acc)) if *s == b => f(acc),
            _ => {
                if let Some((s, acc)) = cur.take() {
                    push(s, acc, out);
                }
                let mut acc = Acc::default();
                f(&mut acc)?;
                cur = Some((b, acc));
                Ok(())
            }
        }
    };
    match level.below() {
        Level::Round => {
            for r in st.rounds(target, from, to, true)? {
                add(
                    r.start_ms,
                    &mut |acc: &mut Acc| {
                        acc.rounds += 1;
                        acc.measured += u64::from(r.status.measured());
                        acc.unreachable += u64::from(r.status.unreachable());
                        acc.lateness_max_ns = acc.lateness_max_ns.max(r.lateness_ns);
                        acc.span(r.start_ms, r.end_ms.max(r.start_ms));
                        acc.add(r.stats.as_deref())
                    },
                    &mut out,
                )?;
            }
        }
        below => {
            for r in st.rollups(target, below, from, to, true)? {
                add(
                    r.start_ms,
                    &mut |acc: &mut Acc| {
                        acc.rounds += r.rounds;
                        acc.measured += r.measured;
                        acc.unreachable += r.unreachable;
                        acc.lateness_max_ns = acc.lateness_max_ns.max(r.lateness_max_ns);
                        acc.span(r.first_ms, r.last_ms);
                        acc.add(r.stats.as_deref())
                    },
                    &mut out,
                )?;
            }
        }
    }
    if let Some((s, acc)) = cur.take() {
        push(s, acc, &mut out);
    }
    Ok(out)
}

/// What one call of [`roll`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rolled {
    pub rows: usize,
    /// The mark moved: there may be more to roll (a call rolls at most [`MAX_BUCKETS`]).
    pub advanced: bool,
}

/// Rolls `level` up for every target, as far as `until` allows (a minute: the writer's
/// watermark; an hour or a day: where the level below has been rolled), at most
/// [`MAX_BUCKETS`] buckets. A store without a mark yet starts at the bucket of `first` (its
/// creation).
pub fn roll(st: &mut dyn Store, level: Level, until: i64, first: i64) -> Result<Rolled> {
    let limit = match level {
        Level::Round => return Ok(Rolled::default()),
        Level::Minute => until,
        l => st.mark(&store::rolled(l.below()))?.unwrap_or(first),
    };
    let from = match st.mark(&store::rolled(level))? {
        Some(m) => m,
        None => level.floor(first),
    };
    let end = level
        .floor(limit.min(until))
        .min(from.saturating_add(MAX_BUCKETS * level.ms()));
    if end <= from {
        return Ok(Rolled::default());
    }
    let mut rows = Vec::new();
    for t in st.targets()? {
        rows.extend(sum_buckets(st, t.id, level, from, end)?);
    }
    st.put_rollups(level, &rows, end)?;
    Ok(Rolled {
        rows: rows.len(),
        advanced: true,
    })
}

/// Rolls every level as far as `until` allows, in as many calls as that takes.
pub fn roll_all(st: &mut dyn Store, until: i64, first: i64) -> Result<usize> {
    let mut rows = 0;
    loop {
        let mut more = false;
        for l in Level::ROLLUPS {
            let r = roll(st, l, until, first)?;
            rows += r.rows;
            more |= r.advanced;
        }
        if !more {
            return Ok(rows);
        }
    }
}

/// One part of a range, read from `level` (its rows that start in `[from, to)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub level: Level,
    pub from: i64,
    pub to: i64,
}

/// The fewest rows that cover `[from, to)`: whole days where days are rolled up, then whole
/// hours, whole minutes, and rounds for the rest. `rolled(level)` says how far each level is
/// rolled (`None`: not yet). The spans are in time order.
pub fn cover(from: i64, to: i64, rolled: &dyn Fn(Level) -> Option<i64>) -> Vec<Span> {
    fn go(
        from: i64,
        to: i64,
        levels: &[Level],
        rolled: &dyn Fn(Level) -> Option<i64>,
        out: &mut Vec<Span>,
    ) {
        if from >= to {
            return;
        }
        let Some((&level, finer)) = levels.split_first() else {
            out.push(Span {
                level: Level::Round,
                from,
                to,
            });
            return;
        };
        let s = level.ms();
        let first = from.div_euclid(s) * s + if from.rem_euclid(s) == 0 { 0 } else { s };
        let last = to.div_euclid(s) * s;
        let last = last.min(rolled(level).map_or(i64::MIN, |m| level.floor(m)));
        if first >= last {
            go(from, to, finer, rolled, out);
            return;
        }
        go(from, first, finer, rolled, out);
        out.push(Span {
            level,
            from: first,
            to: last,
        });
        go(last, to, finer, rolled, out);
    }
    let mut out = Vec::new();
    go(
        from,
        to,
        &[Level::Day, Level::Hour, Level::Minute],
        rolled,
        &mut out,
    );
    out
}

#[cfg(test)]
mod tests;
