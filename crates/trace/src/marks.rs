//! `npt trace --dscp N [--ecn …]`: each segment's DSCP/ECN marking each way, read from the
//! segment's upstream end with [`MARK_ECHOES`] marked UDP echoes against the `npt serve` at its
//! far end (the segment's HOST:PORT), each asking its reply to carry the same marking. The
//! first segment is this host's own read ([`npt_probe::agent::read`], keyed with the chain's
//! secret); every other one is asked of the upstream hop's agent in a hop request of proto
//! `mark` ([`npt_wire::hop::mark`]), whose reply is read back into `npt probe`'s terms. All
//! segments are read at once; a refusal or a silent far end is that segment's `error`, never
//! the others'. So the segment and the direction that bleached or rewrote a marking is named,
//! where an end-to-end probe can only say that some hop did.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use npt_ping::remote::{Agent, Conn};
use npt_result::trace::SegmentMarking;
use npt_result::workload::Stop;
use npt_wire::hop::{HopProto, HopRequest};

use crate::{Config, LegPlan, Who};

/// Echoes one segment's read sends.
pub const MARK_ECHOES: u16 = 20;
/// Their spacing (a hop agent's shortest).
pub const MARK_INTERVAL: Duration = Duration::from_millis(10);

/// How long one segment's read takes at most, beyond an agent's slack: the keyed handshake's
/// bound, the echoes and the last echo's timeout.
pub fn read_time(timeout: Duration) -> Duration {
    npt_client::auth::HANDSHAKE_TIMEOUT + MARK_INTERVAL * u32::from(MARK_ECHOES) + timeout
}

fn name(leg: &LegPlan) -> String {
    format!(
        "udp://{}",
        npt_ping::remote::host_port(&leg.to.host, leg.to.port)
    )
}

fn failed(to: String, why: String) -> SegmentMarking {
    SegmentMarking {
        to,
        up: None,
        down: None,
        error: Some(why),
    }
}

/// The hop request that asks an agent for `leg`'s read, marked `tos`.
pub fn request(cfg: &Config, leg: &LegPlan, tos: u8) -> HopRequest {
    let us = |d: Duration| u32::try_from(d.as_micros()).unwrap_or(u32::MAX);
    HopRequest {
        proto: HopProto::Mark,
        host: leg.to.host.clone(),
        port: leg.to.port,
        attempts: MARK_ECHOES,
        interval_us: us(MARK_INTERVAL),
        timeout_us: us(cfg.timeout),
        size: cfg.size,
        tos,
    }
}

/// This host's own read of the first segment.
fn here(cfg: &Config, leg: &LegPlan, tos: u8, stop: &Arc<Stop>) -> SegmentMarking {
    let to = name(leg);
    let addrs: Vec<SocketAddr> = match (leg.to.host.as_str(), leg.to.port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => return failed(to, format!("config: {e}")),
    };
    let addr = match cfg.source.pick("trace", addrs) {
        Ok(a) => a.into_iter().next(),
        Err(e) => return failed(to, format!("config: {e}")),
    };
    let Some(addr) = addr else {
        return failed(to, "config: the host has no address".into());
    };
    let plan = npt_probe::agent::Plan {
        addr,
        tos,
        count: u64::from(MARK_ECHOES),
        interval: MARK_INTERVAL,
        timeout: cfg.timeout,
        size: usize::from(cfg.size),
        token: Some(cfg.token.clone()),
        source: cfg.source,
    };
    match npt_probe::agent::read(&plan, stop) {
        Ok(r) => SegmentMarking {
            to,
            up: Some(r.up),
            down: Some(r.down),
            error: None,
        },
        Err(f) => failed(to, format!("{}: {}", f.kind, f.why)),
    }
}

/// The read asked of `agent`.
fn remote(cfg: &Config, agent: &Agent, leg: &LegPlan, tos: u8, stop: &Stop) -> SegmentMarking {
    let to = name(leg);
    let req = request(cfg, leg, tos);
    let reply = match Conn::open(agent, &cfg.token).and_then(|mut c| c.ask(&req, stop)) {
        Ok(r) => r,
        Err(e) => return failed(to, format!("{}: {e}", e.kind().name())),
    };
    let Some(m) = reply.mark else {
        return failed(
            to,
            format!("protocol: {agent} answered without a marking read"),
        );
    };
    let way = npt_probe::agent::direction;
    match (way(&m.up), way(&m.down)) {
        (Ok(up), Ok(down)) => SegmentMarking {
            to,
            up: Some(up),
            down: Some(down),
            error: None,
        },
        (Err(k), _) | (_, Err(k)) => failed(
            to,
            format!(
                "{k}: the marked echoes from {agent} read nothing (its far end must be an npt \
                 serve with the chain's --token)"
            ),
        ),
    }
}

/// Every segment of `cfg` read at once with marking `tos`, in path order.
pub fn segments(cfg: &Config, tos: u8, stop: &Arc<Stop>) -> Vec<SegmentMarking> {
    let legs: Vec<LegPlan> = cfg.legs().into_iter().filter(|l| !l.chain).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = legs
            .iter()
            .map(|leg| {
                s.spawn(move || match &leg.from {
                    Who::Here => here(cfg, leg, tos, stop),
                    Who::Agent(a) => remote(cfg, a, leg, tos, stop),
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(&legs)
            .map(|(h, leg)| {
                h.join().unwrap_or_else(|_| {
                    failed(name(leg), "internal: the read's thread failed".into())
                })
            })
            .collect()
    })
}
