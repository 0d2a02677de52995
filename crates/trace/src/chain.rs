//! The RTT through a TCP relay chain: a framed echo ([`npt_wire::frame`], `Echo` →
//! `EchoReply`) on a connection held open through every relay to the target's `npt serve`.
//! A TCP connect to the chain's entry would only measure the first relay, which accepts the
//! connection itself; an exchange on the open connection crosses every relay both ways.
//!
//! The first exchange on each connection is not counted: it also pays for the relays opening
//! their own onward connections (a relay such as socat connects to its next hop when a client
//! connects), which is no part of the chain's RTT once it carries traffic. A timeout or a
//! broken connection fails the attempt under its error kind, and the next attempt opens a new
//! connection.
//!
//! With `--token` the connection first does the keyed handshake ([`npt_wire::auth`]) with the
//! target's `npt serve --token` through the chain (relays forward bytes as they are), and every
//! echo is sealed with the session's key: a target with `--token` answers nothing else. The
//! chain is assumed to share one secret. A target without `--token` closes the connection at
//! the Hello, and the trace then echoes without the handshake for the rest of the run; one
//! that answers the Hello but closes at the Auth has another secret: every attempt fails under
//! `auth`, saying so.
//!
//! [`request`] and [`reply`] are the pure half (bytes in, bytes out, tested on fixed frames),
//! `npt ping`'s session the schedule and the tally (its own sans-IO half, on a virtual clock);
//! [`measure`] drives them with a blocking socket, every wait bounded by the timeout.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use npt_client::source::Source;
use npt_ping::session::{Session, Tally};
use npt_result::error::ErrorKind;
use npt_result::workload::Stop;
use npt_wire::auth::{ClientHandshake, Dir, SessionKey, HS_LEN};
use npt_wire::frame::{Header, Kind, HEADER_LEN};

/// How often a wait looks at the stop control.
const SLICE: Duration = Duration::from_millis(100);

/// The echo request `seq` of `flow`, `size` bytes (at least a header; the payload zeros).
pub fn request(seq: u64, flow: u32, send_ts: u64, size: usize) -> Vec<u8> {
    let size = size.max(HEADER_LEN);
    let mut buf = vec![0u8; size];
    let h = Header {
        kind: Kind::Echo,
        flags: 0,
        frame_len: u32::try_from(size).unwrap_or(u32::MAX),
        reply_len: 0,
        flow,
        status: 0,
        seq,
        send_ts,
        token: 0,
    };
    // `buf` holds at least a header.
    let _ = h.encode(&mut buf);
    buf
}

/// Checks that `buf` is the echo of request `seq` of `flow`.
pub fn reply(buf: &[u8], seq: u64, flow: u32) -> Result<(), String> {
    let h = Header::decode(buf).map_err(|e| format!("not an npt echo: {e}"))?;
    if h.kind != Kind::EchoReply {
        return Err(format!("a {:?} frame where an echo reply belongs", h.kind));
    }
    if (h.flow, h.seq) != (flow, seq) {
        return Err(format!(
            "the echo of flow {} seq {}, expected flow {flow} seq {seq}",
            h.flow, h.seq
        ));
    }
    Ok(())
}

/// Why one exchange failed: its kind and what happened.
type Failure = (ErrorKind, String);

fn io_failure(what: &str, e: &io::Error) -> Failure {
    (npt_result::error::io_error_kind(e), format!("{what}: {e}"))
}

/// What the chain's far end makes of the trace's `--token` (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keying {
    /// Not known yet: the next connection tries the handshake.
    Try,
    /// It completed the handshake: every connection does it.
    Keyed,
    /// No token given, or the far end has none: plain echoes.
    Plain,
}

/// The far end answered the Hello but closed at the Auth.
pub const SECRET_REFUSED: &str = "the target's npt serve answered the --token handshake through \
     the chain but did not accept the secret: its --token is another";

