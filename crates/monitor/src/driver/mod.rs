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
//! A round is handed over [`AHEAD`] before it is due, and its thread waits for the due time on
//! its own timer: the hand-over is three wake-ups (the loop's timer, a runtime worker, a thread
//! of the blocking pool), each as late as the box makes it, and done ahead of time they add
//! nothing unless together they take longer than that. Only the last wake-up, the round's own,
//! is in its lateness, as a plain process's sleep is. The schedule is unchanged: a target whose
//! previous round still runs is not handed over early, and is skipped if that round is still
//! running at the due time.
//!
//! SIGHUP reloads (targets, alerts, notify); the first stop request lets the running rounds
//! end (each is asked once, and is stored), a second abandons them.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_result::any::AnyResult;
use npt_result::workload::Stop;

use crate::alert::Alerts;
use crate::config::{Plan, TargetPlan};
use crate::kinds::MONITORED;
use crate::live::Live;
use crate::notify::Notifier;
use crate::round::wall_ms;
use crate::store::{Event, Store};
use crate::writer::{Msg, Writer};

mod digest;
mod rounds;

use rounds::Loop;

/// How long before its due time a round is handed to its thread (see the module doc): longer
/// than the hand-over takes on a busy box (p99 under 10 ms at 10,000 targets on 2 cores, the
/// most seen 50 ms), short enough that the rounds waiting hold few threads (1,000 rounds a
/// second hold 20 more).
pub const AHEAD: Duration = Duration::from_millis(20);

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

/// A retention as the config writes it: whole days as `400d`, else as humantime says it.
fn days(d: Duration) -> String {
    match d.as_secs() {
        s if s > 0 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        _ => humantime::format_duration(d).to_string(),
    }
}

/// Runs the monitor until `ctl.stop` says so. `store` is written by the writer thread;
/// `listen` (if the plan has one) is served with `reader` for the dashboard's queries.
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
    let epoch = Epoch {
        t0: Instant::now(),
        wall0: wall_ms(SystemTime::now()),
    };
    let mut lp = Loop::new(
        epoch,
        plan,
        alerts,
        budgets,
        notifier,
        tx.clone(),
        live.clone(),
        ctl,
    );
    rt.block_on(lp.run(setup.targets));
    drop(server);
    let _ = tx.send(Msg::Event(Event {
        ts_ms: wall_ms(SystemTime::now()),
        kind: "stop".into(),
        target: None,
        rule: None,
        until_ms: None,
        detail: format!("stopped after {}s", epoch.t0.elapsed().as_secs()),
    }));
    drop(lp);
    drop(tx);
    let _ = writer_thread.join();
    // Rounds abandoned by a second stop may still hold blocking threads: don't wait for them.
    rt.shutdown_timeout(Duration::from_millis(200));
    Ok(Ran { live })
}
