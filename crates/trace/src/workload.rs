//! `npt trace` as a [`Workload`]: one round of every leg at once, or with `--during` a round
//! before a command starts and more while it runs. The first round is the waterfall (the path
//! at rest); every round's p50s go into `rounds`, so drift under the command's load shows
//! beside it. What runs the command is the cli's ([`Alongside`]): the engine only asks
//! whether it is still running between rounds. Like a ping, a trace has no interval series;
//! its lines (a leg as it finishes, a round as it ends) go to the sink it is given.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_result::stats::trace::{round, LegStats, TraceMeta, TraceStats};
use npt_result::stats::PingStats;
use npt_result::trace::{During, SegmentMarking, SegmentMtu, TraceBody};
use npt_result::workload::{times, Finished, Length, Progress, Stop, Workload};
use npt_result::StopReason;
use npt_stats::Snapshot;

use crate::Config;

/// The most rounds one `--during` trace measures, however long its command runs.
pub const MAX_ROUNDS: u32 = 10_000;

/// What a `--during` trace measures alongside (the cli runs the command).
pub trait Alongside {
    /// Starts it, after the first round; `Err` says why it could not start.
    fn start(&mut self) -> Result<(), String>;
    /// Whether it still runs.
    fn running(&mut self) -> bool;
    /// Ends it (if it still runs) and says how it went.
    fn finish(&mut self) -> During;
}

/// A trace run: the config, what it runs alongside, and what sees its lines.
pub struct Trace<'a> {
    pub cfg: Config,
    alongside: Option<Box<dyn Alongside + 'a>>,
    on_line: Box<dyn FnMut(String) + 'a>,
}

impl<'a> Trace<'a> {
    pub fn new(
        cfg: Config,
        alongside: Option<Box<dyn Alongside + 'a>>,
        on_line: impl FnMut(String) + 'a,
    ) -> Trace<'a> {
        Trace {
            cfg,
            alongside,
            on_line: Box::new(on_line),
        }
    }
}

/// How long one round of `count` attempts `interval` apart on every leg takes at most: the
/// attempts and the last one's `timeout`, and beyond them a hop agent's connect and reply
/// slack ([`npt_ping::remote`]) when an agent hangs.
pub fn length(count: u64, interval: Duration, timeout: Duration) -> Length {
    Length {
        planned: times(interval, count).saturating_add(timeout),
        slack: npt_ping::remote::CONNECT_TIMEOUT + npt_ping::remote::REPLY_SLACK,
    }
}

/// A finished leg's line.
pub fn leg_line(index: usize, segments: usize, l: &LegStats) -> String {
    let what = if index < segments {
        format!("segment {}", index + 1)
    } else {
        "chain".to_string()
    };
    let s = &l.stats;
    if s.rtt.is_empty() {
        let why = s
            .errors
            .iter()
            .next()
            .and_then(|(k, e)| e.examples.first().map(|x| format!("{k}: {x}")))
            .unwrap_or_else(|| "no answer".into());
        return format!("{what} {} → {}: {why}", l.from, l.to);
    }
    format!(
        "{what} {} → {}: p50 {:.2} ms ({}/{} answered)",
        l.from,
        l.to,
        s.rtt.summary().p50,
        s.received,
        s.sent
    )
}

/// A segment's path-MTU line.
pub fn mtu_line(index: usize, m: &SegmentMtu) -> String {
    let what = format!("segment {} mtu {}", index + 1, m.to);
    match &m.error {
        Some(e) => format!("{what}: {e}"),
        None => format!(
            "{what}: up {}, down {}",
            SegmentMtu::way_text(m.up.as_ref()),
            SegmentMtu::way_text(m.down.as_ref())
        ),
    }
}

