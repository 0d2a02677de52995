//! Runs a whole probe: splits the load over client flows and threads, merges their finished
//! intervals into stages (an interval is handed over once every flow has closed it), merges
//! their totals, and builds the result body.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use npt_result::interval::{Interval as Record, Intervals};
use npt_result::packets::{unix_ns, PacketLine};
use npt_result::probe::{hist, Directions, ProbeBody};
use npt_result::stats::directions::DirStats;
use npt_result::stats::probe::{ProxyStats, SendRates};
use npt_result::stats::{ProbeMeta, ProbeStats, Stats};
use npt_result::tcpinfo::TcpKernelStats;
use npt_result::workload::{Finished, Progress, Stop};
use npt_result::{loss_pct, Health};
use npt_stats::Histogram;
use npt_wire::{Fill, Pacing};
use serde::Serialize;

use super::driver::{self, Clock, Event, TcpTimes};
use super::load::{Load, LoadPlan};
use super::session::{
    ClockSync, DirTotals, Framing, Interval, Reflect, Session, SessionConfig, Stage, StopReason,
    Totals,
};
use super::waiting::SendEnds;
pub use super::waiting::{OnWaiting, Waiting};
use super::workload::Running;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    Udp,
    Tcp,
    /// STAMP (RFC 8762) test packets over UDP to a Session-Reflector.
    Stamp,
}

impl Proto {
    pub fn name(&self) -> &'static str {
        match self {
            Proto::Udp => "udp",
            Proto::Tcp => "tcp",
            Proto::Stamp => "stamp",
        }
    }

    /// Datagrams (UDP and STAMP): the UDP driver, `--via` through a SOCKS5 UDP association.
    pub fn is_udp(&self) -> bool {
        matches!(self, Proto::Udp | Proto::Stamp)
    }
}

/// How packets are paced, for the whole run (split over clients by the runner).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum PacingSpec {
    Interval {
        #[serde(serialize_with = "ser_dur")]
        interval: Duration,
    },
    Rate {
        pps: f64,
    },
    Relay {
        warmup: u64,
        #[serde(serialize_with = "ser_dur")]
        warmup_interval: Duration,
    },
}

/// Where a UDP reply's receive time comes from (`--rx-stamp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RxStamp {
    /// The clock read right after the receive returned: the RTT includes how long the tester
    /// took to wake up and read (the RTT at the application, docs/measurement.md; what a
    /// user-space ping-pong tool reports). The default.
    #[default]
    User,
    /// The kernel's timestamp of the datagram's arrival (`SO_TIMESTAMPNS`): the tester's own
    /// wake-up and receive call are not in the RTT (opt-in).
    Kernel,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StageSpec {
    Time(#[serde(serialize_with = "ser_dur")] Duration),
    Packets(u64),
}

fn ser_dur<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{}ms", d.as_secs_f64() * 1e3))
}

fn ser_opt_dur<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => ser_dur(d, s),
        None => s.serialize_none(),
    }
}

fn ser_fill<S: serde::Serializer>(f: &Fill, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match f {
        Fill::Random => "random",
        Fill::Zero => "zero",
        Fill::Pattern => "pattern",
    })
}

