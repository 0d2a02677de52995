//! `npt ping TARGET --from npt://AGENT:PORT --token S`: the hop RTT measured by a hop agent
//! (`npt serve --hop-agent`) instead of from here — the segment between two relays that this
//! host cannot see. The agent measures as `npt ping` does (TCP connect, UDP echo, QUIC
//! handshake) and sends one sample per attempt; this side prints them as `npt ping` prints its
//! own, and writes the same `ping` result with `measured_from` set.
//!
//! Attempts go to the agent in requests of at most [`hop::MAX_ATTEMPTS`] that each stay well
//! inside the agent's default time bound ([`BATCH_TIME`]); `--count 0` asks in batches of
//! [`OPEN_BATCH`] until Ctrl-C. A request the agent refuses, or an agent that is dead or
//! silent, fails that request's attempts under one error kind and ends the run (exit 1).

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use npt_ping::remote::{host_port, Agent, Conn, RemoteError};
use npt_ping::session::Tally;
use npt_ping::{Proto, Target};
use npt_result::StopReason;
use npt_wire::hop::{self, HopProto, HopReply, HopRequest, Sample};

use crate::ping::{finish, positive, Finished, PingArgs};
use crate::usage;

/// The longest one request may take (attempts × interval + timeout): the agent refuses more
/// than 60 s by default.
pub const BATCH_TIME: Duration = Duration::from_secs(50);
/// Attempts per request when the count is open (`--count 0`): lines come every few intervals.
pub const OPEN_BATCH: u64 = 10;

/// `--from`'s validated flags.
#[derive(Clone, Debug)]
pub struct FromConfig {
    pub target: Target,
    pub agent: Agent,
    pub token: String,
    pub count: Option<u64>,
    pub interval: Duration,
    pub timeout: Duration,
    /// UDP datagram size, header included (only UDP requests carry it).
    pub size: u16,
}