/// A segment's marking line.
pub fn marking_line(index: usize, m: &SegmentMarking) -> String {
    let what = format!("segment {} marking {}", index + 1, m.to);
    match &m.error {
        Some(e) => format!("{what}: {e}"),
        None => {
            let name = |f| serde_json::to_value(f).unwrap_or_default();
            let fate = |w: Option<&npt_result::marking::Way>| {
                w.map_or("-".to_string(), |w| {
                    format!(
                        "DSCP {}, ECN {}, CE {} of {}",
                        name(w.dscp),
                        name(w.ecn),
                        w.ce,
                        w.packets
                    )
                    .replace('"', "")
                })
            };
            format!(
                "{what}: up {}; down {}",
                fate(m.up.as_ref()),
                fate(m.down.as_ref())
            )
        }
    }
}

impl Workload for Trace<'_> {
    type Body = TraceBody;
    type Error = std::convert::Infallible;

    fn config(&self) -> serde_json::Value {
        let c = &self.cfg;
        serde_json::json!({
            "target": c.target.to_string(),
            "proto": c.target.proto.name(),
            "hops": c.hops.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
            "through": c.through.as_ref().map(|t| t.to_string()),
            "count": c.count,
            "interval_s": c.interval.as_secs_f64(),
            "timeout_s": c.timeout.as_secs_f64(),
            "size": c.size,
            "mtu": c.mtu.is_some(),
            "mtu_timeout_s": c.mtu.map(|d| d.as_secs_f64()),
            "marking": c.source.tos,
        })
    }

    /// One round: every leg at once, each `count` attempts `interval` apart and the last one's
    /// timeout; a leg from a hop agent may take the agent's connect and reply slack beyond it
    /// ([`npt_ping::remote`]). With `--during` it runs as long as its command.
    fn length(&self) -> Option<Length> {
        if self.alongside.is_some() {
            return None;
        }
        let mut l = length(self.cfg.count, self.cfg.interval, self.cfg.timeout);
        if let Some(search) = self.cfg.mtu {
            l.planned = l.planned.saturating_add(search);
        }
        if self.cfg.source.tos.is_some() {
            l.planned = l
                .planned
                .saturating_add(crate::marks::read_time(self.cfg.timeout));
        }
        Some(l)
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        _no_intervals: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<TraceBody>, Self::Error> {
        let started = SystemTime::now();
        let t0 = Instant::now();
        let cfg = &self.cfg;
        let segments = cfg.legs().iter().filter(|l| !l.chain).count();
        let on_line = &mut self.on_line;
        let measure = |on_line: &mut Box<dyn FnMut(String) + '_>| {
            crate::leg::round(cfg, stop, &mut |i, l| on_line(leg_line(i, segments, l)))
        };
        let first = measure(on_line);
        // --mtu: after the first round (so its probes do not load the RTTs), before --during.
        let mtus = match cfg.mtu {
            Some(search) if !stop.stopping() => {
                let m = crate::mtu::segments(cfg, search, stop);
                for (i, s) in m.iter().enumerate() {
                    on_line(mtu_line(i, s));
                }
                m
            }
            _ => Vec::new(),
        };
        // --dscp/--ecn: each segment's marking, likewise after the first round.
        let marks = match cfg.source.tos {
            Some(tos) if !stop.stopping() => {
                let m = crate::marks::segments(cfg, tos, stop);
                for (i, s) in m.iter().enumerate() {
                    on_line(marking_line(i, s));
                }
                m
            }
            _ => Vec::new(),
        };
        let mut stats = TraceStats::default();
        let mut rounds_at = vec![(0.0, t0.elapsed().as_secs_f64(), first.clone())];
        if let Some(along) = self.alongside.as_mut() {
            match along.start() {
                Err(why) => on_line(format!("--during did not start: {why}")),
                Ok(()) => {
                    let mut n = 1;
                    while along.running() && !stop.stopping() && n < MAX_ROUNDS {
                        let from = t0.elapsed().as_secs_f64();
                        let legs = measure(on_line);
                        rounds_at.push((from, t0.elapsed().as_secs_f64(), legs));
                        n += 1;
                    }
                }
            }
            stats.during = Some(along.finish());
            for (i, (from, to, legs)) in rounds_at.iter().enumerate() {
                let seg: Vec<&PingStats> = legs[..segments].iter().map(|l| &l.stats).collect();
                let chain = legs.get(segments).map(|l| &l.stats);
                let phase = if i == 0 { "before" } else { "during" };
                let r = round(
                    u32::try_from(i).unwrap_or(u32::MAX),
                    phase,
                    (*from, *to),
                    &seg,
                    chain,
                );
                on_line(format!(
                    "round {i} ({phase}): sum {} ms, chain {} ms",
                    r.sum_p50_ms.map_or("-".into(), |v| format!("{v:.2}")),
                    r.chain_p50_ms.map_or("-".into(), |v| format!("{v:.2}")),
                ));
                stats.rounds.push(r);
            }
        }
        let mut first = first.into_iter();
        stats.segments = first.by_ref().take(segments).collect();
        stats.chain = first.next();
        let mut body = stats.summarize(&TraceMeta {
            target: cfg.target.to_string(),
            proto: cfg.target.proto.name().to_string(),
        });
        for (leg, m) in body.segments.iter_mut().zip(mtus) {
            leg.mtu = Some(m);
        }
        for (leg, m) in body.segments.iter_mut().zip(marks) {
            leg.marking = Some(m);
        }
        let stopped_by = stop.reason().unwrap_or(StopReason::Count);
        let ended = started + t0.elapsed();
        Ok(Finished::new(
            body,
            started,
            ended,
            stopped_by,
            Snapshot::new(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Hop, QuicTrust, Target};
    use std::time::Duration;

    /// Runs for `rounds` checks, then says it exited with 7.
    struct Fake {
        rounds: u32,
    }

    impl Alongside for Fake {
        fn start(&mut self) -> Result<(), String> {
            Ok(())
        }
        fn running(&mut self) -> bool {
            self.rounds = self.rounds.saturating_sub(1);
            self.rounds > 0
        }
        fn finish(&mut self) -> During {
            During {
                command: "fake".into(),
                exit_code: Some(7),
                note: None,
            }
        }
    }

    #[test]
    fn a_round_before_and_rounds_while_the_command_runs() {
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let cfg = Config {
            target: Target::parse(&format!("tcp://{}", open.local_addr().unwrap())).unwrap(),
            // The agent is dead, but the segment into it is a connect to a live port.
            hops: vec![
                Hop::parse(&format!("npt://{dead}={}", open.local_addr().unwrap())).unwrap(),
            ],
            through: None,
            token: "S".into(),
            count: 2,
            interval: Duration::from_millis(5),
            timeout: Duration::from_millis(500),
            size: 64,
            trust: QuicTrust::Insecure,
            source: Default::default(),
            mtu: None,
        };
        let mut lines = Vec::new();
        let fake = Fake { rounds: 3 };
        let mut t = Trace::new(cfg, Some(Box::new(fake)), |l| lines.push(l));
        let done = t.run(&Arc::new(Stop::new()), &mut |_| {}).unwrap();
        drop(t);
        let b = done.body;
        let phases: Vec<&str> = b.rounds.iter().map(|r| r.phase.as_str()).collect();
        assert_eq!(phases, ["before", "during", "during"]);
        assert_eq!(b.during.as_ref().and_then(|d| d.exit_code), Some(7));
        assert!(b.rounds.iter().all(|r| r.segments[0].p50_ms.is_some()));
        assert!(
            b.rounds.iter().all(|r| r.segments[1].p50_ms.is_none()),
            "dead agent"
        );
        assert_eq!(
            b.segments[0].summary.received, 2,
            "the waterfall is the first round"
        );
        assert!(b.segments[1]
            .error
            .as_deref()
            .unwrap()
            .contains("cannot reach the agent"));
        assert!(
            lines.iter().any(|l| l.starts_with("round 2 (during)")),
            "{lines:?}"
        );
    }
}
