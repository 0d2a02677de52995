//! What a round of each kind of target keeps: the workload's own stats value
//! ([`npt_result::stats`]), which adds one round after another exactly
//! ([`npt_result::stats::Stats::then`]), its description (the `Meta` its body is summarized
//! with), and the few figures a chart, an alert and a scrape read of it ([`Figures`]).
//!
//! A round is an ordinary result document of its kind; [`KindStats::of_doc`] reads its value
//! back with the kind's `from_body`, as `npt merge` does, less what grows with every round
//! (per-interval records and per-stream lists: the store keeps one record per round instead).
//! A range of rounds is summarized by the kind's own `summarize` ([`KindStats::body`]), so
//! `npt report --from` writes the document one run of that range would have written.
//!
//! A trace has no `Stats` value of its own (it is not merged): [`TraceSum`] keeps each leg's
//! ping value and adds legs by position, and its body comes from `TraceStats::summarize`; its
//! segments' path MTU and marking reads add as an mtu's and a marking's ([`trace`]).
//! Nor has a lifetime: [`lifetime::LifetimeSum`] keeps the rounds' lifetimes and the bracket
//! they agree on; nor an mtu: [`mtu::MtuSum`] keeps each way's sizes, the bracket the rounds
//! agree on and their verdicts counted. A setup's value is the result's own ([`SetupStats`]:
//! every connection's cost per layer, added), and a range's layers are judged by the rule one
//! run's are. A marked probe's marking each way is a figure of its own ([`marking`]).

pub mod lifetime;
pub mod marking;
pub mod mtu;
pub mod trace;

use npt_result::any::{AnyBody, AnyResult};
use npt_result::marking::Way;
use npt_result::stats::{
    BulkMeta, BulkStats, HttpMeta, HttpStats, PingMeta, PingStats, ProbeMeta, ProbeStats,
    SetupMeta, SetupStats, Stats,
};
use npt_stats::Histogram;
use serde::{Deserialize, Serialize};

pub use npt_result::Kind;
pub use trace::{Leg, TraceSum};

/// The kinds a monitor runs, in the order its docs and errors list them: every result kind
/// but `run` (a round measures a path; it does not load a service with simulated users). A
/// lifetime round takes about twice the path's lifetime (minutes), an mtu round up to its
/// `--timeout`, a setup round its `-c` fresh connections, each up to its `--timeout`: its
/// target's `every` must be longer than that, as any round's.
pub const MONITORED: [Kind; 8] = [
    Kind::Ping,
    Kind::Probe,
    Kind::Trace,
    Kind::Http,
    Kind::Bulk,
    Kind::Lifetime,
    Kind::Mtu,
    Kind::Setup,
];

/// A round's (or a range's) measurements, by kind.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", content = "stats", rename_all = "lowercase")]
pub enum KindStats {
    Ping(PingStats),
    Probe(Box<ProbeStats>),
    Trace(TraceSum),
    Http(Box<HttpStats>),
    Bulk(Box<BulkStats>),
    Lifetime(Box<lifetime::LifetimeSum>),
    Mtu(Box<mtu::MtuSum>),
    Setup(Box<SetupStats>),
}

/// What a kind's body is summarized with: the round's description.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", content = "meta", rename_all = "lowercase")]
pub enum KindMeta {
    Ping(PingMeta),
    Probe(ProbeMeta),
    Trace { target: String, proto: String },
    Http(HttpMeta),
    Bulk(BulkMeta),
    Lifetime(lifetime::LifetimeMeta),
    Mtu(mtu::MtuMeta),
    Setup(SetupMeta),
}

