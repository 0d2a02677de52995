//! `npt ping --echo --setup`: each attempt's connection as one attempt of `npt setup`'s — its
//! TCP connect (to the proxy, through `--via`), the proxy's greeting and CONNECT or its HTTP
//! CONNECT, the first echo — with a second echo on the same connection as the base round trip
//! (one round trip through every relay to the far end and back, none of the setup in it),
//! added into the result's own value ([`SetupStats`]) and judged by its one rule, as
//! `npt setup` and `npt http` are. The ping's own figure stays the connect and the first echo:
//! the second echo comes after it.
//!
//! An attempt that tries the host's next address after a refusal is one attempt, as the ping
//! counts it: a try is kept until the next try of the same attempt replaces it or another
//! attempt begins ([`Recorder::tried`]).

use npt_result::error::ErrorKind;
use npt_result::stats::setup::{first_echo, tcp_plan, Attempt, Plan, SetupMeta, SetupStats};

use crate::Config;

/// The layers an attempt of `cfg` sets up, named and counted as `npt setup` names them.
pub fn plan(cfg: &Config) -> Vec<Plan> {
    let mut v = match &cfg.via {
        None => tcp_plan(None),
        Some(via) => via.setup_plan(false),
    };
    v.push(first_echo());
    v
}

/// The attempts of a run, added as they settle.
#[derive(Debug)]
pub struct Recorder {
    plan: Vec<Plan>,
    stats: SetupStats,
    /// The last try, kept until the attempt is over.
    last: Option<Try>,
}

/// A try of an attempt: its sequence number, what it recorded, its failure.
type Try = (u64, Attempt, Option<(ErrorKind, String)>);

impl Recorder {
    pub fn new(plan: Vec<Plan>) -> Recorder {
        let mut stats = SetupStats {
            runs: 1,
            ..SetupStats::default()
        };
        for p in &plan {
            stats.layers.entry(p.layer).or_default();
        }
        Recorder {
            plan,
            stats,
            last: None,
        }
    }

    /// A try of attempt `seq` recorded `a` and ended in `failed` (`None`: answered). A second
    /// try of the same attempt (the host's next address) replaces the first.
    pub fn tried(&mut self, seq: u64, a: Attempt, failed: Option<(ErrorKind, String)>) {
        if self.last.as_ref().is_some_and(|(s, _, _)| *s != seq) {
            self.settle();
        }
        self.last = Some((seq, a, failed));
    }

    fn settle(&mut self) {
        if let Some((_, a, failed)) = self.last.take() {
            self.stats.record(&self.plan, &a);
            if let Some((kind, detail)) = failed {
                self.stats.errors.record(kind.name(), || detail);
            }
        }
    }

