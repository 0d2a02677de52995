//! A ping's measurements as a value that adds ([`PingStats`], the session's tally) and its
//! body ([`PingStats::summarize`]). Everything a ping measures is a counter or the RTT
//! histogram, so pings add exactly; `npt merge` does not take pings (they have no segments),
//! but the value is the same shape as every workload's.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use npt_stats::{ErrorCounts, Histogram};
use serde::{Deserialize, Serialize};

use super::setup::{SetupMeta, SetupStats};
use super::{BodyError, Stats};
use crate::common::{loss_pct, Errors, NptLatency};
use crate::ping::{hist, EchoPhases, PingBody, PingSummary};

/// What a ping's document says about its target.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PingMeta {
    /// As the user wrote it.
    pub target: String,
    /// `tcp`, `udp` or `quic`.
    pub proto: String,
    /// Addresses the target resolved to, in the order they were tried.
    pub addresses: Vec<String>,
    /// `npt ping --from`: the hop agent the RTTs were measured from.
    pub measured_from: Option<String>,
    /// What answered the attempts ([`crate::ping::answered_by`]); `None` in files written
    /// before it existed.
    pub answered_by: Option<String>,
    /// `--setup`: the setup block's own description (the layers, how the base was measured).
    #[serde(default)]
    pub setup: Option<SetupMeta>,
}

/// Counters and the RTT histogram of a ping.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PingStats {
    pub sent: u64,
    pub received: u64,
    /// Answers after their attempt had timed out, or twice.
    pub late: u64,
    /// Attempts the server refused (its notices and counts): neither received nor lost.
    #[serde(default)]
    pub refused: u64,
    pub rtt: Histogram,
    pub errors: ErrorCounts,
    /// `--echo`: the connect and echo parts of answered attempts (empty otherwise).
    pub connect: Histogram,
    pub echo: Histogram,
    /// An echo's replies by the far end that sent them (`summary.far_end`).
    #[serde(default)]
    pub answered: crate::far_end::Answered,
    /// `--echo --setup`: each attempt's connection as a setup attempt, and the base round
    /// trips of its second echo.
    #[serde(default)]
    pub setup: Option<SetupStats>,
}

impl PingStats {
    /// Attempts without an answer that the server did not refuse: the path's loss.
    pub fn lost(&self) -> u64 {
        self.sent
            .saturating_sub(self.received)
            .saturating_sub(self.refused)
    }

    /// Percentage of the attempts the server took that got no answer (0 when nothing was sent).
    pub fn loss_pct(&self) -> f64 {
        loss_pct(self.lost(), self.sent.saturating_sub(self.refused))
    }
}

impl AddAssign<&PingStats> for PingStats {
    fn add_assign(&mut self, rhs: &PingStats) {
        self.sent += rhs.sent;
        self.received += rhs.received;
        self.late += rhs.late;
        self.refused += rhs.refused;
        self.rtt += &rhs.rtt;
        self.errors += &rhs.errors;
        self.connect += &rhs.connect;
        self.echo += &rhs.echo;
        self.answered += &rhs.answered;
        // Parts of one run: their connections add, and they are still one run.
        SetupStats::add_part(&mut self.setup, rhs.setup.as_ref());
    }
}

/// The replies a document's `far_end` stands for: its `received` ones, all of that kind (one
/// of each of two kinds for `mixed`).
fn answered_from(far_end: Option<&str>, received: u64) -> crate::far_end::Answered {
    use crate::far_end::{Answered, ECHO, MIXED, NPT_SERVE, STAMP};
    let mut a = Answered::default();
    match far_end {
        Some(NPT_SERVE) => a.npt_serve = received,
        Some(STAMP) => a.stamp = received,
        Some(ECHO) => a.echo = received,
        Some(MIXED) => (a.npt_serve, a.echo) = (1, 1),
        _ => {}
    }
    a
}

impl Stats for PingStats {
    type Body = PingBody;
    type Meta = PingMeta;