/// Everything a probe run needs, validated.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeConfig {
    pub proto: Proto,
    /// As the user wrote it (`host:port`).
    pub target: String,
    pub addr: SocketAddr,
    pub raw: bool,
    /// `--token`'s secret, never recorded ([`super::auth`]).
    #[serde(skip)]
    pub token: Option<String>,
    /// `stamp://` with `--stamp-key`: STAMP's authenticated mode under this key (never
    /// recorded).
    #[serde(skip)]
    pub stamp_key: Option<npt_wire::stamp::StampKey>,
    pub size: usize,
    #[serde(serialize_with = "ser_fill")]
    pub fill: Fill,
    pub verify: bool,
    pub pacing: PacingSpec,
    #[serde(serialize_with = "ser_dur")]
    pub loss_timeout: Duration,
    pub count: Option<u64>,
    #[serde(serialize_with = "ser_opt_dur")]
    pub duration: Option<Duration>,
    pub clients: u32,
    pub threads: u32,
    pub stage: StageSpec,
    /// Sends later than this after their due time count as behind schedule.
    #[serde(serialize_with = "ser_dur")]
    pub behind_threshold: Duration,
    /// Go through this proxy (`--via`): SOCKS5 CONNECT or HTTP CONNECT for TCP, SOCKS5 UDP
    /// ASSOCIATE for UDP. Recorded without its password.
    #[serde(serialize_with = "ser_via")]
    pub via: Option<npt_proxy::Via>,
    /// `--under-load`: bulk streams during a loaded phase between an idle and a recovery
    /// phase ([`super::load`]); `duration` is then the three phases together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub under_load: Option<LoadPlan>,
    /// UDP: where each reply's receive time comes from.
    pub rx_stamp: RxStamp,
    /// UDP: wait by spinning instead of sleeping (one busy CPU per probe thread).
    pub spin: bool,
    /// The clock assumption one-way delays rest on (`same-host`, `synced` by `--owd`, or
    /// `none`: no one-way delay, only what needs no sync).
    #[serde(serialize_with = "ser_clock")]
    pub clock: ClockSync,
    /// `-4`/`-6`, `--bind`, `--dscp`: the flows' sockets (not `--via`'s proxy connection).
    #[serde(skip_serializing_if = "npt_client::source::Source::is_default")]
    pub source: npt_client::source::Source,
    /// UDP: the TOS byte `npt serve` is asked to send its replies with, and to say what each
    /// request arrived with (`--reply-dscp`, `--reply-ecn`; by default what `--dscp`, `--tos`,
    /// `--ecn` send). None: not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<u8>,
    /// Told once when every flow has stopped sending and replies are still in flight: the
    /// wait of up to the loss timeout before the report (not recorded).
    #[serde(skip)]
    pub on_waiting: OnWaiting,
}

fn ser_clock<S: serde::Serializer>(c: &ClockSync, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.name())
}

fn ser_via<S: serde::Serializer>(v: &Option<npt_proxy::Via>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_str(&v.to_string()),
        None => s.serialize_none(),
    }
}

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

fn interval_record(iv: &Interval, run_start: u64) -> Record {
    // Per direction once a flow's server told what it saw (an older server's record stays as
    // it was).
    let reflected = iv.reflected > 0;
    let dur = (iv.end.saturating_sub(iv.start)) as f64 / 1e9;
    let per_s = |x: f64| if dur > 0.0 { x / dur } else { 0.0 };
    Record {
        index: iv.index,
        start_s: iv.start.saturating_sub(run_start) as f64 / 1e9,
        end_s: iv.end.saturating_sub(run_start) as f64 / 1e9,
        completed: iv.packets.received,
        // Per-interval errors are not counted: a probe's failures are losses (`lost`).
        errors: 0,
        rate_per_s: per_s(iv.packets.sent as f64),
        latency_ms: iv.rtt.summary(),
        sent: Some(iv.packets.sent),
        lost: Some(iv.packets.lost),
        refused: (iv.refused > 0).then_some(iv.refused),
        lost_up: reflected.then_some(iv.lost_up),
        lost_down: reflected.then_some(iv.lost_down),
        late: Some(iv.packets.late),
        duplicated: Some(iv.packets.duplicated),
        reordered: Some(iv.packets.reordered),
        loss_pct: Some(loss_pct(
            iv.packets.lost,
            iv.packets.sent.saturating_sub(iv.refused),
        )),
        jitter_ms: Some(iv.jitter.value_ns() / 1e6),
        jitter_samples: Some(iv.jitter.samples()),
        bandwidth_bps: Some(Directions {
            up: per_s(iv.bytes_up as f64 * 8.0),
            down: per_s(iv.bytes_down as f64 * 8.0),
        }),
        histogram: iv.rtt.to_serialized(),
        ..Record::default()
    }
}

