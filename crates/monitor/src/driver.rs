//! The running monitor: one tokio runtime on which a single loop starts every round on time
//! ([`crate::schedule`]), bounds it, and hands what it measured to the writer, the alerts, the
//! notifiers and the listener's view ([`crate::live`]).
//!
//! A round runs its workload on the runtime's blocking pool (the engines are blocking), after
//! taking a permit of its kind's semaphore (`[limits]`): at most that many rounds of a kind at
//! once, so a thousand targets use as many threads as rounds are running, never one per target.
//! The permit goes with the round's thread, so a round that hangs past its `timeout` — asked to
//! stop, then recorded as `timeout` and left behind — still counts against its kind until its
//! thread returns. Lateness is measured from the due time to the moment the round's own thread
//! begins its workload (after the permit, the hand-over to that thread included), so a starved
//! kind shows up as late rounds, as every tester's lateness does.
//!
//! SIGHUP reloads (targets, alerts, notify); the first stop request lets the running rounds
//! end (each is asked once, and is stored), a second abandons them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_result::any::AnyResult;
use npt_result::workload::Stop;
use npt_stats::Histogram;
use tokio::sync::Semaphore;

use crate::alert::Alerts;
use crate::config::{Plan, TargetPlan};
use crate::kinds::{Kind, KindStats, MONITORED};
use crate::live::Live;
use crate::notify::{Message, Notifier};
use crate::round::{wall_ms, Described, Round, Status};
use crate::schedule::Scheduler;
use crate::store::{Event, Store};
use crate::writer::{Msg, Writer};

/// Why a round could not run at all.
#[derive(Clone, Debug)]
pub struct RunError {
    /// The error kind in results' vocabulary (`resolve`, `refused`, `auth` …).
    pub kind: String,
    pub detail: String,
}

/// One target's round, as the cli builds it from the target's flags.
pub trait Runner: Send + Sync {
    /// Runs one round; `stop` asks it to end early (once: wrap up, twice: abandon).
    fn run(&self, stop: &Arc<Stop>) -> Result<AnyResult, RunError>;
}

/// A target, checked, with what runs its rounds and their hard bound.
#[derive(Clone)]
pub struct Target {
    pub plan: TargetPlan,
    pub runner: Arc<dyn Runner>,
    pub timeout: Duration,
}

/// A config and its targets' runners.
#[derive(Clone)]
pub struct Setup {
    pub plan: Plan,
    pub targets: Vec<Target>,
}

/// Builds a [`Setup`] again from the config file (on SIGHUP); the error names the key.
pub type Reload = Box<dyn Fn() -> Result<Setup, String> + Send>;

/// How the monitor is driven from outside.
pub struct Control {
    /// Stop requests (Ctrl-C, SIGTERM).
    pub stop: Arc<Stop>,
    /// Set by SIGHUP; the loop clears it and reloads.
    pub hup: Arc<AtomicBool>,
    pub reload: Option<Reload>,
    /// Messages for the operator (stderr).
    pub log: Arc<dyn Fn(&str) + Send + Sync>,
}

/// A round that ended (or was skipped), back on the loop.
struct Done {
    slot: usize,
    generation: u64,
    /// Its index in the schedule (with the slot, its key among the rounds in flight).
    index: u64,
    round: Round,
    headline: Option<Histogram>,
}

/// One target in the loop.
struct Slot {
    t: Target,
    generation: u64,
    last_start_ms: i64,
    described: Option<Arc<Described>>,
}

/// A heavy target's bytes today (UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub limit: u64,
    pub day: i64,
    pub used: u64,
    /// What the last round moved: the estimate of the next.
    pub last: u64,
}

impl Budget {
    /// Whether another round fits in today's budget at `now_ms`.
    pub fn allows(&mut self, now_ms: i64) -> bool {
        let day = crate::store::Level::Day.floor(now_ms);
        if day != self.day {
            self.day = day;
            self.used = 0;
        }
        self.used.saturating_add(self.last) <= self.limit
    }

    pub fn spent(&mut self, bytes: u64) {
        self.used = self.used.saturating_add(bytes);
        self.last = bytes;
    }
}

/// The run's start: the monotonic time every round is due on, and its wall-clock label.
#[derive(Clone, Copy)]
struct Epoch {
    t0: Instant,
    wall0: i64,
}