/// What a chart, an alert and a scrape read of a round or a rollup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Latency samples (answered attempts, replies, requests).
    pub count: u64,
    /// Attempts, packets or requests sent, and those that got no (good) answer and that the
    /// server did not refuse: the path's loss.
    pub sent: u64,
    pub lost: u64,
    /// Of `sent`, what the server said it refused (its budget or `--token`: ping and UDP bulk
    /// against `npt serve`): neither answered nor lost.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused: u64,
    /// Errors by the one vocabulary of result documents, all kinds.
    pub errors: u64,
    /// The headline latency's distribution (ms); zeros when `count` is 0.
    pub min_ms: f64,
    pub p1_ms: f64,
    pub p10_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
    /// Probe `--under-load`: responsiveness under the load (round trips per minute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<f64>,
    /// Bulk: goodput both ways; `--under-load`: the load's goodput (bits/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_bps: Option<f64>,
    /// Payload bytes moved both ways (what a byte budget counts).
    pub bytes: u64,
    /// Mtu: the largest datagram that crossed each way, bytes (a round's own; a rollup's
    /// median of its rounds'); `None` where nothing crossed or the way cannot be read. A trace
    /// with `--mtu`: its smallest segment's ([`TraceSum::mtu_figure`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu_up_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu_down_bytes: Option<f64>,
    /// Trace: each segment's p50 (ms), `None` where it had no answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments_ms: Vec<Option<f64>>,
    /// Setup: the rounds whose verdict flagged a layer (a round's 0 or 1; what the `flagged`
    /// alert reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flagged: Option<u64>,
    /// Probe with a marking asked of the far end (`--dscp`, `--tos`, `--ecn`): each way's DSCP
    /// and ECN as sent and as they arrived, their fates and the CE count (a round's own; a
    /// rollup's of its rounds' counts added). `None` where nothing was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marking_up: Option<Way>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marking_down: Option<Way>,
}

impl Figures {
    /// Percentage of what the server took (`sent` less `refused`) without an answer: the
    /// path's loss; `None` when nothing was sent or the server refused all of it.
    pub fn loss_pct(&self) -> Option<f64> {
        let took = self.sent.saturating_sub(self.refused);
        (took > 0).then(|| npt_result::loss_pct(self.lost, took))
    }

    fn latency(mut self, h: Option<&Histogram>) -> Figures {
        let Some(h) = h.filter(|h| !h.is_empty()) else {
            return self;
        };
        let q = |x: f64| h.quantile_ns(x) as f64 / 1e6;
        self.count = h.count();
        self.min_ms = h.min_ns() as f64 / 1e6;
        self.p1_ms = q(0.01);
        self.p10_ms = q(0.10);
        self.p50_ms = q(0.50);
        self.p90_ms = q(0.90);
        self.p99_ms = q(0.99);
        self.max_ms = h.max_ns() as f64 / 1e6;
        self.mean_ms = h.mean_ns() / 1e6;
        self
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if takes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, thiserror::Error)]
pub enum KindError {
    #[error("a {0} result cannot be a round of a {1} target")]
    Mismatch(String, &'static str),
    #[error("{0}")]
    Body(String),
    #[error("stored stats: {0}")]
    Decode(String),
}

fn whole(x: f64) -> u64 {
    // NO-PANIC: byte counts are finite and non-negative; a float-to-int `as` saturates.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let v = x.max(0.0).round() as u64;
    v
}

impl KindStats {
    /// A round's value and description, read back from its result document as `npt merge`
    /// reads a part, less the lists that grow with every round (interval records, streams).
    pub fn of_doc(kind: Kind, doc: &AnyResult) -> Result<(KindStats, KindMeta), KindError> {
        let body = |e: npt_result::stats::BodyError| KindError::Body(e.to_string());
        let mismatch = || KindError::Mismatch(doc.kind.clone(), kind.name());
        Ok(match (&doc.body, kind) {
            (AnyBody::Ping(b), Kind::Ping) => {
                let (s, m) = PingStats::from_body(b).map_err(body)?;
                (KindStats::Ping(s), KindMeta::Ping(m))
            }
            (AnyBody::Probe(b), Kind::Probe) => {
                let (mut s, m) = ProbeStats::from_body(b).map_err(body)?;
                s.intervals = Default::default();
                (KindStats::Probe(Box::new(s)), KindMeta::Probe(m))
            }
            (AnyBody::Http(b), Kind::Http) => {
                let (mut s, m) = HttpStats::from_body(b).map_err(body)?;
                s.intervals = Default::default();
                (KindStats::Http(Box::new(s)), KindMeta::Http(m))
            }
            (AnyBody::Bulk(b), Kind::Bulk) => {
                let (mut s, m) = BulkStats::from_body(b).map_err(body)?;
                s.intervals = Default::default();
                s.interval_streams.clear();
                s.stream_totals.clear();
                (KindStats::Bulk(Box::new(s)), KindMeta::Bulk(m))
            }
            (AnyBody::Trace(b), Kind::Trace) => {
                let (s, m) = TraceSum::of_body(b)?;
                (KindStats::Trace(s), m)
            }
            (AnyBody::Lifetime(b), Kind::Lifetime) => {
                let (s, m) = lifetime::LifetimeSum::of_body(b).map_err(KindError::Body)?;
                (KindStats::Lifetime(Box::new(s)), KindMeta::Lifetime(m))
            }
            (AnyBody::Mtu(b), Kind::Mtu) => {
                let (s, m) = mtu::MtuSum::of_body(b).map_err(KindError::Body)?;
                (KindStats::Mtu(Box::new(s)), KindMeta::Mtu(m))
            }
            (AnyBody::Setup(b), Kind::Setup) => {
                let (s, m) = SetupStats::from_body(b).map_err(body)?;
                (KindStats::Setup(Box::new(s)), KindMeta::Setup(m))
            }
            _ => return Err(mismatch()),
        })
    }

