//! `npt setup` as a [`Workload`]: `--count` fresh connections one after the other (with
//! `--resume`, one uncounted connection first to fetch the session ticket), each bounded by
//! `--timeout`, then their tally ([`crate::classify`]) summarized by the result's own rule
//! ([`npt_result::stats::setup`]) as the `kind = "setup"` body. No
//! series (one verdict at the end), so it never calls `on_interval`.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_result::error::ErrorKind;
use npt_result::setup::SetupBody;
use npt_result::stats::{SetupMeta, Stats};
use npt_result::workload::{Finished, Length, Progress, Stop, Workload};
use npt_result::StopReason;
use npt_stats::{ErrorCounts, Snapshot};

use crate::classify::{tally, Attempt};
use crate::tcp::Failure;
use crate::{quic, tcp, udp, Config, Scheme, SetupError};

impl Workload for Config {
    const KIND: &'static str = "setup";
    type Body = SetupBody;
    type Error = SetupError;

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "target": self.target(),
            "via": self.via.as_ref().map(|v| v.to_string()),
            "tls": (self.scheme == Scheme::Https).then(|| self.tls.name()),
            "resume": self.resume,
            "count": self.count,
            "timeout_s": self.timeout.as_secs_f64(),
        })
    }

    fn length(&self) -> Option<Length> {
        Some(length(self.count, self.timeout))
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        _no_intervals: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<SetupBody>, SetupError> {
        let started = SystemTime::now();
        let mono = Instant::now();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(SetupError::Runtime)?;
        let (addr, address) = self.resolve()?;
        let mut errors = ErrorCounts::default();
        let attempts = rt.block_on(self.attempts(addr, stop, &mut errors))?;
        let body = tally(&self.plan(), &attempts, errors).summarize(&self.meta(address));
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

/// The longest a run takes: every attempt (and the priming one) to its timeout.
pub fn length(count: u32, timeout: Duration) -> Length {
    Length::planned(timeout * (count + 1))
}

impl Config {
    /// The target's address (unused through `--via`, where the proxy resolves or is handed
    /// it) and the address the result names: the target's, or the proxy's.
    fn resolve(&self) -> Result<(SocketAddr, String), SetupError> {
        let lookup = |host: &str, port: u16| -> Result<SocketAddr, SetupError> {
            let name = format!("{host}:{port}");
            (host.trim_matches(['[', ']']), port)
                .to_socket_addrs()
                .map_err(|e| SetupError::Resolve(name.clone(), e))?
                .next()
                .ok_or(SetupError::NoAddress(name))
        };
        match &self.via {
            None => {
                let a = lookup(&self.host, self.port)?;
                Ok((a, a.to_string()))
            }
            Some(via) => {
                let p = lookup(&via.host, via.port)?;
                Ok((p, format!("{p} (proxy)")))
            }
        }
    }

    async fn attempts(
        &self,
        addr: SocketAddr,
        stop: &Stop,
        errors: &mut ErrorCounts,
    ) -> Result<Vec<Attempt>, SetupError> {
        let tls = match self.scheme {
            Scheme::Https => Some(tcp::tls_client(self).map_err(SetupError::Client)?),
            _ => None,
        };
        let ep = match self.scheme {
            Scheme::Quic => Some(quic::endpoint(self, addr).map_err(SetupError::Client)?),
            _ => None,
        };
        if self.resume {
            // The ticket the counted attempts resume from; its own figures are not kept.
            let mut primer = Attempt::default();
            if let Err(f) = self.one(ep.as_ref(), tls.as_ref(), addr, &mut primer).await {
                errors.record(f.0.name(), || {
                    format!("fetching the session ticket: {}", f.1)
                });
            }
        }
        let mut out = Vec::new();
        for _ in 0..self.count {
            if stop.stopping() {
                break;
            }
            let mut a = Attempt::default();
            if let Err((kind, what)) = self.one(ep.as_ref(), tls.as_ref(), addr, &mut a).await {
                errors.record(kind.name(), || what);
            }
            out.push(a);
        }
        if let Some(ep) = ep {
            ep.close(0u32.into(), b"done");
            // Bounded: the closes are sent at once; waiting lets them leave.
            let _ = tokio::time::timeout(Duration::from_millis(200), ep.wait_idle()).await;
        }
        Ok(out)
    }

    /// One attempt, bounded by `--timeout`.
    async fn one(
        &self,
        ep: Option<&quinn::Endpoint>,
        tls: Option<&tokio_rustls::TlsConnector>,
        addr: SocketAddr,
        a: &mut Attempt,
    ) -> Result<(), Failure> {
        let fut = async {
            match ep {
                Some(ep) => quic::attempt(self, ep, addr, a).await,
                None if self.scheme == Scheme::Udp => udp::attempt(self, addr, a),
                None => tcp::attempt(self, addr, tls, a).await,
            }
        };
        tokio::time::timeout(self.timeout, fut)
            .await
            .unwrap_or_else(|_| {
                Err((
                    ErrorKind::Timeout,
                    format!("the setup took longer than {:?}", self.timeout),
                ))
            })
    }
}

impl Config {
    /// What the result says of this run besides its figures: the target, the layers its
    /// connections set up, how the base round trip was measured.
    pub fn meta(&self, address: String) -> SetupMeta {
        SetupMeta {
            target: self.target(),
            address,
            via: self.via.as_ref().map(|v| v.to_string()),
            plan: self.plan(),
            rtt_from: if self.scheme == Scheme::Tcp {
                "tcp_connect"
            } else {
                "warm_request"
            }
            .to_string(),
            tls_version: (self.scheme == Scheme::Https).then(|| self.tls.name().to_string()),
            resume: self.resume,
        }
    }
}
