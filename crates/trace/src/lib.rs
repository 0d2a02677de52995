//! `npt trace`: where the time goes along a chain of application-level relays. Each segment's
//! RTT is measured from its own upstream hop — this host's own ping to the first hop, then
//! each hop agent (`npt serve --hop-agent`) pings the next hop or the target, with `npt ping
//! --from`'s machinery ([`npt_ping::from`]) — all segments at once, together with the RTT
//! through the chain's entry (`--through`). The result ([`npt_result::trace`]) is a waterfall:
//! segment RTTs, their sum, the chain's own RTT, and the relays' cost = chain − sum.
//!
//! [`Config`] is the validated plan and its legs ([`Config::legs`]); [`leg`] measures one leg
//! and a round of them concurrently; [`chain`] is the TCP exchange through the chain (a framed
//! echo on an open connection: a TCP connect would only reach the first relay); [`workload`]
//! runs rounds — one, or with `--during` one before a command and more while it runs — as the
//! cli's [`npt_result::workload::Workload`]. With `--mtu`, [`mtu`] searches each segment's path
//! MTU after the first round; with `--dscp`/`--tos`/`--ecn`, [`marks`] reads each segment's
//! marking each way.

pub mod chain;
pub mod leg;
pub mod marks;
pub mod mtu;
pub mod workload;

use std::time::Duration;

use npt_ping::remote::{host_port, Agent};
pub use npt_ping::{Proto, QuicTrust, Target};

/// The most hops a trace takes (a chain longer than this is no relay chain a person runs).
pub const MAX_HOPS: usize = 16;

/// One relay on the path: the hop agent on it, and where its upstream reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// `npt://HOST:PORT`: where this host reaches the agent.
    pub agent: Agent,
    /// `HOST:PORT` the segment into this hop is measured at, as its upstream reaches it (a
    /// relay's address on the link from the previous hop); the agent's own when not given.
    pub at: Option<(String, u16)>,
}

impl Hop {
    /// `npt://HOST:PORT` or `npt://HOST:PORT=HOST:PORT` (the second: as the upstream hop
    /// reaches it).
    pub fn parse(s: &str) -> Option<Hop> {
        let (agent, at) = match s.split_once('=') {
            Some((a, at)) => (a, Some(at)),
            None => (s, None),
        };
        let agent = Agent::parse(agent)?;
        let at = match at {
            None => None,
            // A HOST:PORT is a tcp:// target's tail: one parser for both.
            Some(at) => {
                let t = Target::parse(&format!("tcp://{at}")).ok()?;
                Some((t.host, t.port))
            }
        };
        Some(Hop { agent, at })
    }

    /// Where the segment into this hop ends, over `proto`.
    pub fn target(&self, proto: Proto) -> Target {
        let (host, port) = match &self.at {
            Some((h, p)) => (h.clone(), *p),
            None => (self.agent.host.clone(), self.agent.port),
        };
        Target { proto, host, port }
    }
}

impl std::fmt::Display for Hop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.at {
            Some((h, p)) => write!(f, "{}={}", self.agent, host_port(h, *p)),
            None => write!(f, "{}", self.agent),
        }
    }
}

/// Everything one `npt trace` needs, validated.
#[derive(Clone, Debug)]
pub struct Config {
    /// The chain's far end; its protocol is every leg's.
    pub target: Target,
    /// The relays in path order (at least one).
    pub hops: Vec<Hop>,
    /// The chain's entry, measured from here through every relay to the target.
    pub through: Option<Target>,
    /// The hop agents' secret (`npt serve --token`); also opens this host's UDP echo with the
    /// first hop's `npt serve`.
    pub token: String,
    /// Attempts per leg in each round.
    pub count: u64,
    pub interval: Duration,
    /// How long one attempt waits for its answer.
    pub timeout: Duration,
    /// UDP datagram size, header included.
    pub size: u16,
    /// QUIC: how this host checks certificates (its own segment and the chain); agents accept
    /// any (they measure the handshake's time).
    pub trust: QuicTrust,
    /// `-4`/`-6`, `--bind`, `--dscp`: what this host sends (its own segment and the chain);
    /// a marking also has each segment's marking read each way ([`marks`]), the agents
    /// sending it on theirs.
    pub source: npt_client::source::Source,
    /// `--mtu`: after the first round, each segment's path MTU each way ([`mtu`]), each
    /// search bounded by this (`--mtu-timeout`); `None` without `--mtu`.
    pub mtu: Option<Duration>,
}

