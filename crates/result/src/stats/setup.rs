//! A setup's measurements as a value that adds ([`SetupStats`]: every attempt's cost per layer
//! in one histogram each, the base round trips, the whole setups, and counts) and the one
//! function that judges it ([`SetupStats::verdict`]: each layer's median and interval, its
//! multiple of the base round trip, the flag) and writes its body ([`SetupStats::summarize`]).
//! `npt setup` calls it on its own attempts, `npt monitor` on a range of rounds added and `npt
//! compare` on a row's runs added: a range's per-layer median is the median of all its
//! connections, its multiple is of the range's base round trip, and its flag follows the same
//! rule as one run's, computed in one place.
//!
//! The rule: a layer is flagged when even the low end of its median's 95 % interval is more
//! than half a round trip above what its protocol needs, and by more than
//! [`MIN_EXCESS_NS`] — a whole extra round trip shows, the noise of a path does not, and on a
//! path of a fraction of a millisecond (loopback, one LAN switch) the handshakes' own
//! computation, which is no round trip, does not either. Two facts the client saw are flags of
//! their own, whatever the timing: a 0-RTT request the server rejected (it went again after the
//! handshake) and a resumption the server refused (a full handshake instead).

use std::collections::BTreeMap;
use std::ops::AddAssign;

use npt_stats::uncertainty::Z95;
use npt_stats::{ErrorCounts, Histogram};
use serde::{Deserialize, Serialize};

use super::{BodyError, Stats};
use crate::common::{Errors, NptLatency};
use crate::setup::{Layer, LayerRecord, SetupBody, SetupSummary};

/// How far above its protocol's round trips a layer may read before it is flagged.
pub const TOLERANCE_RTTS: f64 = 0.5;

/// The least excess over the protocol's round trips that is flagged: more than a TLS or QUIC
/// handshake's own computation takes on one core.
pub const MIN_EXCESS_NS: f64 = 5e6;

/// One layer as a connection of the run sets it up: what it is and the round trips its
/// protocol needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub layer: Layer,
    pub what: String,
    pub expected_rtts: f64,
}

/// What a setup's document says about its run: the target, the layers its connections set up,
/// how it measured the base round trip.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SetupMeta {
    pub target: String,
    pub address: String,
    pub via: Option<String>,
    pub plan: Vec<Plan>,
    /// `warm_request` or `tcp_connect` (`summary.rtt_from`).
    pub rtt_from: String,
    /// The TLS version asked for, for `https://`.
    pub tls_version: Option<String>,
    /// `--resume`.
    pub resume: bool,
}

/// Every attempt's figures, added.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SetupStats {
    /// Each layer's cost, ns: one sample per attempt that completed it.
    pub layers: BTreeMap<Layer, Histogram>,
    /// The base round trips, ns.
    pub rtt: Histogram,
    /// Whole setups (the attempts that completed every layer), ns.
    pub setup: Histogram,
    pub attempts: u64,
    pub completed: u64,
    /// `--resume`: attempts the server resumed, and those it made do a full handshake.
    pub resumed: u64,
    pub resumption_refused: u64,
    /// QUIC `--resume`: requests sent in 0-RTT, and those the server accepted.
    pub zero_rtt_sent: u64,
    pub zero_rtt_accepted: u64,
    /// Runs added, and of them those whose own verdict flagged a layer (as their documents
    /// say: a run's own value, before it is summarized, counts 1 and 0).
    pub runs: u64,
    pub flagged_runs: u64,
    pub errors: ErrorCounts,
}

/// One layer's figures and flag.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerVerdict {
    pub plan: Plan,
    pub hist: Histogram,
    pub p50_ns: f64,
    pub p50_lo_ns: f64,
    pub p50_hi_ns: f64,
    pub rtts: f64,
    pub rtts_lo: f64,
    pub rtts_hi: f64,
    pub flag: Option<String>,
}

