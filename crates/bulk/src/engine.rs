//! The run: starts every stream (tokio tasks for TCP and QUIC, a thread for UDP), samples them
//! on the caller's thread every [`SAMPLE_EVERY`] into the [`Collector`], hands each closed
//! interval to the caller (live lines, metrics), and stops everything at the duration, at a
//! stop request, or when every stream has ended. Nothing outlives `run`: the runtime is shut down
//! and the UDP thread joined before it returns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_result::bulk::BulkBody;
use npt_result::interval::Interval;
use npt_result::probe::Health;
use npt_result::stop::StopReason;
use npt_result::workload::{Finished, Progress, Stop};
use npt_wire::bulk::Direction;

use crate::collect::{Collector, Meta, Snapshot};
use crate::{BulkError, Config, Proto, StreamState, SAMPLE_EVERY};

/// How long stopped streams get to end before the runtime is dropped under them.
const STOP_GRACE: Duration = Duration::from_secs(3);

fn snapshot(s: &StreamState) -> Snapshot {
    Snapshot {
        bytes: s.bytes.load(Ordering::Relaxed),
        reported_ns: s.reported_ns.load(Ordering::Relaxed),
        reading: s.reading(),
        udp: Some(*s.udp.lock().unwrap_or_else(|p| p.into_inner())).filter(|u| u.sent > 0),
        failed: s.error().map(|(k, _)| k),
    }
}

/// Runtime threads: `asked` (`--threads`) if given; else one for TCP (one thread moved 32–42
/// Gbit/s of loopback TCP in bench/bulk.sh, and a second woke a third more often across a lab
/// link for 5–10 % more CPU per GB), and for QUIC, whose packets are encrypted in the endpoint's
/// task, as many as the CPUs this process may run on, the streams and [`MAX_QUIC_THREADS`]
/// allow (two: 5.4 Gbit/s down on loopback against 3.8–4.5 with one). UDP runs on its own
/// thread; the runtime only starts it.
fn runtime_threads(proto: Proto, streams: usize, asked: Option<usize>) -> usize {
    if let Some(n) = asked {
        return n.max(1);
    }
    let cpus = npt_result::cpus();
    match proto {
        Proto::Quic => cpus.min(streams).clamp(1, MAX_QUIC_THREADS),
        Proto::Tcp | Proto::Udp => 1,
    }
}

/// The most runtime threads a QUIC bulk uses unless asked (the responder usually shares the
/// machine in tests).
const MAX_QUIC_THREADS: usize = 2;