/// The keyed handshake with the far end, through the chain, every wait within `timeout`.
/// `Ok(None)`: it closed at the Hello (a serve without `--token` refuses handshakes).
fn handshake(
    sock: &mut TcpStream,
    secret: &str,
    timeout: Duration,
) -> Result<Option<SessionKey>, Failure> {
    let _ = sock.set_read_timeout(Some(timeout));
    let _ = sock.set_write_timeout(Some(timeout));
    let mut hs = ClientHandshake::new(secret.as_bytes(), npt_client::auth::nonce(), 0, u64::MAX);
    let mut m = [0u8; HS_LEN];
    for step in 0..2 {
        let n = hs.poll_transmit(0, &mut m).ok_or((
            ErrorKind::Internal,
            "--token handshake: nothing to send".to_string(),
        ))?;
        sock.write_all(m.get(..n).unwrap_or_default())
            .map_err(|e| io_failure("--token handshake", &e))?;
        match sock.read_exact(&mut m) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && step == 0 => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err((ErrorKind::Auth, SECRET_REFUSED.to_string()))
            }
            Err(e) => return Err(io_failure("--token handshake through the chain", &e)),
        }
        match hs.handle(0, &m) {
            Ok(Some(k)) => return Ok(Some(k)),
            Ok(None) => {}
            Err(e) => {
                return Err((
                    ErrorKind::Protocol,
                    format!("--token handshake through the chain: {e}"),
                ))
            }
        }
    }
    Err((
        ErrorKind::Protocol,
        "--token handshake through the chain: no Accept after two round trips".into(),
    ))
}

/// One connection through the chain.
struct Conn {
    sock: TcpStream,
    flow: u32,
    /// The session's key when the far end took the handshake.
    key: Option<SessionKey>,
    /// Whether an echo byte ever came back on this connection: its end before that is
    /// `closed_unanswered` ([`npt_result::error::unanswered_close`]).
    answered: bool,
}

impl Conn {
    /// Connects, does the handshake as `keying` says (learning what the far end does), and
    /// the opening exchange.
    fn open(
        addr: SocketAddr,
        source: &Source,
        timeout: Duration,
        flow: u32,
        size: usize,
        secret: Option<&str>,
        keying: &mut Keying,
    ) -> Result<Conn, Failure> {
        let connect = || {
            let sock = source
                .connect_timeout(addr, timeout)
                .map_err(|e| io_failure(&format!("connect {addr}"), &e))?;
            let _ = sock.set_nodelay(true);
            Ok::<_, Failure>(sock)
        };
        let mut sock = connect()?;
        let mut key = None;
        match (secret, *keying) {
            (Some(secret), Keying::Try | Keying::Keyed) => {
                match handshake(&mut sock, secret, timeout)? {
                    Some(k) => {
                        key = Some(k);
                        *keying = Keying::Keyed;
                    }
                    None if *keying == Keying::Try => {
                        // No --token at the far end: it closed this connection; echo plain.
                        *keying = Keying::Plain;
                        sock = connect()?;
                    }
                    None => {
                        return Err((
                            ErrorKind::Closed,
                            "the target closed the connection at the --token handshake it took \
                         before"
                                .into(),
                        ))
                    }
                }
            }
            _ => *keying = Keying::Plain,
        }
        let mut c = Conn {
            sock,
            flow,
            key,
            answered: false,
        };
        // The opening exchange: not counted (module doc).
        c.exchange(0, size, timeout, &Stop::new())?;
        Ok(c)
    }