pub fn config(a: &PingArgs) -> anyhow::Result<FromConfig> {
    let from = a.from.as_deref().unwrap_or_default();
    let agent = Agent::parse(from).ok_or_else(|| {
        usage!("--from {from:?}: expected npt://HOST:PORT (an `npt serve --hop-agent`)")
    })?;
    let target = Target::parse(&a.target).map_err(|e| usage!("{e}"))?;
    let token = match a.token.as_deref() {
        None => {
            return Err(usage!(
                "--from needs --token: a hop agent answers only clients that prove its secret"
            ))
        }
        Some("") => return Err(usage!("--token must not be empty")),
        Some(t) => t.to_string(),
    };
    let interval = positive("--interval", &a.interval)?;
    let timeout = positive("--timeout", &a.timeout)?;
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
    if a.ca.is_some() {
        return Err(usage!(
            "--ca does not combine with --from: the agent accepts any certificate (it measures \
             the handshake's time)"
        ));
    }
    if a.insecure && target.proto != Proto::Quic {
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

/// Attempts in the next request: at most what is left, [`hop::MAX_ATTEMPTS`], and what fits
/// in [`BATCH_TIME`]; [`OPEN_BATCH`] when the count is open. At least 1.
pub fn batch(left: Option<u64>, interval: Duration, timeout: Duration) -> u16 {
    let room = BATCH_TIME.saturating_sub(timeout).as_nanos() / interval.as_nanos().max(1);
    let fits = u64::try_from(room).unwrap_or(u64::MAX);
    let n = fits
        .min(u64::from(hop::MAX_ATTEMPTS))
        .min(left.unwrap_or(OPEN_BATCH));
    u16::try_from(n.max(1)).unwrap_or(1)
}

fn request(cfg: &FromConfig, attempts: u16) -> HopRequest {
    let us = |d: Duration| u32::try_from(d.as_micros()).unwrap_or(u32::MAX);
    HopRequest {
        proto: match cfg.target.proto {
            Proto::Tcp => HopProto::Tcp,
            Proto::Udp => HopProto::Udp,
            Proto::Quic => HopProto::Quic,
        },
        host: cfg.target.host.clone(),
        port: cfg.target.port,
        attempts,
        interval_us: us(cfg.interval),
        timeout_us: us(cfg.timeout),
        size: if cfg.target.proto == Proto::Udp {
            cfg.size
        } else {
            0
        },
    }
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

/// Adds a reply's samples to `tally` (attempts `first..`), and its lines to `lines`.
fn record(tally: &mut Tally, reply: &HopReply, first: u64, agent: &Agent, lines: &mut Vec<String>) {
    let at = reply
        .addr
        .map_or_else(|| "?".to_string(), |a| a.to_string());
    for (seq, s) in (first..).zip(&reply.samples) {
        tally.sent += 1;
        match s {
            Sample::Rtt(ns) => {
                tally.received += 1;
                tally.rtt.record(*ns);
                lines.push(format!(
                    "seq={seq} from {at} time={:.3} ms",
                    *ns as f64 / 1e6
                ));
            }
            Sample::Failed(kind) => {
                let detail = format!("{at}, measured from {agent}");
                let d = detail.clone();
                tally.errors.record(kind, move || d);
                lines.push(format!("seq={seq} {kind} ({detail})"));
            }
        }
    }
}

/// Fails `n` attempts from `first` under the error's kind (they were asked for and got no
/// measurement), or leaves them lost when the run was given up.
fn record_failure(tally: &mut Tally, e: &RemoteError, first: u64, n: u16) -> String {
    tally.sent += u64::from(n);
    let last = first + u64::from(n).max(1) - 1;
    let seqs = if last > first {
        format!("seq={first}..{last}")
    } else {
        format!("seq={first}")
    };
    if matches!(e, RemoteError::Aborted { .. }) {
        return format!("{seqs} given up ({e})");
    }
    let kind = e.kind();
    for _ in 0..n {
        tally.errors.record(kind.name(), || e.to_string());
    }
    format!("{seqs} {kind} ({e})")
}

pub fn run(a: PingArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    let signals = crate::ping::signals()?;
    let mut text = crate::ping::text_sink(&a);
    writeln!(
        text,
        "PING {} measured from {}: {}",
        cfg.target,
        cfg.agent,
        what(&cfg)
    )?;
    text.flush()?;
    let started = SystemTime::now();
    let started_mono = std::time::Instant::now();
    let (tally, addrs, stopped_by) = measure(&cfg, &signals, a.quiet, &mut *text)?;
    let mut body =
        npt_ping::result::body(&cfg.target.to_string(), cfg.target.proto, &addrs, &tally);
    if body.addresses.is_empty() {
        // Nothing came back to say where the agent measured: the target as written.
        body.addresses = vec![host_port(&cfg.target.host, cfg.target.port)];
    }
    body.measured_from = Some(cfg.agent.to_string());
    let run = Finished {
        config: config_json(&cfg),
        body,
        stopped_by,
        started,
        started_mono,
    };
    finish(&a, &mut *text, run)
}

/// Asks the agent batch after batch until the count, a signal or a failure.
fn measure(
    cfg: &FromConfig,
    signals: &AtomicUsize,
    quiet: bool,
    text: &mut dyn Write,
) -> anyhow::Result<(Tally, Vec<SocketAddr>, StopReason)> {
    let mut tally = Tally::default();
    let mut addrs: Vec<SocketAddr> = Vec::new();
    let mut conn: Option<Conn> = None;
    let stopped_by = loop {
        match signals.load(Ordering::SeqCst) {
            0 => {}
            1 => break StopReason::Signal,
            _ => break StopReason::Abort,
        }
        let left = cfg.count.map(|c| c.saturating_sub(tally.sent));
        if left == Some(0) {
            break StopReason::Count;
        }
        let n = batch(left, cfg.interval, cfg.timeout);
        let first = tally.sent + 1;
        let asked = match conn.as_mut() {
            Some(c) => Ok(c),
            None => Conn::open(&cfg.agent, &cfg.token).map(|c| conn.insert(c)),
        }
        .and_then(|c| c.ask(&request(cfg, n), signals));
        let mut lines = Vec::new();
        let ended = match asked {
            Ok(reply) => {
                if let Some(a) = reply.addr.filter(|a| !addrs.contains(a)) {
                    addrs.push(a);
                }
                record(&mut tally, &reply, first, &cfg.agent, &mut lines);
                None
            }
            Err(e) => {
                let line = record_failure(&mut tally, &e, first, n);
                if quiet {
                    eprintln!("npt: {e}");
                } else {
                    lines.push(line);
                }
                let aborted = matches!(e, RemoteError::Aborted { .. });
                Some(if aborted {
                    StopReason::Abort
                } else {
                    StopReason::Count
                })
            }
        };
        if !quiet {
            for l in lines {
                writeln!(text, "{l}")?;
            }
            text.flush()?;
        }
        if let Some(why) = ended {
            break why;
        }
    };
    Ok((tally, addrs, stopped_by))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: PingArgs,
    }

    fn cfg(args: &[&str]) -> anyhow::Result<FromConfig> {
        let t = T::try_parse_from(std::iter::once("ping").chain(args.iter().copied()))?;
        config(&t.a)
    }

    fn usage_msg(args: &[&str]) -> String {
        let e = cfg(args).expect_err("must be refused");
        assert!(e.downcast_ref::<crate::UsageError>().is_some(), "{e}");
        e.to_string()
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