/// Runs the bulk of `cfg` until its duration passes, `stop` says so, or every stream ended;
/// `on_interval` gets each interval as it closes. Stops at `Duration`, `Signal`, or `Error`
/// (every stream ended early).
pub fn run(
    cfg: &Config,
    stop_requests: &Stop,
    on_interval: &mut dyn FnMut(&Progress<'_>),
) -> Result<Finished<BulkBody>, BulkError> {
    // Through a proxy the proxy resolves the name (socks5h) or connects by address it was
    // given; without one the target must resolve here.
    let addrs = match (&cfg.via, cfg.target.proto) {
        (Some(_), Proto::Tcp) => Vec::new(),
        _ => cfg.target.resolve_from(&cfg.source)?,
    };
    let dirs: Vec<Direction> = match cfg.target.proto {
        // One flow, up or down (the command refuses both).
        Proto::Udp => vec![cfg
            .ways
            .directions()
            .first()
            .copied()
            .unwrap_or(Direction::Up)],
        _ => cfg
            .ways
            .directions()
            .iter()
            .flat_map(|&d| std::iter::repeat_n(d, cfg.streams as usize))
            .collect(),
    };
    let states: Vec<Arc<StreamState>> = dirs
        .iter()
        .enumerate()
        .map(|(i, &d)| Arc::new(StreamState::new(u32::try_from(i).unwrap_or(u32::MAX), d)))
        .collect();
    let threads = runtime_threads(cfg.target.proto, states.len(), cfg.threads);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("npt-bulk")
        .enable_all()
        .build()
        .map_err(BulkError::Start)?;
    let stop = Arc::new(AtomicBool::new(false));
    let cfg_a = Arc::new(cfg.clone());
    let addrs = Arc::new(addrs);
    let cpu0 = npt_result::cpu_seconds();
    let started = SystemTime::now();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    let mut udp_thread = None;
    match cfg.target.proto {
        Proto::Tcp => {
            for st in &states {
                tasks.push(rt.spawn(crate::tcp::stream(
                    cfg_a.clone(),
                    addrs.clone(),
                    st.clone(),
                    stop.clone(),
                )));
            }
        }
        Proto::Quic => {
            tasks.push(rt.spawn(crate::quic::run_all(
                cfg_a.clone(),
                addrs.clone(),
                states.clone(),
                stop.clone(),
            )));
        }
        Proto::Udp => {
            let (c, a, st, s) = (cfg_a.clone(), addrs.clone(), states.clone(), stop.clone());
            udp_thread = Some(
                std::thread::Builder::new()
                    .name("npt-bulk-udp".into())
                    .spawn(move || match st.first() {
                        Some(st) if st.direction == Direction::Down => {
                            crate::udp_down::run(&c, &a, st, &s, t0);
                        }
                        Some(st) => crate::udp::run(&c, &a, st, &s, t0),
                        None => {}
                    })
                    .map_err(BulkError::Start)?,
            );
        }
    }
    let mut col = Collector::new(
        &dirs,
        u64::try_from(cfg.interval.as_nanos()).unwrap_or(u64::MAX),
    );
    let ns = |t: Instant| u64::try_from(t.duration_since(t0).as_nanos()).unwrap_or(u64::MAX);
    let mut next = t0 + SAMPLE_EVERY;
    let mut emitted = 0usize;
    // What the intervals handed over add up to, for the caller's progress.
    let (mut completed, mut errors) = (0u64, 0u64);
    let mut emit = |iv: &Interval, totals: &dyn Fn(&mut npt_stats::Snapshot)| {
        completed += iv.completed;
        errors += iv.errors;
        on_interval(&Progress {
            interval: iv,
            elapsed: Duration::from_secs_f64(iv.end_s.max(0.0)),
            completed,
            errors,
            totals,
        });
    };
    let end = t0 + cfg.duration;
    let stopped_by = loop {
        let wake = next.min(end);
        let now = Instant::now();
        if wake > now {
            std::thread::sleep(wake - now);
        }
        let now = Instant::now();
        if now >= next {
            next += SAMPLE_EVERY;
            let snaps: Vec<Snapshot> = states.iter().map(|s| snapshot(s)).collect();
            if let Some(iv) = col.sample(ns(now), &snaps) {
                emit(&iv, &|s| col.export(s));
                emitted += 1;
            }
        }
        if stop_requests.stopping() {
            break StopReason::Signal;
        }
        if now >= end {
            break StopReason::Duration;
        }
        if states.iter().all(|s| s.done.load(Ordering::Relaxed)) {
            break StopReason::Error;
        }
    };
    // The measured phase ends here: what arrived by now (for an upload: the responder's last
    // report by now) is the result; then the streams are told to stop.
    let t_stop = Instant::now();
    let last: Vec<Snapshot> = states.iter().map(|s| snapshot(s)).collect();
    let mut settled = None;
    stop.store(true, Ordering::SeqCst);
    rt.block_on(async {
        for t in tasks {
            let _ = tokio::time::timeout(STOP_GRACE, t).await;
        }
    });
    if let Some(t) = udp_thread {
        // The UDP flow asks for its final report after the stop (bounded); its counts replace
        // the ones at the stop, so datagrams still in flight then are not called lost.
        let _ = t.join();
        settled = Some(states.iter().map(|s| snapshot(s)).collect::<Vec<_>>());
    }
    for (i, s) in states.iter().enumerate() {
        if let Some((kind, detail)) = s.error() {
            col.failed(i, kind, detail);
        }
    }
    rt.shutdown_background();
    let wall = t_stop.duration_since(t0).as_secs_f64().max(1e-9);
    let cpu1 = npt_result::cpu_seconds();
    let behind = settled
        .as_deref()
        .unwrap_or(&last)
        .iter()
        .filter_map(|s| s.udp)
        .map(|u| u.behind_schedule)
        .sum::<u64>();
    // UDP: the paced sends' lateness (TCP and QUIC are not paced by the tester).
    let mut lateness = npt_stats::Histogram::default();
    for s in &states {
        lateness += &*s.lateness.lock().unwrap_or_else(|p| p.into_inner());
    }
    let health = Health {
        sends_behind_schedule: Some(behind),
        behind_threshold_ms: Some(1.0),
        send_lateness_ms: (!lateness.is_empty()).then(|| lateness.summary()),
        cpu_user_s: cpu1.0 - cpu0.0,
        cpu_sys_s: cpu1.1 - cpu0.1,
        cpu_pct: (cpu1.0 - cpu0.0 + cpu1.1 - cpu0.1) / wall * 100.0,
        max_rss_bytes: npt_result::max_rss_bytes(),
        ..Health::default()
    };
    let meta = Meta {
        target: cfg.target.to_string(),
        protocol: cfg.target.proto.name().to_string(),
        direction: cfg.ways.name().to_string(),
        streams: cfg.streams,
        udp: cfg
            .udp
            .map(|u| (u.rate_bps, u32::try_from(u.size).unwrap_or(u32::MAX))),
        rate_bps: cfg.rate_bps.filter(|_| cfg.udp.is_none()),
        congestion: states.iter().map(|s| s.congestion()).collect(),
    };
    let body = col.finish(ns(t_stop), &last, settled.as_deref(), &meta, health);
    // The part interval the stop closed, unless it is a sliver (its rate would be noise); the
    // document has it either way.
    let sliver = cfg.interval.as_secs_f64() / 10.0;
    let totals = &|s: &mut npt_stats::Snapshot| crate::metrics::export_body(&body, s);
    for iv in body.intervals.iter().skip(emitted) {
        if iv.end_s - iv.start_s >= sliver {
            emit(iv, totals);
        }
    }
    let mut end_totals = npt_stats::Snapshot::new();
    totals(&mut end_totals);
    let mut done = Finished::new(
        body,
        started,
        started + t_stop.duration_since(t0),
        stopped_by,
        end_totals,
    );
    done.decided.insert("threads".into(), threads.into());
    Ok(done)
}
