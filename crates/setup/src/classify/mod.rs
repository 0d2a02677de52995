//! From recorded timings to a verdict, without a socket or a clock: each layer's median cost
//! and its interval, its multiple of the base round trip, the round trips its protocol needs,
//! and the flag when it took more. Pure functions of what the attempts recorded, so the
//! flagging rule is tested on timings written by hand (a broken 0-RTT, an extra proxy round
//! trip, a resumption the server refused).
//!
//! The rule: a layer is flagged when even the low end of its median's 95 % interval is more
//! than half a round trip above what its protocol needs, and by more than
//! [`MIN_EXCESS_NS`] — a whole extra round trip shows, the noise of a path does not, and on a
//! path of a fraction of a millisecond (loopback, one LAN switch) the handshakes' own
//! computation, which is no round trip, does not either. Two facts the client saw are flags of their own, whatever the
//! timing: a 0-RTT request the server rejected (it went again after the handshake) and a
//! resumption the server refused (a full handshake instead).

use npt_stats::uncertainty::Z95;
use npt_stats::Histogram;

/// A layer of a connection's setup, in the order they happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    TcpConnect,
    Socks5Greeting,
    Socks5Connect,
    Socks5UdpAssociate,
    HttpConnect,
    Tls,
    Quic,
    FirstByte,
}

impl Layer {
    /// The name in the result (`layers[].layer`, the histogram's key).
    pub fn name(self) -> &'static str {
        match self {
            Layer::TcpConnect => "tcp_connect",
            Layer::Socks5Greeting => "socks5_greeting",
            Layer::Socks5Connect => "socks5_connect",
            Layer::Socks5UdpAssociate => "socks5_udp_associate",
            Layer::HttpConnect => "http_connect",
            Layer::Tls => "tls",
            Layer::Quic => "quic",
            Layer::FirstByte => "first_byte",
        }
    }
}

/// One layer as a connection of this run sets it up: what it is and the round trips its
/// protocol needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub layer: Layer,
    pub what: String,
    pub expected_rtts: f64,
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

/// The run's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub layers: Vec<LayerVerdict>,
    /// Whole setups (the attempts that completed every layer), ns.
    pub setup: Histogram,
    pub rtt: Histogram,
    /// The base round trip (the smallest measured), ns; 0 when none was.
    pub rtt_ns: u64,
    pub completed: u64,
    pub resumed: Option<u64>,
    pub zero_rtt_sent: Option<u64>,
    pub zero_rtt_accepted: Option<u64>,
}

/// How far above its protocol's round trips a layer may read before it is flagged.
pub const TOLERANCE_RTTS: f64 = 0.5;

/// The least excess over the protocol's round trips that is flagged: more than a TLS or QUIC
/// handshake's own computation takes on one core.
pub const MIN_EXCESS_NS: f64 = 5e6;

/// The verdict on `attempts` of a run whose connections set up `plan`.
pub fn classify(plan: &[Plan], attempts: &[Attempt], resume: bool) -> Verdict {
    let mut rtt = Histogram::new();
    let mut setup = Histogram::new();
    let mut hists: Vec<Histogram> = plan.iter().map(|_| Histogram::new()).collect();
    let mut completed = 0;
    for a in attempts {
        if let Some(r) = a.rtt_ns {
            rtt.record(r);
        }
        for (layer, ns) in &a.layers {
            if let Some(i) = plan.iter().position(|p| p.layer == *layer) {
                if let Some(h) = hists.get_mut(i) {
                    h.record(*ns);
                }
            }
        }
        if a.layers.len() == plan.len() {
            completed += 1;
            setup.record(a.layers.iter().map(|(_, ns)| ns).sum());
        }
    }
    let rtt_ns = if rtt.is_empty() { 0 } else { rtt.min_ns() };
    let resumed = resume.then(|| count(attempts, |a| a.resumed == Some(true)));
    let sent = count(attempts, |a| a.zero_rtt.is_some());
    let accepted = count(attempts, |a| a.zero_rtt == Some(true));
    let quic = plan.iter().any(|p| p.layer == Layer::Quic);
    let layers = plan
        .iter()
        .zip(hists)
        .map(|(p, hist)| {
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
            let rejected = sent - accepted;
            if p.layer == Layer::Quic && rejected > 0 {
                flag = Some(format!(
                    "0-RTT rejected by the server in {rejected} of {sent}: the request went \
                     again after the handshake"
                ));
            }
            let reached = count(attempts, |a| {
                a.layers.iter().any(|(l, _)| *l == Layer::Quic)
            });
            let unoffered = reached.saturating_sub(sent);
            if p.layer == Layer::Quic && resume && unoffered > 0 {
                let note = format!(
                    "0-RTT not offered in {unoffered} of {reached}: the handshake came first"
                );
                flag = Some(match flag {
                    Some(f) => format!("{f}; {note}"),
                    None => note,
                });
            }
            let refused = attempts.iter().filter(|a| a.resumed == Some(false)).count();
            if resume && refused > 0 && (p.layer == Layer::Tls || (quic && p.layer == Layer::Quic))
            {
                let note = format!(
                    "resumption refused in {refused} of {}: a full handshake",
                    attempts.len()
                );
                flag = Some(match flag {
                    Some(f) => format!("{f}; {note}"),
                    None => note,
                });
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
        setup,
        rtt,
        rtt_ns,
        completed,
        resumed,
        zero_rtt_sent: (quic && resume).then_some(sent),
        zero_rtt_accepted: (quic && resume).then_some(accepted),
    }
}

fn count(attempts: &[Attempt], f: impl Fn(&Attempt) -> bool) -> u64 {
    attempts.iter().filter(|a| f(a)).count() as u64
}

#[cfg(test)]
mod tests;