/// The figures of the attempts added.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub layers: Vec<LayerVerdict>,
    /// Whole setups, ns.
    pub setup: Histogram,
    pub rtt: Histogram,
    /// The base round trip (the smallest measured), ns; 0 when none was.
    pub rtt_ns: u64,
    pub completed: u64,
    pub resumed: Option<u64>,
    pub zero_rtt_sent: Option<u64>,
    pub zero_rtt_accepted: Option<u64>,
}

impl Plan {
    /// `layer`, what it was, and the round trips its protocol needs.
    pub fn new(layer: Layer, what: &str, expected_rtts: f64) -> Plan {
        Plan {
            layer,
            what: what.to_string(),
            expected_rtts,
        }
    }
}

/// A proxy a connection is set up through, as a plan names its layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proxy {
    /// SOCKS5: its greeting (with user/password, RFC 1929: one round trip more), then a
    /// CONNECT, or a UDP ASSOCIATE (`udp`).
    Socks5 { auth: bool, udp: bool },
    /// HTTP CONNECT (credentials ride in the request: no round trip more).
    Http,
}

/// The layers of a TCP connection up to the point it carries its first request: the connect
/// (to the proxy at `authority`, through one) and the proxy's exchanges, each with the round
/// trips its protocol needs. Every result with a setup block (`setup`, `http`, `ping`) names
/// them here, so the same layer reads the same in each and compare's rows line up.
pub fn tcp_plan(proxy: Option<(Proxy, &str)>) -> Vec<Plan> {
    let Some((proxy, authority)) = proxy else {
        return vec![Plan::new(Layer::TcpConnect, "TCP connect", 1.0)];
    };
    let to = format!("TCP connect to the proxy {authority}");
    let mut v = vec![Plan::new(Layer::TcpConnect, &to, 1.0)];
    match proxy {
        Proxy::Socks5 { auth, udp } => {
            v.push(if auth {
                Plan::new(
                    Layer::Socks5Greeting,
                    "SOCKS5 greeting and user/password",
                    2.0,
                )
            } else {
                Plan::new(Layer::Socks5Greeting, "SOCKS5 greeting", 1.0)
            });
            v.push(if udp {
                Plan::new(Layer::Socks5UdpAssociate, "SOCKS5 UDP ASSOCIATE", 1.0)
            } else {
                Plan::new(Layer::Socks5Connect, "SOCKS5 CONNECT", 1.0)
            });
        }
        Proxy::Http => v.push(Plan::new(Layer::HttpConnect, "HTTP CONNECT", 1.0)),
    }
    v
}

/// The first echo of a set-up connection or flow (`npt setup udp://`, `npt ping --echo
/// --setup`): one round trip to the far end, and whatever a relay on the way does first.
pub fn first_echo() -> Plan {
    Plan::new(Layer::FirstByte, "the first echo", 1.0)
}

/// The first response byte of a set-up connection's first request.
pub fn first_response_byte() -> Plan {
    Plan::new(Layer::FirstByte, "the first response byte", 1.0)
}

/// What one attempt recorded: each layer's duration in ns (in plan order; an attempt that
/// failed has fewer), the base round trip it measured, and what the server did with a
/// resumption or a 0-RTT request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attempt {
    pub layers: Vec<(Layer, u64)>,
    pub rtt_ns: Option<u64>,
    /// `--resume`: whether the session was resumed.
    pub resumed: Option<bool>,
    /// QUIC `--resume`: `Some(accepted)` when the request went in 0-RTT.
    pub zero_rtt: Option<bool>,
}

impl SetupStats {
    /// Adds one attempt of a run whose connections set up `plan`: a sample in each layer it
    /// completed, a whole setup when it completed every layer, its base round trip.
    pub fn record(&mut self, plan: &[Plan], a: &Attempt) {
        self.attempts += 1;
        if let Some(r) = a.rtt_ns {
            self.rtt.record(r);
        }
        for (layer, ns) in &a.layers {
            if plan.iter().any(|p| p.layer == *layer) {
                self.layers.entry(*layer).or_default().record(*ns);
            }
        }
        if a.layers.len() == plan.len() {
            self.completed += 1;
            self.setup.record(a.layers.iter().map(|(_, ns)| ns).sum());
        }
        self.resumed += u64::from(a.resumed == Some(true));
        self.resumption_refused += u64::from(a.resumed == Some(false));
        self.zero_rtt_sent += u64::from(a.zero_rtt.is_some());
        self.zero_rtt_accepted += u64::from(a.zero_rtt == Some(true));
    }