    pub fn kind(&self) -> Kind {
        match self {
            KindStats::Ping(_) => Kind::Ping,
            KindStats::Probe(_) => Kind::Probe,
            KindStats::Trace(_) => Kind::Trace,
            KindStats::Http(_) => Kind::Http,
            KindStats::Bulk(_) => Kind::Bulk,
            KindStats::Lifetime(_) => Kind::Lifetime,
            KindStats::Mtu(_) => Kind::Mtu,
            KindStats::Setup(_) => Kind::Setup,
        }
    }

    /// Adds a later round (or rollup) after this one. A value of another kind (a target whose
    /// kind changed) is refused and nothing is added.
    pub fn then(&mut self, later: &KindStats) -> Result<(), KindError> {
        match (self, later) {
            (KindStats::Ping(a), KindStats::Ping(b)) => a.then(b),
            (KindStats::Probe(a), KindStats::Probe(b)) => a.then(b),
            (KindStats::Trace(a), KindStats::Trace(b)) => a.then(b),
            (KindStats::Http(a), KindStats::Http(b)) => a.then(b),
            (KindStats::Bulk(a), KindStats::Bulk(b)) => a.then(b),
            (KindStats::Lifetime(a), KindStats::Lifetime(b)) => a.then(b),
            (KindStats::Mtu(a), KindStats::Mtu(b)) => a.then(b),
            (KindStats::Setup(a), KindStats::Setup(b)) => a.then(b),
            (a, b) => {
                return Err(KindError::Mismatch(
                    b.kind().name().to_string(),
                    a.kind().name(),
                ))
            }
        }
        Ok(())
    }

    /// The latency the user feels, as one histogram: a ping's or probe's RTT, http's request
    /// latency, bulk's RTT under load, a trace's RTT through its chain — and for a lifetime,
    /// the lifetimes themselves (what its chart draws and its alerts read); an mtu's probes'
    /// round trips (its sizes are figures of their own, [`Figures::mtu_up_bytes`]); a setup's
    /// connections' whole setups.
    pub fn headline(&self) -> Option<&Histogram> {
        match self {
            KindStats::Ping(s) => Some(&s.rtt),
            KindStats::Probe(s) => s.histograms.get(npt_result::probe::hist::RTT),
            KindStats::Http(s) => s.histograms.get(npt_result::http::hist::LATENCY),
            KindStats::Bulk(s) => s.histograms.get(npt_result::bulk::hist::RTT),
            KindStats::Trace(t) => t.chain.as_ref().map(|c| &c.stats.rtt),
            KindStats::Lifetime(l) => Some(&l.lifetimes),
            KindStats::Mtu(m) => Some(&m.rtt),
            KindStats::Setup(s) => Some(&s.setup),
        }
    }