    /// One echo, answered.
    fn exchange(
        &mut self,
        seq: u64,
        size: usize,
        timeout: Duration,
        stop: &Stop,
    ) -> Result<(), Failure> {
        let t0 = Instant::now();
        let mut req = request(seq, self.flow, 0, size);
        if let Some(k) = &self.key {
            // Cannot fail: `req` holds at least a header.
            let _ = k.seal(Dir::ToServer, &mut req);
        }
        let ended = |what: &str, e: &io::Error, answered: bool| -> Failure {
            match npt_result::error::unanswered_close(e, answered) {
                ErrorKind::ClosedUnanswered => (
                    ErrorKind::ClosedUnanswered,
                    format!(
                        "{what}: {}",
                        npt_result::error::unanswered_close_msg("the chain's entry", e)
                    ),
                ),
                _ => io_failure(what, e),
            }
        };
        self.sock
            .set_write_timeout(Some(timeout))
            .and_then(|()| self.sock.write_all(&req))
            .map_err(|e| ended("send", &e, self.answered))?;
        let mut got = vec![0u8; req.len()];
        let mut n = 0;
        let deadline = t0 + timeout;
        while n < got.len() {
            if stop.level() >= 2 {
                return Err((ErrorKind::Timeout, "given up (stopped)".into()));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err((
                    ErrorKind::Timeout,
                    format!("no echo within {timeout:?} through the chain"),
                ));
            }
            let _ = self.sock.set_read_timeout(Some(left.min(SLICE)));
            // `n < got.len()`.
            let rest = got.get_mut(n..).unwrap_or_default();
            match self.sock.read(rest) {
                Ok(0) if !self.answered => {
                    return Err(ended(
                        "receive",
                        &io::Error::new(io::ErrorKind::UnexpectedEof, "end of stream"),
                        false,
                    ))
                }
                Ok(0) => {
                    return Err((
                        ErrorKind::Closed,
                        "the chain closed the connection before the echo".into(),
                    ))
                }
                Ok(k) => {
                    n += k;
                    self.answered = true;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(ended("receive", &e, self.answered)),
            }
        }
        if let Some(k) = &self.key {
            k.open(Dir::ToClient, &got)
                .map_err(|e| (ErrorKind::Protocol, format!("the echo's session tag: {e}")))?;
        }
        reply(&got, seq, self.flow).map_err(|m| (ErrorKind::Protocol, m))
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The chain's entry and where this host reaches it from (`--bind`, `--dscp`).
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub addr: SocketAddr,
    pub source: Source,
}

/// `count` echoes through the chain's entry `addr`, one every `interval`, each waiting at most
/// `timeout`; stops starting new ones when `stop` asks. Paced, timed and counted by `npt
/// ping`'s sans-IO session ([`Session`]); an attempt that must open a connection first starts
/// its RTT after the opening (module doc). `secret`: `--token`, keyed with a target that
/// takes it.
pub fn measure(
    entry: Entry,
    count: u64,
    interval: Duration,
    timeout: Duration,
    size: usize,
    secret: Option<&str>,
    stop: &Stop,
) -> Tally {
    let Entry { addr, source } = entry;
    let clock = Instant::now();
    let now = || ns(clock.elapsed());
    let mut session = Session::new(Some(count), ns(interval), ns(timeout), 0);
    let flow = std::process::id().rotate_left(8) ^ u32::from(addr.port());
    let mut conn: Option<Conn> = None;
    let mut keying = Keying::Try;
    loop {
        match stop.level() {
            0 => {}
            1 => session.stop(),
            _ => session.abandon(),
        }
        let Some(due) = session.due() else { break };
        let t = now();
        if t < due {
            std::thread::sleep(Duration::from_nanos(due - t).min(SLICE));
            continue;
        }
        // Blocking, one at a time: nothing is ever given up for being too many in flight.
        let (seq, _) = session.on_sent(t);
        let mut open = || -> Result<Conn, Failure> {
            let c = Conn::open(addr, &source, timeout, flow, size, secret, &mut keying)?;
            session.restart(seq, now());
            Ok(c)
        };
        let c = match conn.take() {
            Some(c) => Ok(c),
            None => open(),
        };
        let done = c.and_then(|mut c| c.exchange(seq, size, timeout, stop).map(|()| c));
        match done {
            Ok(c) => {
                session.on_reply(seq, now());
                conn = Some(c);
            }
            Err((kind, what)) => {
                session.on_error(seq, kind, format!("{addr}: {what}"));
            }
        }
    }
    session.tally
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here(addr: SocketAddr) -> Entry {
        Entry {
            addr,
            source: Source::default(),
        }
    }

    #[test]
    fn a_request_is_an_echo_frame_and_only_its_own_echo_matches() {
        let req = request(7, 42, 0, 10);
        assert_eq!(req.len(), HEADER_LEN, "at least a header");
        assert_eq!(&req[..4], &[0x1E, b'N', b'P', b'T']);
        assert_eq!(req[5], Kind::Echo as u8);
        let mut echo = req.clone();
        npt_wire::frame::set_kind_status(&mut echo, Kind::EchoReply, 0);
        assert_eq!(reply(&echo, 7, 42), Ok(()));
        assert!(reply(&echo, 8, 42).unwrap_err().contains("seq 7"));
        assert!(reply(&echo, 7, 41).is_err());
        assert!(reply(&req, 7, 42).unwrap_err().contains("Echo frame"));
        assert!(reply(
            b"HTTP/1.1 400 Bad Request\r\n\r\n....................",
            7,
            42
        )
        .is_err());
    }

    /// A loopback echo that answers every frame: every attempt after the opening one counts.
    #[test]
    fn echoes_through_a_loopback_responder() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; HEADER_LEN];
            while s.read_exact(&mut buf).is_ok() {
                npt_wire::frame::set_kind_status(&mut buf, Kind::EchoReply, 0);
                if s.write_all(&buf).is_err() {
                    break;
                }
            }
        });
        let t = measure(
            here(addr),
            3,
            Duration::from_millis(5),
            Duration::from_secs(2),
            HEADER_LEN,
            None,
            &Stop::new(),
        );
        assert_eq!((t.sent, t.received, t.errors.total()), (3, 3, 0));
        assert_eq!(t.rtt.count(), 3);
        server.join().unwrap();
    }

    /// A relay that is slow to open its onward connection delays only the opening exchange,
    /// which is not counted.
    #[test]
    fn the_opening_exchange_is_not_an_rtt() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; HEADER_LEN];
            let mut first = true;
            while s.read_exact(&mut buf).is_ok() {
                if std::mem::take(&mut first) {
                    std::thread::sleep(Duration::from_millis(300));
                }
                npt_wire::frame::set_kind_status(&mut buf, Kind::EchoReply, 0);
                if s.write_all(&buf).is_err() {
                    break;
                }
            }
        });
        let ms = Duration::from_millis;
        let t = measure(
            here(addr),
            3,
            ms(5),
            ms(2000),
            HEADER_LEN,
            None,
            &Stop::new(),
        );
        assert_eq!(t.received, 3);
        assert!(t.rtt.max_ns() < 100_000_000, "max {} ns", t.rtt.max_ns());
        server.join().unwrap();
    }

    /// A listener that accepts and closes at once (a relay whose backend is down) is
    /// `closed_unanswered`, saying so: nothing came back on the connection.
    #[test]
    fn a_relay_that_closes_without_answering_is_named() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..2 {
                let (s, _) = l.accept().unwrap();
                drop(s);
            }
        });
        let ms = Duration::from_millis;
        let t = measure(
            here(addr),
            2,
            ms(1),
            ms(2000),
            HEADER_LEN,
            None,
            &Stop::new(),
        );
        assert_eq!(t.errors.get("closed_unanswered"), 2, "{:?}", t.errors);
        let (_, k) = t.errors.iter().next().unwrap();
        assert!(
            k.examples[0].contains("closed it without answering"),
            "{:?}",
            k.examples
        );
        server.join().unwrap();
    }

    /// Nothing listens, or the peer says nothing: classified errors, within the timeout.
    #[test]
    fn a_dead_or_silent_chain_fails_each_attempt_in_bounded_time() {
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let ms = Duration::from_millis;
        let t = measure(
            here(dead),
            2,
            ms(1),
            ms(300),
            HEADER_LEN,
            None,
            &Stop::new(),
        );
        assert_eq!((t.sent, t.received, t.errors.get("refused")), (2, 0, 2));
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = Instant::now();
        let t = measure(
            here(silent.local_addr().unwrap()),
            2,
            ms(1),
            ms(200),
            HEADER_LEN,
            None,
            &Stop::new(),
        );
        assert_eq!(t.errors.get("timeout"), 2, "{:?}", t.errors);
        assert!(at.elapsed() < Duration::from_secs(2));
    }
}
