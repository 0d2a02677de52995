//! `npt ping --echo`: one attempt = a new TCP connection (directly, or through `--via`) and
//! one framed echo on it against `npt serve`, each part timed. A TCP connect alone is answered
//! by whatever listens at the address — a relay or forwarder accepts by itself — so it reads
//! 0 % loss through a relay whose backend is down; the echo has to cross every relay to the
//! server and back, so it does not.
//!
//! The request is the framed `Echo` of a UDP ping ([`crate::net::encode`]) sent on the stream;
//! the answer is read to the request's length and must be the `EchoReply` of this flow and
//! attempt ([`crate::net::decode`]). With `--token` the connection first does the keyed
//! handshake with `npt serve --token` (not timed) and the echo is sealed. Every wait is bounded
//! by what is left of the attempt's timeout. A connection closed or reset before a single
//! byte of the answer is `closed_unanswered` ([`npt_result::error::unanswered_close`]).
//!
//! `--setup` records each layer of the attempt as it completes — the connect, a proxy's
//! exchanges, the first echo — and sends a second echo on the same connection after the one
//! the ping times: the setup block's base round trip ([`crate::setup`]).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use npt_result::error::{io_error_kind, unanswered_close, unanswered_close_msg, ErrorKind};
use npt_result::setup::Layer;
use npt_result::stats::setup::Attempt;
use npt_wire::auth::Dir;

use crate::net::{decode, encode, far_end, Echoed};
use crate::Config;

/// Why an attempt failed: its kind and what happened.
pub type Failure = (ErrorKind, String);

/// One attempt: connects to `addr` (or through `cfg.via` to the target), echoes request `seq`
/// of `flow` (`now` stamps it) within `left`, and returns the connect's duration and the far
/// end that echoed. Each layer's time goes into `rec` as it completes (`--setup`'s block:
/// the connect, a proxy's greeting and CONNECT, the first echo), and with `cfg.setup` a second
/// echo on the same connection is its base round trip (after the answer the ping times).
pub fn attempt(
    cfg: &Config,
    addr: SocketAddr,
    flow: u32,
    seq: u64,
    now: u64,
    left: Duration,
    rec: &mut Attempt,
) -> Result<Echoed, Failure> {
    let started = Instant::now();
    let (mut sock, peer) = match &cfg.via {
        None => {
            let s = cfg
                .source
                .connect_timeout(addr, left)
                .map_err(|e| (io_error_kind(&e), format!("{addr}: {e}")))?;
            rec.layers.push((Layer::TcpConnect, ns(started.elapsed())));
            (s, addr.to_string())
        }
        Some(via) => {
            let (s, ph) = npt_proxy::tcp_connect(via, &cfg.target.host, cfg.target.port, left)
                .map_err(|e| (e.kind(), format!("via {via}: {e}")))?;
            rec.layers.extend(ph.layers(via, false));
            let peer = format!("{}:{} through {via}", cfg.target.host, cfg.target.port);
            (s, peer)
        }
    };
    let connect = started.elapsed();
    let _ = sock.set_nodelay(true);
    let remaining = || {
        left.checked_sub(started.elapsed())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                (
                    ErrorKind::Timeout,
                    format!("{peer}: no echo within {left:?}"),
                )
            })
    };
    let key = match &cfg.token {
        Some(secret) => {
            let wait = remaining()?;
            sock.set_read_timeout(Some(wait))
                .and_then(|()| sock.set_write_timeout(Some(wait)))
                .map_err(|e| (io_error_kind(&e), format!("{peer}: {e}")))?;
            let k = npt_client::auth::tcp(&mut sock, secret)
                .map_err(|e| (io_error_kind(&e), format!("{peer}: token handshake: {e}")))?;
            // The handshake leaves the socket non-blocking (its other callers go on async);
            // the echo reads with timeouts, and a non-blocking read of a reply still on its
            // way failed at once as a timeout.
            sock.set_nonblocking(false)
                .map_err(|e| (io_error_kind(&e), format!("{peer}: {e}")))?;
            Some(k)
        }
        None => None,
    };
    let mut conn = Conn {
        sock: &mut sock,
        key: key.as_ref(),
        peer: &peer,
        left,
        remaining: &remaining,
    };
    let t = Instant::now();
    let got = conn.echo(cfg, flow, seq, now)?;
    let answered = Instant::now();
    rec.layers
        .push((Layer::FirstByte, ns(answered.duration_since(t))));
    if cfg.setup {
        // The warm round trip: nothing of the setup left in it. Its failure leaves the attempt
        // answered (the ping's figure is in) without a base sample.
        let t = Instant::now();
        let warm = seq | WARM_SEQ;
        if conn
            .echo(cfg, flow, warm, now + ns(t.duration_since(started)))
            .is_ok()
        {
            rec.rtt_ns = Some(ns(t.elapsed()));
        }
    }
    Ok(Echoed {
        connect,
        far_end: far_end(&got, false),
        answered: cfg.setup.then_some(answered),
    })
}

