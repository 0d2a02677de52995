//! `npt setup` as a [`Workload`]: `--count` fresh connections one after the other (with
//! `--resume`, one uncounted connection first to fetch the session ticket), each bounded by
//! `--timeout`, then the verdict of [`crate::classify`] as the `kind = "setup"` body. No
//! series (one verdict at the end), so it never calls `on_interval`.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_result::common::{Errors, NptLatency};
use npt_result::error::ErrorKind;
use npt_result::setup::{LayerRecord, SetupBody, SetupSummary};
use npt_result::workload::{Finished, Length, Progress, Stop, Workload};
use npt_result::StopReason;
use npt_stats::{ErrorCounts, Snapshot};

use crate::classify::{classify, Attempt, Verdict};
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
        let verdict = classify(&self.plan(), &attempts, self.resume);
        let body = body(self, address, &verdict, attempts.len() as u64, errors);
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

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// The result body of a finished run.
pub fn body(
    cfg: &Config,
    address: String,
    v: &Verdict,
    attempts: u64,
    errors: ErrorCounts,
) -> SetupBody {
    let rtt = v.rtt_ns as f64;
    let per = |ns: f64| if rtt > 0.0 { ns / rtt } else { 0.0 };
    let layers: Vec<LayerRecord> = v
        .layers
        .iter()
        .map(|l| LayerRecord {
            layer: l.plan.layer.name().to_string(),
            what: l.plan.what.clone(),
            samples: l.hist.count(),
            p50_ms: ms(l.p50_ns),
            p50_lo_ms: ms(l.p50_lo_ns),
            p50_hi_ms: ms(l.p50_hi_ns),
            min_ms: ms(l.hist.min_ns() as f64),
            max_ms: ms(l.hist.max_ns() as f64),
            rtts: l.rtts,
            rtts_lo: l.rtts_lo,
            rtts_hi: l.rtts_hi,
            expected_rtts: l.plan.expected_rtts,
            flag: l.flag.clone(),
        })
        .collect();
    let setup_p50 = v.setup.quantile_ns(0.5) as f64;
    let summary = SetupSummary {
        attempts,
        completed: v.completed,
        rtt_ms: ms(rtt),
        rtt_p50_ms: ms(v.rtt.quantile_ns(0.5) as f64),
        rtt_samples: v.rtt.count(),
        rtt_from: if cfg.scheme == Scheme::Tcp {
            "tcp_connect"
        } else {
            "warm_request"
        }
        .to_string(),
        setup_p50_ms: ms(setup_p50),
        setup_rtts: per(setup_p50),
        expected_rtts: layers.iter().map(|l| l.expected_rtts).sum(),
        flagged: u32::try_from(layers.iter().filter(|l| l.flag.is_some()).count())
            .unwrap_or(u32::MAX),
        tls_version: (cfg.scheme == Scheme::Https).then(|| cfg.tls.name().to_string()),
        resumed: v.resumed.filter(|_| cfg.scheme == Scheme::Https),
        zero_rtt_sent: v.zero_rtt_sent,
        zero_rtt_accepted: v.zero_rtt_accepted,
    };
    let mut histograms = std::collections::BTreeMap::new();
    histograms.insert("setup".to_string(), v.setup.to_serialized());
    histograms.insert("rtt".to_string(), v.rtt.to_serialized());
    for l in &v.layers {
        histograms.insert(l.plan.layer.name().to_string(), l.hist.to_serialized());
    }
    SetupBody {
        target: cfg.target(),
        address,
        via: cfg.via.as_ref().map(|v| v.to_string()),
        summary,
        layers,
        latency: [("setup".to_string(), NptLatency::from(&v.setup.summary()))].into(),
        errors: Errors::new(errors, attempts),
        histograms,
    }
}
