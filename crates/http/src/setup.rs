//! The http result's setup block: what each layer of the run's new connections cost, added
//! up as `npt setup` adds its own attempts ([`SetupStats`]) and judged by the same function.
//!
//! Every new connection is one attempt: its TCP connect, its TLS handshake (https) and the
//! first byte of the first request it carried (from that request's write to its response
//! head); an attempt whose first request got no answer (failed, or in flight when the run
//! ended) is not `completed`. The base round trip is the time to the response head of a request on a connection
//! already in use (`warm_request`: one round trip through every layer with no setup in it);
//! the smallest stands, so the queueing of a loaded run does not inflate it. With
//! `--new-conn` no connection carries a second request: the base is then the TCP connects
//! (`tcp_connect`), as `npt setup tcp://` measures it.

use npt_result::setup::Layer;
use npt_result::stats::setup::{first_response_byte, tcp_plan, Plan, SetupMeta, SetupStats};

use crate::collect::{ConnEvent, Event, Outcome};

/// The run's connections as setup attempts.
#[derive(Debug, Default)]
pub struct SetupAcc {
    stats: SetupStats,
    /// The TLS version of the last handshake (`1.2`, `1.3`).
    tls_version: Option<&'static str>,
}

impl SetupAcc {
    pub fn new() -> SetupAcc {
        SetupAcc {
            stats: SetupStats {
                runs: 1,
                ..SetupStats::default()
            },
            tls_version: None,
        }
    }

    /// One new connection: an attempt, its TCP connect and TLS.
    pub fn conn(&mut self, c: &ConnEvent) {
        let s = &mut self.stats;
        s.attempts += 1;
        s.layers
            .entry(Layer::TcpConnect)
            .or_default()
            .record(c.connect_ns);
        if let Some(t) = c.tls_ns {
            s.layers.entry(Layer::Tls).or_default().record(t);
            self.tls_version = c.tls_version.or(self.tls_version);
        }
    }

    /// The first answer on a connection [`SetupAcc::conn`] counted: its last layer, and a
    /// whole setup.
    pub fn first_byte(&mut self, c: &ConnEvent) {
        let s = &mut self.stats;
        if let Some(f) = c.first_byte_ns {
            s.layers.entry(Layer::FirstByte).or_default().record(f);
            s.completed += 1;
            s.setup.record(c.connect_ns + c.tls_ns.unwrap_or(0) + f);
        }
    }

    /// A request: one on a connection already in use is a base round trip.
    pub fn request(&mut self, e: &Event) {
        if e.reused && matches!(e.outcome, Outcome::Response(_)) && e.head_ns > 0 {
            self.stats.rtt.record(e.head_ns.saturating_sub(e.sent_ns));
        }
    }

    /// The value and its meta: the layers a connection of this run set up, of `url`
    /// (connected at `address`).
    pub fn finish(mut self, url: &str, address: &str) -> (SetupStats, SetupMeta) {
        let s = &mut self.stats;
        let rtt_from = if s.rtt.is_empty() {
            if let Some(c) = s.layers.get(&Layer::TcpConnect) {
                s.rtt = c.clone();
            }
            "tcp_connect"
        } else {
            "warm_request"
        };
        let p = Plan::new;
        let mut plan = tcp_plan(None);
        let tls = url.starts_with("https://");
        if tls {
            plan.push(match self.tls_version {
                Some("1.2") => p(Layer::Tls, "TLS 1.2", 2.0),
                _ => p(Layer::Tls, "TLS 1.3", 1.0),
            });
        }
        plan.push(first_response_byte());
        let meta = SetupMeta {
            target: url.to_string(),
            address: address.to_string(),
            via: None,
            plan,
            rtt_from: rtt_from.to_string(),
            tls_version: tls.then(|| self.tls_version.unwrap_or("1.3").to_string()),
            resume: false,
        };
        (self.stats, meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::stats::Stats;

    const MS: u64 = 1_000_000;

    fn conn(first_byte: Option<u64>) -> ConnEvent {
        ConnEvent {
            connect_ns: 10 * MS,
            tls_ns: Some(10 * MS),
            proxy_ns: None,
            tls_version: Some("1.3"),
            first_byte_ns: first_byte,
        }
    }

    fn request(reused: bool, head: u64) -> Event {
        Event {
            host: 0,
            outcome: Outcome::Response(200),
            intended_ns: None,
            sent_ns: 100 * MS,
            head_ns: 100 * MS + head,
            done_ns: 100 * MS + head,
            bytes_out: 0,
            bytes_in: 0,
            reused,
        }
    }

    /// Two connections on a 10 ms path, one of which got no answer: two attempts, one whole
    /// setup; the base is the fastest request on a connection in use (the first requests'
    /// times are the first-byte layer, not a base); each layer reads 1 round trip.
    #[test]
    fn connections_are_attempts_and_reused_requests_the_base() {
        let mut a = SetupAcc::new();
        a.conn(&conn(None));
        a.first_byte(&conn(Some(10 * MS)));
        a.conn(&conn(None));
        a.request(&request(false, 10 * MS));
        a.request(&request(true, 10 * MS));
        a.request(&request(true, 12 * MS));
        let (s, m) = a.finish("https://h:1/", "127.0.0.1:1");
        assert_eq!((s.attempts, s.completed, s.rtt.count()), (2, 1, 2));
        assert_eq!(m.rtt_from, "warm_request");
        assert_eq!(m.tls_version.as_deref(), Some("1.3"));
        let b = s.summarize(&m);
        let names: Vec<&str> = b.layers.iter().map(|l| l.layer.as_str()).collect();
        assert_eq!(names, ["tcp_connect", "tls", "first_byte"]);
        assert_eq!(b.layers[0].samples, 2);
        assert_eq!(b.layers[2].samples, 1);
        for l in &b.layers {
            assert!((l.rtts - 1.0).abs() < 0.01, "{l:?}");
            assert!(l.flag.is_none(), "{l:?}");
        }
    }

    /// Without a connection in use (`--new-conn`), the TCP connects are the base; TLS 1.2
    /// needs 2 round trips.
    #[test]
    fn new_connections_take_the_connects_as_base() {
        let mut a = SetupAcc::new();
        let mut c = conn(Some(10 * MS));
        c.tls_version = Some("1.2");
        c.tls_ns = Some(20 * MS);
        a.conn(&c);
        a.first_byte(&c);
        let (s, m) = a.finish("https://h:1/", "127.0.0.1:1");
        assert_eq!(m.rtt_from, "tcp_connect");
        assert_eq!(s.rtt.count(), 1);
        assert_eq!(m.plan[1].expected_rtts, 2.0);
        let b = s.summarize(&m);
        assert_eq!(b.summary.tls_version.as_deref(), Some("1.2"));
        assert_eq!(b.summary.flagged, 0);
    }
}
