//! `npt ping TARGET --from npt://AGENT:PORT --token S`: the hop RTT measured by a hop agent
//! (`npt serve --hop-agent`) instead of from here — the segment between two relays that this
//! host cannot see. The agent measures as `npt ping` does (TCP connect, UDP echo, QUIC
//! handshake) and sends one sample per attempt; this side prints them as `npt ping` prints its
//! own, and writes the same `ping` result with `measured_from` set.
//!
//! The loop of requests is [`npt_ping::from`] (shared with `npt trace`): attempts go to the
//! agent in requests that each stay well inside the agent's default time bound ([`npt_ping::from::BATCH_TIME`]);
//! `--count 0` asks in batches of [`npt_ping::from::OPEN_BATCH`] until Ctrl-C. A request the agent refuses, or
//! an agent that is dead or silent, fails that request's attempts under one error kind and ends
//! the run (exit 1).

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_ping::remote::{host_port, Agent};
use npt_ping::session::Tally;
use npt_ping::{Proto, Target};
use npt_result::ping::PingBody;
use npt_result::workload::{Finished, Length, Progress, Stop, Workload};
use npt_result::{Document, StopReason};
use npt_stats::Snapshot;
use npt_wire::hop::{self, HopRequest};

use crate::cmd::ping::args::PingArgs;
use crate::cmd::ping::render;
use crate::execute::{execute, Options, RunCommand};
use crate::usage;

pub use npt_ping::from::FromConfig;

pub fn config(a: &PingArgs) -> anyhow::Result<FromConfig> {
    let from = a.from.as_deref().unwrap_or_default();
    let agent = Agent::parse(from).ok_or_else(|| {
        usage!("--from {from:?}: expected npt://HOST:PORT (an `npt serve --hop-agent`)")
    })?;
    let target = Target::parse(&a.target).map_err(|e| usage!("{e}"))?;
    let token = a
        .auth
        .required("--from needs --token: a hop agent answers only clients that prove its secret")?;
    a.source.unsupported(
        "ping --from",
        &["-4", "-6", "--bind", "--dscp", "--tos"],
        "the hop agent sends the attempts, from its own address",
    )?;
    let (interval, timeout) = a.timing.durations()?;
    let micros = |flag: &str, d: Duration| {
        u32::try_from(d.as_micros())
            .map_err(|_| usage!("{flag} {d:?} is longer than a hop agent measures"))
    };
    micros("--interval", interval)?;
    micros("--timeout", timeout)?;
    if a.raw {
        return Err(usage!(
            "--raw does not combine with --from: an agent pings npt's framed UDP echo"
        ));
    }
    if a.via.via.is_some() {
        return Err(usage!("--via does not combine with --from"));
    }
    if a.echo {
        return Err(usage!(
            "--echo does not combine with --from: an agent measures a TCP segment by its connect"
        ));
    }
    if a.setup {
        return Err(usage!(
            "--setup does not combine with --from: an agent measures a segment, not the layers \
             of this host's connections"
        ));
    }
    if a.trust.ca.is_some() {
        return Err(usage!(
            "--ca does not combine with --from: the agent accepts any certificate (it measures \
             the handshake's time)"
        ));
    }
    if a.trust.insecure && target.proto != Proto::Quic {
        return Err(usage!("--ca and --insecure are for quic:// targets"));
    }
    if target.host.len() > hop::MAX_HOST_LEN {
        return Err(usage!(
            "{target}: the host is longer than {} bytes",
            hop::MAX_HOST_LEN
        ));
    }
    let min = npt_wire::frame::HEADER_LEN;
    let size = u16::try_from(a.size)
        .ok()
        .filter(|s| usize::from(*s) >= min);
    let size = match (target.proto, size) {
        (Proto::Udp, None) => {
            return Err(usage!(
                "--size {} must be between {min} and 65535 bytes",
                a.size
            ))
        }
        (_, s) => s.unwrap_or(u16::MAX),
    };
    let c = FromConfig {
        target,
        agent,
        token,
        count: (a.count > 0).then_some(a.count),
        interval,
        timeout,
        size,
    };
    // The agent's bounds are its defaults (no flag changes them): say so here, not as a
    // refusal after connecting.
    npt_server::hop_agent::HopLimits::default()
        .check(&request(&c, 1))
        .map_err(|e| usage!("--interval, --timeout or --size out of a hop agent's bounds: {e}"))?;
    Ok(c)
}

fn request(cfg: &FromConfig, attempts: u16) -> HopRequest {
    cfg.request(attempts)
}

