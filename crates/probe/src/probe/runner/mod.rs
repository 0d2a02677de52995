//! Runs a whole probe: splits the load over client flows and threads, merges their finished
//! intervals into stages (an interval is handed over once every flow has closed it), merges
//! their totals, and builds the result body.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use npt_result::interval::Interval as Record;
use npt_result::packets::{unix_ns, PacketLine};
use npt_result::probe::{hist, ProbeBody};
use npt_result::stats::Stats;
use npt_result::tcpinfo::TcpKernelStats;
use npt_result::workload::{Finished, Progress, Stop};
use npt_stats::Histogram;
use npt_wire::Pacing;

use super::driver::{self, Clock, Event, TcpTimes};
use super::load::Load;
use super::session::{
    Framing, Interval, Reflect, Session, SessionConfig, Stage, StopReason, Totals,
};
use super::waiting::SendEnds;
pub use super::waiting::{OnWaiting, Waiting};
use super::workload::Running;

mod config;
mod summary;

pub use config::{PacingSpec, ProbeConfig, Proto, RxStamp, StageSpec};
use summary::{interval_record, probe_meta, probe_stats, proxy_stats};

/// Splits `total` over `n` parts as evenly as possible (the first parts get the remainder).
fn split(total: u64, n: u32, i: u32) -> u64 {
    let n = n as u64;
    total / n + u64::from((i as u64) < total % n)
}

/// The wall clock against the run's clock, for STAMP's timestamps: Unix ns minus session ns,
/// and what this host's clock deserves as an Error Estimate.
#[derive(Clone, Copy, Debug)]
struct Wall {
    offset: u64,
    error: npt_wire::stamp::ErrorEstimate,
}

impl Wall {
    /// Reads the wall clock inside a bracket of the run's ([`Clock::wall_offset`]).
    fn read(clock: &Clock) -> Wall {
        let offset = u64::try_from(clock.wall_offset()).unwrap_or(0);
        let error = match npt_netio::rxtime::wall_clock_status() {
            Some(c) => {
                npt_wire::stamp::ErrorEstimate::of_clock(c.synced, c.est_error_ns, c.max_error_ns)
            }
            None => npt_wire::stamp::ErrorEstimate::of_clock(false, 0, 0),
        };
        Wall { offset, error }
    }
}

fn framing(cfg: &ProbeConfig, wall: Wall, fill_seed: u64) -> Framing {
    match cfg.proto {
        Proto::Stamp => Framing::Stamp(super::session::stamp::StampFraming {
            authenticated: cfg.stamp_key.is_some(),
            wall_offset: wall.offset,
            seq_base: u32::try_from(fill_seed >> 32).unwrap_or(0),
            error: wall.error,
        }),
        _ if cfg.raw => Framing::Raw,
        _ => Framing::Framed { token: 0 },
    }
}

