//! `npt trace --mtu`: each segment's path MTU each way, searched from the segment's upstream
//! end against the `npt serve` at its far end (UDP, the segment's HOST:PORT). The first segment
//! is this host's own `npt mtu` search ([`npt_mtu::agent::run_keyed`], keyed with the chain's
//! secret); every other one is asked of the upstream hop's agent in a hop request of proto
//! `mtu` ([`npt_wire::hop::mtu`]), whose reply is read back into `npt mtu`'s terms. All
//! segments are searched at once, each bounded by `--mtu-timeout` (plus the agent's connect and
//! reply slack); a refusal or a silent far end is that segment's `error`, never the others'.

use std::sync::Arc;
use std::time::Duration;

use npt_client::target::{Proto as ClientProto, Target as ClientTarget};
use npt_ping::remote::{Agent, Conn};
use npt_result::trace::SegmentMtu;
use npt_result::workload::Stop;
use npt_wire::hop::{HopProto, HopRequest};

use crate::{Config, LegPlan, Who};

/// The longest one segment's search may take unless `--mtu-timeout` says (an agent allows up
/// to [`MAX_SEARCH_TIME`]).
pub const SEARCH_TIME: Duration = Duration::from_secs(20);
/// The longest `--mtu-timeout` a hop agent allows (its `HopLimits::max_mtu_timeout`).
pub const MAX_SEARCH_TIME: Duration = Duration::from_secs(30);

/// The UDP target of a segment: its far end's `npt serve`, same host and port.
fn udp(leg: &LegPlan) -> ClientTarget {
    ClientTarget {
        proto: ClientProto::Udp,
        host: leg.to.host.clone(),
        port: leg.to.port,
    }
}

fn name(t: &ClientTarget) -> String {
    format!("udp://{}", npt_ping::remote::host_port(&t.host, t.port))
}

fn failed(to: String, why: String) -> SegmentMtu {
    SegmentMtu {
        to,
        headers: 0,
        up: None,
        down: None,
        error: Some(why),
    }
}

/// This host's own search of the first segment.
fn here(cfg: &Config, search: Duration, t: ClientTarget, stop: &Arc<Stop>) -> SegmentMtu {
    let to = name(&t);
    let mut m = npt_mtu::Config {
        target: t,
        max: None,
        token: Some(cfg.token.clone()),
        timeout: search,
        via: None,
    };
    match npt_mtu::agent::run_keyed(&mut m, stop) {
        Ok(s) => SegmentMtu {
            to,
            headers: s.headers,
            up: Some(s.up),
            down: Some(s.down),
            error: None,
        },
        Err(e) => failed(to, format!("{}: {e}", npt_mtu::agent::error_kind(&e))),
    }
}

/// The search asked of `agent`.
fn remote(
    cfg: &Config,
    search: Duration,
    agent: &Agent,
    t: ClientTarget,
    stop: &Stop,
) -> SegmentMtu {
    let to = name(&t);
    let req = HopRequest {
        proto: HopProto::Mtu,
        host: t.host,
        port: t.port,
        attempts: 1,
        interval_us: 0,
        timeout_us: u32::try_from(search.as_micros()).unwrap_or(u32::MAX),
        size: 0,
        tos: 0,
    };
    let reply = Conn::open(agent, &cfg.token).and_then(|mut c| c.ask(&req, stop));
    let reply = match reply {
        Ok(r) => r,
        Err(e) => return failed(to, format!("{}: {e}", e.kind().name())),
    };
    let Some(m) = reply.mtu else {
        return failed(
            to,
            format!("protocol: {agent} answered without an MTU search"),
        );
    };
    let headers = match reply.addr {
        Some(a) if a.is_ipv6() => npt_mtu::IPV6_HEADERS,
        _ => npt_mtu::IPV4_HEADERS,
    };
    let headers = u32::try_from(headers).unwrap_or(0);
    let way = |w| npt_mtu::agent::direction(w, headers);
    match (way(&m.up), way(&m.down)) {
        (Ok(up), Ok(down)) => SegmentMtu {
            to,
            headers,
            up: Some(up),
            down: Some(down),
            error: None,
        },
        (Err(k), _) | (_, Err(k)) => failed(
            to,
            format!("{k}: the search from {agent} read nothing (its far end must be an npt serve)"),
        ),
    }
}

/// Every segment of `cfg` searched at once, each for at most `search`, in path order.
pub fn segments(cfg: &Config, search: Duration, stop: &Arc<Stop>) -> Vec<SegmentMtu> {
    let legs: Vec<LegPlan> = cfg.legs().into_iter().filter(|l| !l.chain).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = legs
            .iter()
            .map(|leg| {
                s.spawn(move || match &leg.from {
                    Who::Here => here(cfg, search, udp(leg), stop),
                    Who::Agent(a) => remote(cfg, search, a, udp(leg), stop),
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(&legs)
            .map(|(h, leg)| {
                h.join().unwrap_or_else(|_| {
                    failed(
                        name(&udp(leg)),
                        "internal: the search's thread failed".into(),
                    )
                })
            })
            .collect()
    })
}
