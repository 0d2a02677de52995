//! `npt run`'s setup block per protocol: every new connection a user opened and got its first
//! response byte on is one attempt of `npt setup`'s — TCP: its connect (to the proxy, through
//! `--via`) and the proxy's greeting and CONNECT or its HTTP CONNECT; QUIC: its handshake;
//! then the first response byte of its first request — added into the result's own value
//! ([`npt_result::stats::SetupStats`], in the collector) and judged by its one rule.
//!
//! The base round trip is the smallest time to the first response byte of a request on a
//! connection already in use: a web page's request rounds after its first exchange, a QUIC
//! visit's resources. The smallest, because a round's upload (up to `--request-up`) after a
//! pause may take more than one round trip to arrive, and a loaded server queues; the fastest
//! warm request is one round trip and the server's turn-around. A run whose TCP connections
//! carried no second request (downloads only) takes its TCP connects as base (`tcp_connect`),
//! as `npt http --new-conn` does.
//!
//! Not attempts: upload connections (their first request is the upload itself, its first byte
//! after the whole body, not a layer) and game flows (UDP, no setup). The web page's first
//! exchange is the size of a TLS handshake but no TLS: it is not counted as a TLS layer, only
//! as the connection's first response byte. A connection that failed before its first byte
//! is in the run's errors, not in the block.

use std::collections::BTreeMap;

use npt_result::setup::Layer;
use npt_result::stats::setup::{first_response_byte, tcp_plan, Plan, SetupMeta};
use npt_result::stats::RunStats;

use crate::config::{Proto, Targets};

/// The layers a new connection of `p` sets up (`via`: the TCP connections' proxy).
pub fn plan(p: Proto, via: Option<&npt_proxy::Via>) -> Vec<Plan> {
    let mut v = match (p, via) {
        (Proto::Quic, _) => vec![Plan::new(Layer::Quic, "QUIC handshake", 1.0)],
        (_, None) => tcp_plan(None),
        (_, Some(via)) => via.setup_plan(false),
    };
    v.push(first_response_byte());
    v
}

/// The plans of a run's TCP and QUIC connections.
#[derive(Debug)]
pub struct Plans {
    pub tcp: Vec<Plan>,
    pub quic: Vec<Plan>,
}

impl Plans {
    pub fn new(t: &Targets) -> Plans {
        Plans {
            tcp: plan(Proto::Tcp, t.via.as_ref()),
            quic: plan(Proto::Quic, None),
        }
    }
}

/// Each protocol's block description, keyed as `protocols`; a TCP block without a warm
/// request takes its connects as base.
pub fn finish(stats: &mut RunStats, t: &Targets) -> BTreeMap<String, SetupMeta> {
    let mut out = BTreeMap::new();
    for (name, c) in &mut stats.protocols {
        let Some(s) = &mut c.setup else { continue };
        let quic = name == Proto::Quic.name();
        let mut rtt_from = "warm_request";
        if s.rtt.is_empty() && !quic {
            if let Some(h) = s.layers.get(&Layer::TcpConnect) {
                s.rtt = h.clone();
                rtt_from = "tcp_connect";
            }
        }
        let (target, address) = match (quic, t.quic, t.stream.first(), &t.via) {
            (true, Some(q), _, _) => (format!("quic://{q}"), q.to_string()),
            (false, _, Some(a), Some(v)) => {
                (format!("tcp://{a}"), format!("{} (proxy)", v.authority()))
            }
            (false, _, Some(a), None) => (format!("tcp://{a}"), a.to_string()),
            _ => continue,
        };
        let p = if quic { Proto::Quic } else { Proto::Tcp };
        let meta = SetupMeta {
            target,
            address,
            via: t.via.as_ref().filter(|_| !quic).map(|v| v.to_string()),
            plan: plan(p, t.via.as_ref().filter(|_| !quic)),
            rtt_from: rtt_from.to_string(),
            tls_version: None,
            resume: false,
        };
        out.insert(name.clone(), meta);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::stats::setup::Attempt;
    use npt_result::stats::{SetupStats, Stats};

    const RTT: u64 = 50_000_000;

    fn targets(via: Option<&str>) -> Targets {
        Targets {
            stream: vec!["10.0.0.2:7777".parse().unwrap()],
            quic: Some("10.0.0.2:7778".parse().unwrap()),
            quic_server_name: "x".into(),
            via: via.map(|v| npt_proxy::Via::parse(v).unwrap()),
            source: Default::default(),
        }
    }

    /// TCP through SOCKS5 and QUIC: the layers `npt setup` names; a TCP block with warm
    /// requests judges against them, one without (downloads only) against its connects, and
    /// each layer of a 50 ms path reads one round trip.
    #[test]
    fn blocks_take_warm_requests_or_else_the_connects_as_base() {
        let t = targets(Some("socks5://10.0.0.1:1080"));
        let plans = Plans::new(&t);
        let names: Vec<&str> = plans.tcp.iter().map(|p| p.layer.name()).collect();
        assert_eq!(
            names,
            [
                "tcp_connect",
                "socks5_greeting",
                "socks5_connect",
                "first_byte"
            ]
        );
        assert_eq!(plans.quic[0].layer, Layer::Quic);
        let one = |plan: &[Plan], warm: bool| {
            let mut s = SetupStats::default();
            let a = Attempt {
                layers: plan.iter().map(|p| (p.layer, RTT)).collect(),
                ..Attempt::default()
            };
            s.record(plan, &a);
            if warm {
                s.rtt.record(RTT);
            }
            s
        };
        let mut stats = RunStats::default();
        stats.protocols.entry("tcp".into()).or_default().setup = Some(one(&plans.tcp, false));
        stats.protocols.entry("quic".into()).or_default().setup = Some(one(&plans.quic, true));
        stats.protocols.entry("udp".into()).or_default();
        let metas = finish(&mut stats, &t);
        assert_eq!(metas.len(), 2);
        assert_eq!(metas["tcp"].rtt_from, "tcp_connect");
        assert_eq!(metas["tcp"].address, "10.0.0.1:1080 (proxy)");
        assert_eq!(metas["quic"].rtt_from, "warm_request");
        assert_eq!(metas["quic"].via, None);
        for (name, m) in &metas {
            let b = stats.protocols[name].setup.as_ref().unwrap().summarize(m);
            assert_eq!(b.summary.completed, 1, "{name}");
            for l in &b.layers {
                assert!((l.rtts - 1.0).abs() < 0.01, "{name}: {l:?}");
            }
        }
    }
}
