//! The socket half of `npt ping`: drives a [`Session`] with a TCP connect, a UDP echo or a
//! QUIC handshake per attempt. Waits are sliced to at most 100 ms so a Ctrl-C (counted into
//! the caller's [`Stop`]) is seen promptly: the first stops new attempts and lets those in
//! flight finish, the second gives them up.

use std::io;
use std::net::{SocketAddr, UdpSocket};

use npt_result::error::ErrorKind;
use npt_result::workload::Stop;
use npt_result::StopReason;
use npt_wire::auth::{Dir, SessionKey};
use std::time::{Duration, Instant};

use npt_wire::frame::HEADER_LEN;
use npt_wire::raw::RAW_HEADER_LEN;
use npt_wire::reflect;

pub use crate::frames::{decode, encode, far_end, notice};
use crate::frames::{flow_refused, refused_count};
use crate::session::{Event, Session, Tally};
use crate::{echo, setup, Config, PingError, Proto, Target};
use npt_client::source::Source;

const SLICE: Duration = Duration::from_millis(100);

/// What a finished run measured.
#[derive(Debug)]
pub struct Outcome {
    pub tally: Tally,
    /// The addresses the target resolved to.
    pub addrs: Vec<SocketAddr>,
    /// `count`, `signal` or `abort` (second signal).
    pub stopped_by: StopReason,
    /// `--setup`: its block's description (the tally holds its value).
    pub setup: Option<npt_result::stats::SetupMeta>,
}

/// Called for every settled attempt, with the address it went to.
pub type OnEvent<'a> = &'a mut dyn FnMut(&Event, SocketAddr);

/// Pings `cfg.target` until the count is reached or `stop` says so.
pub fn run(cfg: &Config, stop: &Stop, on: OnEvent) -> Result<Outcome, PingError> {
    let clock = Instant::now();
    let mut session = Session::new(cfg.count, dur_ns(cfg.interval), dur_ns(cfg.timeout), 0);
    if let Some(via) = &cfg.via {
        // Through a proxy: attempts go to the proxy, which resolves or connects the target.
        let proxy = Target {
            proto: Proto::Tcp,
            host: via.host.clone(),
            port: via.port,
        };
        let addrs = proxy.resolve()?;
        let (host, port) = (cfg.target.host.clone(), cfg.target.port);
        let flow = flow_id();
        let mut rec = cfg.setup.then(|| setup::Recorder::new(setup::plan(cfg)));
        let stopped_by = run_blocking(
            &mut session,
            addrs.get(..1).unwrap_or_default(),
            cfg,
            clock,
            stop,
            on,
            |a, seq, t| {
                if cfg.echo {
                    return echo::recorded(cfg, &mut rec, a, flow, seq, now_ns(clock), t);
                }
                npt_proxy::tcp_connect(via, &host, port, t)
                    .map(|_| None)
                    .map_err(|e| (e.kind(), format!("via {via}: {e}")))
            },
        )?;
        let mut tally = session.tally;
        let address = addrs.first().map(|a| format!("{a} (proxy)"));
        let via = Some(via.to_string());
        let setup;
        (tally.setup, setup) = rec
            .map(|r| r.finish(&cfg.target.to_string(), &address.unwrap_or_default(), via))
            .unzip();
        return Ok(Outcome {
            tally,
            addrs,
            stopped_by,
            setup,
        });
    }
    let addrs = cfg.target.resolve_from(&cfg.source)?;
    let flow = flow_id();
    let mut rec = cfg.setup.then(|| setup::Recorder::new(setup::plan(cfg)));
    let stopped_by = match cfg.target.proto {
        Proto::Tcp if cfg.echo => run_blocking(&mut session, &addrs, cfg, clock, stop, on, {
            |a, seq, t| echo::recorded(cfg, &mut rec, a, flow, seq, now_ns(clock), t)
        })?,
        Proto::Tcp => run_blocking(&mut session, &addrs, cfg, clock, stop, on, |a, _, t| {
            cfg.source
                .connect_timeout(a, t)
                .map(|_| None)
                .map_err(|e| (classify_io(&e), format!("{a}: {e}")))
        })?,
        Proto::Quic => {
            let mut q = crate::quic::Quic::new(cfg)?;
            let r = run_blocking(&mut session, &addrs, cfg, clock, stop, on, |a, _, t| {
                q.attempt(a, t).map(|()| None)
            });
            q.close();
            r?
        }
        Proto::Udp => run_udp(&mut session, &addrs, cfg, clock, stop, on)?,
    };
    let mut tally = session.tally;
    let address = addrs.first().map(|a| a.to_string()).unwrap_or_default();
    let setup;
    (tally.setup, setup) = rec
        .map(|r| r.finish(&cfg.target.to_string(), &address, None))
        .unzip();
    Ok(Outcome {
        tally,
        addrs,
        stopped_by,
        setup,
    })
}

