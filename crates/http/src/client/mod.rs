//! The load driver of `npt http`: opens connections (TCP, TLS; HTTP/1.1 through [`crate::h1`],
//! h2 through the `h2` crate directly — hyper's h2 client spawns a task per request — so npt
//! controls every socket), sends requests on the schedule of
//! [`crate::schedule`], and pushes one [`Event`] per request to its [`Shard`]. The calling thread
//! drains the shards into the [`Collector`] every 100 ms, hands each interval that closes to
//! the caller and stops the run on time or on a stop request (Ctrl-C). Nothing here computes a
//! statistic.
//!
//! Timing: a request's latency runs from just before it is written to the connection until its
//! last body byte has been read; with `--new-conn` it starts
//! before the TCP connect, so it contains the handshakes, as a fresh client sees them. In open
//! loop every request is also measured from its intended time: the [`crate::pacer`] thread
//! releases it then (to ~1 µs, not tokio's 1 ms timer), and a slot busy with a slow answer
//! makes it leave late (coordinated-omission correction, as wrk2).

use std::future::Future;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Uri};
use npt_result::error::ErrorKind;
use npt_result::http::{ColdStart, HttpBody, HttpSummary};
use npt_result::probe::Health;
use npt_result::workload::{Finished, Progress, Stop};
use npt_result::StopReason;
use npt_stats::Snapshot;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::coldstart::ProcessGroup;
use crate::collect::{Collector, ConnEvent, Event, Outcome, Record, Shard};
use crate::h1;
use crate::pacer::{Due, Pacer};
use crate::schedule::{host_for, OpenLoop, Tickets};
use crate::threads::{choose_threads, is_local};
use crate::Error;

/// Pause after a failed connection attempt before the slot tries again.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(10);
/// How often the calling thread drains events and checks the clock and the stop flag.
const TICK: Duration = Duration::from_millis(100);
const INTERVAL_NS: u64 = 1_000_000_000;

// One driver, split by job (issue: the file mixed ten). The parts share this module's imports
// (`use super::*`) and see each other's items as `pub(super)`.
mod config;
mod ctx;
mod failure;
pub mod negotiate;
mod slots;
mod stream;
mod target;
mod workers;

pub use config::{ColdStartConfig, Config, HostLoad};
pub use failure::{classify, Failure};
pub use target::{resolve, Target};
use {ctx::*, slots::*, stream::*, workers::*};