fn session_config(
    cfg: &ProbeConfig,
    client: u32,
    start: u64,
    run_seed: u64,
    wall: Wall,
) -> Option<SessionConfig> {
    let n = cfg.clients;
    let pacing = match cfg.pacing {
        PacingSpec::Interval { interval } => Pacing::Interval {
            every: u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
        },
        PacingSpec::Rate { pps } => Pacing::Rate {
            pps: pps / n as f64,
        },
        PacingSpec::Relay {
            warmup,
            warmup_interval,
        } => Pacing::Relay {
            warmup: split(warmup, n, client).max(1),
            every: u64::try_from(warmup_interval.as_nanos()).unwrap_or(u64::MAX),
        },
    };
    let count = match cfg.count {
        Some(c) => {
            let mine = split(c, n, client);
            if mine == 0 {
                return None;
            }
            Some(mine)
        }
        None => None,
    };
    let stage = match cfg.stage {
        StageSpec::Time(d) => Stage::Time(u64::try_from(d.as_nanos().max(1)).unwrap_or(u64::MAX)),
        StageSpec::Packets(p) => Stage::Packets(split(p, n, 0).max(1)),
    };
    let loss_timeout = u64::try_from(cfg.loss_timeout.as_nanos()).unwrap_or(u64::MAX);
    // Remember enough retired sequence numbers to classify replies up to 4 loss timeouts old.
    // NO-PANIC: a float-to-int `as` saturates (NaN gives 0), and the result is clamped.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let history = match pacing {
        Pacing::Rate { pps } => {
            ((pps * cfg.loss_timeout.as_secs_f64() * 4.0) as usize).clamp(1 << 12, 1 << 22)
        }
        _ => 1 << 20,
    };
    let fill_seed = run_seed ^ (client as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    Some(SessionConfig {
        flow: client + 1,
        framing: framing(cfg, wall, fill_seed),
        size: cfg.size,
        fill: cfg.fill,
        fill_seed,
        verify: cfg.verify,
        pacing,
        loss_timeout,
        count,
        send_until: cfg
            .duration
            .map(|d| start.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))),
        start,
        stage,
        behind_threshold: u64::try_from(cfg.behind_threshold.as_nanos()).unwrap_or(u64::MAX),
        history,
        auth: None,
        stamp_key: cfg.stamp_key.clone(),
        phases: cfg.under_load.as_ref().map(|p| p.bounds(start)),
        reflect: match (cfg.raw, cfg.proto) {
            (true, _) => Reflect::Off,
            // A stateful STAMP reflector counts what it received (loss up and down); a
            // stateless one says nothing of it, and the session sees that from its answers.
            (false, Proto::Udp | Proto::Stamp) => Reflect::Full,
            (false, Proto::Tcp) => Reflect::Timing,
        },
        clock: cfg.clock,
        log_packets: false,
        // Per-packet marking is read from datagrams: UDP, framed (a raw echo cannot be asked).
        mark: match (cfg.raw, cfg.proto) {
            (false, Proto::Udp) => cfg.mark,
            _ => None,
        },
    })
}

