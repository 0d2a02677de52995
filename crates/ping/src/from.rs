//! A ping measured by a hop agent (`npt serve --hop-agent`), as a loop any caller can run:
//! attempts go to the agent in requests ([`npt_wire::hop`]) of at most [`hop::MAX_ATTEMPTS`]
//! that each stay well inside the agent's default time bound ([`BATCH_TIME`]); an open count
//! asks in batches of [`OPEN_BATCH`] until stopped. A request the agent refuses, or an agent
//! that is dead or silent, fails that request's attempts under one error kind and ends the
//! loop. `npt ping --from` prints its lines; `npt trace` measures each relay-to-relay segment
//! with it, concurrently. (It moved here from the cli so that both share it.)

use std::net::SocketAddr;
use std::time::Duration;

use npt_result::workload::Stop;
use npt_result::StopReason;
use npt_wire::hop::{self, HopProto, HopReply, HopRequest, Sample};

use crate::remote::{Agent, Conn, RemoteError};
use crate::session::Tally;
use crate::{Proto, Target};

/// The longest one request may take (attempts × interval + timeout): the agent refuses more
/// than 60 s by default.
pub const BATCH_TIME: Duration = Duration::from_secs(50);
/// Attempts per request when the count is open (`--count 0`): lines come every few intervals.
pub const OPEN_BATCH: u64 = 10;

/// A ping for an agent to measure: validated flags of `npt ping --from`, or one segment of a
/// trace.
#[derive(Clone, Debug)]
pub struct FromConfig {
    pub target: Target,
    pub agent: Agent,
    pub token: String,
    pub count: Option<u64>,
    pub interval: Duration,
    pub timeout: Duration,
    /// UDP datagram size, header included (only UDP requests carry it).
    pub size: u16,
}

impl FromConfig {
    /// The request of `attempts` attempts this config stands for.
    pub fn request(&self, attempts: u16) -> HopRequest {
        let us = |d: Duration| u32::try_from(d.as_micros()).unwrap_or(u32::MAX);
        HopRequest {
            proto: match self.target.proto {
                Proto::Tcp => HopProto::Tcp,
                Proto::Udp => HopProto::Udp,
                Proto::Quic => HopProto::Quic,
            },
            host: self.target.host.clone(),
            port: self.target.port,
            attempts,
            interval_us: us(self.interval),
            timeout_us: us(self.timeout),
            size: if self.target.proto == Proto::Udp {
                self.size
            } else {
                0
            },
            tos: 0,
        }
    }
}

/// Attempts in the next request: at most what is left, [`hop::MAX_ATTEMPTS`], and what fits
/// in [`BATCH_TIME`]; [`OPEN_BATCH`] when the count is open. At least 1.
pub fn batch(left: Option<u64>, interval: Duration, timeout: Duration) -> u16 {
    let room = BATCH_TIME.saturating_sub(timeout).as_nanos() / interval.as_nanos().max(1);
    let fits = u64::try_from(room).unwrap_or(u64::MAX);
    let n = fits
        .min(u64::from(hop::MAX_ATTEMPTS))
        .min(left.unwrap_or(OPEN_BATCH));
    u16::try_from(n.max(1)).unwrap_or(1)
}

/// Adds a reply's samples to `tally` (attempts `first..`), and its lines to `lines`.
pub fn record(
    tally: &mut Tally,
    reply: &HopReply,
    first: u64,
    agent: &Agent,
    lines: &mut Vec<String>,
) {
    let at = reply
        .addr
        .map_or_else(|| "?".to_string(), |a| a.to_string());
    for (seq, s) in (first..).zip(&reply.samples) {
        tally.sent += 1;
        match s {
            Sample::Rtt(ns) => {
                tally.received += 1;
                tally.rtt.record(*ns);
                lines.push(format!(
                    "seq={seq} from {at} time={:.3} ms",
                    *ns as f64 / 1e6
                ));
            }
            Sample::Failed(kind) => {
                let detail = if *kind == "auth" {
                    // The agent keys its UDP echo with its own --token (agent.rs).
                    format!(
                        "{at} answered the agent's --token handshake but not its secret: the \
                         target's npt serve --token is another, measured from {agent}"
                    )
                } else {
                    format!("{at}, measured from {agent}")
                };
                let d = detail.clone();
                tally.errors.record(kind, move || d);
                lines.push(format!("seq={seq} {kind} ({detail})"));
            }
        }
    }
}