    /// Adds the block of another part of the same run (`npt merge` of an http or ping run's
    /// parts): their connections add, and they are still one run.
    pub fn add_part(mine: &mut Option<SetupStats>, other: Option<&SetupStats>) {
        match (mine, other) {
            (Some(a), Some(b)) => {
                let (runs, flagged) = (a.runs.max(b.runs), a.flagged_runs.max(b.flagged_runs));
                *a += b;
                (a.runs, a.flagged_runs) = (runs, flagged);
            }
            (a @ None, Some(b)) => *a = Some(b.clone()),
            _ => {}
        }
    }

    /// Adds the block of a later run of the same target (a monitor's round): each its own
    /// run, as a range of `npt setup` rounds counts them.
    pub fn add_later(mine: &mut Option<SetupStats>, other: Option<&SetupStats>) {
        match (mine, other) {
            (Some(a), Some(b)) => *a += b,
            (a @ None, Some(b)) => *a = Some(b.clone()),
            _ => {}
        }
    }
}

impl AddAssign<&SetupStats> for SetupStats {
    fn add_assign(&mut self, rhs: &SetupStats) {
        for (l, h) in &rhs.layers {
            *self.layers.entry(*l).or_default() += h;
        }
        self.rtt += &rhs.rtt;
        self.setup += &rhs.setup;
        self.attempts += rhs.attempts;
        self.completed += rhs.completed;
        self.resumed += rhs.resumed;
        self.resumption_refused += rhs.resumption_refused;
        self.zero_rtt_sent += rhs.zero_rtt_sent;
        self.zero_rtt_accepted += rhs.zero_rtt_accepted;
        self.runs += rhs.runs;
        self.flagged_runs += rhs.flagged_runs;
        self.errors += &rhs.errors;
    }
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

fn note(flag: Option<String>, note: String) -> Option<String> {
    Some(match flag {
        Some(f) => format!("{f}; {note}"),
        None => note,
    })
}

impl SetupStats {
    /// The verdict on these attempts, whose connections set up `plan` (`resume`: from a
    /// session ticket).
    pub fn verdict(&self, plan: &[Plan], resume: bool) -> Verdict {
        let rtt_ns = if self.rtt.is_empty() {
            0
        } else {
            self.rtt.min_ns()
        };
        let quic = plan.iter().any(|p| p.layer == Layer::Quic);
        let (sent, accepted) = (self.zero_rtt_sent, self.zero_rtt_accepted);
        let layers = plan
            .iter()
            .map(|p| {
                let hist = self.layers.get(&p.layer).cloned().unwrap_or_default();
                let ci = hist.quantile_ci(0.5, Z95);
                let per = |ns: f64| if rtt_ns == 0 { 0.0 } else { ns / rtt_ns as f64 };
                let (rtts, rtts_lo, rtts_hi) = (per(ci.value_ns), per(ci.lo_ns), per(ci.hi_ns));
                let mut flag = (rtt_ns > 0
                    && !hist.is_empty()
                    && rtts_lo > p.expected_rtts + TOLERANCE_RTTS
                    && ci.lo_ns - p.expected_rtts * rtt_ns as f64 > MIN_EXCESS_NS)
                    .then(|| {
                        format!(
                            "{rtts:.2} round trips where {} needs {}",
                            p.what, p.expected_rtts
                        )
                    });
                let rejected = sent.saturating_sub(accepted);
                if p.layer == Layer::Quic && rejected > 0 {
                    flag = Some(format!(
                        "0-RTT rejected by the server in {rejected} of {sent}: the request went \
                         again after the handshake"
                    ));
                }
                // Every attempt that reached the QUIC layer has a sample in its histogram.
                let unoffered = hist.count().saturating_sub(sent);
                if p.layer == Layer::Quic && resume && unoffered > 0 {
                    flag = note(
                        flag,
                        format!(
                            "0-RTT not offered in {unoffered} of {}: the handshake came first",
                            hist.count()
                        ),
                    );
                }
                let refused = self.resumption_refused;
                let resumable = p.layer == Layer::Tls || (quic && p.layer == Layer::Quic);
                if resume && refused > 0 && resumable {
                    flag = note(
                        flag,
                        format!(
                            "resumption refused in {refused} of {}: a full handshake",
                            self.attempts
                        ),
                    );
                }
                LayerVerdict {
                    plan: p.clone(),
                    hist,
                    p50_ns: ci.value_ns,
                    p50_lo_ns: ci.lo_ns,
                    p50_hi_ns: ci.hi_ns,
                    rtts,
                    rtts_lo,
                    rtts_hi,
                    flag,
                }
            })
            .collect();
        Verdict {
            layers,
            setup: self.setup.clone(),
            rtt: self.rtt.clone(),
            rtt_ns,
            completed: self.completed,
            resumed: resume.then_some(self.resumed),
            zero_rtt_sent: (quic && resume).then_some(sent),
            zero_rtt_accepted: (quic && resume).then_some(accepted),
        }
    }
}

impl Stats for SetupStats {
    type Body = SetupBody;
    type Meta = SetupMeta;