    /// The value and its description: the run's attempts to `target` (at `address`; the
    /// proxy's through `via`).
    pub fn finish(
        mut self,
        target: &str,
        address: &str,
        via: Option<String>,
    ) -> (SetupStats, SetupMeta) {
        self.settle();
        let meta = SetupMeta {
            target: target.to_string(),
            address: address.to_string(),
            via,
            plan: self.plan,
            rtt_from: "warm_request".to_string(),
            tls_version: None,
            resume: false,
        };
        (self.stats, meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::setup::Layer;
    use npt_result::stats::Stats;

    const RTT: u64 = 50_000_000;

    fn cfg(via: Option<&str>) -> Config {
        Config {
            echo: true,
            setup: true,
            via: via.map(|v| npt_proxy::Via::parse(v).unwrap()),
            ..Config::for_test("tcp://10.0.0.2:7777")
        }
    }

    fn names(plan: &[Plan]) -> Vec<(&'static str, f64)> {
        plan.iter()
            .map(|p| (p.layer.name(), p.expected_rtts))
            .collect()
    }

    /// Direct: the connect and the first echo; through SOCKS5 its greeting (two round trips
    /// with a user and password) and CONNECT; through an HTTP proxy its CONNECT — the names
    /// and round trips `npt setup` gives the same layers.
    #[test]
    fn the_plan_is_npt_setups() {
        assert_eq!(
            names(&plan(&cfg(None))),
            [("tcp_connect", 1.0), ("first_byte", 1.0)]
        );
        assert_eq!(
            names(&plan(&cfg(Some("socks5://10.0.0.1:1080")))),
            [
                ("tcp_connect", 1.0),
                ("socks5_greeting", 1.0),
                ("socks5_connect", 1.0),
                ("first_byte", 1.0)
            ]
        );
        assert_eq!(
            names(&plan(&cfg(Some("socks5://u:p@10.0.0.1:1080"))))[1],
            ("socks5_greeting", 2.0)
        );
        let http = plan(&cfg(Some("http://10.0.0.1:8888")));
        assert_eq!(
            names(&http),
            [
                ("tcp_connect", 1.0),
                ("http_connect", 1.0),
                ("first_byte", 1.0)
            ]
        );
        assert_eq!(http[0].what, "TCP connect to the proxy 10.0.0.1:8888");
        assert_eq!(http[2].what, "the first echo");
    }

    fn attempt(connect: u64, first: u64, warm: Option<u64>) -> Attempt {
        Attempt {
            layers: vec![(Layer::TcpConnect, connect), (Layer::FirstByte, first)],
            rtt_ns: warm,
            ..Attempt::default()
        }
    }

    /// Three attempts on a 50 ms path: the first refused at one address and answered at the
    /// next (one attempt, answered), the second answered without its second echo (no base
    /// sample), the third refused everywhere (an attempt not set up, its error kept). The
    /// layers read one round trip each against the base of the second echoes; a forwarder
    /// that connects onward on accept would read its connect in the first echo, flagged.
    #[test]
    fn tries_of_one_attempt_count_once_and_the_second_echo_is_the_base() {
        let mut r = Recorder::new(plan(&cfg(None)));
        let refused = || Some((ErrorKind::Refused, "refused".to_string()));
        let only_connect = Attempt {
            layers: vec![(Layer::TcpConnect, RTT)],
            ..Attempt::default()
        };
        r.tried(1, Attempt::default(), refused());
        r.tried(1, attempt(RTT, RTT, Some(RTT)), None);
        r.tried(2, attempt(RTT, RTT + 1_000_000, None), None);
        r.tried(3, only_connect, refused());
        let (s, m) = r.finish("tcp://10.0.0.2:7777", "10.0.0.2:7777", None);
        assert_eq!((s.attempts, s.completed, s.rtt.count()), (3, 2, 1));
        assert_eq!(s.errors.get("refused"), 1);
        let b = s.summarize(&m);
        assert_eq!(b.summary.rtt_from, "warm_request");
        assert_eq!(b.layers[0].samples, 3);
        assert_eq!(b.layers[1].samples, 2);
        for l in &b.layers {
            assert!((l.rtts - 1.0).abs() < 0.03, "{l:?}");
            assert!(l.flag.is_none(), "{l:?}");
        }
        assert_eq!((b.errors.total_errors, b.summary.flagged), (1, 0));

        // socat on a node 20 ms from the client, 30 ms from the server: the connect is its
        // accept (0.4 round trips), the first echo waits for its connect onward (1.6).
        let mut r = Recorder::new(plan(&cfg(None)));
        for seq in 1..=5 {
            r.tried(seq, attempt(20_000_000, 80_000_000, Some(RTT)), None);
        }
        let (s, m) = r.finish("tcp://10.0.0.2:7777", "10.0.0.2:7777", None);
        let b = s.summarize(&m);
        assert!((b.layers[0].rtts - 0.4).abs() < 0.01, "{:?}", b.layers[0]);
        assert!((b.layers[1].rtts - 1.6).abs() < 0.01, "{:?}", b.layers[1]);
        assert!(b.layers[1].flag.is_some(), "{:?}", b.layers[1]);
        assert_eq!(b.summary.flagged, 1);
    }
}
