//! The one thread that writes the store. Rounds, events and alert states arrive on a channel;
//! whatever has arrived is committed together (a round is in the file within one commit of
//! finishing, so `kill -9` loses at most the rounds still running). Between batches it rolls
//! up closed buckets ([`crate::rollup`]), prunes what retention lets go, and marks that the
//! monitor is alive (so a restart can tell a gap and whether it was a clean stop).
//!
//! When the store cannot be written (a full disk, a read-only file), rounds wait in memory —
//! at most `limits.backlog` of them; past that the oldest are dropped and counted — the error
//! is counted and reported once, and writing is retried every few seconds. Measuring never
//! stops for the store.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Retention;
use crate::kinds::Kind;
use crate::round::{wall_ms, Round};
use crate::store::{AlertRow, Event, Level, RoundRow, Store, StoreError};

/// What the writer is sent.
pub enum Msg {
    Round(Box<Round>),
    Event(Event),
    Alert(AlertRow),
    /// Every round that started before this (wall ms) has been sent: buckets ending by it may
    /// be rolled up.
    Watermark(i64),
    /// Answer once everything sent before is committed (or waiting in the backlog).
    Flush(Sender<()>),
}

/// The writer's counters, read by the metrics.
#[derive(Debug, Default)]
pub struct Counts {
    pub stored: AtomicU64,
    pub errors: AtomicU64,
    pub dropped: AtomicU64,
    pub backlog: AtomicU64,
    pub rollups: AtomicU64,
    pub pruned: AtomicU64,
}

/// How often it retries a store that failed, marks that it is alive, prunes.
const RETRY: Duration = Duration::from_secs(5);
const ALIVE: Duration = Duration::from_secs(5);
const PRUNE: Duration = Duration::from_secs(600);

pub struct Writer {
    store: Box<dyn Store>,
    retention: Retention,
    backlog_max: usize,
    counts: Arc<Counts>,
    /// Rows (or events) not yet written.
    backlog: VecDeque<Pending>,
    ids: HashMap<(String, Kind), i64>,
    configs: HashMap<(i64, String), i64>,
    watermark: Option<i64>,
    first: i64,
    failing: Option<String>,
    last_try: Option<Instant>,
    last_alive: Option<Instant>,
    last_prune: Option<Instant>,
    /// Where the errors of the store are told (stderr for the cli).
    log: Box<dyn Fn(&str) + Send>,
}

enum Pending {
    Round(Box<Round>),
    Event(Event),
    Alert(AlertRow),
}

impl Writer {
    /// A writer of `store`; `log` hears of failures and recoveries.
    pub fn new(
        mut store: Box<dyn Store>,
        retention: Retention,
        backlog_max: u32,
        counts: Arc<Counts>,
        log: Box<dyn Fn(&str) + Send>,
    ) -> Result<Writer, StoreError> {
        let now = wall_ms(std::time::SystemTime::now());
        let first = match store.mark("created")? {
            Some(t) => t,
            None => {
                store.set_mark("created", now)?;
                now
            }
        };
        Ok(Writer {
            store,
            retention,
            backlog_max: usize::try_from(backlog_max).unwrap_or(usize::MAX).max(1),
            counts,
            backlog: VecDeque::new(),
            ids: HashMap::new(),
            configs: HashMap::new(),
            watermark: None,
            first,
            failing: None,
            last_try: None,
            last_alive: None,
            last_prune: None,
            log,
        })
    }

    /// The store, for what the monitor reads before it starts (gaps, alert states, budgets).
    pub fn store(&mut self) -> &mut dyn Store {
        &mut *self.store
    }

