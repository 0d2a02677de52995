//! The loop that starts every round on time, bounds it and hands what it measured on: the
//! schedule's rounds go to their threads ahead of time ([`super::AHEAD`]), each ends as a
//! [`Done`] back on the loop, which records it (alerts, the live view, the writer).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_result::workload::Stop;
use npt_stats::Histogram;
use tokio::sync::Semaphore;

use super::digest::digest;
use super::{Budget, Control, Epoch, Target, AHEAD};
use crate::alert::Alerts;
use crate::config::Plan;
use crate::kinds::{Kind, MONITORED};
use crate::live::Live;
use crate::notify::{Message, Notifier};
use crate::round::{wall_ms, Described, Round, Status};
use crate::schedule::{ns, Scheduler};
use crate::store::Event;
use crate::writer::Msg;

/// A round that ended (or was skipped), back on the loop.
struct Done {
    slot: usize,
    generation: u64,
    /// Its index in the schedule (with the slot, its key among the rounds in flight).
    index: u64,
    /// None: the monitor began stopping before the round was due, so it never ran and is not
    /// kept (as the rounds the loop had not handed over yet).
    round: Option<Round>,
    headline: Option<Histogram>,
}

/// One target in the loop.
struct Slot {
    t: Target,
    generation: u64,
    last_start_ms: i64,
    described: Option<Arc<Described>>,
}

pub(super) struct Loop {
    epoch: Epoch,
    sched: Scheduler,
    slots: Vec<Option<Slot>>,
    names: HashMap<String, usize>,
    sems: HashMap<Kind, Arc<Semaphore>>,
    /// Rounds running: their stop control and when they were started (wall ms).
    inflight: HashMap<(usize, u64), (Arc<Stop>, i64)>,
    alerts: Alerts,
    budgets: HashMap<String, Budget>,
    notifier: Notifier,
    plan: Plan,
    tx: Sender<Msg>,
    live: Arc<Live>,
    ctl: Control,
}

