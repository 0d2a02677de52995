//! `npt lifetime` as a [`Workload`]: the search of a [`Config`] and the `kind = "lifetime"`
//! body of what it found. No series (one answer at the end), so it never calls
//! `on_interval`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_client::target::Proto;
use npt_result::common::{Errors, NptLatency};
use npt_result::lifetime::{CutOff, FlowRecord, LifetimeBody, LifetimeSummary};
use npt_result::workload::{Finished, Length, Progress, Stop, Workload};
use npt_result::StopReason;
use npt_stats::{ErrorCounts, Histogram, Snapshot};

use crate::plan::{LADDER, MAX_REFINE};
use crate::search::{
    Close, Failure, Fate, Search, ACK_RETRY_NS, ACK_TRIES, MAX_GRACE_NS, REBIND_MARGIN_NS,
    STAGGER_NS,
};
use crate::{net, tcp, Config, LifetimeError};

impl Workload for Config {
    const KIND: &'static str = "lifetime";
    type Body = LifetimeBody;
    type Error = LifetimeError;

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "target": self.name(),
            "max_s": self.max.as_secs_f64(),
            "resolution_s": self.resolution.map(|r| r.as_secs_f64()),
            "token": self.token.is_some(),
            "via": self.via.as_ref().map(ToString::to_string),
        })
    }

    fn length(&self) -> Option<Length> {
        Some(length(self.max))
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        _no_intervals: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<LifetimeBody>, LifetimeError> {
        let to = *self
            .target
            .resolve()?
            .first()
            .ok_or_else(|| LifetimeError::Silent(self.target.host.clone()))?;
        let started = SystemTime::now();
        let mono = Instant::now();
        let max = u64::try_from(self.max.as_nanos()).unwrap_or(u64::MAX);
        let res = self
            .resolution
            .map(|r| u64::try_from(r.as_nanos()).unwrap_or(u64::MAX));
        let name = self.name();
        let route = crate::Route {
            to,
            host: &self.target.host,
            via: self.via.as_ref(),
        };
        let search = if self.target.proto == Proto::Tcp {
            let mut s = Search::over_streams(max, res, rand::random());
            let outcome = tcp::run(&mut s, route, self.token.as_deref(), stop)?;
            let none_opened = outcome.connected == 0 || s.failure() == Some(Failure::Silent);
            if let (true, Some(e)) = (none_opened, outcome.connect_error) {
                return Err(LifetimeError::Connect(name, e));
            }
            s
        } else {
            let mut s = Search::new(max, res, rand::random());
            net::run(&mut s, route, self.token.as_deref(), stop)?;
            s
        };
        match search.failure() {
            Some(Failure::PlainEcho) => return Err(LifetimeError::PlainEcho(name)),
            Some(Failure::Silent) => return Err(LifetimeError::Silent(name)),
            None => {}
        }
        let body = body(&search, name, to.to_string(), self.max);
        let stopped_by = stop.reason().unwrap_or(StopReason::Count);
        Ok(Finished::new(
            body,
            started,
            started + mono.elapsed(),
            stopped_by,
            Snapshot::new(),
        ))
    }
}