/// The proxy handshakes, when the run went through a proxy.
fn proxy_stats(cfg: &ProbeConfig, phases: &[npt_proxy::Phases]) -> Option<ProxyStats> {
    let via = cfg.via.as_ref()?;
    let sum = |f: fn(&npt_proxy::Phases) -> u64| phases.iter().map(f).sum::<u64>() as f64;
    Some(ProxyStats {
        via: via.to_string(),
        handshakes: phases.len() as u64,
        proxy_connect_ns: sum(|p| p.proxy_connect_ns),
        auth_ns: sum(|p| p.auth_ns),
        reply_ns: sum(|p| p.reply_ns),
        handshake_ns: sum(|p| p.total_ns()),
    })
}

/// What the summary says about the configuration.
fn probe_meta(cfg: &ProbeConfig) -> ProbeMeta {
    ProbeMeta {
        // A STAMP probe is a UDP probe with STAMP's framing: the same summary, the NPT block
        // under `udp`.
        protocol: if cfg.proto.is_udp() { "udp" } else { "tcp" }.to_string(),
        target: cfg.target.clone(),
        mode: match cfg.pacing {
            PacingSpec::Interval { .. } => "interval",
            PacingSpec::Rate { .. } => "rate",
            PacingSpec::Relay { .. } => "relay",
        }
        .to_string(),
        open_loop: matches!(cfg.pacing, PacingSpec::Rate { .. }),
        framing: match (cfg.proto, cfg.raw) {
            (Proto::Stamp, _) => "stamp",
            (_, true) => "raw",
            _ => "framed",
        }
        .to_string(),
        size: u32::try_from(cfg.size).unwrap_or(u32::MAX),
        loss_timeout_ms: cfg.loss_timeout.as_secs_f64() * 1e3,
    }
}

/// The flows' totals as the probe's stats value: the send phase's rates on this run's clock,
/// TCP phases one value per flow into histograms ([`tcp_phases`]), the TCP totals
/// ([`tcp_totals`]), and the tester's health (the process's CPU time since `cpu0`, the run's
/// start, over `wall_s`).
fn probe_stats(
    cfg: &ProbeConfig,
    t: &Totals,
    tcp: &[TcpTimes],
    intervals: Vec<Record>,
    cpu0: (f64, f64),
    wall_s: f64,
) -> ProbeStats {
    let open_loop = matches!(cfg.pacing, PacingSpec::Rate { .. });
    let mut histograms = npt_result::stats::HistMap::default();
    histograms.add(hist::RTT, &t.rtt);
    if open_loop {
        histograms.add(hist::RTT_CORRECTED, &t.rtt_corrected);
    }
    histograms.add(hist::IPDV, &t.ipdv);
    if cfg.proto == Proto::Tcp {
        tcp_phases(tcp, &mut histograms);
    }
    let (total_ms, total_after_connect_ms) = if cfg.proto == Proto::Tcp {
        tcp_totals(tcp, t.last_reply)
    } else {
        (None, None)
    };
    let health = Health::measured(cpu0, wall_s).with_sends(
        t.behind_schedule,
        cfg.behind_threshold.as_secs_f64() * 1e3,
        t.send_lateness.summary(),
    );
    let d = &t.dir;
    // A stateless STAMP reflector tells no counts but stamps every answer: its delays per
    // direction still make a block (with every loss unplaced).
    let directions = (d.flows.reflected > 0 || d.stamped > 0).then(|| {
        for (name, h) in [
            (hist::DWELL, &d.dwell),
            (hist::IPDV_UP, &d.ipdv_up),
            (hist::IPDV_DOWN, &d.ipdv_down),
            (hist::OWD_UP, &d.owd_up),
            (hist::OWD_DOWN, &d.owd_down),
        ] {
            histograms.add(name, h);
        }
        dir_stats(cfg, d)
    });
    ProbeStats {
        clients: cfg.clients,
        packets: t.packets,
        refused: t.refused,
        refusal_notices: d
            .notices
            .by_reason()
            .map(|(k, n)| (k.to_string(), n))
            .collect(),
        round_trip_only: directions.is_none().then(|| {
            if cfg.raw {
                "raw"
            } else if t.answered.name() == npt_result::far_end::ECHO {
                "echo"
            } else {
                "server"
            }
            .to_string()
        }),
        directions,
        far_end: Some(t.answered.name().to_string()),
        foreign_example: t.foreign_example.clone(),
        corrupt: t.corrupt,
        foreign: t.foreign,
        stale: t.stale,
        bytes: Directions::bytes(t.bytes_up, t.bytes_down),
        rates: SendRates::measured(
            t.packets.sent,
            t.packets.received,
            t.bytes_up,
            t.bytes_down,
            t.first_send,
            t.last_send,
        ),
        histograms,
        jitter: t.jitter,
        errors: npt_result::common::ErrorStats {
            by_kind: t.errors.clone(),
            attempts: t.packets.sent,
        },
        total_ms,
        total_after_connect_ms,
        health,
        intervals: Intervals::of(intervals),
        marking: npt_result::marking::Marking {
            sent: cfg.source.tos.map(npt_result::marking::Tos::of),
            asked: match (cfg.raw, cfg.proto) {
                (false, Proto::Udp) => cfg.mark.map(npt_result::marking::Tos::of),
                _ => None,
            },
            ..t.marking.clone()
        },
        ..ProbeStats::default()
    }
}

