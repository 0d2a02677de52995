//! `npt ping` as a [`Workload`]: the attempts of a [`Config`] and the `kind = "ping"` body of
//! their tally. A ping has no series — one RTT per attempt, no rate, no interval in its result
//! — so it never calls `on_interval` and exports no totals; its per-attempt lines are its text
//! output, written by the sink it is given ([`Ping::new`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_result::packets::{unix_ns, Fate, PacketLine};
use npt_result::ping::PingBody;
use npt_result::workload::{times, Finished, Length, Progress, Stop, Workload};
use npt_stats::Snapshot;

use npt_result::error::ErrorKind;

use crate::session::Event;
use crate::{net, result, Config, PingError};

/// What sees every settled attempt, with the address it went to.
pub type OnAttempt<'a> = Box<dyn FnMut(&Event, SocketAddr) + 'a>;

/// A ping run: the config and what sees every settled attempt.
pub struct Ping<'a> {
    pub cfg: Config,
    on_attempt: OnAttempt<'a>,
}

impl<'a> Ping<'a> {
    pub fn new(cfg: Config, on_attempt: impl FnMut(&Event, SocketAddr) + 'a) -> Ping<'a> {
        Ping {
            cfg,
            on_attempt: Box::new(on_attempt),
        }
    }
}

impl Workload for Ping<'_> {
    type Body = PingBody;
    type Error = PingError;

    fn config(&self) -> serde_json::Value {
        let cfg = &self.cfg;
        serde_json::json!({
            "target": cfg.target.to_string(),
            "proto": cfg.target.proto.name(),
            "count": cfg.count,
            "interval_s": cfg.interval.as_secs_f64(),
            "timeout_s": cfg.timeout.as_secs_f64(),
            "size": cfg.size,
            "raw": cfg.raw,
            "via": cfg.via.as_ref().map(|v| v.to_string()),
            "echo": cfg.echo,
            "setup": cfg.setup,
        })
    }

    /// Its attempts, `interval` apart, and the last one's timeout.
    fn length(&self) -> Option<Length> {
        length(self.cfg.count, self.cfg.interval, self.cfg.timeout)
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        no_intervals: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<PingBody>, PingError> {
        self.run_logged(stop, no_intervals, &mut |_| {})
    }

    const PACKETS: bool = true;

    fn run_logged(
        &mut self,
        stop: &Arc<Stop>,
        _no_intervals: &mut dyn FnMut(&Progress<'_>),
        on_packet: &mut dyn FnMut(&PacketLine),
    ) -> Result<Finished<PingBody>, PingError> {
        let cfg = &self.cfg;
        let (outcome, started, ended) = timed(&mut self.on_attempt, on_packet, |each| {
            net::run(cfg, stop, each)
        })?;
        let body = result::body(
            &self.cfg.target.to_string(),
            self.cfg.target.proto,
            &outcome.addrs,
            self.cfg.answered_by(),
            &outcome.tally,
            outcome.setup,
        );
        Ok(Finished::new(
            body,
            started,
            ended,
            outcome.stopped_by,
            Snapshot::new(),
        ))
    }
}

/// How long `count` attempts `interval` apart take at most, the last one waiting its
/// `timeout`; `None` without a count (until stopped). Every kind of ping is this long (and
/// `npt compare` bounds a ping child by it, from its flags).
pub fn length(count: Option<u64>, interval: Duration, timeout: Duration) -> Option<Length> {
    count.map(|n| Length::planned(times(interval, n).saturating_add(timeout)))
}

/// Runs one ping (`run` gets what sees each settled attempt: the caller's `on_attempt` and the
/// per-packet log) and times it: its start label, and its end as that label plus monotonic
/// time, so a wall-clock step cannot distort the run's length. Every kind of ping runs here.
pub(crate) fn timed<T>(
    on_attempt: &mut OnAttempt<'_>,
    on_packet: &mut dyn FnMut(&PacketLine),
    run: impl FnOnce(&mut dyn FnMut(&Event, SocketAddr)) -> Result<T, PingError>,
) -> Result<(T, SystemTime, SystemTime), PingError> {
    let started = SystemTime::now();
    let started_mono = Instant::now();
    let start_unix = unix_ns(started);
    let out = run(&mut |ev, addr| {
        on_attempt(ev, addr);
        on_packet(&packet_line(ev, start_unix));
    })?;
    Ok((out, started, started + started_mono.elapsed()))
}

/// An attempt's line in the per-packet log (`--packets`): its session clock starts with the
/// run, at `start_unix` (ns since the Unix epoch). A timeout is a lost attempt; a late answer
/// comes after it, without a send time (the attempt was given up).
pub fn packet_line(ev: &Event, start_unix: u64) -> PacketLine {
    match ev {
        Event::Reply { seq, sent, rtt_ns } => {
            let mut l = PacketLine::new(*seq, Fate::Received).sent(*sent, start_unix);
            l.rtt_ns = Some(*rtt_ns);
            l
        }
        Event::Error {
            seq, sent, kind, ..
        } if *kind == ErrorKind::Timeout => {
            PacketLine::new(*seq, Fate::Lost).sent(*sent, start_unix)
        }
        Event::Error {
            seq, sent, kind, ..
        } => {
            let mut l = PacketLine::new(*seq, Fate::Error).sent(*sent, start_unix);
            l.reason = Some(kind.name().to_string());
            l
        }
        Event::Late { seq } => PacketLine::new(*seq, Fate::Late),
        Event::Refused { seq, sent, why } => {
            let mut l = PacketLine::new(*seq, Fate::Refused).sent(*sent, start_unix);
            l.reason = Some(npt_wire::frame::status::notice_name(*why).to_string());
            l
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_is_one_line_with_its_send_time() {
        let start = 1_000_000_000;
        let line = |ev: Event| serde_json::to_string(&packet_line(&ev, start)).unwrap();
        assert_eq!(
            line(Event::Reply {
                seq: 1,
                sent: 5,
                rtt_ns: 300
            }),
            r#"{"seq":1,"sent_ns":5,"sent_unix_ns":1000000005,"fate":"received","rtt_ns":300}"#
        );
        let timeout = Event::Error {
            seq: 2,
            sent: 7,
            kind: ErrorKind::Timeout,
            detail: "no answer".into(),
        };
        assert_eq!(
            line(timeout),
            r#"{"seq":2,"sent_ns":7,"sent_unix_ns":1000000007,"fate":"lost"}"#
        );
        let refused = Event::Error {
            seq: 3,
            sent: 9,
            kind: ErrorKind::Refused,
            detail: "x".into(),
        };
        assert!(line(refused).ends_with(r#""fate":"error","reason":"refused"}"#));
        assert_eq!(line(Event::Late { seq: 2 }), r#"{"seq":2,"fate":"late"}"#);
        let budget = Event::Refused {
            seq: 4,
            sent: 11,
            why: npt_wire::frame::status::BUDGET,
        };
        assert!(line(budget).ends_with(r#""fate":"refused","reason":"budget"}"#));
    }
}