impl Config {
    /// `udp://HOST:PORT` or `tcp://HOST:PORT`, an IPv6 host in brackets.
    pub fn name(&self) -> String {
        let scheme = if self.target.proto == Proto::Tcp {
            "tcp"
        } else {
            "udp"
        };
        format!(
            "{scheme}://{}:{}",
            bracket(&self.target.host),
            self.target.port
        )
    }
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// How long a search up to `max` takes: planned, the ladder and one round inside the bracket
/// (the rebind flows beside it) — what a search usually needs, and what a monitor's `every`
/// must leave room for; the engine's slack, the further rounds inside the bracket it may take.
/// Each round as long as its longest wait (a callback's gap and grace, or a rebind flow's
/// silence past the bracket), its flows' staggered starts and two requests' retries.
pub fn length(max: Duration) -> Length {
    let slack = MAX_GRACE_NS.max(REBIND_MARGIN_NS)
        + STAGGER_NS * (LADDER as u64 + 2)
        + 2 * u64::from(ACK_TRIES) * ACK_RETRY_NS;
    let round = max + max / 20 + Duration::from_nanos(slack);
    Length {
        planned: round * 2,
        slack: round * MAX_REFINE,
    }
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The result body of a finished search.
pub fn body(s: &Search, target: String, address: String, max: Duration) -> LifetimeBody {
    let p = &s.plan;
    let hi = p.hi();
    let lo = p.survived().then(|| p.lo());
    let (checked, moved) = s.rebound();
    let mut acks = Histogram::new();
    let mut errors = ErrorCounts::default();
    let mut cut = CutOff::default();
    let flows = s
        .flows
        .iter()
        .map(|f| {
            if let Some(r) = f.ack_rtt_ns {
                acks.record(r);
            }
            let mut closed = None;
            let (fate, held) = match f.fate {
                Fate::Alive { held_ns } => ("alive", Some(secs(held_ns))),
                Fate::Gone => {
                    cut.dropped += 1;
                    ("gone", None)
                }
                Fate::Closed { by, after_ns } => {
                    let after = secs(after_ns);
                    let by = match by {
                        Close::Fin => {
                            cut.fin += 1;
                            "fin"
                        }
                        Close::Rst => {
                            cut.rst += 1;
                            "rst"
                        }
                    };
                    cut.closed_after_s = Some(cut.closed_after_s.map_or(after, |a| a.min(after)));
                    closed = Some((by.to_string(), after));
                    ("closed", None)
                }
                Fate::NoAck => {
                    errors.record("timeout", || "no answer to the idle request".to_string());
                    ("no_ack", None)
                }
                Fate::Refused => ("refused", None),
                Fate::Rebind => ("rebind", None),
                Fate::Cancelled | Fate::Pending => ("cancelled", None),
            };
            FlowRecord {
                round: f.round,
                gap_s: secs(f.gap_ns),
                fate: fate.to_string(),
                held_s: held,
                seen: f.seen.map(|a| a.to_string()),
                seen_after: f.seen_after.map(|a| a.to_string()),
                closed_by: closed.as_ref().map(|c| c.0.clone()),
                closed_after_s: closed.map(|c| c.1),
            }
        })
        .collect::<Vec<_>>();
    let refused = flows.iter().filter(|f| f.fate == "refused").count();
    let summary = LifetimeSummary {
        lifetime_s: hi.map(|h| secs((lo.unwrap_or(0) + h) / 2)),
        alive_after_s: lo.map(secs),
        gone_after_s: hi.map(secs),
        longer_than_max: p.longer_than_max(),
        max_s: max.as_secs_f64(),
        resolution_s: secs(p.resolution()),
        rounds: p.rounds(),
        rebound: (checked > 0).then_some(moved > 0),
        rebound_checked: checked,
        rebound_flows: moved,
        inconsistent: p.inconsistent(),
        refused: u32::try_from(refused).unwrap_or(u32::MAX),
        cut_off: s.streams().then(|| {
            let closed = cut.fin + cut.rst;
            cut.how = match (closed > 0, cut.dropped > 0) {
                (true, true) => Some("mixed".to_string()),
                (true, false) => Some("closed".to_string()),
                (false, true) => Some("dropped".to_string()),
                (false, false) => None,
            };
            cut
        }),
    };
    let n = flows.len() as u64;
    LifetimeBody {
        target,
        address,
        summary,
        flows,
        latency: [(
            if s.streams() { "tcp" } else { "udp" }.to_string(),
            NptLatency::from(&acks.summary()),
        )]
        .into(),
        errors: Errors::new(errors, n),
        ack_histogram: acks.to_serialized(),
    }
}
