//! The history in memory: the reference the SQLite store is tested against, and what rollups
//! and range reports are tested on without a file. It can be told to fail its writes
//! ([`Memory::fail_writes`]), as a full disk does, to test the monitor's backlog.

use std::collections::BTreeMap;

use super::{AlertRow, Event, Level, Result, RollupRow, RoundRow, Store, StoreError, TargetRow};
use crate::kinds::Kind;

#[derive(Debug, Default)]
pub struct Memory {
    targets: Vec<TargetRow>,
    configs: Vec<(i64, String, String)>,
    rounds: BTreeMap<(i64, i64), RoundRow>,
    rollups: BTreeMap<(i64, Level, i64), RollupRow>,
    marks: BTreeMap<String, i64>,
    meta: BTreeMap<String, String>,
    events: Vec<Event>,
    alerts: BTreeMap<(String, String), AlertRow>,
    failing: Option<String>,
}

impl Memory {
    pub fn new() -> Memory {
        Memory::default()
    }

    /// Every write fails with `why` until called with `None` (reads still work).
    pub fn fail_writes(&mut self, why: Option<&str>) {
        self.failing = why.map(str::to_string);
    }

    fn writable(&self) -> Result<()> {
        match &self.failing {
            Some(w) => Err(StoreError::Unwritable(w.clone())),
            None => Ok(()),
        }
    }
}

fn strip<T: Clone>(row: &T, stats: bool, clear: impl Fn(&mut T)) -> T {
    let mut r = row.clone();
    if !stats {
        clear(&mut r);
    }
    r
}

impl Store for Memory {
    fn target_id(&mut self, name: &str, kind: Kind) -> Result<i64> {
        if let Some(t) = self
            .targets
            .iter()
            .find(|t| t.name == name && t.kind == kind)
        {
            return Ok(t.id);
        }
        self.writable()?;
        let id = i64::try_from(self.targets.len()).unwrap_or(i64::MAX) + 1;
        self.targets.push(TargetRow {
            id,
            name: name.to_string(),
            kind,
        });
        Ok(id)
    }

    fn targets(&self) -> Result<Vec<TargetRow>> {
        Ok(self.targets.clone())
    }

    fn config_id(&mut self, target: i64, meta: &str, config: &str) -> Result<i64> {
        let key = format!("{target}\n{meta}\n{config}");
        if let Some(i) = self.configs.iter().position(|(_, k, _)| *k == key) {
            return Ok(i64::try_from(i).unwrap_or(i64::MAX) + 1);
        }
        self.writable()?;
        self.configs
            .push((target, key, format!("{meta}\n{config}")));
        Ok(i64::try_from(self.configs.len()).unwrap_or(i64::MAX))
    }

    fn config(&self, id: i64) -> Result<Option<(String, String)>> {
        let Some(i) = usize::try_from(id - 1).ok() else {
            return Ok(None);
        };
        Ok(self.configs.get(i).and_then(|(_, _, v)| {
            let (m, c) = v.split_once('\n')?;
            Some((m.to_string(), c.to_string()))
        }))
    }

    fn latest_config(&self, target: i64) -> Result<Option<i64>> {
        Ok(self
            .configs
            .iter()
            .rposition(|(t, _, _)| *t == target)
            .map(|i| i64::try_from(i).unwrap_or(i64::MAX) + 1))
    }

    fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self.meta.get(key).cloned())
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.writable()?;
        self.meta.insert(key.to_string(), value.to_string());
        Ok(())
    }

    fn put_rounds(&mut self, rows: &[RoundRow]) -> Result<()> {
        self.writable()?;
        for r in rows {
            self.rounds.insert((r.target, r.start_ms), r.clone());
        }
        Ok(())
    }

    fn rounds(&self, target: i64, from: i64, to: i64, stats: bool) -> Result<Vec<RoundRow>> {
        Ok(self
            .rounds
            .range((target, from)..(target, to))
            .map(|(_, r)| strip(r, stats, |r: &mut RoundRow| r.stats = None))
            .collect())
    }

    fn put_rollups(&mut self, level: Level, rows: &[RollupRow], mark: i64) -> Result<()> {
        self.writable()?;
        for r in rows {
            self.rollups
                .insert((r.target, r.level, r.start_ms), r.clone());
        }
        self.marks.insert(super::rolled(level), mark);
        Ok(())
    }

    fn rollups(
        &self,
        target: i64,
        level: Level,
        from: i64,
        to: i64,
        stats: bool,
    ) -> Result<Vec<RollupRow>> {
        Ok(self
            .rollups
            .range((target, level, from)..(target, level, to))
            .map(|(_, r)| strip(r, stats, |r: &mut RollupRow| r.stats = None))
            .collect())
    }

    fn mark(&self, name: &str) -> Result<Option<i64>> {
        Ok(self.marks.get(name).copied())
    }

    fn set_mark(&mut self, name: &str, ms: i64) -> Result<()> {
        self.writable()?;
        self.marks.insert(name.to_string(), ms);
        Ok(())
    }

    fn prune(&mut self, level: Level, before: i64) -> Result<u64> {
        self.writable()?;
        let n0 = self.rounds.len() + self.rollups.len();
        match level {
            Level::Round => self.rounds.retain(|_, r| r.start_ms >= before),
            l => self
                .rollups
                .retain(|_, r| r.level != l || r.start_ms >= before),
        }
        self.marks.insert(super::pruned(level), before);
        let n1 = self.rounds.len() + self.rollups.len();
        Ok(u64::try_from(n0 - n1).unwrap_or(u64::MAX))
    }

    fn put_event(&mut self, e: &Event) -> Result<()> {
        self.writable()?;
        self.events.push(e.clone());
        Ok(())
    }

    fn events(&self, from: i64, to: i64, limit: usize) -> Result<Vec<Event>> {
        let mut v: Vec<Event> = self
            .events
            .iter()
            .filter(|e| e.ts_ms >= from && e.ts_ms < to)
            .cloned()
            .collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.ts_ms));
        v.truncate(limit);
        Ok(v)
    }

    fn put_alert(&mut self, a: &AlertRow) -> Result<()> {
        self.writable()?;
        self.alerts
            .insert((a.target.clone(), a.rule.clone()), a.clone());
        Ok(())
    }

    fn alerts(&self) -> Result<Vec<AlertRow>> {
        Ok(self.alerts.values().cloned().collect())
    }
}