/// Who measures a leg.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Who {
    Here,
    Agent(Agent),
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Who::Here => f.write_str("here"),
            Who::Agent(a) => write!(f, "{a}"),
        }
    }
}

/// One leg to measure: a segment, or the chain through its entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LegPlan {
    pub from: Who,
    pub to: Target,
    /// The exchange through the whole chain (TCP: an echo on an open connection, not a
    /// connect).
    pub chain: bool,
}

impl Config {
    /// The segments in path order, then the chain (with `--through`).
    pub fn legs(&self) -> Vec<LegPlan> {
        let proto = self.target.proto;
        let mut legs = Vec::new();
        let mut from = Who::Here;
        for h in &self.hops {
            legs.push(LegPlan {
                from,
                to: h.target(proto),
                chain: false,
            });
            from = Who::Agent(h.agent.clone());
        }
        legs.push(LegPlan {
            from,
            to: self.target.clone(),
            chain: false,
        });
        if let Some(t) = &self.through {
            legs.push(LegPlan {
                from: Who::Here,
                to: t.clone(),
                chain: true,
            });
        }
        legs
    }

    /// What each leg's RTT is, in words (`TCP connect`, `UDP echo, 64 B` …).
    pub fn what(&self) -> String {
        match self.target.proto {
            Proto::Tcp => "TCP connect per segment, TCP echo through the chain".into(),
            Proto::Udp => format!("UDP echo, {} B", self.size),
            Proto::Quic => "QUIC handshake".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(hops: &[&str], through: Option<&str>) -> Config {
        Config {
            target: Target::parse("tcp://10.0.3.2:7777").unwrap(),
            hops: hops.iter().map(|h| Hop::parse(h).unwrap()).collect(),
            through: through.map(|t| Target::parse(t).unwrap()),
            token: "S".into(),
            count: 5,
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            size: 64,
            trust: QuicTrust::Insecure,
            source: Default::default(),
            mtu: None,
        }
    }

    #[test]
    fn hops_parse_with_or_without_the_upstream_address() {
        let h = Hop::parse("npt://10.0.2.2:7777=10.0.4.2:7777").unwrap();
        assert_eq!(h.agent.to_string(), "npt://10.0.2.2:7777");
        assert_eq!(h.at, Some(("10.0.4.2".into(), 7777)));
        assert_eq!(h.to_string(), "npt://10.0.2.2:7777=10.0.4.2:7777");
        assert_eq!(Hop::parse("npt://sea:7777").unwrap().at, None);
        let v6 = Hop::parse("npt://[::1]:7777=[::2]:7778").unwrap();
        assert_eq!(v6.target(Proto::Quic).to_string(), "quic://[::2]:7778");
        for bad in [
            "sea:7777",
            "npt://sea:7777=",
            "npt://sea:7777=sea",
            "tcp://a:1",
        ] {
            assert_eq!(Hop::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn each_segment_is_measured_from_its_upstream_hop() {
        let c = cfg(
            &["npt://10.0.5.2:7777", "npt://10.0.2.2:7777=10.0.4.2:7777"],
            Some("tcp://10.0.5.2:9003"),
        );
        let legs: Vec<(String, String, bool)> = c
            .legs()
            .iter()
            .map(|l| (l.from.to_string(), l.to.to_string(), l.chain))
            .collect();
        assert_eq!(
            legs,
            [
                ("here", "tcp://10.0.5.2:7777", false),
                ("npt://10.0.5.2:7777", "tcp://10.0.4.2:7777", false),
                ("npt://10.0.2.2:7777", "tcp://10.0.3.2:7777", false),
                ("here", "tcp://10.0.5.2:9003", true),
            ]
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c))
        );
        assert_eq!(cfg(&["npt://sea:7777"], None).legs().len(), 2);
    }
}