pub(crate) fn dur_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX / 4)
}

pub(crate) fn now_ns(clock: Instant) -> u64 {
    dur_ns(clock.elapsed())
}

/// A socket error's kind, in the one vocabulary of every result (`refused`, `timeout`,
/// `unreachable`, `reset` …, else `io`).
pub fn classify_io(e: &io::Error) -> ErrorKind {
    npt_result::error::io_error_kind(e)
}

/// Applies the signal count: 1 stops new attempts, 2 abandons those in flight.
pub(crate) fn check_stop(session: &mut Session, stop: &Stop) -> Option<StopReason> {
    match stop.level() {
        0 => None,
        1 => {
            session.stop();
            Some(StopReason::Signal)
        }
        _ => {
            session.abandon();
            Some(StopReason::Abort)
        }
    }
}

/// An answered `--echo` attempt: its connect part (recorded apart, beside the whole), the
/// far end that echoed ([`far_end`]), and with `--setup` when its echo was answered (the
/// attempt went on with a second echo after it, which the ping's figure leaves out).
#[derive(Clone, Copy, Debug)]
pub struct Echoed {
    pub connect: Duration,
    pub far_end: &'static str,
    pub answered: Option<Instant>,
}

/// One attempt at a time (TCP connect, QUIC handshake, `--echo`): `attempt(addr, seq,
/// time_left)` blocks, and returns what an `--echo` attempt found ([`Echoed`]). Each attempt tries the host's addresses in turn, starting with the one
/// that answered last.
// NO-PANIC: `addrs` is checked non-empty on entry, and every index into it is taken
// `% addrs.len()` (or is 0).
#[allow(clippy::indexing_slicing)]
fn run_blocking(
    session: &mut Session,
    addrs: &[SocketAddr],
    cfg: &Config,
    clock: Instant,
    stop: &Stop,
    on: OnEvent,
    mut attempt: impl FnMut(SocketAddr, u64, Duration) -> Result<Option<Echoed>, (ErrorKind, String)>,
) -> Result<StopReason, PingError> {
    if addrs.is_empty() {
        return Err(PingError::NoAddress(cfg.target.host.clone()));
    }
    let mut stopped_by = StopReason::Count;
    let mut preferred = 0usize;
    loop {
        if let Some(why) = check_stop(session, stop) {
            stopped_by = why;
        }
        let Some(due) = session.due() else { break };
        let now = now_ns(clock);
        if now < due {
            std::thread::sleep(Duration::from_nanos(due - now).min(SLICE));
            continue;
        }
        let (seq, given_up) = session.on_sent(now);
        for ev in &given_up {
            on(ev, addrs[preferred]);
        }
        let started = Instant::now();
        let mut result: Result<Option<Echoed>, _> =
            Err((ErrorKind::Timeout, "no answer".to_string()));
        let mut used = preferred;
        for k in 0..addrs.len() {
            let Some(left) = cfg.timeout.checked_sub(started.elapsed()) else {
                break;
            };
            if left.is_zero() {
                break;
            }
            used = (preferred + k) % addrs.len();
            if k > 0 {
                session.restart(seq, now_ns(clock));
            }
            result = attempt(addrs[used], seq, left);
            if result.is_ok() {
                break;
            }
        }
        let ev = match result {
            Ok(echoed) => {
                preferred = used;
                let at = match echoed.and_then(|e| e.answered) {
                    Some(t) => dur_ns(t.saturating_duration_since(clock)),
                    None => now_ns(clock),
                };
                let ev = session.on_reply(seq, at);
                if let (Some(e), Some(Event::Reply { rtt_ns, .. })) = (echoed, &ev) {
                    let c = dur_ns(e.connect).min(*rtt_ns);
                    session.tally.connect.record(c);
                    session.tally.echo.record(rtt_ns - c);
                    session.tally.answered.count(e.far_end);
                }
                ev
            }
            Err((kind, detail)) => session.on_error(seq, kind, detail),
        };
        if let Some(ev) = ev {
            on(&ev, addrs[used]);
        }
    }
    Ok(stopped_by)
}

