//! The TCP driver: one stream per flow, connected directly or through a proxy (`--via`),
//! with connect and first-packet times, the kernel's view of each connection (`TCP_INFO`,
//! [`KernelView`]) and the raw stream resynchronised on loss of step.
//!
//! Two ends are named for what they mean: a first connect that is refused ends the flow at
//! once (nothing listens there: retrying for seconds would only delay saying so), and a
//! connection accepted and then closed before a single reply byte came back on it is
//! `closed_unanswered` (a relay or forwarder accepts by itself; closing without an answer says
//! nothing behind it answered), apart from `closed`/`reset` after answers.

use super::*;
use crate::probe::kernel::KernelView;
use npt_netio::tcpinfo::tcp_info;
use npt_result::error::{unanswered_close, unanswered_close_msg, ErrorKind, ProxyErrorKind};

enum TcpState {
    Connecting {
        sock: Socket,
        started: u64,
    },
    Connected {
        sock: TcpStream,
    },
    Waiting {
        retry_at: u64,
    },
    /// Lost its connection and no longer sending: only waiting out the loss timeout.
    Disconnected,
    Closed,
}

struct TcpFlow {
    index: usize,
    cfg: SessionConfig,
    session: Option<Session>,
    state: TcpState,
    times: TcpTimes,
    attempts: u32,
    out: Vec<u8>,
    out_pos: usize,
    inbuf: ReplyStream,
    errors_before_connect: npt_stats::ErrorCounts,
    kernel: KernelView,
    /// Whether any reply byte came back on the current connection ([`unanswered_close`]).
    answered: bool,
    /// What the flow connects to, as its errors name it: the target's address (through
    /// `--via`, as the proxy is asked to reach it).
    peer: String,
    /// The runner was told the send phase ended ([`send_ended`]).
    told_send_end: bool,
}

/// Connect attempts before a flow with no time limit gives up on a dead target.
const MAX_CONNECT_ATTEMPTS: u32 = 10;
const CONNECT_TIMEOUT_NS: u64 = 3_000_000_000;
const RETRY_NS: u64 = 1_000_000_000;
/// Frames queued ahead of the socket before sends wait (and show up as behind schedule).
const MAX_QUEUED: usize = 256 * 1024;