fn config_json(cfg: &FromConfig) -> serde_json::Value {
    serde_json::json!({
        "target": cfg.target.to_string(),
        "proto": cfg.target.proto.name(),
        "count": cfg.count,
        "interval_s": cfg.interval.as_secs_f64(),
        "timeout_s": cfg.timeout.as_secs_f64(),
        "size": cfg.size,
        "raw": false,
        "via": null,
        "from": cfg.agent.to_string(),
    })
}

fn what(cfg: &FromConfig) -> String {
    match cfg.target.proto {
        Proto::Tcp => "TCP connect".to_string(),
        Proto::Udp => format!("UDP echo, {} B", cfg.size),
        Proto::Quic => "QUIC handshake".to_string(),
    }
}

pub fn run(a: PingArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    if a.packets.is_some() {
        return Err(usage!(
            "--packets logs the attempts made here; with --from the agent makes them"
        ));
    }
    let o = Options::new(&a.output);
    o.check()?;
    let mut text = o.text.writer();
    writeln!(
        text,
        "PING {} measured from {}: {}",
        cfg.target,
        cfg.agent,
        what(&cfg)
    )?;
    text.flush()?;
    let quiet = a.output.quiet;
    execute(FromPing { cfg, quiet, text }, o)
}

/// A ping measured by an agent, as a [`Workload`]: the agent's samples are its tally, their
/// lines its text (no series, like a ping measured here).
struct FromPing {
    cfg: FromConfig,
    quiet: bool,
    text: Box<dyn Write>,
}

impl Workload for FromPing {
    type Body = PingBody;
    type Error = std::io::Error;

    fn config(&self) -> serde_json::Value {
        config_json(&self.cfg)
    }

    /// A ping's attempts, and an agent's connect and reply slack beyond them.
    fn length(&self) -> Option<Length> {
        let c = &self.cfg;
        npt_ping::workload::length(c.count, c.interval, c.timeout).map(|l| Length {
            slack: npt_ping::remote::CONNECT_TIMEOUT + npt_ping::remote::REPLY_SLACK,
            ..l
        })
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        _no_intervals: &mut dyn FnMut(&Progress<'_>),
    ) -> std::io::Result<Finished<PingBody>> {
        let cfg = &self.cfg;
        let started = SystemTime::now();
        let started_mono = Instant::now();
        let (tally, addrs, stopped_by) = measure(cfg, stop, self.quiet, &mut *self.text)?;
        // Start label plus monotonic time: a wall-clock step cannot distort the run's length.
        let ended = started + started_mono.elapsed();
        let mut body = npt_ping::result::body(
            &cfg.target.to_string(),
            cfg.target.proto,
            &addrs,
            npt_ping::answered_by(cfg.target.proto, false, false),
            &tally,
            None,
        );
        if body.addresses.is_empty() {
            // Nothing came back to say where the agent measured: the target as written.
            body.addresses = vec![host_port(&cfg.target.host, cfg.target.port)];
        }
        body.measured_from = Some(cfg.agent.to_string());
        Ok(Finished::new(
            body,
            started,
            ended,
            stopped_by,
            Snapshot::new(),
        ))
    }
}

impl RunCommand for FromPing {
    fn render(out: &mut dyn Write, doc: &Document<PingBody>) -> std::io::Result<()> {
        render::render(out, doc)
    }

    fn failed(body: &PingBody) -> Option<&'static str> {
        render::failed(body)
    }
}