/// The TCP phases of each flow's first connection, one value per flow: `connect` (its start to
/// the clock read that saw it up), `first_echo` (the first reply's RTT: from the clock read
/// before its send, after the connection was up, to the one after its reply was read —
/// quic-tun's "first packet latency", whose clock starts after `connect` returned) and
/// `first_packet` (the two added: npt's, what a user waits for a first answer). Nothing when
/// no flow connected.
fn tcp_phases(tcp: &[TcpTimes], histograms: &mut npt_result::stats::HistMap) {
    let (mut connect, mut first_packet, mut first_echo) =
        (Histogram::new(), Histogram::new(), Histogram::new());
    for x in tcp {
        if let Some(c) = x.connect_ns {
            connect.record(c);
            if let Some(e) = x.first_echo_ns {
                first_packet.record(c + e);
                first_echo.record(e);
            }
        }
    }
    if !connect.is_empty() {
        histograms.add(hist::CONNECT, &connect);
        histograms.add(hist::FIRST_PACKET, &first_packet);
        histograms.add(hist::FIRST_ECHO, &first_echo);
    }
}

/// TCP's totals, ms, to `last_reply` (the last reply of any flow): from the start of the first
/// connect of any flow (npt's `total`), and from the first moment a flow's connection was up
/// (quic-tun's "total latency", whose clock starts after `connect` returned). With one client
/// the two differ by exactly its connect time.
fn tcp_totals(tcp: &[TcpTimes], last_reply: Option<u64>) -> (Option<f64>, Option<f64>) {
    let Some(r) = last_reply else {
        return (None, None);
    };
    let since = |s: u64| r.saturating_sub(s) as f64 / 1e6;
    let first_start = tcp.iter().map(|x| x.connect_start).min();
    let first_up = tcp
        .iter()
        .filter_map(|x| x.connect_ns.map(|c| x.connect_start + c))
        .min();
    (first_start.map(since), first_up.map(since))
}

/// The flows' per-direction counts as the result's value (its histograms go in the map).
fn dir_stats(cfg: &ProbeConfig, d: &DirTotals) -> DirStats {
    let ms = |ns: i64| ns as f64 / 1e6;
    DirStats {
        flows: d.flows,
        clock: cfg.clock.name().to_string(),
        counts: cfg.proto.is_udp(),
        lost_up: d.lost_up,
        lost_down: d.lost_down,
        unplaced: d.unplaced,
        dup_up: d.dup_up,
        dup_down: d.dup_down,
        reorder_up: d.reorder_up,
        reorder_down: d.reorder_down,
        stamped: d.stamped,
        owd_negative: d.owd_negative,
        owd_min_ms: d.owd_min_ns.map(ms),
        far_error_ms: d.far_error_ns.map(|e| e as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests;
