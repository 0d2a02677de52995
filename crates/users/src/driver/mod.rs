//! The tokio driver: one task per user, asking the [`model`](crate::model) what to do and
//! carrying it out on real sockets (TCP, one shared QUIC client endpoint, UDP), reporting
//! every measurement to the [`Collector`].
//!
//! Timing points (docs/measurement.md, "Latency is the user's view"): a request's latency runs from just before its first byte
//! is handed to the socket to just after its last response byte is read. Connect and
//! handshake are timed apart; "first request" runs from the connect start to the end of the
//! first request of that connection. Requests still in flight when the run stops are
//! abandoned: neither counted nor errors.
//!
//! This module holds the run's configuration, its runtime and each user's life; the jobs a
//! user's steps need live beside it: `fail` (error classes), `exchange` (the framed
//! request/response codec over any byte stream), `activities` (web, transfers, QUIC) and
//! `game` (UDP echo, measured by `npt probe`'s session).
#![deny(clippy::indexing_slicing)] // parses replies from the network: see `[workspace.lints]`

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use npt_result::error::ErrorKind;
use npt_result::run::RunBody;
use npt_result::stats::{RunMeta, Stats};
use npt_result::workload::{Finished, Progress, Stop};
use npt_result::Health;
use npt_result::StopReason;
use npt_wire::auth::{Dir, SessionKey};
use npt_wire::frame::{Header, Kind, HEADER_LEN, MAX_FRAME_LEN};
use std::pin::Pin;
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UdpSocket};
use tokio::sync::watch;

use crate::collect::{Collector, GameCounts};
use crate::config::{Activity, Load, Proto, Shape, Targets};
use crate::model::{self, Chooser, PagePlan, Step, User};
use npt_client::auth_async as auth;
use npt_client::quic::{self, QuicTrust};

mod activities;
mod exchange;
mod fail;
mod game;

use activities::*;
use exchange::*;
pub use fail::classify_io;
use fail::*;
use game::*;

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub targets: Targets,
    pub load: Load,
    pub duration: Duration,
    pub shape: Shape,
    pub seed: u64,
    /// The `token` field of unsealed frame headers. Nothing checks it any more (`--token`
    /// is the keyed handshake on every transport, `secret`); `npt run` leaves it 0.
    pub token: u64,
    /// `--token`'s secret: the keyed handshake on every TCP connection, QUIC stream and game
    /// socket, whose key then seals every frame ([`npt_client::auth_async`]).
    pub secret: Option<String>,
    /// Connect, handshake and per-read/write idle timeout.
    pub timeout: Duration,
    /// Length of one interval of the series (and of the progress line).
    pub interval: Duration,
    pub quic_trust: QuicTrust,
    /// Threads the users run on (0 = [`RunConfig::threads`] decides).
    pub workers: usize,
}