/// Asks the agent batch after batch until the count, a signal or a failure, printing the
/// lines as they come (a failure only as a message with `--quiet`).
fn measure(
    cfg: &FromConfig,
    stop: &Stop,
    quiet: bool,
    text: &mut dyn Write,
) -> std::io::Result<(Tally, Vec<SocketAddr>, StopReason)> {
    let mut written = Ok(());
    let m = npt_ping::from::measure(cfg, stop, &mut |lines| {
        if quiet || written.is_err() {
            return;
        }
        written = lines
            .iter()
            .try_for_each(|l| writeln!(text, "{l}"))
            .and_then(|()| text.flush());
    });
    if let (true, Some(e)) = (quiet, &m.error) {
        eprintln!("npt: {e}");
    }
    written?;
    Ok((m.tally, m.addrs, m.stopped_by))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::testing::{self, flags};
    use npt_ping::from::{batch, record_failure, OPEN_BATCH};
    use npt_ping::remote::RemoteError;
    use npt_wire::hop::HopProto;

    fn cfg(args: &[&str]) -> anyhow::Result<FromConfig> {
        config(&flags::<PingArgs>(args)?)
    }

    fn usage_msg(args: &[&str]) -> String {
        testing::usage_msg(cfg(args))
    }

    const FROM: [&str; 4] = ["--from", "npt://10.0.1.2:7777", "--token", "S"];

    fn with(extra: &[&'static str]) -> Vec<&'static str> {
        let mut v = vec!["tcp://10.0.3.2:7777"];
        v.extend_from_slice(&FROM);
        v.extend_from_slice(extra);
        v
    }

    #[test]
    fn from_parses_into_an_agent_and_a_request() {
        let c = cfg(&with(&[])).unwrap();
        assert_eq!(c.agent.to_string(), "npt://10.0.1.2:7777");
        assert_eq!((c.count, c.size), (Some(5), 64));
        assert_eq!(request(&c, 1).size, 0, "only UDP requests carry a size");
        let r = request(&c, 5);
        assert_eq!(
            (
                r.proto,
                r.host.as_str(),
                r.port,
                r.interval_us,
                r.timeout_us
            ),
            (HopProto::Tcp, "10.0.3.2", 7777, 1_000_000, 1_000_000)
        );
        let mut u = with(&["--size", "200"]);
        u[0] = "udp://[::1]:7777";
        let c = cfg(&u).unwrap();
        let r = request(&c, 1);
        assert_eq!((r.size, r.host.as_str()), (200, "::1"));
        let mut q = with(&["--insecure"]);
        q[0] = "quic://la:7778";
        assert!(cfg(&q).is_ok(), "--insecure is what the agent does anyway");
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let m = usage_msg(&["tcp://10.0.3.2:7777", "--from", "npt://10.0.1.2:7777"]);
        assert!(m.contains("--from needs --token"), "{m}");
        let m = usage_msg(&["tcp://a:1", "--from", "la:7777", "--token", "S"]);
        assert!(m.contains("--from \"la:7777\""), "{m}");
        assert!(usage_msg(&with(&["--raw"])).contains("--raw"));
        assert!(usage_msg(&with(&["--via", "socks5://p:1080"])).contains("--via"));
        assert!(usage_msg(&with(&["--ca", "x.pem"])).contains("--ca"));
        assert!(usage_msg(&with(&["--insecure"])).contains("quic://"));
        assert!(usage_msg(&with(&["--interval", "0"])).contains("--interval"));
        assert!(usage_msg(&with(&["--timeout", "2h"])).contains("--timeout"));
        assert!(usage_msg(&with(&["--timeout", "11s"])).contains("timeout 11000000 µs"));
        assert!(usage_msg(&with(&["--interval", "5ms"])).contains("interval 5000 µs"));
        let mut u = with(&["--size", "70000"]);
        u[0] = "udp://a:1";
        assert!(usage_msg(&u).contains("--size"));
        let mut e = with(&[]);
        e[4] = "";
        assert!(usage_msg(&e).contains("--token"));
    }

    #[test]
    fn batches_fit_the_agent_and_the_count() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        assert_eq!(batch(Some(5), s(1), s(1)), 5);
        assert_eq!(batch(Some(1000), ms(10), s(1)), 100, "at most MAX_ATTEMPTS");
        assert_eq!(batch(Some(1000), s(1), s(1)), 49, "49 s + 1 s timeout");
        assert_eq!(u64::from(batch(None, ms(200), s(1))), OPEN_BATCH);
        assert_eq!(batch(Some(3), s(60), s(10)), 1, "never 0");
        // Whatever the flags, a batch stays within the agent's default bounds.
        let limits = npt_server::hop_agent::HopLimits::default();
        for (i, t) in [(ms(10), s(1)), (s(1), s(10)), (ms(333), ms(1))] {
            let c = FromConfig {
                interval: i,
                timeout: t,
                ..cfg(&with(&[])).unwrap()
            };
            let r = request(&c, batch(Some(10_000), i, t));
            assert_eq!(limits.check(&r), Ok(()), "{i:?} {t:?}");
        }
    }

    #[test]
    fn failures_count_every_attempt_of_the_request_under_one_kind() {
        let mut t = Tally::default();
        let e = RemoteError::Refused {
            agent: "npt://la:7777".into(),
            target: "tcp://x:1".into(),
            status: hop::status::NOT_ALLOWED,
        };
        let line = record_failure(&mut t, &e, 1, 5);
        assert_eq!((t.sent, t.received, t.errors.get("config")), (5, 0, 5));
        assert!(line.starts_with("seq=1..5 config (the agent npt://la:7777 refused tcp://x:1"));
        let mut t = Tally::default();
        record_failure(
            &mut t,
            &RemoteError::Aborted {
                agent: "npt://la:7777".into(),
            },
            1,
            3,
        );
        assert_eq!(
            (t.sent, t.errors.total()),
            (3, 0),
            "given up: lost, not errors"
        );
        let one = record_failure(&mut Tally::default(), &e, 7, 1);
        assert!(one.starts_with("seq=7 config "), "{one}");
    }
}