    /// Everything the verdict reads is in the document: each layer's histogram under its
    /// name, `rtt`, `setup`, and the summary's counts (a file written before
    /// `resumption_refused` existed reads 0 refused).
    fn from_body(b: &SetupBody) -> Result<(SetupStats, SetupMeta), BodyError> {
        let hist = |name: &str| match b.histograms.get(name) {
            Some(h) => Histogram::from_serialized(h).map_err(|source| BodyError {
                name: name.to_string(),
                source,
            }),
            None => Ok(Histogram::new()),
        };
        let s = &b.summary;
        let mut plan = Vec::new();
        let mut layers = BTreeMap::new();
        // A layer name this build does not know (a newer npt's) is left out, not an error.
        for r in &b.layers {
            if let Some(layer) = Layer::parse(&r.layer) {
                layers.insert(layer, hist(&r.layer)?);
                plan.push(Plan {
                    layer,
                    what: r.what.clone(),
                    expected_rtts: r.expected_rtts,
                });
            }
        }
        let stats = SetupStats {
            layers,
            rtt: hist("rtt")?,
            setup: hist("setup")?,
            attempts: s.attempts,
            completed: s.completed,
            resumed: s.resumed.unwrap_or(0),
            resumption_refused: s.resumption_refused.unwrap_or(0),
            zero_rtt_sent: s.zero_rtt_sent.unwrap_or(0),
            zero_rtt_accepted: s.zero_rtt_accepted.unwrap_or(0),
            runs: s.runs.unwrap_or(1),
            flagged_runs: s.flagged_runs.unwrap_or(u64::from(s.flagged > 0)),
            errors: b.errors.by_kind.clone(),
        };
        let meta = SetupMeta {
            target: b.target.clone(),
            address: b.address.clone(),
            via: b.via.clone(),
            plan,
            rtt_from: s.rtt_from.clone(),
            tls_version: s.tls_version.clone(),
            resume: s.resumed.is_some()
                || s.resumption_refused.is_some()
                || s.zero_rtt_sent.is_some(),
        };
        Ok((stats, meta))
    }

