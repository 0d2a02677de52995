//! `npt probe --under-load`: the load that runs beside the probe. The probe's run owns it: it
//! starts the bulk engine (`npt-bulk`, the same streams `npt bulk` runs) when the idle phase
//! ends, the engine stops itself when the loaded phase's length has passed, and the probe's
//! [`Stop`] (Ctrl-C) reaches it within [`RELAY_EVERY`]. [`Load::finish`] (and `Drop`) stops and
//! joins it, so the load never outlives the probe's run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use npt_result::bulk::BulkBody;
use npt_result::workload::Stop;
use serde::Serialize;

use super::driver::Clock;

/// How often the probe's stop requests are passed on to the load, and how often a load that
/// waits for its phase looks at them.
pub const RELAY_EVERY: Duration = Duration::from_millis(20);

/// What runs as the load, and the phases' lengths.
#[derive(Clone, Debug)]
pub struct LoadPlan {
    /// The bulk run of the loaded phase (its `duration` is the loaded phase's length).
    pub bulk: npt_bulk::Config,
    pub idle: Duration,
    pub recovery: Duration,
}

impl LoadPlan {
    pub fn loaded(&self) -> Duration {
        self.bulk.duration
    }

    /// The whole probe: idle + loaded + recovery.
    pub fn total(&self) -> Duration {
        self.idle + self.loaded() + self.recovery
    }

    /// The loaded and recovery phases' start times on a clock whose run starts at `start`.
    pub fn bounds(&self, start: u64) -> [u64; 2] {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let loaded = start.saturating_add(ns(self.idle));
        [loaded, loaded.saturating_add(ns(self.loaded()))]
    }

    /// The phases' names and planned bounds, s since the start of the run.
    pub fn phases(&self) -> Vec<(String, f64, f64)> {
        let (i, l) = (self.idle.as_secs_f64(), self.loaded().as_secs_f64());
        let r = self.recovery.as_secs_f64();
        vec![
            ("idle".into(), 0.0, i),
            ("loaded".into(), i, i + l),
            ("recovery".into(), i + l, i + l + r),
        ]
    }

    pub fn spec(&self) -> npt_result::under_load::LoadSpec {
        npt_result::under_load::LoadSpec {
            target: self.bulk.target.to_string(),
            direction: self.bulk.ways.name().to_string(),
            streams: self.bulk.streams,
            via: self.bulk.via.as_ref().map(|v| v.to_string()),
            congestion: self.bulk.congestion.clone(),
            rate_bps: self.bulk.udp.map(|u| u.rate_bps).or(self.bulk.rate_bps),
            size: self.bulk.udp.and_then(|u| u32::try_from(u.size).ok()),
        }
    }
}

/// As the result's `config.under_load` records it (the token never).
impl Serialize for LoadPlan {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let spec = self.spec();
        let mut st = s.serialize_struct("LoadPlan", 10)?;
        st.serialize_field("target", &spec.target)?;
        st.serialize_field("direction", &spec.direction)?;
        st.serialize_field("streams", &spec.streams)?;
        st.serialize_field("via", &spec.via)?;
        st.serialize_field("congestion", &spec.congestion)?;
        if spec.rate_bps.is_some() {
            st.serialize_field("rate_bps", &spec.rate_bps)?;
            st.serialize_field("size", &spec.size)?;
        }
        st.serialize_field("idle_s", &self.idle.as_secs_f64())?;
        st.serialize_field("loaded_s", &self.loaded().as_secs_f64())?;
        st.serialize_field("recovery_s", &self.recovery.as_secs_f64())?;
        st.end()
    }
}

/// The load's part of the stats: the plan, when it ran (s since `start`), and what the bulk
/// engine moved; an engine that could not start at all is one classified error.
pub fn stats(plan: &LoadPlan, o: &Outcome, start: u64) -> npt_result::stats::probe::LoadStats {
    let s = |ns: u64| ns.saturating_sub(start) as f64 / 1e9;
    let mut st = npt_result::stats::probe::LoadStats {
        load: plan.spec(),
        phases: plan.phases(),
        load_started_s: o.started.map(s),
        load_ended_s: o.ended.map(s),
        ..Default::default()
    };
    st.errors.attempts = u64::from(plan.bulk.streams) * plan.bulk.ways.directions().len() as u64;
    if let Some(b) = &o.body {
        st.goodput_bps = b.summary.goodput_bps;
        st.bytes = b.summary.bytes;
        st.load_rtt_ms = b.summary.rtt_ms;
        st.retransmits = b.summary.retransmits;
        st.congestion = b.summary.congestion.clone();
        st.errors.by_kind = b.errors.by_kind.clone();
        st.udp = b
            .summary
            .udp
            .as_ref()
            .map(|u| npt_result::under_load::UdpLoad {
                sent: u.sent,
                received: u.received,
                lost: u.lost,
                loss_pct: u.loss_pct,
                delivered_bps: u.delivered_bps,
                jitter_ms: u.jitter_ms,
            });
    }
    if let Some((kind, e)) = &o.error {
        st.errors.by_kind.record(kind, || format!("load: {e}"));
    }
    st
}