    /// The figures charts, alerts and scrapes read.
    pub fn figures(&self) -> Figures {
        let f = match self {
            KindStats::Ping(s) => Figures {
                sent: s.sent,
                lost: s.lost(),
                refused: s.refused,
                errors: s.errors.total(),
                ..Figures::default()
            },
            KindStats::Probe(s) => {
                let load = s.under_load.as_ref();
                let rpm = s
                    .histograms
                    .get(&npt_result::under_load::hist_name("loaded"))
                    .filter(|h| !h.is_empty() && load.is_some())
                    .and_then(|h| {
                        npt_result::under_load::rpm(
                            h.trimmed_mean_ns(npt_result::under_load::RPM_TRIM) / 1e6,
                        )
                    });
                let load_bytes = load.map_or(0.0, |l| l.bytes.up + l.bytes.down);
                let marking = s.marking.block();
                Figures {
                    sent: s.packets.sent,
                    lost: s.packets.lost,
                    errors: s.errors.total(),
                    rpm,
                    goodput_bps: load.map(|l| l.goodput_bps.up + l.goodput_bps.down),
                    bytes: whole(s.bytes.up + s.bytes.down + load_bytes),
                    marking_up: marking.as_ref().and_then(|m| m.up),
                    marking_down: marking.as_ref().and_then(|m| m.down),
                    ..Figures::default()
                }
            }
            KindStats::Http(s) => {
                let errors = s.errors.total();
                Figures {
                    sent: s.requests + errors,
                    lost: s.requests.saturating_sub(s.ok) + errors,
                    errors,
                    bytes: whole(s.bytes.up + s.bytes.down),
                    ..Figures::default()
                }
            }
            KindStats::Bulk(s) => Figures {
                sent: s.udp.map_or(0, |u| u.sent),
                lost: s.udp.map_or(0, |u| {
                    u.sent
                        .saturating_sub(u.received)
                        .saturating_sub(u.refused.unwrap_or(0))
                }),
                refused: s.udp.and_then(|u| u.refused).unwrap_or(0),
                errors: s.errors.total(),
                goodput_bps: Some(s.goodput_bps.up + s.goodput_bps.down),
                bytes: whole(s.bytes.up + s.bytes.down),
                ..Figures::default()
            },
            KindStats::Lifetime(l) => Figures {
                sent: l.flows,
                errors: l.errors.total(),
                ..Figures::default()
            },
            // Sizes above the path's MTU go unanswered by design: not the path's loss.
            KindStats::Mtu(m) => Figures {
                sent: m.sent(),
                errors: m.errors.total(),
                mtu_up_bytes: m.up.figure(),
                mtu_down_bytes: m.down.figure(),
                ..Figures::default()
            },
            // A connection that did not set every layer up is the round's loss.
            KindStats::Setup(s) => Figures {
                sent: s.attempts,
                lost: s.attempts.saturating_sub(s.completed),
                errors: s.errors.total(),
                flagged: Some(s.flagged_runs),
                ..Figures::default()
            },
            KindStats::Trace(t) => {
                let legs = t.segments.iter().chain(t.chain.iter());
                let (sent, lost, refused) = match &t.chain {
                    Some(c) => (c.stats.sent, c.stats.lost(), c.stats.refused),
                    None => legs.fold((0, 0, 0), |(s, l, r), g| {
                        (s + g.stats.sent, l + g.stats.lost(), r + g.stats.refused)
                    }),
                };
                Figures {
                    sent,
                    lost,
                    refused,
                    errors: t.errors.total(),
                    // --mtu: the smallest segment's each way, as an mtu round's sizes.
                    mtu_up_bytes: t.mtu_figure(true),
                    mtu_down_bytes: t.mtu_figure(false),
                    segments_ms: t
                        .segments
                        .iter()
                        .map(|l| {
                            (!l.stats.rtt.is_empty())
                                .then(|| l.stats.rtt.quantile_ns(0.5) as f64 / 1e6)
                        })
                        .collect(),
                    ..Figures::default()
                }
            }
        };
        f.latency(self.headline())
    }

