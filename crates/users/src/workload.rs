//! `npt run` as a [`Workload`]: the simulated users of a [`RunConfig`] on a tokio runtime of
//! their own, the config as the result records it, and the collector's totals as `--metrics`
//! series ([`crate::metrics`]).

use std::sync::Arc;
use std::time::Duration;

use npt_client::QuicTrust;
use npt_result::run::RunBody;
use npt_result::workload::{Finished, Length, Progress, Stop, Workload};

use crate::config::{Activity, Load};
use crate::driver::{run_async, RunConfig, RunError};

/// How long a run takes at most: its users' ramp-up, its duration, and the last request's
/// timeout.
pub fn length(ramp_up: Duration, duration: Duration, timeout: Duration) -> Length {
    Length::planned(ramp_up.saturating_add(duration).saturating_add(timeout))
}

impl Workload for RunConfig {
    type Body = RunBody;
    type Error = RunError;

    fn config(&self) -> serde_json::Value {
        use serde_json::json;
        let r = |x: crate::config::Range| json!([x.lo, x.hi]);
        let ms = |x: crate::config::Range| json!([x.lo as f64 / 1e6, x.hi as f64 / 1e6]);
        let s = &self.shape;
        let (model, load) = match self.load {
            Load::Users { users, ramp_up } => (
                "closed",
                json!({"users": users, "ramp_up_s": ramp_up.as_secs_f64()}),
            ),
            Load::Arrivals {
                per_sec,
                max_active,
            } => (
                "open",
                json!({"arrival_rate_per_s": per_sec, "max_active": max_active}),
            ),
        };
        json!({
            "targets": self.targets.stream.iter().map(|a| format!("tcp://{a}")).collect::<Vec<_>>(),
            "quic": self.targets.quic.map(|a| a.to_string()),
            "quic_server_name": self.targets.quic_server_name,
            "via": self.targets.via.as_ref().map(|v| v.to_string()),
            "quic_trust": match &self.quic_trust {
                QuicTrust::Insecure => "insecure",
                QuicTrust::Roots(_) => "ca",
            },
            "model": model,
            "load": load,
            "duration_s": self.duration.as_secs_f64(),
            "workers": self.threads().0,
            "workers_why": self.threads().1,
            "mix": s.mix.to_string_compact(),
            "think_ms": ms(s.think),
            "seed": self.seed,
            "token": self.secret.is_some(),
            "timeout_s": self.timeout.as_secs_f64(),
            "interval_s": self.interval.as_secs_f64(),
            "web": {
                "pages": r(s.web.pages), "rounds": r(s.web.rounds),
                "handshake_up": r(s.web.handshake_up), "handshake_down": r(s.web.handshake_down),
                "request_up": r(s.web.request_up), "request_down": r(s.web.request_down),
                "pause_ms": ms(s.web.pause),
            },
            "quic_visit": {
                "resources": r(s.quic.resources), "doc_up": r(s.quic.doc_up),
                "doc_down": r(s.quic.doc_down), "resource_up": r(s.quic.resource_up),
                "resource_down": r(s.quic.resource_down),
            },
            "transfer": {
                "download": r(s.transfer.download), "upload": r(s.transfer.upload),
                "chunk": s.transfer.chunk,
            },
            "game": {
                "session_ms": ms(s.game.session), "tick_hz": r(s.game.tick_hz),
                "size": r(s.game.size), "loss_timeout_ms": s.game.loss_timeout.as_secs_f64() * 1e3,
            },
        })
    }

    /// The ramp-up, the duration, and the last request's timeout.
    fn length(&self) -> Option<Length> {
        let ramp_up = match self.load {
            Load::Users { ramp_up, .. } => ramp_up,
            Load::Arrivals { .. } => Duration::ZERO,
        };
        Some(length(ramp_up, self.duration, self.timeout))
    }

    /// Runs the users until the duration is over or `stop` says so; `on_interval` sees each
    /// interval as it closes. Builds its own tokio runtime.
    fn run(
        &mut self,
        stop: &Arc<Stop>,
        on_interval: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<RunBody>, RunError> {
        let cfg = self.clone();
        for a in Activity::ALL {
            if cfg.shape.mix.weight(a) == 0 {
                continue;
            }
            if a == Activity::Quic {
                if cfg.targets.quic.is_none() {
                    return Err(RunError::NoQuicTarget);
                }
            } else if cfg.targets.stream.is_empty() {
                return Err(RunError::NoTarget(a.name()));
            }
        }
        npt_netio::raise_nofile_limit();
        // The run's clock (intervals, the end, the arrivals, the QUIC endpoint) on this
        // thread; the users on one single-threaded runtime per worker thread, each with its
        // share of them (npt_client::workers says why not work stealing).
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(RunError::Runtime)?;
        let (n, _) = cfg.threads();
        let workers =
            npt_client::workers::Workers::start(n, "npt-run").map_err(RunError::Runtime)?;
        let out = rt.block_on(run_async(cfg, &workers, stop, on_interval));
        workers.stop();
        rt.shutdown_timeout(Duration::from_secs(1));
        out
    }
}
