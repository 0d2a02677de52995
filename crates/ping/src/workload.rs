//! `npt ping` as a [`Workload`]: the attempts of a [`Config`] and the `kind = "ping"` body of
//! their tally. A ping has no series — one RTT per attempt, no rate, no interval in its result
//! — so it never calls `on_interval` and exports no totals; its per-attempt lines are its text
//! output, written by the sink it is given ([`Ping::new`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use npt_result::ping::PingBody;
use npt_result::workload::{Finished, Progress, Stop, Workload};
use npt_stats::Snapshot;

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
    const KIND: &'static str = "ping";
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
        })
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        _no_intervals: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<PingBody>, PingError> {
        let started = SystemTime::now();
        let started_mono = Instant::now();
        let outcome = net::run(&self.cfg, stop, &mut *self.on_attempt)?;
        // Start label plus monotonic time: a wall-clock step cannot distort the run's length.
        let ended = started + started_mono.elapsed();
        let body = result::body(
            &self.cfg.target.to_string(),
            self.cfg.target.proto,
            &outcome.addrs,
            self.cfg.answered_by(),
            &outcome.tally,
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