/// UDP echo: attempts overlap when the timeout is longer than the interval. Until the first
/// answer, an address that times out or refuses hands over to the host's next address.
// NO-PANIC: `addrs` is checked non-empty on entry, `socks` and `keys` have one entry per address,
// and `cur` is always taken `% addrs.len()`; `recv` returns `n <= inb.len()`.
#[allow(clippy::indexing_slicing)]
fn run_udp(
    session: &mut Session,
    addrs: &[SocketAddr],
    cfg: &Config,
    clock: Instant,
    stop: &Stop,
    on: OnEvent,
) -> Result<StopReason, PingError> {
    if addrs.is_empty() {
        return Err(PingError::NoAddress(cfg.target.host.clone()));
    }
    let flow = flow_id();
    let size = cfg
        .size
        .max(if cfg.raw { RAW_HEADER_LEN } else { HEADER_LEN });
    let mut out = vec![0u8; size];
    let mut inb = vec![0u8; 65_536];
    let mut socks: Vec<Option<UdpSocket>> = addrs.iter().map(|_| None).collect();
    // `--token`: each socket's session key (the handshake when the socket opens).
    let mut keys: Vec<Option<SessionKey>> = addrs.iter().map(|_| None).collect();
    let mut cur = 0usize;
    let mut answered = false;
    let mut stopped_by = StopReason::Count;
    // After the last attempt, while some still wait and the server has refused some: flow
    // queries, so its final count settles attempts it refused without a notice (the notices
    // are rate-limited).
    let mut query = [0u8; reflect::FLOW_QUERY_LEN];
    let (mut queries, mut next_query) = (0u64, 0u64);
    loop {
        if let Some(why) = check_stop(session, stop) {
            stopped_by = why;
        }
        let now = now_ns(clock);
        for ev in session.expire(now) {
            on(&ev, addrs[cur]);
            if !answered {
                cur = (cur + 1) % addrs.len();
            }
        }
        if session.finished() {
            break;
        }
        if socks[cur].is_none() {
            let sock = udp_socket(addrs[cur], &cfg.source)?;
            if let Some(secret) = &cfg.token {
                let hs = cfg.handshake;
                match npt_client::auth::udp_within(&sock, secret, hs.bound) {
                    Ok(key) => keys[cur] = Some(key),
                    // Nothing answered the Hello, or a plain echo returned it: echo without it
                    // (`Handshake::plain_if_silent`).
                    Err(e)
                        if hs.plain_if_silent
                            && (e.kind() == io::ErrorKind::TimedOut
                                || npt_client::auth::is_returned_unchanged(&e)) => {}
                    Err(e) => return Err(PingError::Auth(addrs[cur], e)),
                }
            }
            socks[cur] = Some(sock);
            // The handshake took time: `now` is stale (an attempt sent "at" it would count
            // the handshake in its RTT, or time out at once).
            continue;
        }
        let key = keys[cur].as_ref();
        let Some(sock) = socks[cur].as_ref() else {
            continue; // opened just above
        };
        if session.due().is_some_and(|d| now >= d) {
            let (seq, given_up) = session.on_sent(now);
            for ev in &given_up {
                on(ev, addrs[cur]);
            }
            encode(&mut out, cfg, flow, seq, now)
                .map_err(|e| PingError::Socket(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
            if let Some(k) = key {
                // Cannot fail: `out` holds at least a header.
                let _ = k.seal(Dir::ToServer, &mut out);
            }
            // A query only once the last attempt had its chance to be answered or noticed.
            next_query = now + QUERY_EVERY_NS;
            if let Err(e) = sock.send(&out) {
                if let Some(ev) =
                    session.on_error(seq, classify_io(&e), format!("{}: {e}", addrs[cur]))
                {
                    on(&ev, addrs[cur]);
                }
            }
            continue;
        }
        let querying =
            !cfg.raw && session.due().is_none() && session.waiting() && session.tally.refused > 0;
        if querying && now >= next_query {
            if reflect::write_query(&mut query, flow, queries, now).is_ok() {
                if let Some(k) = key {
                    let _ = k.seal(Dir::ToServer, &mut query);
                }
                // Lost or refused, it is asked again; never answered (an older server), the
                // attempts time out as before.
                let _ = sock.send(&query);
            }
            queries += 1;
            next_query = now + QUERY_EVERY_NS;
        }
        let wait = session
            .next_wake()
            .map(|w| if querying { w.min(next_query) } else { w })
            .map_or(SLICE, |w| Duration::from_nanos(w.saturating_sub(now)))
            .clamp(Duration::from_micros(100), SLICE);
        sock.set_read_timeout(Some(wait))
            .map_err(PingError::Socket)?;
        match sock.recv(&mut inb) {
            Ok(n) => {
                let t = now_ns(clock);
                let genuine = key.is_none_or(|k| k.open(Dir::ToClient, &inb[..n]).is_ok());
                if let Some(total) = flow_refused(&inb[..n], flow).filter(|_| genuine) {
                    for ev in session.settle_refused_total(u64::MAX, total) {
                        on(&ev, addrs[cur]);
                    }
                } else if let Some((seq, why, count)) = notice(&inb[..n], cfg.raw, flow) {
                    // A refusal notice (unsealed: its tag is zeroed) answers the attempt.
                    answered = true;
                    for ev in session.on_notice(seq, why, count) {
                        on(&ev, addrs[cur]);
                    }
                } else if let Some(seq) = decode(&inb[..n], cfg.raw, flow).filter(|_| genuine) {
                    if let Some(ev) = session.on_reply(seq, t) {
                        if matches!(ev, Event::Reply { .. }) {
                            answered = true;
                            session.tally.answered.count(far_end(&inb[..n], cfg.raw));
                        }
                        on(&ev, addrs[cur]);
                    }
                    // The server's refused count, in the reply's stamps.
                    if let Some(c) = refused_count(&inb[..n]) {
                        for ev in session.settle_refused(seq, c) {
                            on(&ev, addrs[cur]);
                        }
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                // An ICMP error on the connected socket: it answers for the oldest attempt.
                if let Some(seq) = session.oldest_pending() {
                    let detail = format!("{}: {e}", addrs[cur]);
                    if let Some(ev) = session.on_error(seq, classify_io(&e), detail) {
                        on(&ev, addrs[cur]);
                    }
                }
                if !answered {
                    cur = (cur + 1) % addrs.len();
                }
            }
        }
    }
    Ok(stopped_by)
}

fn udp_socket(to: SocketAddr, source: &Source) -> Result<UdpSocket, PingError> {
    source.udp_connected(to).map_err(PingError::Socket)
}

pub(crate) fn flow_id() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    t ^ std::process::id().rotate_left(16)
}

/// How long the flow queries after the last attempt are apart.
const QUERY_EVERY_NS: u64 = 100_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_classified() {
        let e = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(classify_io(&e).name(), "refused");
        assert_eq!(
            classify_io(&io::Error::from(io::ErrorKind::TimedOut)).name(),
            "timeout"
        );
        assert_eq!(
            classify_io(&io::Error::from_raw_os_error(libc::EHOSTUNREACH)).name(),
            "unreachable"
        );
    }
}

#[cfg(test)]
mod multi_address {
    use super::*;

    /// A host whose first address refuses: every attempt is answered by the second, and the
    /// refused first try neither counts as an error nor inflates the RTT.
    #[test]
    fn tcp_tries_each_address_and_keeps_the_one_that_answered() {
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open_addr = open.local_addr().unwrap();
        let cfg = Config {
            count: Some(3),
            interval: Duration::from_millis(5),
            ..Config::for_test(&format!("tcp://{open_addr}"))
        };
        let mut session = Session::new(cfg.count, 5_000_000, 1_000_000_000, 0);
        let mut seen = Vec::new();
        let mut tries = Vec::new();
        run_blocking(
            &mut session,
            &[closed, open_addr],
            &cfg,
            Instant::now(),
            &Stop::new(),
            &mut |ev, a| seen.push((ev.clone(), a)),
            |a, _, t| {
                tries.push(a);
                std::net::TcpStream::connect_timeout(&a, t)
                    .map(|_| None)
                    .map_err(|e| (classify_io(&e), e.to_string()))
            },
        )
        .unwrap();
        assert_eq!(tries, vec![closed, open_addr, open_addr, open_addr]);
        assert_eq!(seen.len(), 3);
        assert!(seen
            .iter()
            .all(|(ev, a)| matches!(ev, Event::Reply { .. }) && *a == open_addr));
        assert_eq!(session.tally.received, 3);
        assert!(session.tally.errors.is_empty());
    }
}