impl Epoch {
    fn now(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn wall_of(&self, ns: u64) -> i64 {
        self.wall0
            .saturating_add(i64::try_from(ns / 1_000_000).unwrap_or(i64::MAX))
    }
}

/// What a finished run of the monitor leaves: its view, for the caller's last words.
pub struct Ran {
    pub live: Arc<Live>,
}

/// Runs the monitor until `ctl.stop` says so. `store` is written by the writer thread;
/// `listen` (if the plan has one) is served with `reader` for the dashboard's queries.
/// A retention as the config writes it: whole days as `400d`, else as humantime says it.
fn days(d: Duration) -> String {
    match d.as_secs() {
        s if s > 0 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        _ => humantime::format_duration(d).to_string(),
    }
}

pub fn run(
    setup: Setup,
    store: Box<dyn Store>,
    reader: Arc<dyn crate::server::Open>,
    ctl: Control,
) -> anyhow::Result<Ran> {
    let plan = setup.plan.clone();
    let total: u32 = MONITORED.iter().map(|k| plan.limits.of(*k)).sum();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(usize::try_from(total).unwrap_or(512).saturating_add(16))
        .thread_name("npt-monitor")
        .enable_all()
        .build()?;
    let counts = Arc::new(crate::writer::Counts::default());
    let log = ctl.log.clone();
    // A store an earlier npt wrote keeps that version's retention where the config sets none.
    let earlier = store.meta(crate::store::KEPT_KEY)?.is_some();
    let retention = plan.retention.for_store(earlier);
    if earlier && retention != plan.retention {
        (ctl.log)(&format!(
            "npt monitor: store {}: written by an earlier npt, it keeps that version's retention \
             where [retention] sets none (rounds {}, minute {}, hour {}, day {}): set [retention] \
             to keep less (docs/monitor.md, \"Retention and what it costs\")",
            plan.store.display(),
            days(retention.rounds),
            days(retention.minute),
            days(retention.hour),
            days(retention.day),
        ));
    }
    let mut writer = Writer::new(
        store,
        retention,
        plan.limits.backlog,
        counts.clone(),
        Box::new(move |m| log(&format!("npt monitor: {m}"))),
    )?;
    let now_ms = wall_ms(SystemTime::now());
    // Before anything runs: the gap since the last run, alert states, today's bytes.
    let st = writer.store();
    if let Some(g) = crate::writer::gap_since_last_run(st, now_ms)? {
        (ctl.log)(&format!(
            "npt monitor: {} ({}s without measuring)",
            g.detail,
            (now_ms - g.ts_ms) / 1000
        ));
    }
    let mut alerts = Alerts::new(plan.alerts.clone());
    alerts.restore(&st.alerts()?);
    // The baselines are not stored: they are rebuilt from the rounds that are.
    let keep_ms = i64::try_from(retention.rounds.as_millis()).unwrap_or(i64::MAX);
    for t in &setup.targets {
        let every_ms = i64::try_from(t.plan.every.as_millis()).unwrap_or(i64::MAX);
        let Some(from) = alerts.replay_from(&t.plan.name, every_ms, now_ms, keep_ms) else {
            continue;
        };
        let id = st.target_id(&t.plan.name, t.plan.kind)?;
        let rounds = st.rounds(id, from, now_ms.saturating_add(1), false)?;
        alerts.rebuild(
            &t.plan.name,
            rounds.iter().map(|r| (r.status, &r.figures, r.start_ms)),
        );
    }
    let mut budgets = HashMap::new();
    for t in &setup.targets {
        if let Some(limit) = t.plan.budget {
            let id = st.target_id(&t.plan.name, t.plan.kind)?;
            let used = crate::writer::bytes_today(st, id, now_ms)?;
            budgets.insert(
                t.plan.name.clone(),
                Budget {
                    limit,
                    day: crate::store::Level::Day.floor(now_ms),
                    used,
                    last: 0,
                },
            );
        }
    }
    st.put_event(&Event {
        ts_ms: now_ms,
        kind: "start".into(),
        target: None,
        rule: None,
        until_ms: None,
        detail: format!("{} targets, vantage {}", setup.targets.len(), plan.vantage),
    })?;
    let notifier = Notifier::new(&plan.notify).map_err(|e| anyhow::anyhow!("notify: {e}"))?;
    let live = Arc::new(Live::new(
        &plan.vantage,
        now_ms,
        counts.clone(),
        notifier.counts.clone(),
    ));
    live.set_targets(&plan.targets);
    live.set_alerts(alerts.states());
    let (tx, rx) = std::sync::mpsc::channel();
    let writer_thread = std::thread::Builder::new()
        .name("npt-monitor-store".into())
        .spawn(move || writer.run(rx))?;
    let server = match plan.listen {
        Some(addr) => Some(crate::server::start(
            addr,
            plan.token.clone(),
            live.clone(),
            reader,
        )?),
        None => None,
    };
    if let Some(s) = &server {
        (ctl.log)(&format!(
            "npt monitor: dashboard on http://{}/ , metrics on http://{}/metrics",
            s.addr, s.addr
        ));
    }
    let mut lp = Loop {
        epoch: Epoch {
            t0: Instant::now(),
            wall0: wall_ms(SystemTime::now()),
        },
        sched: Scheduler::new(),
        slots: Vec::new(),
        names: HashMap::new(),
        sems: MONITORED
            .iter()
            .map(|k| {
                let n = usize::try_from(plan.limits.of(*k)).unwrap_or(1);
                (*k, Arc::new(Semaphore::new(n)))
            })
            .collect(),
        inflight: HashMap::new(),
        alerts,
        budgets,
        notifier,
        plan,
        tx: tx.clone(),
        live: live.clone(),
        ctl,
    };
    rt.block_on(lp.run(setup.targets));
    drop(server);
    let _ = lp.tx.send(Msg::Event(Event {
        ts_ms: wall_ms(SystemTime::now()),
        kind: "stop".into(),
        target: None,
        rule: None,
        until_ms: None,
        detail: format!("stopped after {}s", lp.epoch.t0.elapsed().as_secs()),
    }));
    drop(lp);
    drop(tx);
    let _ = writer_thread.join();
    // Rounds abandoned by a second stop may still hold blocking threads: don't wait for them.
    rt.shutdown_timeout(Duration::from_millis(200));
    Ok(Ran { live })
}

struct Loop {
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
    async fn run(&mut self, targets: Vec<Target>) {
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
                let now = self.epoch.now();
                for st in self.sched.poll(now) {
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
                (0, Some(w)) => Duration::from_nanos(w.saturating_sub(self.epoch.now())),
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
                    round: r,
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
                    round: r,
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
            let job = tokio::task::spawn_blocking(move || {
                b_ms.store(wall_ms(SystemTime::now()), Ordering::Relaxed);
                b.store(epoch.now().max(1), Ordering::Release);
                let _permit = permit;
                let r = runner.run(&s2);
                digest(kind, r, described)
            });
            let outcome = tokio::time::timeout(timeout, job).await;
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
                Ok(Ok(d)) => {
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
                round,
                headline,
            });
        });
    }

    fn finished(&mut self, d: Done) {
        let now = self.epoch.now();
        self.inflight.remove(&(d.slot, d.index));
        let current =
            matches!(self.slots.get(d.slot), Some(Some(s)) if s.generation == d.generation);
        let mut rounds = vec![(d.round, d.headline)];
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

/// What a round's thread makes of its result.
struct Digest {
    status: Status,
    detail: Option<String>,
    figures: crate::kinds::Figures,
    stats: Option<Vec<u8>>,
    described: Option<Arc<Described>>,
    headline: Option<Histogram>,
}

/// A round's result read back as its stats value, its figures and its status, on the round's
/// own thread (decoding and encoding histograms is its cost, not the loop's).
fn digest(kind: Kind, r: Result<AnyResult, RunError>, prev: Option<Arc<Described>>) -> Digest {
    let doc = match r {
        Ok(d) => d,
        Err(e) => {
            return Digest {
                status: Status::Error,
                detail: Some(format!("{}: {}", e.kind, e.detail)),
                figures: Default::default(),
                stats: None,
                described: None,
                headline: None,
            }
        }
    };
    let (stats, meta) = match KindStats::of_doc(kind, &doc) {
        Ok(x) => x,
        Err(e) => {
            return Digest {
                status: Status::Error,
                detail: Some(format!("its result does not read back: {e}")),
                figures: Default::default(),
                stats: None,
                described: None,
                headline: None,
            }
        }
    };
    let figures = stats.figures();
    let answered = figures.count > 0
        || figures.goodput_bps.is_some_and(|g| g > 0.0)
        || figures.segments_ms.iter().any(Option::is_some);
    let errors = &doc.body.view().errors().by_kind;
    let detail = errors.iter().next().map(|(k, c)| match c.examples.first() {
        Some(e) => format!("{k}: {e}"),
        None => k.to_string(),
    });
    let described = Described {
        meta: serde_json::to_string(&meta).unwrap_or_default(),
        config: doc.config.to_string(),
    };
    let described = match prev {
        Some(p) if *p == described => p,
        _ => Arc::new(described),
    };
    Digest {
        status: if answered {
            Status::Ok
        } else if figures.refused > 0 {
            Status::Refused
        } else {
            Status::NoAnswer
        },
        detail,
        figures,
        stats: Some(stats.encode()),
        described: Some(described),
        headline: stats.headline().cloned(),
    }
}