/// Fails `n` attempts from `first` under the error's kind (they were asked for and got no
/// measurement), or leaves them lost when the run was given up.
pub fn record_failure(tally: &mut Tally, e: &RemoteError, first: u64, n: u16) -> String {
    tally.sent += u64::from(n);
    let last = first + u64::from(n).max(1) - 1;
    let seqs = if last > first {
        format!("seq={first}..{last}")
    } else {
        format!("seq={first}")
    };
    if matches!(e, RemoteError::Aborted { .. }) {
        return format!("{seqs} given up ({e})");
    }
    let kind = e.kind();
    for _ in 0..n {
        tally.errors.record(kind.name(), || e.to_string());
    }
    format!("{seqs} {kind} ({e})")
}

/// What [`measure`] hands back.
#[derive(Debug)]
pub struct Measured {
    pub tally: Tally,
    /// The addresses the agent measured, in the order they first came back.
    pub addrs: Vec<SocketAddr>,
    pub stopped_by: StopReason,
    /// The failure that ended the loop early, if one did.
    pub error: Option<RemoteError>,
}

/// Asks the agent batch after batch until the count, a signal or a failure. `on_lines` sees
/// each batch's lines (`seq=… time=…`, or the failure's) as they come.
pub fn measure(cfg: &FromConfig, stop: &Stop, on_lines: &mut dyn FnMut(Vec<String>)) -> Measured {
    let mut m = Measured {
        tally: Tally::default(),
        addrs: Vec::new(),
        stopped_by: StopReason::Count,
        error: None,
    };
    let mut conn: Option<Conn> = None;
    m.stopped_by = loop {
        if let Some(why) = stop.reason() {
            break why;
        }
        let left = cfg.count.map(|c| c.saturating_sub(m.tally.sent));
        if left == Some(0) {
            break StopReason::Count;
        }
        let n = batch(left, cfg.interval, cfg.timeout);
        let first = m.tally.sent + 1;
        let asked = match conn.as_mut() {
            Some(c) => Ok(c),
            None => Conn::open(&cfg.agent, &cfg.token).map(|c| conn.insert(c)),
        }
        .and_then(|c| c.ask(&cfg.request(n), stop));
        match asked {
            Ok(reply) => {
                if let Some(a) = reply.addr.filter(|a| !m.addrs.contains(a)) {
                    m.addrs.push(a);
                }
                let mut lines = Vec::new();
                record(&mut m.tally, &reply, first, &cfg.agent, &mut lines);
                on_lines(lines);
            }
            Err(e) => {
                on_lines(vec![record_failure(&mut m.tally, &e, first, n)]);
                let aborted = matches!(e, RemoteError::Aborted { .. });
                m.error = Some(e);
                break if aborted {
                    StopReason::Abort
                } else {
                    StopReason::Count
                };
            }
        }
    };
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> FromConfig {
        FromConfig {
            target: Target::parse("tcp://10.0.3.2:7777").unwrap(),
            agent: Agent::parse("npt://10.0.1.2:7777").unwrap(),
            token: "S".into(),
            count: Some(5),
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            size: 64,
        }
    }

    #[test]
    fn only_udp_requests_carry_a_size() {
        let c = cfg();
        let r = c.request(5);
        assert_eq!(
            (r.proto, r.host.as_str(), r.port, r.size, r.interval_us),
            (HopProto::Tcp, "10.0.3.2", 7777, 0, 1_000_000)
        );
        let u = FromConfig {
            target: Target::parse("udp://[::1]:7777").unwrap(),
            size: 200,
            ..cfg()
        };
        assert_eq!(
            (u.request(1).size, u.request(1).host.as_str()),
            (200, "::1")
        );
    }

    #[test]
    fn a_dead_agent_ends_the_loop_with_every_attempt_failed() {
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let c = FromConfig {
            agent: Agent::parse(&format!("npt://{dead}")).unwrap(),
            count: Some(3),
            ..cfg()
        };
        let mut seen = Vec::new();
        let m = measure(&c, &Stop::new(), &mut |l| seen.extend(l));
        assert_eq!((m.tally.sent, m.tally.received), (3, 0));
        assert_eq!(m.tally.errors.get("refused"), 3);
        assert_eq!(m.error.map(|e| e.kind().name()), Some("refused"));
        assert!(seen[0].starts_with("seq=1..3 refused"), "{seen:?}");
    }
}