/// Runs the probe to completion. `on_stage` gets each merged stage as soon as it is final;
/// `on_packet`, when given (`--packets`), each packet's fate as soon as its flow knows it, with
/// its send time from the run's start.
pub fn run(
    cfg: &ProbeConfig,
    stop: &Arc<Stop>,
    on_stage: &mut dyn FnMut(&Progress<'_>),
    mut on_packet: Option<&mut dyn FnMut(&PacketLine)>,
) -> std::io::Result<Finished<ProbeBody>> {
    npt_netio::raise_nofile_limit();
    let mut udp_auth = super::auth::udp_flows(cfg)?;
    let mut relayed = super::auth::relayed_flows(cfg)?;
    let started_wall = SystemTime::now();
    let clock = Clock::new();
    let start = clock.now();
    let wall = Wall::read(&clock);
    // The tester's CPU share is of this run only: counted from the process start it included
    // parsing and runtime set-up, and a few-millisecond run read more than every core busy.
    let cpu0 = npt_result::cpu_seconds();
    let run_seed = started_wall
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(1, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let log_packets = on_packet.is_some();
    let start_unix = unix_ns(started_wall);
    let configs: Vec<(usize, SessionConfig)> = (0..cfg.clients)
        .filter_map(|c| session_config(cfg, c, start, run_seed, wall).map(|s| (c as usize, s)))
        .map(|(c, s)| (c, SessionConfig { log_packets, ..s }))
        .collect();
    let flows = configs.len();
    // The load runs on its own threads beside the flows; `finish` below ends and joins it
    // (and so does its `Drop`, should this function return early).
    let load = match &cfg.under_load {
        Some(plan) => Some(Load::start(plan, stop, clock, plan.bounds(start))?),
        None => None,
    };
    let threads = (cfg.threads as usize).clamp(1, flows.max(1));
    let (tx, rx) = mpsc::channel::<Event>();
    let mut handles = Vec::new();
    // `--via` over UDP: each flow's association handshake, and flows that could not get one.
    let mut proxy_phases: Vec<npt_proxy::Phases> = Vec::new();
    let mut failed: Vec<(usize, Totals)> = Vec::new();
    // Deal flows round-robin to threads.
    let mut per_thread: Vec<Vec<(usize, SessionConfig)>> =
        (0..threads).map(|_| Vec::new()).collect();
    for (i, fc) in configs.into_iter().enumerate() {
        per_thread[i % threads].push(fc);
    }
    for (t, mine) in per_thread.into_iter().enumerate() {
        let tx = tx.clone();
        let stop = stop.clone();
        let name = format!("npt-probe-{t}");
        let handle = match cfg.proto {
            Proto::Udp | Proto::Stamp => {
                let mut socks = Vec::new();
                for (i, sc) in mine {
                    match &cfg.via {
                        None => {
                            let (sock, auth) = match udp_auth.get_mut(i).and_then(Option::take) {
                                Some((sock, key)) => (sock, Some(key)),
                                None => (driver::udp_socket(cfg.addr, &cfg.source)?, None),
                            };
                            socks.push((i, sock, Session::new(SessionConfig { auth, ..sc }), None));
                        }
                        Some(via) => {
                            match relayed.get_mut(i).and_then(Option::take) {
                                Some(Ok((sock, relay, phases, auth))) => {
                                    proxy_phases.push(phases);
                                    let sc = SessionConfig { auth, ..sc };
                                    socks.push((i, sock, Session::new(sc), Some(relay)));
                                }
                                None => {}
                                Some(Err(e)) => {
                                    // This flow cannot send at all: a classified error in
                                    // the report, and the other flows still run.
                                    let mut t = Totals::default();
                                    t.errors
                                        .record(e.kind().name(), || format!("via {via}: {e}"));
                                    failed.push((i, t));
                                }
                            }
                        }
                    }
                }
                let opts = driver::UdpOptions {
                    spin: cfg.spin,
                    kernel_stamps: cfg.rx_stamp == RxStamp::Kernel,
                };
                std::thread::Builder::new()
                    .name(name)
                    .spawn(move || driver::run_udp(socks, opts, clock, stop, tx))?
            }
            Proto::Tcp => {
                let target = driver::TcpTarget {
                    addr: cfg.addr,
                    source: cfg.source,
                };
                let secret = cfg.token.clone();
                let via = cfg.via.clone().map(|via| driver::TcpVia {
                    via,
                    target: cfg.target.clone(),
                });
                std::thread::Builder::new()
                    .name(name)
                    .spawn(move || driver::run_tcp(target, via, secret, mine, clock, stop, tx))?
            }
        };
        handles.push(handle);
    }
    drop(tx);

    let mut totals = Totals::default();
    let mut stops: Vec<StopReason> = Vec::new();
    let mut tcp_times: Vec<TcpTimes> = Vec::new();
    // TCP: the kernel's view of every flow's connections, added up.
    let mut kernel: Option<(TcpKernelStats, Histogram)> = None;
    // Per flow: the next interval index it will report, or None once done.
    let mut next_index: Vec<Option<u32>> = vec![Some(0); cfg.clients as usize];
    for (c, slot) in (0..cfg.clients).zip(next_index.iter_mut()) {
        if session_config(cfg, c, start, run_seed, wall).is_none() {
            *slot = None;
        }
    }
    for (i, t) in failed {
        next_index[i] = None;
        totals += &t;
        stops.push(StopReason::Error);
    }
    let mut send_ends = SendEnds::new(&next_index);
    let mut pending: BTreeMap<u32, Interval> = BTreeMap::new();
    let mut printed_up_to = 0u32;
    // Bounded memory for long runs: older records wait in a temporary file (report::series).
    let mut records = npt_result::series::Series::default();
    // What the stages handed over add up to, for `--metrics` while the run goes on.
    let mut running = Running::default();
    let mut emit = |iv: &Interval, records: &mut npt_result::series::Series<Record>| {
        let r = interval_record(iv, start);
        running.add(iv);
        on_stage(&Progress {
            interval: &r,
            elapsed: Duration::from_nanos(iv.end.saturating_sub(start)),
            completed: running.received(),
            errors: 0,
            totals: &|s| running.export(s),
        });
        records.push(r);
    };
    for ev in rx {
        match ev {
            Event::Interval { flow, interval } => {
                next_index[flow] = Some(interval.index + 1);
                *pending.entry(interval.index).or_default() += &interval;
            }
            Event::Packets(lines) => {
                if let Some(on_packet) = on_packet.as_mut() {
                    for mut l in lines {
                        // From the session clock to the run's: its start, and the wall clock.
                        if let Some(t) = l.sent_ns {
                            l = l.sent(t.saturating_sub(start), start_unix);
                        }
                        on_packet(&l);
                    }
                }
            }
            Event::SendEnded {
                flow,
                in_flight,
                why,
            } => send_ends.ended(flow, in_flight, why),
            Event::Done { flow, result } => {
                next_index[flow] = None;
                send_ends.finished(flow);
                totals += &result.totals;
                if let Some(s) = result.stop {
                    stops.push(s);
                }
                if let Some(t) = result.tcp {
                    tcp_times.push(t);
                }
                if let Some((k, rtt)) = &result.kernel {
                    let (ks, kh) = kernel.get_or_insert_with(Default::default);
                    *ks += k;
                    *kh += rtt;
                }
            }
        }
        if let (Some(say), Some((in_flight, why))) = (&cfg.on_waiting.0, send_ends.waiting()) {
            say(&Waiting {
                elapsed: Duration::from_nanos(clock.now().saturating_sub(start)),
                in_flight,
                up_to: if cfg.proto == Proto::Tcp {
                    cfg.loss_timeout
                        .max(Duration::from_nanos(super::session::STREAM_HOLD_NS))
                } else {
                    cfg.loss_timeout
                },
                held: cfg.proto == Proto::Tcp,
                why,
            });
        }
        // An interval is final once every flow still running has moved past it.
        let horizon = next_index
            .iter()
            .flatten()
            .min()
            .copied()
            .unwrap_or(u32::MAX);
        while let Some(first) = pending.first_entry() {
            let k = *first.key();
            if k >= horizon {
                break;
            }
            let iv = first.remove();
            emit(&iv, &mut records);
            printed_up_to = k + 1;
        }
    }
    for (_, iv) in std::mem::take(&mut pending) {
        emit(&iv, &mut records);
    }
    let _ = printed_up_to;
    for h in handles {
        if let Err(panic) = h.join() {
            // A flow thread died: say so in the result instead of dropping its flows silently.
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            totals
                .errors
                .record("internal", || format!("a probe thread panicked: {what}"));
            stops.push(StopReason::Error);
        }
    }
    let load = load.map(Load::finish);
    // Start label + monotonic time: a wall-clock step cannot distort it (crates/cli/tests/probe/wallclock.rs).
    let ended_wall = started_wall + Duration::from_nanos(clock.now().saturating_sub(start));
    let wall_s = clock.now().saturating_sub(start) as f64 / 1e9;
    let stopped_by = StopReason::most_telling(stops);
    proxy_phases.extend(tcp_times.iter().filter_map(|t| t.proxy));
    let records = records.into_vec_logged();
    let mut stats = probe_stats(cfg, &totals, &tcp_times, records, cpu0, wall_s);
    stats.proxy = proxy_stats(cfg, &proxy_phases);
    if let Some((k, rtt)) = kernel {
        stats.histograms.add(hist::TCP_RTT, &rtt);
        stats.tcp_info = Some(k);
    }
    if let (Some(plan), Some(outcome)) = (&cfg.under_load, &load) {
        stats.under_load = Some(super::load::stats(plan, outcome, start));
        for (name, h) in hist::PHASES.iter().zip(&totals.phase_rtt) {
            stats.histograms.add(name, h);
        }
        for name in hist::PHASES {
            stats.histograms.entry(name);
        }
    }
    let body = stats.summarize(&probe_meta(cfg));
    let totals = super::workload::final_totals(&body);
    Ok(Finished::new(
        body,
        started_wall,
        ended_wall,
        stopped_by,
        totals,
    ))
}

#[cfg(test)]
mod tests;