    /// The body of these measurements, as one run of them would have written it.
    pub fn body(&self, meta: &KindMeta) -> Result<AnyBody, KindError> {
        let mismatch = || KindError::Mismatch(self.kind().name().to_string(), "this");
        Ok(match (self, meta) {
            (KindStats::Ping(s), KindMeta::Ping(m)) => AnyBody::Ping(s.summarize(m)),
            (KindStats::Probe(s), KindMeta::Probe(m)) => AnyBody::Probe(s.summarize(m)),
            (KindStats::Http(s), KindMeta::Http(m)) => AnyBody::Http(s.summarize(m)),
            (KindStats::Bulk(s), KindMeta::Bulk(m)) => AnyBody::Bulk(s.summarize(m)),
            (KindStats::Lifetime(s), KindMeta::Lifetime(m)) => AnyBody::Lifetime(s.body(m)),
            (KindStats::Mtu(s), KindMeta::Mtu(m)) => AnyBody::Mtu(s.body(m)),
            (KindStats::Setup(s), KindMeta::Setup(m)) => AnyBody::Setup(s.summarize(m)),
            (KindStats::Trace(t), KindMeta::Trace { target, proto }) => t.body(target, proto),
            _ => return Err(mismatch()),
        })
    }

    /// The value as the store keeps it ([`crate::store::blob`]).
    pub fn encode(&self) -> Vec<u8> {
        crate::store::blob::encode(self)
    }

    /// A value the store kept, in either layout ([`crate::store::blob`]); a corrupt one is an
    /// error, not an allocation of whatever it claims.
    pub fn decode(bytes: &[u8]) -> Result<KindStats, KindError> {
        crate::store::blob::decode(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ping(ms: &[u64], lost: u64) -> KindStats {
        let mut s = PingStats::default();
        for v in ms {
            s.sent += 1;
            s.received += 1;
            s.rtt.record(v * 1_000_000);
        }
        s.sent += lost;
        KindStats::Ping(s)
    }

    #[test]
    fn figures_of_a_ping_round() {
        let f = ping(&[10, 20, 30, 40], 1).figures();
        assert_eq!((f.count, f.sent, f.lost), (4, 5, 1));
        assert_eq!(f.loss_pct(), Some(20.0));
        assert!((f.p50_ms - 20.0).abs() < 0.02, "{}", f.p50_ms);
        assert!((f.max_ms - 40.0).abs() < 0.05, "{}", f.max_ms);
        assert_eq!(Figures::default().loss_pct(), None);
    }

    /// Attempts the server refused (its budget, its token) are neither answered nor the path's
    /// loss: the loss is of what the server took, and a round it refused whole has none.
    #[test]
    fn refused_attempts_are_not_loss() {
        let KindStats::Ping(mut s) = ping(&[10, 20, 30], 1) else {
            unreachable!()
        };
        s.sent += 4;
        s.refused = 4;
        let f = KindStats::Ping(s).figures();
        assert_eq!((f.count, f.sent, f.lost, f.refused), (3, 8, 1, 4));
        assert_eq!(f.loss_pct(), Some(25.0));
        let all = Figures {
            sent: 5,
            refused: 5,
            ..Figures::default()
        };
        assert_eq!(all.loss_pct(), None);
    }

    #[test]
    fn stored_values_read_back_exactly_and_add() {
        let a = ping(&[10, 20], 0);
        let b = ping(&[30], 2);
        let back = KindStats::decode(&a.encode()).unwrap();
        let mut sum = back;
        sum.then(&KindStats::decode(&b.encode()).unwrap()).unwrap();
        let mut direct = a.clone();
        direct.then(&b).unwrap();
        assert_eq!(sum.figures(), direct.figures());
        assert!(sum.headline().unwrap() == direct.headline().unwrap());
        assert!(KindStats::decode(b"not deflate").is_err());
        let mut p = sum.clone();
        let probe = KindStats::Probe(Box::default());
        assert!(p.then(&probe).is_err(), "kinds never mix");
    }

    /// Every result kind is a monitor's but `run`, each once.
    #[test]
    fn a_monitor_runs_every_kind_but_run() {
        for k in Kind::ALL {
            assert_eq!(MONITORED.contains(k), *k != Kind::Run, "{}", k.name());
        }
        assert_eq!(MONITORED.len() + 1, Kind::ALL.len());
    }
}