    /// Rounds of one ping (a monitor's): counters and histograms add as parts do, and each
    /// round is a run of the setup block's, as a range of `npt setup` rounds counts them.
    fn then(&mut self, later: &PingStats) {
        let mut setup = self.setup.take();
        SetupStats::add_later(&mut setup, later.setup.as_ref());
        *self += later;
        self.setup = setup;
    }

    fn from_body(b: &PingBody) -> Result<(PingStats, PingMeta), BodyError> {
        let rtt = Histogram::from_serialized(&b.histogram).map_err(|source| BodyError {
            name: hist::RTT.to_string(),
            source,
        })?;
        let phase = |name: &str| -> Result<Histogram, BodyError> {
            match b.phases.as_ref().and_then(|p| p.histograms.get(name)) {
                Some(h) => Histogram::from_serialized(h).map_err(|source| BodyError {
                    name: format!("phases.{name}"),
                    source,
                }),
                None => Ok(Histogram::new()),
            }
        };
        let stats = PingStats {
            sent: b.summary.sent,
            received: b.summary.received,
            late: b.summary.late,
            refused: b.summary.refused_by_server,
            rtt,
            errors: b.errors.by_kind.clone(),
            connect: phase(hist::CONNECT)?,
            echo: phase(hist::ECHO)?,
            answered: answered_from(b.summary.far_end.as_deref(), b.summary.received),
            setup: None,
        };
        let setup = b.setup.as_ref().map(SetupStats::from_body).transpose()?;
        let (setup, setup_meta) = setup.map_or((None, None), |(s, m)| (Some(s), Some(m)));
        let stats = PingStats { setup, ..stats };
        let meta = PingMeta {
            target: b.target.clone(),
            proto: b.proto.clone(),
            addresses: b.addresses.clone(),
            measured_from: b.measured_from.clone(),
            answered_by: b.answered_by.clone(),
            setup: setup_meta,
        };
        Ok((stats, meta))
    }

    fn summarize(&self, m: &PingMeta) -> PingBody {
        let s = self.rtt.summary();
        let summary = PingSummary {
            sent: self.sent,
            received: self.received,
            lost: self.lost(),
            loss_pct: self.loss_pct(),
            late: self.late,
            refused_by_server: self.refused,
            min_ms: s.min,
            avg_ms: s.mean,
            p50_ms: s.p50,
            p90_ms: s.p90,
            p95_ms: s.p95,
            p99_ms: s.p99,
            max_ms: s.max,
            stddev_ms: s.stddev,
            far_end: (m.answered_by.as_deref() == Some(crate::ping::answered_by::ECHO))
                .then(|| self.answered.name().to_string()),
        };
        let total = self.errors.total();
        PingBody {
            target: m.target.clone(),
            proto: m.proto.clone(),
            addresses: m.addresses.clone(),
            latency: BTreeMap::from([(m.proto.clone(), NptLatency::from(&s))]),
            summary,
            // A ping's rate divides by attempts sent; `attempts` is not written.
            errors: Errors {
                total_errors: total,
                error_rate: if self.sent == 0 {
                    0.0
                } else {
                    total as f64 / self.sent as f64
                },
                attempts: None,
                by_kind: self.errors.clone(),
            },
            histogram: self.rtt.to_serialized(),
            measured_from: m.measured_from.clone(),
            note: m.answered_by.as_deref().and_then(crate::ping::note),
            answered_by: m.answered_by.clone(),
            phases: (!self.connect.is_empty()).then(|| EchoPhases {
                connect_ms: NptLatency::from(&self.connect.summary()),
                echo_ms: NptLatency::from(&self.echo.summary()),
                histograms: [
                    (hist::CONNECT.to_string(), self.connect.to_serialized()),
                    (hist::ECHO.to_string(), self.echo.to_serialized()),
                ]
                .into(),
            }),
            setup: match (&self.setup, &m.setup) {
                (Some(s), Some(meta)) => Some(s.summarize(meta)),
                _ => None,
            },
        }
    }
}