/// An attempt ([`attempt`]) whose layers `rec` keeps (`--setup`), as `npt ping --echo` makes
/// each: the far end that echoed, for the ping's tally.
pub fn recorded(
    cfg: &Config,
    rec: &mut Option<crate::setup::Recorder>,
    addr: SocketAddr,
    flow: u32,
    seq: u64,
    now: u64,
    left: Duration,
) -> Result<Option<Echoed>, Failure> {
    let mut a = Attempt::default();
    let r = attempt(cfg, addr, flow, seq, now, left, &mut a);
    if let Some(rec) = rec {
        rec.tried(seq, a, r.as_ref().err().cloned());
    }
    r.map(Some)
}

/// The bit a second echo's sequence number sets: another number than the first's (a sealed
/// session may refuse a number it has seen), and never one an attempt uses.
const WARM_SEQ: u64 = 1 << 62;

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A connection set up for echoes: where they go, sealed with `key` under `--token`, each
/// bounded by what is left of the attempt's time.
struct Conn<'a, R> {
    sock: &'a mut std::net::TcpStream,
    key: Option<&'a npt_wire::auth::SessionKey>,
    peer: &'a str,
    left: Duration,
    remaining: &'a R,
}

impl<R: Fn() -> Result<Duration, Failure>> Conn<'_, R> {
    /// One framed echo of request `seq`: the answer's bytes, once they are this request's
    /// `EchoReply`.
    fn echo(&mut self, cfg: &Config, flow: u32, seq: u64, now: u64) -> Result<Vec<u8>, Failure> {
        let peer = self.peer;
        let mut req = vec![0u8; frame_size(cfg)];
        encode(&mut req, cfg, flow, seq, now)
            .map_err(|e| (ErrorKind::Config, format!("--size: {e}")))?;
        if let Some(k) = self.key {
            // Cannot fail: `req` holds at least a header.
            let _ = k.seal(Dir::ToServer, &mut req);
        }
        let ended = |what: &str, e: &io::Error, got: usize| -> Failure {
            match unanswered_close(e, got > 0) {
                ErrorKind::ClosedUnanswered => (
                    ErrorKind::ClosedUnanswered,
                    format!("{what}: {}", unanswered_close_msg(peer, e)),
                ),
                kind => (kind, format!("{peer}: {what}: {e}")),
            }
        };
        let wait = (self.remaining)()?;
        self.sock
            .set_write_timeout(Some(wait))
            .and_then(|()| self.sock.write_all(&req))
            .map_err(|e| ended("send", &e, 0))?;
        let mut got = vec![0u8; req.len()];
        let mut n = 0;
        while n < got.len() {
            let wait = (self.remaining)()?;
            self.sock
                .set_read_timeout(Some(wait))
                .map_err(|e| (io_error_kind(&e), format!("{peer}: {e}")))?;
            // `n < got.len()`.
            let rest = got.get_mut(n..).unwrap_or_default();
            match self.sock.read(rest) {
                Ok(0) => {
                    let e = io::Error::new(io::ErrorKind::UnexpectedEof, "end of stream");
                    return Err(ended("receive", &e, n));
                }
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err((
                        ErrorKind::Timeout,
                        format!("{peer}: no echo within {:?}", self.left),
                    ))
                }
                Err(e) => return Err(ended("receive", &e, n)),
            }
        }
        if let Some(k) = self.key {
            k.open(Dir::ToClient, &got).map_err(|e| {
                (
                    ErrorKind::Protocol,
                    format!("{peer}: the echo's session tag: {e}"),
                )
            })?;
        }
        match decode(&got, false, flow) {
            Some(s) if s == seq => Ok(got),
            _ => Err((
                ErrorKind::Protocol,
                format!("{peer}: the answer is not the echo of this attempt (not npt serve?)"),
            )),
        }
    }
}