    fn summarize(&self, m: &SetupMeta) -> SetupBody {
        let v = self.verdict(&m.plan, m.resume);
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
        let https = m.tls_version.is_some();
        let several = self.runs > 1;
        let summary = SetupSummary {
            attempts: self.attempts,
            completed: v.completed,
            rtt_ms: ms(rtt),
            rtt_p50_ms: ms(v.rtt.quantile_ns(0.5) as f64),
            rtt_samples: v.rtt.count(),
            rtt_from: m.rtt_from.clone(),
            setup_p50_ms: ms(setup_p50),
            setup_rtts: per(setup_p50),
            expected_rtts: layers.iter().map(|l| l.expected_rtts).sum(),
            flagged: u32::try_from(layers.iter().filter(|l| l.flag.is_some()).count())
                .unwrap_or(u32::MAX),
            runs: several.then_some(self.runs),
            flagged_runs: several.then_some(self.flagged_runs),
            tls_version: m.tls_version.clone(),
            resumed: v.resumed.filter(|_| https),
            resumption_refused: m.resume.then_some(self.resumption_refused),
            zero_rtt_sent: v.zero_rtt_sent,
            zero_rtt_accepted: v.zero_rtt_accepted,
        };
        let mut histograms = BTreeMap::new();
        histograms.insert("setup".to_string(), v.setup.to_serialized());
        histograms.insert("rtt".to_string(), v.rtt.to_serialized());
        for l in &v.layers {
            histograms.insert(l.plan.layer.name().to_string(), l.hist.to_serialized());
        }
        SetupBody {
            target: m.target.clone(),
            address: m.address.clone(),
            via: m.via.clone(),
            summary,
            layers,
            latency: [("setup".to_string(), NptLatency::from(&v.setup.summary()))].into(),
            errors: Errors::new(self.errors.clone(), self.attempts),
            histograms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: u64 = 50_000_000;

    fn plan() -> Vec<Plan> {
        [(Layer::TcpConnect, 1.0), (Layer::Tls, 1.0)]
            .into_iter()
            .map(|(layer, expected_rtts)| Plan {
                layer,
                what: layer.name().to_string(),
                expected_rtts,
            })
            .collect()
    }

    /// A run of `n` attempts whose TLS took `tls` round trips.
    fn run(n: u64, tls: f64) -> SetupStats {
        let mut s = SetupStats {
            runs: 1,
            ..SetupStats::default()
        };
        for _ in 0..n {
            s.rtt.record(RTT);
            s.layers.entry(Layer::TcpConnect).or_default().record(RTT);
            // NO-PANIC: test figures.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let t = (tls * RTT as f64) as u64;
            s.layers.entry(Layer::Tls).or_default().record(t);
            s.setup.record(RTT + t);
            s.attempts += 1;
            s.completed += 1;
        }
        s
    }

    fn meta() -> SetupMeta {
        SetupMeta {
            target: "https://h:1".into(),
            plan: plan(),
            rtt_from: "warm_request".into(),
            tls_version: Some("1.3".into()),
            ..SetupMeta::default()
        }
    }

    /// A document read back is the value it was written from, and runs add into one whose
    /// layers' medians are those of every attempt: 2 attempts at 1 RTT and 12 at 2 read 2,
    /// flagged (the interval's low end, of 14 attempts, is a 2).
    #[test]
    fn runs_read_back_and_add_to_the_median_of_every_attempt() {
        let one = run(2, 1.0).summarize(&meta());
        assert_eq!(one.summary.runs, None);
        assert_eq!(one.summary.flagged, 0);
        let two = run(12, 2.0).summarize(&meta());
        assert_eq!(two.summary.flagged, 1);
        let (mut sum, m) = SetupStats::from_body(&one).unwrap();
        assert_eq!(m, meta());
        sum.then(&SetupStats::from_body(&two).unwrap().0);
        let b = sum.summarize(&m);
        assert_eq!((b.summary.attempts, b.summary.completed), (14, 14));
        assert_eq!((b.summary.runs, b.summary.flagged_runs), (Some(2), Some(1)));
        assert_eq!(b.layers[0].samples, 14);
        assert!((b.layers[1].rtts - 2.0).abs() < 0.01, "{:?}", b.layers[1]);
        assert!(b.layers[1].flag.is_some());
        // Read back again, it is the same document.
        let again = SetupStats::from_body(&b).unwrap().0.summarize(&m);
        assert_eq!(
            serde_json::to_value(&again).unwrap(),
            serde_json::to_value(&b).unwrap()
        );
    }
}