impl Loop {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        epoch: Epoch,
        plan: Plan,
        alerts: Alerts,
        budgets: HashMap<String, Budget>,
        notifier: Notifier,
        tx: Sender<Msg>,
        live: Arc<Live>,
        ctl: Control,
    ) -> Loop {
        let sems = MONITORED
            .iter()
            .map(|k| {
                let n = usize::try_from(plan.limits.of(*k)).unwrap_or(1);
                (*k, Arc::new(Semaphore::new(n)))
            })
            .collect();
        Loop {
            epoch,
            sched: Scheduler::new(),
            slots: Vec::new(),
            names: HashMap::new(),
            sems,
            inflight: HashMap::new(),
            alerts,
            budgets,
            notifier,
            plan,
            tx,
            live,
            ctl,
        }
    }

    pub(super) async fn run(&mut self, targets: Vec<Target>) {
        self.apply(targets);
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<Done>();
        let mut last_mark = Instant::now();
        let mut stopping = 0;
        loop {
            let level = self.ctl.stop.level();
            if level > stopping {
                stopping = level;
                // Ask every round in flight to end (a second request abandons them).
                for (stop, _) in self.inflight.values() {
                    stop.signal();
                }
            }
            if stopping > 0 && self.inflight.is_empty() {
                break;
            }
            if stopping == 0 {
                let ahead = self.epoch.now().saturating_add(ns(AHEAD));
                for st in self.sched.poll(ahead) {
                    self.start(st, &done_tx);
                }
                if self.ctl.hup.swap(false, Ordering::SeqCst) {
                    self.reload();
                }
            }
            if last_mark.elapsed() >= Duration::from_secs(1) {
                last_mark = Instant::now();
                let now_ms = wall_ms(SystemTime::now());
                let oldest = self.inflight.values().map(|(_, t)| *t).min();
                let _ = self
                    .tx
                    .send(Msg::Watermark(oldest.map_or(now_ms, |t| t.min(now_ms))));
            }
            let wait = match (stopping, self.sched.next_wake()) {
                (0, Some(w)) => Duration::from_nanos(
                    w.saturating_sub(ns(AHEAD)).saturating_sub(self.epoch.now()),
                ),
                _ => Duration::from_millis(200),
            }
            .min(Duration::from_millis(200));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                d = done_rx.recv() => {
                    if let Some(d) = d {
                        self.finished(d);
                        // Everything else that ended meanwhile, before sleeping again.
                        while let Ok(d) = done_rx.try_recv() {
                            self.finished(d);
                        }
                    }
                }
            }
        }
    }

    /// Starts or replaces targets (the first config, or a reload's).
    fn apply(&mut self, targets: Vec<Target>) {
        let now = self.epoch.now();
        let keep: std::collections::BTreeSet<String> =
            targets.iter().map(|t| t.plan.name.clone()).collect();
        // Removed targets: nothing new starts; a round in flight still ends and is stored.
        for (name, &i) in &self.names {
            if !keep.contains(name) {
                self.sched.remove(i);
                if let Some(s) = self.slots.get_mut(i) {
                    *s = None;
                }
            }
        }
        self.names.retain(|n, _| keep.contains(n));
        for t in targets {
            let i = match self.names.get(&t.plan.name) {
                Some(&i) => i,
                None => {
                    self.slots.push(None);
                    let i = self.slots.len() - 1;
                    self.names.insert(t.plan.name.clone(), i);
                    i
                }
            };
            let old = self.slots.get(i).and_then(Option::as_ref);
            let timing_changed = old
                .is_none_or(|o| o.t.plan.every != t.plan.every || o.t.plan.jitter != t.plan.jitter);
            let generation = old.map_or(0, |o| o.generation + 1);
            let last_start_ms = old.map_or(i64::MIN, |o| o.last_start_ms);
            if let Some(limit) = t.plan.budget {
                let b = self.budgets.entry(t.plan.name.clone()).or_insert(Budget {
                    limit,
                    day: 0,
                    used: 0,
                    last: 0,
                });
                b.limit = limit;
            }
            if timing_changed {
                self.sched
                    .set(i, &t.plan.name, t.plan.every, t.plan.jitter, now);
            }
            if let Some(s) = self.slots.get_mut(i) {
                *s = Some(Slot {
                    t,
                    generation,
                    last_start_ms,
                    described: None,
                });
            }
        }
    }

    fn reload(&mut self) {
        let Some(r) = &self.ctl.reload else {
            return;
        };
        let now_ms = wall_ms(SystemTime::now());
        let ev = |kind: &str, detail: String| Event {
            ts_ms: now_ms,
            kind: kind.into(),
            target: None,
            rule: None,
            until_ms: None,
            detail,
        };
        match r() {
            Ok(setup) => {
                let p = &setup.plan;
                let fixed = p.store != self.plan.store
                    || p.listen != self.plan.listen
                    || p.token != self.plan.token
                    || p.limits != self.plan.limits
                    || p.retention != self.plan.retention
                    || p.vantage != self.plan.vantage;
                let msg = format!(
                    "reloaded: {} targets, {} alert rules{}",
                    setup.targets.len(),
                    p.alerts.len(),
                    if fixed {
                        " (vantage, store, listen, token, limits and retention change at restart)"
                    } else {
                        ""
                    }
                );
                (self.ctl.log)(&format!("npt monitor: {msg}"));
                let _ = self.tx.send(Msg::Event(ev("reload", msg)));
                self.alerts.set_rules(p.alerts.clone());
                match Notifier::new(&p.notify) {
                    Ok(mut n) => {
                        n.counts = self.notifier.counts.clone();
                        self.notifier = n;
                    }
                    Err(e) => (self.ctl.log)(&format!("npt monitor: notify: {e}")),
                }
                let names: std::collections::BTreeSet<String> =
                    setup.targets.iter().map(|t| t.plan.name.clone()).collect();
                self.alerts.retain_targets(&|t| names.contains(t));
                self.live.set_targets(&p.targets);
                self.live.set_alerts(self.alerts.states());
                self.plan.targets = p.targets.clone();
                self.plan.alerts = p.alerts.clone();
                self.plan.notify = p.notify.clone();
                self.apply(setup.targets);
            }
            Err(e) => {
                let msg = format!("reload refused, the running config stays: {e}");
                (self.ctl.log)(&format!("npt monitor: {msg}"));
                let _ = self.tx.send(Msg::Event(ev("reload_refused", e)));
            }
        }
    }

    /// Starts the round `st` (or records it held back by its budget).
    fn start(
        &mut self,
        st: crate::schedule::Start,
        done: &tokio::sync::mpsc::UnboundedSender<Done>,
    ) {
        let Some(Some(slot)) = self.slots.get_mut(st.target) else {
            return;
        };
        let name = slot.t.plan.name.clone();
        let kind = slot.t.plan.kind;
        let due_ms = self.epoch.wall_of(st.due);
        if let Some(b) = self.budgets.get_mut(&name) {
            if !b.allows(wall_ms(SystemTime::now())) {
                let r = Round::empty(
                    &name,
                    kind,
                    due_ms,
                    Status::Budget,
                    Some(format!(
                        "{} of {} bytes used today; the next round would move about {}",
                        b.used, b.limit, b.last
                    )),
                );
                // Not started: nothing in flight to wait for.
                let _ = done.send(Done {
                    slot: st.target,
                    generation: slot.generation,
                    index: u64::MAX,
                    round: Some(r),
                    headline: None,
                });
                return;
            }
        }
        let stop = Arc::new(Stop::new());
        self.inflight.insert(
            (st.target, st.round),
            (stop.clone(), wall_ms(SystemTime::now())),
        );
        let sem = self.sems.get(&kind).cloned();
        let runner = slot.t.runner.clone();
        let timeout = slot.t.timeout;
        let epoch = self.epoch;
        let done = done.clone();
        let (slot_i, generation, round_i) = (st.target, slot.generation, st.round);
        let described = slot.described.clone();
        tokio::spawn(async move {
            let permit = match sem {
                Some(s) => s.acquire_owned().await.ok(),
                None => None,
            };
            if stop.stopping() {
                // The monitor began stopping while this round waited for its permit.
                let mut r = Round::empty(&name, kind, due_ms, Status::Skipped, None);
                r.detail = Some("the monitor was stopping".into());
                let _ = done.send(Done {
                    slot: slot_i,
                    generation,
                    index: round_i,
                    round: Some(r),
                    headline: None,
                });
                return;
            }
            // When the round's workload began (epoch ns; 0: not yet), stamped on its own
            // thread: its lateness counts the hand-over to that thread too.
            let began = Arc::new(AtomicU64::new(0));
            let began_ms = Arc::new(AtomicI64::new(0));
            let (b, b_ms) = (began.clone(), began_ms.clone());
            let s2 = stop.clone();
            let due = st.due;
            // Its bound counts from the due time, not from the hand-over ahead of it.
            let bound =
                timeout.saturating_add(Duration::from_nanos(due.saturating_sub(epoch.now())));
            let job = tokio::task::spawn_blocking(move || {
                // Handed over ahead of time: the round begins on this thread's own timer.
                let left = due.saturating_sub(epoch.now());
                if left > 0 {
                    std::thread::sleep(Duration::from_nanos(left));
                }
                if s2.stopping() {
                    return None;
                }
                b_ms.store(wall_ms(SystemTime::now()), Ordering::Relaxed);
                b.store(epoch.now().max(1), Ordering::Release);
                let _permit = permit;
                let r = runner.run(&s2);
                Some(digest(kind, r, described))
            });
            let outcome = tokio::time::timeout(bound, job).await;
            let end_ms = wall_ms(SystemTime::now());
            let (started, start_ms) = match began.load(Ordering::Acquire) {
                // Not begun within its timeout: as late as that.
                0 => (epoch.now(), end_ms),
                t => (t, began_ms.load(Ordering::Relaxed)),
            };
            let lateness_ns = started.saturating_sub(st.due);
            let mut round = Round::empty(&name, kind, due_ms, Status::Error, None);
            round.start_ms = start_ms;
            round.end_ms = end_ms;
            round.lateness_ns = lateness_ns;
            let mut headline = None;
            match outcome {
                Ok(Ok(None)) => {
                    let _ = done.send(Done {
                        slot: slot_i,
                        generation,
                        index: round_i,
                        round: None,
                        headline: None,
                    });
                    return;
                }
                Ok(Ok(Some(d))) => {
                    round.status = d.status;
                    round.detail = d.detail;
                    round.figures = d.figures;
                    round.stats = d.stats;
                    round.described = d.described;
                    headline = d.headline;
                }
                Ok(Err(join)) => {
                    round.detail = Some(format!("the round's thread failed: {join}"));
                }
                Err(_) => {
                    // Ask it to stop; its permit stays taken until its thread returns.
                    stop.signal();
                    stop.signal();
                    round.status = Status::Timeout;
                    round.detail = Some(format!("no result within {timeout:?}: abandoned"));
                }
            }
            let _ = done.send(Done {
                slot: slot_i,
                generation,
                index: round_i,
                round: Some(round),
                headline,
            });
        });
    }

    fn finished(&mut self, d: Done) {
        let now = self.epoch.now();
        self.inflight.remove(&(d.slot, d.index));
        let current =
            matches!(self.slots.get(d.slot), Some(Some(s)) if s.generation == d.generation);
        let mut rounds: Vec<_> = d.round.map(|r| (r, d.headline)).into_iter().collect();
        if current {
            if let Some(sk) = self.sched.finish(d.slot, now) {
                if let Some(Some(s)) = self.slots.get(d.slot) {
                    for due in sk.due {
                        let due_ms = self.epoch.wall_of(due);
                        rounds.push((
                            Round::empty(
                                &s.t.plan.name,
                                s.t.plan.kind,
                                due_ms,
                                Status::Skipped,
                                Some("due while the previous round still ran".into()),
                            ),
                            None,
                        ));
                    }
                }
            }
        } else if let Some(Some(_)) = self.slots.get(d.slot) {
            // A round of a target replaced by a reload: the new one's schedule runs on.
            self.sched.finish(d.slot, now);
        }
        for (mut r, headline) in rounds {
            if let Some(Some(s)) = self.slots.get_mut(d.slot) {
                // Rows are keyed by start: a skipped round never takes a real one's place.
                if r.start_ms <= s.last_start_ms {
                    r.start_ms = s.last_start_ms + 1;
                }
                s.last_start_ms = r.start_ms;
                if r.described.is_some() && r.described != s.described {
                    s.described = r.described.clone();
                }
                if r.status.measured() {
                    if let Some(b) = self.budgets.get_mut(&r.target) {
                        b.spent(r.figures.bytes);
                    }
                }
            }
            self.record(r, headline.as_ref());
        }
    }

    fn record(&mut self, r: Round, headline: Option<&Histogram>) {
        let now_ms = wall_ms(SystemTime::now());
        let (changes, rows) = self
            .alerts
            .on_round(&r.target, r.status, &r.figures, now_ms);
        self.live.on_round(&r, headline);
        for a in rows {
            let _ = self.tx.send(Msg::Alert(a));
        }
        if !changes.is_empty() {
            self.live.set_alerts(self.alerts.states());
        }
        for c in changes {
            let m = Message::of(&self.plan.vantage, &c);
            (self.ctl.log)(&m.text);
            let _ = self.tx.send(Msg::Event(Event {
                ts_ms: c.at_ms,
                kind: if c.firing {
                    "alert_firing"
                } else {
                    "alert_resolved"
                }
                .into(),
                target: Some(c.target.clone()),
                rule: Some(c.rule.clone()),
                until_ms: None,
                detail: m.text.clone(),
            }));
            let n = self.notifier.clone();
            let tx = self.tx.clone();
            let log = self.ctl.log.clone();
            tokio::spawn(async move {
                for f in n.deliver(&m).await {
                    log(&format!("npt monitor: alert not delivered: {f}"));
                    let _ = tx.send(Msg::Event(Event {
                        ts_ms: wall_ms(SystemTime::now()),
                        kind: "notify_failed".into(),
                        target: Some(m.target.clone()),
                        rule: Some(m.alert.clone()),
                        until_ms: None,
                        detail: f,
                    }));
                }
            });
        }
        let _ = self.tx.send(Msg::Round(Box::new(r)));
    }
}