fn start_connect(target: SocketAddr, source: &Source) -> io::Result<Socket> {
    let s = Socket::new(
        Domain::for_address(target),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    // Marked and bound before the SYN: every packet of the connection carries both.
    source.prepare(&s, target, false)?;
    s.set_nonblocking(true)?;
    s.set_nodelay(true)?;
    match s.connect(&target.into()) {
        Ok(()) => Ok(s),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(s),
        Err(e) => Err(e),
    }
}

impl TcpFlow {
    /// Reads `TCP_INFO` of the connected socket when a reading is due, or always with `last`
    /// (the connection is about to end: its last reading closes its account).
    fn read_kernel(&mut self, now: u64, last: bool) {
        if let TcpState::Connected { sock } = &self.state {
            if last || self.kernel.due(now) {
                // A socket that cannot say (it never can fail on a TCP socket) is not read.
                if let Ok(i) = tcp_info(sock.as_raw_fd()) {
                    self.kernel.record(now, i);
                }
            }
            if last {
                self.kernel.end_connection();
            }
        }
    }

    /// The flow's connection is up (its first, or a reconnect): its session starts, or learns
    /// that packets in flight are held again while this connection lives.
    fn connected(&mut self, now: u64, stream: TcpStream) {
        let s = self.session.get_or_insert_with(|| {
            let mut cfg = self.cfg.clone();
            cfg.start = now;
            Session::new(cfg)
        });
        s.connection_up(now);
        self.state = TcpState::Connected { sock: stream };
        self.answered = false;
    }

    fn fail(&mut self, now: u64, e: &io::Error, what: &str) {
        self.fail_kind(now, classify(e), format!("{what}: {e}"));
    }

    /// A connection that ended: EOF or a socket error while reading or writing. With no reply
    /// byte on it yet, whatever accepted it closed without answering ([`unanswered_close`]).
    fn fail_conn(&mut self, now: u64, e: &io::Error, what: &str) {
        match unanswered_close(e, self.answered) {
            ErrorKind::ClosedUnanswered => {
                let msg = format!("{what}: {}", unanswered_close_msg(&self.peer, e));
                self.fail_kind(now, ErrorKind::ClosedUnanswered, msg);
            }
            _ => self.fail(now, e, what),
        }
    }

    /// A first connection refused ends the flow at once: nothing listens at the target (or
    /// the proxy, or the proxy's target), and retrying would only delay saying so. A refusal
    /// after the flow had its connection (a restarting relay) is retried while it sends.
    fn refused_first(&mut self, now: u64, kind: ErrorKind, msg: String) {
        self.fail_kind(now, kind, msg);
        if self.session.is_none() {
            self.state = TcpState::Closed;
        }
    }

    fn fail_kind(&mut self, now: u64, kind: ErrorKind, msg: String) {
        self.read_kernel(now, true);
        // Whatever was queued or half-read belonged to the old stream.
        self.out.clear();
        self.out_pos = 0;
        self.inbuf.clear();
        match &mut self.session {
            Some(s) => {
                // Packets in flight on the broken stream never come back: they are lost at
                // their loss timeout (no longer held). The session goes on; the driver
                // reconnects while it sends.
                s.record_error(kind, || msg);
                s.connection_down(now);
                self.state = if s.is_sending() {
                    TcpState::Waiting {
                        retry_at: now + RETRY_NS,
                    }
                } else {
                    TcpState::Disconnected
                };
            }
            None => {
                self.errors_before_connect.record(kind.name(), || msg);
                self.attempts += 1;
                let time_left = self.cfg.send_until.is_some_and(|u| now + RETRY_NS < u);
                if time_left
                    || (self.cfg.send_until.is_none() && self.attempts < MAX_CONNECT_ATTEMPTS)
                {
                    self.state = TcpState::Waiting {
                        retry_at: now + RETRY_NS,
                    };
                } else {
                    self.state = TcpState::Closed;
                }
            }
        }
    }

    /// While disconnected, a flow's schedule goes on: packets that fall due are counted as sent
    /// (and so, at their deadline, lost), as a user's packets would be.
    fn run_disconnected(&mut self, now: u64, scratch: &mut [u8]) {
        if let Some(s) = self.session.as_mut() {
            while s.poll_transmit(now, scratch).is_some() {}
            s.handle_timeout(now);
            if let (TcpState::Waiting { .. }, false) = (&self.state, s.is_sending()) {
                self.state = TcpState::Disconnected;
            }
        }
    }
}

/// A direct connect that failed: refused ends a flow that never connected
/// ([`TcpFlow::refused_first`]), saying nothing listens there; any other failure is retried.
fn connect_failed(f: &mut TcpFlow, now: u64, e: &io::Error) {
    match classify(e) {
        ErrorKind::Refused => {
            let msg = format!("connect: refused: nothing listens at {} ({e})", f.peer);
            f.refused_first(now, ErrorKind::Refused, msg);
        }
        _ => f.fail(now, e, "connect"),
    }
}

/// A TCP flow's connection through a proxy: the proxy and the target as the user wrote it.
#[derive(Clone, Debug)]
pub struct TcpVia {
    pub via: npt_proxy::Via,
    pub target: String,
}

/// With a secret, the handshake on a new connection; its key goes to the flow's config (and
/// session, after a reconnect). `Ok(now)` after it; on failure the flow has recorded the
/// handshake's error (as `users` does: its socket error's kind) and is waiting to retry, or
/// closed if it never had a session.
fn authenticate(
    f: &mut TcpFlow,
    stream: &mut TcpStream,
    secret: Option<&str>,
    clock: &Clock,
) -> Result<u64, ()> {
    let Some(secret) = secret else {
        return Ok(clock.now());
    };
    match npt_client::auth::tcp(stream, secret) {
        Ok(key) => {
            if let Some(s) = f.session.as_mut() {
                s.set_auth(key.clone());
            }
            f.cfg.auth = Some(key);
            Ok(clock.now())
        }
        Err(e) => {
            f.fail_kind(clock.now(), classify(&e), format!("token handshake: {e}"));
            if f.session.is_none() {
                f.state = TcpState::Closed;
            }
            Err(())
        }
    }
}

fn connect_via(
    f: &mut TcpFlow,
    v: &TcpVia,
    target: SocketAddr,
    secret: Option<&str>,
    clock: &Clock,
) {
    let (host, port) = split_target(&v.target, target);
    let timeout = Duration::from_nanos(CONNECT_TIMEOUT_NS);
    let tunnel = npt_proxy::tcp_connect(&v.via, &host, port, timeout).and_then(|(s, p)| {
        s.set_nonblocking(true)?;
        Ok((s, p))
    });
    let now = clock.now();
    match tunnel {
        Ok((mut stream, phases)) => {
            if f.session.is_none() {
                f.times.connect_ns = Some(now - f.times.connect_start);
                f.times.proxy = Some(phases);
            }
            if let Ok(now) = authenticate(f, &mut stream, secret, clock) {
                f.connected(now, stream);
            }
        }
        Err(e) => {
            let kind = e.kind();
            let msg = format!("via {}: {e}", v.via);
            if matches!(
                kind,
                ErrorKind::Proxy(ProxyErrorKind::Refused | ProxyErrorKind::TargetRefused)
            ) {
                f.refused_first(now, kind, msg);
                return;
            }
            f.fail_kind(now, kind, msg);
            // Credentials, rulesets and unsupported commands do not change by retrying.
            let permanent = matches!(
                kind,
                ErrorKind::Proxy(
                    ProxyErrorKind::AuthFailed
                        | ProxyErrorKind::Denied
                        | ProxyErrorKind::Unsupported
                ) | ErrorKind::Config
            );
            if permanent && f.session.is_none() {
                f.state = TcpState::Closed;
            }
        }
    }
}

/// Drives TCP flows until all are done. `flows`: (flow index, session config); each connects
/// first (directly, or through `via`), and its schedule starts when the connection is up.
/// `secret` (`--token`): each connection does the keyed handshake first (blocking this thread
/// for at most [`npt_client::auth::HANDSHAKE_TIMEOUT`]); a failed one is an `auth` error, and ends
/// a flow that never got its session.
/// Where the TCP flows connect, and from where (`--bind`, `--dscp`).
#[derive(Clone, Copy, Debug)]
pub struct TcpTarget {
    pub addr: SocketAddr,
    pub source: Source,
}

pub fn run_tcp(
    to: TcpTarget,
    via: Option<TcpVia>,
    secret: Option<String>,
    flows: Vec<(usize, SessionConfig)>,
    clock: Clock,
    stop: Arc<Stop>,
    tx: Sender<Event>,
) {
    npt_netio::tighten_timer_slack();
    let target = to.addr;
    let mut flows: Vec<TcpFlow> = flows
        .into_iter()
        .map(|(index, cfg)| {
            let now = clock.now();
            let size = cfg.size;
            TcpFlow {
                index,
                cfg,
                session: None,
                state: TcpState::Waiting { retry_at: now },
                times: TcpTimes {
                    connect_start: now,
                    connect_ns: None,
                    first_echo_ns: None,
                    proxy: None,
                },
                attempts: 0,
                out: Vec::new(),
                out_pos: 0,
                inbuf: ReplyStream::new(size),
                errors_before_connect: Default::default(),
                kernel: KernelView::new(if via.is_some() {
                    npt_result::tcpinfo::SCOPE_PROXY
                } else {
                    npt_result::tcpinfo::SCOPE_TARGET
                }),
                answered: false,
                told_send_end: false,
                peer: via
                    .as_ref()
                    .map_or_else(|| target.to_string(), |v| v.target.clone()),
            }
        })
        .collect();
    let mut ready: Vec<Ready> = Vec::new();
    let mut fds: Vec<RawFd> = Vec::new();
    let mut want_write: Vec<bool> = Vec::new();
    let mut sent_done = vec![false; flows.len()];
    let mut buf = vec![0u8; 64 * 1024];
    let (mut offset, mut offset_at) = (clock.wall_offset(), clock.now());
    loop {
        let mut deadline: Option<u64> = None;
        if clock.now().saturating_sub(offset_at) >= WALL_REFRESH_NS {
            (offset, offset_at) = (clock.wall_offset(), clock.now());
        }
        let mut at = |t: u64| deadline = Some(deadline.map_or(t, |d: u64| d.min(t)));
        fds.clear();
        want_write.clear();
        for (fi, f) in flows.iter_mut().enumerate() {
            if sent_done[fi] {
                continue;
            }
            let now = clock.now();
            let level = stop.level();
            // Connection management: a fresh connect is checked in the same step.
            if let TcpState::Waiting { retry_at } = f.state {
                if level > 0 {
                    f.state = if f.session.is_some() {
                        TcpState::Disconnected
                    } else {
                        TcpState::Closed
                    };
                } else if now >= retry_at {
                    if f.attempts == 0 {
                        f.times.connect_start = now;
                    }
                    match &via {
                        None => match start_connect(target, &to.source) {
                            Ok(sock) => f.state = TcpState::Connecting { sock, started: now },
                            Err(e) => connect_failed(f, now, &e),
                        },
                        // The handshake blocks this thread for at most the connect timeout
                        // (npt_proxy::connect); the tunnel is then driven like any socket.
                        Some(v) => connect_via(f, v, target, secret.as_deref(), &clock),
                    }
                } else {
                    at(retry_at);
                }
            }
            if let TcpState::Connecting { sock, started } = &f.state {
                let started = *started;
                let now = clock.now();
                match sock.take_error() {
                    Ok(Some(e)) | Err(e) => connect_failed(f, now, &e),
                    Ok(None) => {
                        if sock.peer_addr().is_ok() {
                            let TcpState::Connecting { sock, .. } =
                                std::mem::replace(&mut f.state, TcpState::Closed)
                            else {
                                unreachable!("matched above")
                            };
                            let mut stream: TcpStream = sock.into();
                            if f.session.is_none() {
                                f.times.connect_ns = Some(now - f.times.connect_start);
                            }
                            if let Ok(now) = authenticate(f, &mut stream, secret.as_deref(), &clock)
                            {
                                f.connected(now, stream);
                            }
                        } else if level > 0 {
                            f.state = if f.session.is_some() {
                                TcpState::Disconnected
                            } else {
                                TcpState::Closed
                            };
                        } else if now - started > CONNECT_TIMEOUT_NS {
                            let e = io::Error::new(io::ErrorKind::TimedOut, "no answer to SYN");
                            f.fail(now, &e, "connect");
                        } else {
                            fds.push(sock.as_raw_fd());
                            want_write.push(true);
                            at(started + CONNECT_TIMEOUT_NS);
                        }
                    }
                }
            }
            if !matches!(f.state, TcpState::Connected { .. } | TcpState::Closed) {
                if let Some(s) = f.session.as_mut() {
                    apply_stop(s, &stop, now);
                }
                f.run_disconnected(clock.now(), &mut buf);
                if let Some(t) = f.session.as_ref().and_then(|s| s.poll_timeout()) {
                    at(t);
                }
            }
            // Data. The clock is read again: a connection that just came up sends its first
            // packet in this same step (its schedule starts at the connect time).
            let now = clock.now();
            // Before this step's writes: a new connection's baseline precedes its first packet.
            f.read_kernel(now, false);
            if let TcpState::Connected { sock } = &mut f.state {
                let Some(s) = f.session.as_mut() else {
                    unreachable!("a flow is Connected only after its session exists")
                };
                apply_stop(s, &stop, now);
                s.set_wall_offset(offset);
                let size = f.cfg.size;
                while f.out.len() - f.out_pos < MAX_QUEUED {
                    let start = f.out.len();
                    f.out.resize(start + size, 0);
                    match s.poll_transmit(now, &mut f.out[start..]) {
                        Some(n) => f.out.truncate(start + n),
                        None => {
                            f.out.truncate(start);
                            break;
                        }
                    }
                }
                let mut broken: Option<(io::Error, &str)> = None;
                while f.out_pos < f.out.len() {
                    match sock.write(&f.out[f.out_pos..]) {
                        Ok(0) => {
                            broken = Some((io::ErrorKind::WriteZero.into(), "write"));
                            break;
                        }
                        Ok(n) => f.out_pos += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            broken = Some((e, "write"));
                            break;
                        }
                    }
                }
                if f.out_pos == f.out.len() {
                    f.out.clear();
                    f.out_pos = 0;
                }
                if broken.is_none() {
                    loop {
                        match sock.read(&mut buf) {
                            Ok(0) => {
                                if !s.is_done() {
                                    broken = Some((io::ErrorKind::UnexpectedEof.into(), "read"));
                                }
                                break;
                            }
                            Ok(n) => {
                                f.answered = true;
                                f.inbuf.push(&buf[..n]);
                                let now = clock.now();
                                let d = f.inbuf.drain(|b| s.try_handle_reply(now, b));
                                if d.skipped > 0 {
                                    // A reply in the skipped bytes is gone: stop holding
                                    // what is in flight.
                                    s.stream_out_of_step(now);
                                }
                                if d.lost_step > 0 {
                                    s.totals_mut().foreign += u64::from(d.lost_step);
                                    s.record_error(ErrorKind::Protocol, || {
                                        format!(
                                            "echo stream out of step: skipped {} bytes to \
                                             the next reply",
                                            d.skipped
                                        )
                                    });
                                }
                                if d.broken {
                                    broken = Some((
                                        io::Error::new(
                                            io::ErrorKind::InvalidData,
                                            "no reply in the last 64 KiB of the stream",
                                        ),
                                        "read",
                                    ));
                                    break;
                                }
                            }
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => {
                                broken = Some((e, "read"));
                                break;
                            }
                        }
                    }
                }
                if let Some((e, what)) = broken {
                    f.fail_conn(clock.now(), &e, what);
                } else {
                    s.handle_timeout(clock.now());
                    if !s.is_done() {
                        fds.push(sock.as_raw_fd());
                        want_write.push(f.out_pos < f.out.len());
                        if let Some(t) = s.poll_timeout() {
                            at(t);
                        }
                    }
                    if s.is_done() {
                        f.read_kernel(clock.now(), true);
                    } else if let Some(t) = f.kernel.next_at() {
                        at(t);
                    }
                }
            }
            if let Some(s) = f.session.as_mut() {
                send_packets(s, &tx);
                send_ended(f.index, s, &mut f.told_send_end, &tx);
                while let Some(iv) = s.poll_interval() {
                    let _ = tx.send(Event::Interval {
                        flow: f.index,
                        interval: Box::new(iv),
                    });
                }
                if s.is_done() {
                    f.state = TcpState::Closed;
                }
            }
            if let TcpState::Closed = f.state {
                sent_done[fi] = true;
                let (totals, stop) = match f.session.take() {
                    Some(s) => {
                        let stop = s.stop_reason();
                        f.times.first_echo_ns = s.totals().first_rtt;
                        (s.into_totals(), stop)
                    }
                    None => (
                        Totals::default(),
                        Some(if level > 0 {
                            StopReason::Signal
                        } else {
                            StopReason::Error
                        }),
                    ),
                };
                let mut totals = totals;
                totals.errors += &f.errors_before_connect;
                let _ = tx.send(Event::Done {
                    flow: f.index,
                    result: Box::new(FlowResult {
                        totals,
                        stop,
                        tcp: Some(f.times),
                        kernel: std::mem::take(&mut f.kernel).finish(),
                    }),
                });
            }
        }
        if sent_done.iter().all(|d| *d) {
            break;
        }
        if fds.is_empty() {
            let now = clock.now();
            let wait = u64::try_from(MAX_WAIT.as_nanos()).unwrap_or(u64::MAX);
            let d = deadline.unwrap_or(now.saturating_add(wait));
            if d > now {
                std::thread::sleep(Duration::from_nanos(d - now).min(MAX_WAIT));
            }
        } else {
            wait_until(&clock, &fds, &want_write, deadline, &mut ready);
        }
    }
}