/// Runs a benchmark to the end of `cfg.duration` or until `stop` says so, and returns the
/// result body. Blocks the calling thread, which collects and hands each interval that closes
/// to `on_interval` (with the totals `--metrics` shows).
pub fn run(
    cfg: &Config,
    stop: &Arc<Stop>,
    on_interval: &mut dyn FnMut(&Progress<'_>),
) -> Result<Finished<HttpBody>, Error> {
    cfg.validate()?;
    // Cold start polls from this thread; the load runs on `threads` single-threaded runtimes
    // (one event loop per core, as wrk does: no work-stealing traffic between cores).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Io("starting the runtime".into(), e))?;
    // Through a proxy, connections go to the proxy (a tunnel, or absolute-form requests).
    let addr = match &cfg.via {
        None => resolve(&cfg.target, &cfg.source)?,
        Some(via) => {
            let proxy = Target::parse(&format!("http://{}/", via.authority()))?;
            resolve(&proxy, &npt_client::source::Source::default())?
        }
    };
    let cpus = npt_result::cpus();
    let threads = choose_threads(cfg.threads, cpus, is_local(addr), cfg.new_conn);
    let workers = npt_client::workers::Workers::start(threads.threads, "npt-http")
        .map_err(|e| Error::Io("starting the worker runtimes".into(), e))?;

    // Cold start: the command runs until this function returns, however it returns.
    let mut group = None;
    let mut cold = None;
    if let Some(cs) = &cfg.cold_start {
        let service = Service::new(cfg, addr)?;
        let spawned = Instant::now();
        let g = group.insert(ProcessGroup::spawn(&cs.command)?);
        // With --http2-fallback the first good answer may come in either protocol: polled
        // over HTTP/1.1, which every server speaks.
        let polled = if cfg.http2_fallback {
            cfg.as_http1()
        } else {
            cfg.clone()
        };
        let ctx = build_ctx(&polled, addr, spawned, Vec::new())?;
        cold = Some(rt.block_on(cold_start(&ctx, cs, service.as_ref(), g, spawned, stop))?);
    }

    // HTTP/2: asked once whether the server speaks it (negotiate).
    let mut downgrade = None;
    let downgraded;
    let cfg = if cfg.http2 {
        let ctx = build_ctx(cfg, addr, Instant::now(), Vec::new())?;
        match rt.block_on(negotiate::probe(&ctx)) {
            // No connection: nothing known; the run goes on as asked and counts its errors.
            Ok(negotiate::Speaks::H2) | Err(_) => cfg,
            Ok(negotiate::Speaks::H1(why)) if cfg.http2_fallback => {
                downgrade = Some(why);
                downgraded = cfg.as_http1();
                &downgraded
            }
            Ok(negotiate::Speaks::H1(why)) => {
                return Err(Error::Protocol(format!(
                    "{} does not speak HTTP/2: {why} (--http2-fallback runs HTTP/1.1 then)",
                    cfg.target.url
                )))
            }
        }
    } else {
        cfg
    };

    let cpu0 = npt_result::cpu_seconds();
    let started = SystemTime::now();
    let t0 = Instant::now();
    // Open loop: a group's pacer releases its request k at t0 + k/rate; at most one request
    // per slot waits in the channel, so a stalled server makes the pacer (and the sends) fall
    // behind instead of piling up an unbounded queue. Per-host loads: one group (connections,
    // pacer) per host, as separate clients.
    let groups = cfg.groups();
    let mut pacers = Vec::new();
    let mut opens = Vec::new();
    for g in &groups {
        let Some(r) = g.rate else {
            opens.push(None);
            continue;
        };
        let slots = (g.connections as usize).saturating_mul(cfg.streams as usize);
        let sched = OpenLoop::new(
            r,
            Some(u64::try_from(cfg.duration.as_nanos()).unwrap_or(u64::MAX)),
        );
        let p = Pacer::start(sched, t0, slots)
            .map_err(|e| Error::Io("starting the pacer thread".into(), e))?;
        opens.push(Some(p.rx.clone()));
        pacers.push(p);
    }
    let ctx = Arc::new(build_ctx(cfg, addr, t0, opens)?);
    let hosts = cfg.host_names();
    let (total_conns, total_rate) = cfg.totals();
    let mut collector = Collector::new(&hosts, total_rate.is_some(), INTERVAL_NS);
    collector.set_loads(&cfg.host_loads, cfg.connections);
    // Through a proxy the connect's layers are the proxy's: left to `npt setup --via`.
    if cfg.via.is_none() {
        collector.measure_setup();
    }
    let slot_groups: Vec<usize> = groups
        .iter()
        .enumerate()
        .flat_map(|(i, g)| std::iter::repeat_n(i, g.connections as usize))
        .collect();
    let shards: Vec<Arc<Shard>> = slot_groups
        .iter()
        .map(|_| Arc::new(Shard::default()))
        .collect();
    let mut tasks = Vec::with_capacity(shards.len());
    for (i, (shard, &g)) in shards.iter().zip(&slot_groups).enumerate() {
        let (ctx, shard) = (ctx.clone(), shard.clone());
        let rt = workers.handle(i);
        let task = if cfg.new_conn {
            rt.spawn(new_conn_slot(ctx, shard, g))
        } else if cfg.http2 {
            rt.spawn(h2_slot(ctx, shard, cfg.streams, g))
        } else {
            rt.spawn(h1_slot(ctx, shard, g))
        };
        tasks.push(task);
    }

    let end = t0 + cfg.duration;
    let mut buf = Vec::new();
    let drain = |collector: &mut Collector, buf: &mut Vec<Record>, cutoff: u64| {
        for s in &shards {
            s.drain_into(buf);
            for r in buf.iter() {
                match r {
                    Record::Request(e) if e.done_ns > cutoff => {}
                    r => collector.add(r),
                }
            }
        }
    };
    let stopped_by = loop {
        let now = Instant::now();
        if now >= end {
            break StopReason::Duration;
        }
        if stop.stopping() {
            break StopReason::Signal;
        }
        if tasks.iter().all(|t| t.is_finished()) {
            break StopReason::Duration;
        }
        std::thread::sleep(TICK.min(end - now));
        drain(&mut collector, &mut buf, ctx.ns(end));
        let now = Instant::now();
        // An interval closes one tick after its end, once its late completions are drained.
        let closed = collector.close_until(
            ctx.ns(now)
                .saturating_sub(u64::try_from(TICK.as_nanos()).unwrap_or(u64::MAX)),
        );
        for interval in &closed {
            on_interval(&Progress {
                interval,
                elapsed: now - t0,
                completed: collector.requests(),
                errors: collector.errors.total(),
                totals: &|s| collector.export(s),
            });
        }
    };
    let stop_at = Instant::now().min(end);
    // Start label plus monotonic time: a wall-clock step cannot distort the run's length.
    let ended = started + t0.elapsed();
    // What the end cuts off, read before the tasks (and their guards) are dropped.
    let (in_flight, oldest_ns) = ctx.inflight.cut(ctx.ns(Instant::now()));
    for t in &tasks {
        t.abort();
    }
    let timer_lateness = pacers.into_iter().map(Pacer::finish).reduce(|mut a, b| {
        a += &b;
        a
    });
    // Dropping the runtimes cancels every request still in flight and closes its socket.
    workers.stop();
    let cutoff = ctx.ns(stop_at);
    drain(&mut collector, &mut buf, cutoff);
    let mut totals = Snapshot::new();
    collector.export(&mut totals);
    let wall = stop_at.duration_since(t0).as_secs_f64().max(1e-9);
    let health = Health {
        timer_lateness_ms: timer_lateness.map(|h| h.summary()),
        ..Health::measured(cpu0, wall)
    };
    let summary = HttpSummary {
        url: cfg.target.url.clone(),
        target: addr.to_string(),
        method: cfg.method.to_string(),
        protocol: if cfg.http2 { "h2" } else { "http/1.1" }.to_string(),
        tls: cfg.target.https,
        mode: if total_rate.is_some() {
            "open"
        } else {
            "closed"
        }
        .to_string(),
        rate: total_rate,
        connections: total_conns,
        streams: cfg.streams,
        new_conn: cfg.new_conn,
        in_flight_at_end: in_flight,
        oldest_in_flight_ms: oldest_ns as f64 / 1e6,
        downgrade,
        ..HttpSummary::default()
    };
    let body = collector.finish(summary, cutoff, health, cold);
    drop(rt);
    if let Some(mut g) = group {
        g.kill(Duration::from_millis(500));
    }
    let mut done = Finished::new(body, started, ended, stopped_by, totals);
    done.decided
        .insert("threads".into(), threads.threads.into());
    done.decided
        .insert("threads_why".into(), threads.why.into());
    Ok(done)
}

/// Nanoseconds from `a` to `b` (0 when `b` is earlier), saturated.
pub(super) fn ns_between(a: Instant, b: Instant) -> u64 {
    u64::try_from(b.saturating_duration_since(a).as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = Target::parse("http://127.0.0.1:8080/x?y=1").unwrap();
        assert_eq!(
            (t.https, t.port, t.host.as_str()),
            (false, 8080, "127.0.0.1")
        );
        assert_eq!(t.path_and_query, "/x?y=1");
        let t = Target::parse("https://[::1]").unwrap();
        assert_eq!((t.https, t.port, t.host.as_str()), (true, 443, "::1"));
        assert_eq!(t.path_and_query, "/");
        assert!(Target::parse("ftp://x/")
            .unwrap_err()
            .to_string()
            .contains("scheme"));
        assert!(Target::parse("localhost:80").is_err());
        assert!(Target::parse("http://").is_err());
        assert!(Target::parse("not a url").is_err());
    }

    #[test]
    fn conflicting_flags_are_named() {
        let base = Config::new(Target::parse("http://127.0.0.1:1/").unwrap());
        let mut c = base.clone();
        c.streams = 4;
        assert!(c.validate().unwrap_err().to_string().contains("--http2"));
        c.http2 = true;
        c.new_conn = true;
        assert!(c.validate().unwrap_err().to_string().contains("--new-conn"));
        let mut c = base.clone();
        c.rate = Some(0.0);
        assert!(c.validate().unwrap_err().to_string().contains("--rate"));
        let mut c = base.clone();
        c.hosts = vec!["bad\nhost".into()];
        assert!(c.validate().unwrap_err().to_string().contains("--host"));
        // Each event names its host in a u16: one more than fits is refused, not wrapped.
        c.hosts = vec!["h".into(); 65_536];
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("--host") && e.contains("65535"), "{e}");
        c.hosts.pop();
        assert!(c.validate().is_ok());
        assert!(base.validate().is_ok());
    }

    #[test]
    fn errors_are_classified() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(classify(&refused).name(), "refused");
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(classify(&reset).name(), "reset");
        let tls = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError);
        assert_eq!(classify(&tls).name(), "tls");
        let other = io::Error::other("weird");
        assert_eq!(classify(&other).name(), "protocol");
    }
}
