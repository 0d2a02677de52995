//! One leg measured, and a round of legs measured at once. A segment from here is `npt
//! ping`'s own run ([`npt_ping::net::run`]); a segment from a hop agent is `npt ping --from`'s
//! loop ([`npt_ping::from::measure`]); the chain is a ping through its entry, except over TCP
//! where it is an echo on an open connection ([`crate::chain`]). Whatever goes wrong — a name
//! that does not resolve, a dead agent, a target outside its `--hop-allow` — fails the leg's
//! attempts under one error kind with a message naming who and what; it never stops the
//! other legs.

use npt_ping::from::FromConfig;
use npt_ping::session::Tally;
use npt_result::error::ErrorKind;
use npt_result::stats::trace::LegStats;
use npt_result::workload::Stop;

use crate::{Config, LegPlan, Proto, Who};

/// All `count` attempts failed under `kind`, for `why`.
fn failed(count: u64, kind: ErrorKind, why: &str) -> Tally {
    let mut t = Tally {
        sent: count,
        ..Tally::default()
    };
    for _ in 0..count {
        t.errors.record(kind.name(), || why.to_string());
    }
    t
}

/// This host's ping of `leg.to`, as `npt ping` does it.
fn ping_here(cfg: &Config, leg: &LegPlan, stop: &Stop) -> (Tally, Vec<String>) {
    let ping = npt_ping::Config {
        target: leg.to.clone(),
        count: Some(cfg.count),
        interval: cfg.interval,
        timeout: cfg.timeout,
        size: usize::from(cfg.size),
        raw: false,
        // The first hop's `npt serve --token` opens its UDP echo only to its secret. The
        // chain's far end is the target's own responder: keyed too when it answers the
        // handshake (the chain shares one secret), plain when it ignores it (no --token there),
        // the handshake given one timeout.
        token: (leg.to.proto == Proto::Udp).then(|| cfg.token.clone()),
        handshake: if leg.chain {
            npt_ping::Handshake {
                bound: npt_client::auth::UdpBound {
                    timeout: cfg.timeout,
                    ..Default::default()
                },
                plain_if_silent: true,
            }
        } else {
            npt_ping::Handshake::default()
        },
        trust: cfg.trust.clone(),
        via: None,
        echo: false,
        setup: false,
        source: cfg.source,
    };
    match npt_ping::net::run(&ping, stop, &mut |_, _| {}) {
        Ok(o) => (o.tally, o.addrs.iter().map(|a| a.to_string()).collect()),
        Err(e) => {
            let kind = npt_ping::agent::start_error_kind(&e);
            (
                failed(cfg.count, kind, &format!("{}: {e}", leg.to)),
                Vec::new(),
            )
        }
    }
}

/// The echo through a TCP chain's entry.
fn chain_tcp(cfg: &Config, leg: &LegPlan, stop: &Stop) -> (Tally, Vec<String>) {
    let addr = match leg.to.resolve_from(&cfg.source) {
        Ok(a) => a.into_iter().next(),
        Err(e) => {
            let why = format!("--through {}: {}", leg.to, npt_ping::PingError::from(e));
            return (failed(cfg.count, ErrorKind::Config, &why), Vec::new());
        }
    };
    let Some(addr) = addr else {
        let why = format!("--through {}: resolves to no address", leg.to);
        return (failed(cfg.count, ErrorKind::Config, &why), Vec::new());
    };
    let size = usize::from(cfg.size);
    let secret = Some(cfg.token.as_str());
    let entry = crate::chain::Entry {
        addr,
        source: cfg.source,
    };
    let t = crate::chain::measure(
        entry,
        cfg.count,
        cfg.interval,
        cfg.timeout,
        size,
        secret,
        stop,
    );
    (t, vec![addr.to_string()])
}

/// Measures one leg.
pub fn measure(cfg: &Config, leg: &LegPlan, stop: &Stop) -> LegStats {
    let (stats, addresses) = match (&leg.from, leg.chain, leg.to.proto) {
        (Who::Here, true, Proto::Tcp) => chain_tcp(cfg, leg, stop),
        (Who::Here, _, _) => ping_here(cfg, leg, stop),
        (Who::Agent(agent), _, _) => {
            let f = FromConfig {
                target: leg.to.clone(),
                agent: agent.clone(),
                token: cfg.token.clone(),
                count: Some(cfg.count),
                interval: cfg.interval,
                timeout: cfg.timeout,
                size: cfg.size,
            };
            let m = npt_ping::from::measure(&f, stop, &mut |_| {});
            let addrs = m.addrs.iter().map(|a| a.to_string()).collect();
            (m.tally, addrs)
        }
    };
    LegStats {
        from: leg.from.to_string(),
        to: leg.to.to_string(),
        addresses,
        stats,
    }
}

/// Every leg of `cfg` at once, each on its own thread; in the order of [`Config::legs`].
/// `on_leg` sees each leg as it finishes (from the calling thread).
pub fn round(cfg: &Config, stop: &Stop, on_leg: &mut dyn FnMut(usize, &LegStats)) -> Vec<LegStats> {
    let legs = cfg.legs();
    let mut out: Vec<Option<LegStats>> = vec![None; legs.len()];
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        for (i, leg) in legs.iter().enumerate() {
            let tx = tx.clone();
            s.spawn(move || {
                let _ = tx.send((i, measure(cfg, leg, stop)));
            });
        }
        drop(tx);
        for (i, l) in rx {
            on_leg(i, &l);
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(l);
            }
        }
    });
    out.into_iter()
        .zip(&legs)
        .map(|(l, plan)| {
            // A thread that panicked sent nothing: its leg is an internal failure, not a hole.
            l.unwrap_or_else(|| LegStats {
                from: plan.from.to_string(),
                to: plan.to.to_string(),
                addresses: Vec::new(),
                stats: failed(cfg.count, ErrorKind::Internal, "the leg's thread failed"),
            })
        })
        .collect()
}