/// The echo's size: `--size`, at least a frame header.
pub fn frame_size(cfg: &Config) -> usize {
    cfg.size.max(npt_wire::frame::HEADER_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_wire::frame::{Kind, HEADER_LEN};

    fn cfg(port: u16) -> Config {
        Config {
            timeout: Duration::from_secs(2),
            echo: true,
            ..Config::for_test(&format!("tcp://127.0.0.1:{port}"))
        }
    }

    /// An echo that answers one frame per connection: connect and echo both succeed.
    #[test]
    fn one_echo_per_connection() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 64];
            s.read_exact(&mut buf).unwrap();
            npt_wire::frame::set_kind_status(&mut buf, Kind::EchoReply, 0);
            s.write_all(&buf).unwrap();
        });
        let c = cfg(addr.port());
        let e = attempt(&c, addr, 7, 1, 0, c.timeout, &mut Attempt::default()).unwrap();
        assert!(e.connect < c.timeout);
        assert_eq!(e.far_end, npt_result::far_end::NPT_SERVE);
        server.join().unwrap();
    }

    /// `--setup`: a second echo on the same connection, after the answer the ping times: the
    /// attempt records its connect, its first echo and the second as its base; a server that
    /// closes after the first echo leaves the attempt answered, without a base.
    #[test]
    fn setup_echoes_twice_and_records_each_layer() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for echoes in [2, 1] {
                let (mut s, _) = l.accept().unwrap();
                let mut buf = [0u8; 64];
                for _ in 0..echoes {
                    s.read_exact(&mut buf).unwrap();
                    npt_wire::frame::set_kind_status(&mut buf, Kind::EchoReply, 0);
                    s.write_all(&buf).unwrap();
                }
            }
        });
        let c = Config {
            setup: true,
            ..cfg(addr.port())
        };
        let mut rec = Attempt::default();
        let e = attempt(&c, addr, 7, 1, 0, c.timeout, &mut rec).unwrap();
        let layers: Vec<Layer> = rec.layers.iter().map(|(l, _)| *l).collect();
        assert_eq!(layers, [Layer::TcpConnect, Layer::FirstByte]);
        assert!(e.answered.is_some());
        assert!(rec.rtt_ns.is_some_and(|r| r > 0));
        let mut rec = Attempt::default();
        attempt(&c, addr, 7, 2, 0, c.timeout, &mut rec).unwrap();
        assert_eq!((rec.layers.len(), rec.rtt_ns), (2, None));
        server.join().unwrap();
    }

    /// A listener that accepts and closes (a relay whose backend is down) is
    /// `closed_unanswered`; one that answers part of the echo and closes is `closed`.
    #[test]
    fn closed_before_any_answer_is_closed_unanswered() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            drop(s);
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 64];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf[..HEADER_LEN / 2]).unwrap();
        });
        let c = cfg(addr.port());
        let (kind, msg) =
            attempt(&c, addr, 7, 1, 0, c.timeout, &mut Attempt::default()).unwrap_err();
        assert_eq!(kind, ErrorKind::ClosedUnanswered, "{msg}");
        assert!(msg.contains("closed it without answering"), "{msg}");
        let (kind, msg) =
            attempt(&c, addr, 7, 2, 0, c.timeout, &mut Attempt::default()).unwrap_err();
        assert_eq!(kind, ErrorKind::Closed, "{msg}");
        server.join().unwrap();
    }

    /// A listener that never answers: a timeout within the attempt's time.
    #[test]
    fn a_silent_listener_times_out_in_time() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let c = cfg(addr.port());
        let t = Instant::now();
        let (kind, _) = attempt(
            &c,
            addr,
            7,
            1,
            0,
            Duration::from_millis(200),
            &mut Attempt::default(),
        )
        .unwrap_err();
        assert_eq!(kind, ErrorKind::Timeout);
        assert!(t.elapsed() < Duration::from_secs(2));
        drop(l);
    }
}