    /// Runs until the channel closes; then writes what is left and returns.
    pub fn run(mut self, rx: Receiver<Msg>) {
        loop {
            let first = match rx.recv_timeout(Duration::from_millis(500)) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut flushes = Vec::new();
            for m in first.into_iter().chain(rx.try_iter()) {
                match m {
                    Msg::Round(r) => self.push(Pending::Round(r)),
                    Msg::Event(e) => self.push(Pending::Event(e)),
                    Msg::Alert(a) => self.push(Pending::Alert(a)),
                    Msg::Watermark(w) => self.watermark = Some(w),
                    Msg::Flush(tx) => flushes.push(tx),
                }
            }
            self.tick(Instant::now(), !flushes.is_empty());
            for f in flushes {
                let _ = f.send(());
            }
        }
        self.tick(Instant::now(), true);
    }

    fn push(&mut self, p: Pending) {
        if self.backlog.len() >= self.backlog_max {
            // Full: the oldest round goes (events and alert states are few and kept).
            if let Some(i) = self
                .backlog
                .iter()
                .position(|x| matches!(x, Pending::Round(_)))
            {
                self.backlog.remove(i);
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.backlog.push_back(p);
        self.counts
            .backlog
            .store(self.backlog.len() as u64, Ordering::Relaxed);
    }

    /// Writes the backlog (now, or when a failed store's retry is due), then the periodic work.
    pub fn tick(&mut self, now: Instant, force: bool) {
        let retry_due = self.last_try.is_none_or(|t| now.duration_since(t) >= RETRY);
        if self.failing.is_none() || retry_due || force {
            self.last_try = Some(now);
            match self.write_backlog() {
                Ok(()) => {
                    if let Some(why) = self.failing.take() {
                        (self.log)(&format!("store writable again (it failed: {why})"));
                        let e = Event {
                            ts_ms: wall_ms(std::time::SystemTime::now()),
                            kind: "store_recovered".into(),
                            target: None,
                            rule: None,
                            until_ms: None,
                            detail: why,
                        };
                        let _ = self.store.put_event(&e);
                    }
                }
                Err(e) => {
                    self.counts.errors.fetch_add(1, Ordering::Relaxed);
                    if self.failing.is_none() {
                        (self.log)(&format!(
                            "{e}; measuring goes on, rounds wait in memory (at most {}) and \
                             writing is retried every {}s",
                            self.backlog_max,
                            RETRY.as_secs()
                        ));
                    }
                    self.failing = Some(e.to_string());
                    return;
                }
            }
        }
        if self.failing.is_some() {
            return;
        }
        if let Err(e) = self.periodic(now) {
            self.counts.errors.fetch_add(1, Ordering::Relaxed);
            (self.log)(&format!("{e}"));
            self.failing = Some(e.to_string());
        }
    }

    fn periodic(&mut self, now: Instant) -> Result<(), StoreError> {
        let wall = wall_ms(std::time::SystemTime::now());
        if let Some(w) = self.watermark {
            let n = crate::rollup::roll_all(&mut *self.store, w, self.first)?;
            self.counts.rollups.fetch_add(n as u64, Ordering::Relaxed);
        }
        if self
            .last_alive
            .is_none_or(|t| now.duration_since(t) >= ALIVE)
        {
            self.store.set_mark("alive", wall)?;
            self.last_alive = Some(now);
        }
        if self
            .last_prune
            .is_none_or(|t| now.duration_since(t) >= PRUNE)
        {
            self.last_prune = Some(now);
            let n = prune_all(&mut *self.store, &self.retention, wall)?;
            self.counts.pruned.fetch_add(n, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Writes everything pending: rounds in one transaction, then events and alert states.
    fn write_backlog(&mut self) -> Result<(), StoreError> {
        if self.backlog.is_empty() {
            return Ok(());
        }
        let mut rows = Vec::new();
        let backlog = std::mem::take(&mut self.backlog);
        let made: Result<(), StoreError> = backlog.iter().try_for_each(|p| {
            if let Pending::Round(r) = p {
                rows.push(self.row(r)?);
            }
            Ok(())
        });
        self.backlog = backlog;
        made?;
        self.store.put_rounds(&rows)?;
        for p in &self.backlog {
            match p {
                Pending::Event(e) => self.store.put_event(e)?,
                Pending::Alert(a) => self.store.put_alert(a)?,
                Pending::Round(_) => {}
            }
        }
        self.backlog.clear();
        self.counts.backlog.store(0, Ordering::Relaxed);
        self.counts
            .stored
            .fetch_add(rows.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn row(&mut self, r: &Round) -> Result<RoundRow, StoreError> {
        let key = (r.target.clone(), r.kind);
        let target = match self.ids.get(&key) {
            Some(id) => *id,
            None => {
                let id = self.store.target_id(&r.target, r.kind)?;
                self.ids.insert(key, id);
                id
            }
        };
        let config = match &r.described {
            Some(d) => {
                let k = (target, format!("{}\n{}", d.meta, d.config));
                match self.configs.get(&k) {
                    Some(id) => Some(*id),
                    None => {
                        let id = self.store.config_id(target, &d.meta, &d.config)?;
                        self.configs.insert(k, id);
                        Some(id)
                    }
                }
            }
            None => None,
        };
        Ok(RoundRow {
            target,
            due_ms: r.due_ms,
            start_ms: r.start_ms,
            end_ms: r.end_ms,
            lateness_ns: r.lateness_ns,
            status: r.status,
            detail: r.detail.clone(),
            figures: r.figures.clone(),
            config,
            stats: r.stats.clone(),
        })
    }
}

/// Deletes what `retention` lets go at wall time `now_ms`, every level (whole buckets), and
/// gives the freed pages back to the file system; returns the rows deleted.
pub fn prune_all(
    st: &mut dyn Store,
    retention: &Retention,
    now_ms: i64,
) -> Result<u64, StoreError> {
    let mut n = 0;
    for (level, keep) in [
        (Level::Round, retention.rounds),
        (Level::Minute, retention.minute),
        (Level::Hour, retention.hour),
        (Level::Day, retention.day),
    ] {
        let keep = i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
        let cutoff = level.floor(now_ms.saturating_sub(keep));
        n += st.prune(level, cutoff)?;
    }
    Ok(n)
}

/// What the store says about the last run: its last sign of life and whether it stopped
/// cleanly. The gap from then to `now` is an event of its own.
pub fn gap_since_last_run(st: &mut dyn Store, now_ms: i64) -> Result<Option<Event>, StoreError> {
    let Some(alive) = st.mark("alive")? else {
        return Ok(None);
    };
    let last = st.events(i64::MIN, i64::MAX, 1)?;
    let clean = last
        .first()
        .is_some_and(|e| e.kind == "stop" && e.ts_ms >= alive - 2 * 5_000);
    let from = last
        .first()
        .filter(|e| e.kind == "stop")
        .map_or(alive, |e| e.ts_ms.max(alive));
    let e = Event {
        ts_ms: from,
        kind: "gap".into(),
        target: None,
        rule: None,
        until_ms: Some(now_ms),
        detail: if clean {
            "the monitor was stopped".into()
        } else {
            "the monitor ended without stopping (killed, crashed or the host went down): the \
             rounds then running are lost"
                .into()
        },
    };
    st.put_event(&e)?;
    Ok(Some(e))
}

/// The bytes a target moved today (UTC), for its budget after a restart: the minutes rolled
/// up so far, then the rounds after them (rounds may be kept for less than a day).
pub fn bytes_today(st: &dyn Store, target: i64, now_ms: i64) -> Result<u64, StoreError> {
    let day = Level::Day.floor(now_ms);
    let rolled = st
        .mark(&crate::store::rolled(Level::Minute))?
        .unwrap_or(day)
        .clamp(day, now_ms.max(day));
    let minutes: u64 = st
        .rollups(target, Level::Minute, day, rolled, false)?
        .iter()
        .map(|r| r.figures.bytes)
        .sum();
    let rounds: u64 = st
        .rounds(target, rolled, i64::MAX, false)?
        .iter()
        .map(|r| r.figures.bytes)
        .sum();
    Ok(minutes + rounds)
}

#[cfg(test)]
mod tests;