/// What the load did: when it ran (run clock, ns) and the bulk engine's body, or why it could
/// not start.
#[derive(Debug, Default)]
pub struct Outcome {
    pub started: Option<u64>,
    pub ended: Option<u64>,
    pub body: Option<BulkBody>,
    /// The engine could not start at all: the error kind and what it said.
    pub error: Option<(&'static str, String)>,
}

/// The error kind (npt's vocabulary, `npt_result::error`) of a bulk run that could not start.
fn kind(e: &npt_bulk::BulkError) -> &'static str {
    use npt_bulk::BulkError as E;
    match e {
        E::BadTarget(_) => "config",
        E::Resolve(..) => "unreachable",
        E::Start(_) => "local",
        E::Quic(_) => "protocol",
    }
}

/// The running load: its thread and the thread that passes the probe's stop requests on.
pub struct Load {
    stop: Arc<Stop>,
    done: Arc<AtomicBool>,
    worker: Option<JoinHandle<Outcome>>,
    relay: Option<JoinHandle<()>>,
}

impl Load {
    /// Starts the load's thread: it waits for `bounds[0]` on `clock`, then runs the bulk
    /// engine for the loaded phase. `probe_stop` stops it too.
    pub fn start(
        plan: &LoadPlan,
        probe_stop: &Arc<Stop>,
        clock: Clock,
        bounds: [u64; 2],
    ) -> std::io::Result<Load> {
        let stop = Arc::new(Stop::new());
        let done = Arc::new(AtomicBool::new(false));
        let (s, d, p) = (stop.clone(), done.clone(), probe_stop.clone());
        // Bounded: it ends when `done` is set, which `finish` (or `Drop`) does before joining.
        let relay = std::thread::Builder::new()
            .name("npt-load-stop".into())
            .spawn(move || {
                while !d.load(Ordering::SeqCst) {
                    while s.level() < p.level() {
                        s.signal();
                    }
                    std::thread::sleep(RELAY_EVERY);
                }
            })?;
        let mut cfg = plan.bulk.clone();
        let s = stop.clone();
        let worker = std::thread::Builder::new()
            .name("npt-load".into())
            .spawn(move || {
                // Wait for the end of the idle phase, a stop request ending the wait.
                loop {
                    let now = clock.now();
                    if s.stopping() {
                        return Outcome::default();
                    }
                    if now >= bounds[0] {
                        break;
                    }
                    std::thread::sleep(Duration::from_nanos(bounds[0] - now).min(RELAY_EVERY));
                }
                let started = clock.now();
                // The loaded phase ends at its planned time even if the start was late.
                cfg.duration = Duration::from_nanos(bounds[1].saturating_sub(started))
                    .max(Duration::from_millis(1));
                let r = npt_bulk::run(&cfg, &s, &mut |_| {});
                let ended = Some(clock.now());
                match r {
                    Ok(f) => Outcome {
                        started: Some(started),
                        ended,
                        body: Some(f.body),
                        error: None,
                    },
                    Err(e) => Outcome {
                        started: Some(started),
                        ended,
                        body: None,
                        error: Some((kind(&e), e.to_string())),
                    },
                }
            })?;
        Ok(Load {
            stop,
            done,
            worker: Some(worker),
            relay: Some(relay),
        })
    }

    /// Stops the load (if it still runs) and waits for it: the bulk engine ends its streams
    /// within its stop grace.
    pub fn finish(mut self) -> Outcome {
        self.end()
    }

    fn end(&mut self) -> Outcome {
        self.stop.signal();
        self.done.store(true, Ordering::SeqCst);
        let out = match self.worker.take().map(JoinHandle::join) {
            Some(Ok(o)) => o,
            Some(Err(_)) => Outcome {
                error: Some(("internal", "the load's thread panicked".into())),
                ..Outcome::default()
            },
            None => Outcome::default(),
        };
        if let Some(r) = self.relay.take() {
            let _ = r.join();
        }
        out
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        if self.worker.is_some() {
            let _ = self.end();
        }
    }
}