impl RunConfig {
    /// The user threads and why: `--workers`; else half the CPUs (at least one) when a target
    /// is on this machine — its server needs CPUs of its own, and one event loop instead of
    /// two cost 10–25 % less CPU per request on the 2-core development box (bench/run.sh's
    /// user model, 4,000 users) — else one per CPU.
    pub fn threads(&self) -> (usize, String) {
        if self.workers > 0 {
            return (self.workers, "--workers".into());
        }
        let cpus = npt_result::cpus();
        let mut targets = self.targets.stream.iter().chain(self.targets.quic.iter());
        if targets.any(|a| npt_client::workers::is_local(*a)) {
            let n = (cpus / 2).max(1);
            (
                n,
                format!("a target is on this machine: half of {cpus} CPUs, the rest left to it"),
            )
        } else {
            (cpus, format!("remote targets: one per CPU ({cpus})"))
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start the runtime: {0}")]
    Runtime(io::Error),
    #[error("QUIC: {0}")]
    Quic(String),
    #[error("no target for activity {0} (give a tcp://HOST:PORT target)")]
    NoTarget(&'static str),
    #[error("activity quic needs --quic HOST:PORT")]
    NoQuicTarget,
}

struct Ctx {
    cfg: RunConfig,
    /// The user runtimes: user `id` lives on `users[id % len]`.
    users: Vec<tokio::runtime::Handle>,
    col: Collector,
    inflight: crate::inflight::InFlight,
    t0: Instant,
    quic: Option<quinn::Endpoint>,
    alive: AtomicU64,
    /// The layers each protocol's new connections set up ([`crate::setup`]).
    plans: crate::setup::Plans,
}

impl Ctx {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Sleeps until `at` and records how late the wakeup was.
    async fn sleep_until(&self, at: Instant) {
        tokio::time::sleep_until(at.into()).await;
        let late = Instant::now().saturating_duration_since(at);
        self.col
            .lateness(u64::try_from(late.as_nanos()).unwrap_or(u64::MAX));
    }

    async fn io<T>(
        &self,
        what: &str,
        f: impl std::future::Future<Output = io::Result<T>>,
    ) -> Result<T, Fail> {
        match tokio::time::timeout(self.cfg.timeout, f).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Fail::io(what, &e)),
            Err(_) => Err(Fail::timeout(what)),
        }
    }
}

/// The run on the runtime [`RunConfig::run`](crate::workload) built: users until the duration
/// is over or `stop` says so; `progress` sees each interval as it closes.
pub(crate) async fn run_async(
    cfg: RunConfig,
    workers: &npt_client::workers::Workers,
    stop: &Stop,
    progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<Finished<RunBody>, RunError> {
    let quic_ep = if cfg.shape.mix.weight(Activity::Quic) > 0 {
        let target = cfg.targets.quic.ok_or(RunError::NoQuicTarget)?;
        let ep =
            quic::client_endpoint(target, &cfg.quic_trust, cfg.timeout).map_err(RunError::Quic)?;
        // One connection before the run: a certificate we do not trust is a clear error
        // now, not thousands of classified errors later.
        quic::preflight(&ep, target, &cfg.targets.quic_server_name, cfg.timeout)
            .await
            .map_err(RunError::Quic)?;
        Some(ep)
    } else {
        None
    };
    let started = SystemTime::now();
    let started_mono = Instant::now();
    let cpu0 = npt_result::cpu_seconds();
    let ctx = Arc::new(Ctx {
        cfg: cfg.clone(),
        users: (0..workers.len())
            .map(|i| workers.handle(i).clone())
            .collect(),
        col: Collector::new(),
        inflight: Default::default(),
        t0: Instant::now(),
        quic: quic_ep,
        alive: AtomicU64::new(0),
        plans: crate::setup::Plans::new(&cfg.targets),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let end = cfg.duration;
    match cfg.load {
        Load::Users { users, ramp_up } => {
            for i in 0..users {
                let user = User::new(
                    cfg.seed,
                    i as u64,
                    model::ramp_start(i, users, ramp_up),
                    end,
                );
                spawn_user(&ctx, user, i as u64, stop_rx.clone());
            }
        }
        Load::Arrivals {
            per_sec,
            max_active,
        } => {
            let ctx2 = ctx.clone();
            let rx = stop_rx.clone();
            tokio::spawn(async move {
                let mut stop = rx.clone();
                let spawner = async {
                    for k in 0u64.. {
                        let at = model::arrival_at(k, per_sec);
                        if at >= end {
                            break;
                        }
                        ctx2.sleep_until(ctx2.t0 + at).await;
                        if ctx2.alive.load(Ordering::Relaxed) >= max_active as u64 {
                            ctx2.col.arrivals_dropped.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        spawn_user(
                            &ctx2,
                            User::visitor(ctx2.cfg.seed, k, at, end),
                            k,
                            rx.clone(),
                        );
                    }
                };
                tokio::select! {
                    _ = stop.wait_for(|s| *s) => {}
                    _ = spawner => {}
                }
            });
        }
    }

    // The clock of the run: intervals, progress, the end, signals.
    let mut stopped_by = StopReason::Duration;
    let mut next_interval = cfg.interval;
    let mut last_cut = Duration::ZERO;
    loop {
        let now = ctx.t0.elapsed();
        if stop.stopping() {
            stopped_by = StopReason::Signal;
            break;
        }
        if now >= end {
            break;
        }
        if now >= next_interval {
            let rec = ctx
                .col
                .close_interval(last_cut.as_secs_f64(), now.as_secs_f64());
            last_cut = now;
            next_interval += cfg.interval;
            progress(&Progress {
                interval: &rec,
                elapsed: now,
                completed: ctx.col.requests_total(),
                errors: ctx.col.errors_total(),
                totals: &|s| ctx.col.export(s),
            });
        }
        let wake =
            (ctx.t0 + next_interval.min(end)).min(Instant::now() + Duration::from_millis(50));
        tokio::time::sleep_until(wake.into()).await;
    }
    let ran = ctx.t0.elapsed();
    // What the end cuts off, read before the users' futures (and their guards) are dropped.
    let cut = ctx.inflight.cut(
        ctx.now_ns(),
        u64::try_from(ctx.cfg.timeout.as_nanos()).unwrap_or(u64::MAX),
    );
    for a in &cut.timed_out {
        ctx.col.error(*a, ErrorKind::Timeout, || {
            format!(
                "no answer within {:?}, still waiting when the run ended",
                ctx.cfg.timeout
            )
        });
    }
    let _ = stop_tx.send(true);
    // Users leave at once (their futures are dropped at the next poll); wait a bounded time.
    let give_up = Instant::now() + Duration::from_secs(3);
    while ctx.alive.load(Ordering::Relaxed) > 0 && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if ran > last_cut + Duration::from_millis(1) {
        ctx.col
            .close_interval(last_cut.as_secs_f64(), ran.as_secs_f64());
    }
    if let Some(ep) = &ctx.quic {
        ep.close(0u32.into(), b"run over");
    }
    let mut totals = npt_stats::Snapshot::new();
    ctx.col.export(&mut totals);
    // Start label plus monotonic time: a wall-clock step cannot distort the run's length.
    let ended = started + started_mono.elapsed();
    let secs = ran.as_secs_f64();
    let mut stats = ctx
        .col
        .finish(secs, cfg.shape.game.loss_timeout.as_secs_f64() * 1e3);
    let (model_name, users, rate, ramp) = match cfg.load {
        Load::Users { users, ramp_up } => ("closed", users, None, ramp_up.as_secs_f64()),
        Load::Arrivals {
            per_sec,
            max_active,
        } => ("open", max_active, Some(per_sec), 0.0),
    };
    let meta = RunMeta {
        model: model_name.to_string(),
        targets: cfg
            .targets
            .stream
            .iter()
            .map(|a| format!("tcp://{a}"))
            .collect(),
        quic_target: cfg.targets.quic.map(|a| a.to_string()),
        mix: cfg.shape.mix.to_string_compact(),
        seed: cfg.seed,
        ramp_up_s: ramp,
        setup: crate::setup::finish(&mut stats, &cfg.targets),
    };
    stats.users = users;
    stats.arrival_rate_per_s = rate;
    stats.duration_s = secs;
    stats.in_flight_at_end = cut.count;
    stats.oldest_in_flight_ms = cut.oldest_ns as f64 / 1e6;
    stats.health = Health {
        late_wakeups: stats.health.late_wakeups,
        late_threshold_ms: stats.health.late_threshold_ms,
        ..Health::measured(cpu0, secs.max(1e-9))
    };
    // Requests started: completed, failed (the timed-out ones among those still in flight
    // included), and the rest of those still in flight.
    stats.errors.attempts = stats.requests + stats.errors.total() + cut.count
        - (cut.timed_out.len() as u64).min(cut.count);
    Ok(Finished::new(
        stats.summarize(&meta),
        started,
        ended,
        stopped_by,
        totals,
    ))
}

struct Alive<'a>(&'a AtomicU64);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn spawn_user(ctx: &Arc<Ctx>, user: User, id: u64, mut stop: watch::Receiver<bool>) {
    let ctx = ctx.clone();
    ctx.alive.fetch_add(1, Ordering::Relaxed);
    let Some(rt) = usize::try_from(id)
        .ok()
        .and_then(|i| ctx.users.get(i.checked_rem(ctx.users.len())?))
        .cloned()
    else {
        ctx.alive.fetch_sub(1, Ordering::Relaxed);
        return;
    };
    rt.spawn(async move {
        let _alive = Alive(&ctx.alive);
        tokio::select! {
            _ = stop.wait_for(|s| *s) => {}
            _ = user_life(&ctx, user, id) => {}
        }
    });
}

async fn user_life(ctx: &Arc<Ctx>, mut user: User, id: u64) {
    let mut active = None;
    let targets = &ctx.cfg.targets.stream;
    let target = usize::try_from(id)
        .ok()
        .and_then(|i| targets.get(i.checked_rem(targets.len())?))
        .copied();
    loop {
        match user.next(ctx.t0.elapsed(), &ctx.cfg.shape) {
            Step::WaitUntil(t) => ctx.sleep_until(ctx.t0 + t).await,
            Step::Act(a) => {
                if active.is_none() {
                    active = Some(ctx.col.user_active());
                }
                ctx.col.session(a);
                let r = match (a, target) {
                    (Activity::Quic, _) => quic_visit(ctx, &mut user.chooser, id).await,
                    (_, None) => Err(Fail::new(ErrorKind::Config, "no target")),
                    (Activity::Web, Some(t)) => web_visit(ctx, &mut user.chooser, id, t).await,
                    (Activity::Download, Some(t)) => {
                        let n = user.chooser.download(&ctx.cfg.shape);
                        transfer(ctx, Activity::Download, id, t, n).await
                    }
                    (Activity::Upload, Some(t)) => {
                        let n = user.chooser.upload(&ctx.cfg.shape);
                        transfer(ctx, Activity::Upload, id, t, n).await
                    }
                    // Boxed: a game's state is the largest of the activities (3.9 KB against a
                    // web visit's 2.6, release build), and every user's task is as large as
                    // its largest activity whichever it runs — 1.3 KB more per idle user. One
                    // allocation per game session is nothing beside its packets.
                    (Activity::Game, Some(t)) => {
                        Box::pin(game(ctx, &mut user.chooser, id, t)).await
                    }
                };
                match r {
                    Ok(()) => ctx.col.session_completed(a),
                    Err(f) => ctx.col.error(a, f.kind, || f.msg),
                }
            }
            Step::Done => break,
        }
    }
}
