//! `--token`, blocking (the probe, ping's UDP, bulk's UDP): drives the keyed handshake
//! ([`npt_wire::auth::ClientHandshake`]) over a blocking std socket (UDP: directly or through a
//! SOCKS5 relay) before a flow starts, and returns the session key its frames are sealed with.
//! Bounded by [`HANDSHAKE_TIMEOUT`]; UDP repeats lost messages.

use std::io::{self, Read, Write};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use npt_proxy::udp_flow::SocksUdp;
use npt_wire::auth::{
    stream_no_accept, stream_read_error, stream_step, ClientHandshake, SessionKey, HS_LEN,
};
use rand::RngCore;

/// How long a handshake may take before the flow fails.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);

/// 16 bytes from the OS RNG.
pub fn nonce() -> [u8; 16] {
    let mut n = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut n);
    n
}

fn timed_out(what: &str, timeout: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "no answer to the --token handshake over {what} within {timeout:?}: is the server \
             `npt serve --token` with the same secret?"
        ),
    )
}

/// How long a UDP handshake may take and how many messages each of its two steps (Hello,
/// Auth) may send: a lost message is repeated every [`npt_wire::auth::HS_RETRY_NS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpBound {
    pub timeout: Duration,
    pub per_step: u32,
}

impl Default for UdpBound {
    /// [`HANDSHAKE_TIMEOUT`], repeating until then.
    fn default() -> Self {
        UdpBound {
            timeout: HANDSHAKE_TIMEOUT,
            per_step: u32::MAX,
        }
    }
}

/// The server answered the Hello with a Challenge but never accepted the Auth: it is an `npt
/// serve --token` with another secret (a server stays silent to a proof that does not verify).
fn not_accepted(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "the server answered the --token handshake over {what} but did not accept the \
             secret: its --token is another"
        ),
    )
}

/// What a plain echo (socat, a forwarder in front of one) does to the handshake: our own
/// message came back as it went. No token can be checked there; the error says so rather than
/// waiting for a Challenge that never comes (UDP) or reading it as a message out of turn (TCP).
#[derive(Debug)]
struct ReturnedUnchanged;

impl std::fmt::Display for ReturnedUnchanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the far end returned the --token handshake unchanged: a plain echo, which cannot \
             check a token (drop --token)",
        )
    }
}

impl std::error::Error for ReturnedUnchanged {}

/// `got` is the handshake message `sent`, returned unchanged: the error that says so
/// (`InvalidData`, [`is_returned_unchanged`]); `None` for any other answer.
pub fn returned_unchanged(sent: &[u8], got: &[u8]) -> Option<io::Error> {
    (!sent.is_empty() && got == sent)
        .then(|| io::Error::new(io::ErrorKind::InvalidData, ReturnedUnchanged))
}

/// True when the handshake failed because a plain echo returned it ([`returned_unchanged`]).
pub fn is_returned_unchanged(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<ReturnedUnchanged>())
}

/// True for [`udp_within`]'s error when the server was there but refused the secret
/// (`PermissionDenied`); a silent server is `TimedOut`.
pub fn is_secret_refused(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
}

/// The kind a failed handshake counts as: `auth` when the server refused the secret, the
/// socket's kind otherwise.
pub fn error_kind(e: &io::Error) -> npt_result::error::ErrorKind {
    if is_secret_refused(e) {
        npt_result::error::ErrorKind::Auth
    } else {
        npt_result::error::io_error_kind(e)
    }
}

/// The handshake over a connected UDP socket (its read timeout is restored to none).
pub fn udp(sock: &UdpSocket, secret: &str, timeout: Duration) -> io::Result<SessionKey> {
    udp_within(
        sock,
        secret,
        UdpBound {
            timeout,
            ..UdpBound::default()
        },
    )
}

/// The handshake through a SOCKS5 UDP relay: `sock` is connected to `relay`'s UDP address, each
/// message goes behind the association's header and each answer's header is checked and
/// skipped. The server then knows the session by the relay's address, as it sees every frame
/// of the flow. (Its read timeout is restored to none.)
pub fn udp_relayed(
    sock: &UdpSocket,
    relay: &SocksUdp,
    secret: &str,
    timeout: Duration,
) -> io::Result<SessionKey> {
    handshake(
        sock,
        Some(relay),
        secret,
        UdpBound {
            timeout,
            ..UdpBound::default()
        },
    )
}

/// [`udp`] within `bound`. The error says which way it failed: `TimedOut` when nothing
/// answered the Hello (no server, or one without `--token`: it ignores handshakes),
/// `PermissionDenied` ([`is_secret_refused`]) when a Challenge came but no Accept,
/// [`is_returned_unchanged`] when a plain echo returned the Hello.
pub fn udp_within(sock: &UdpSocket, secret: &str, bound: UdpBound) -> io::Result<SessionKey> {
    handshake(sock, None, secret, bound)
}

/// The UDP handshake, direct or behind `relay`'s header.
fn handshake(
    sock: &UdpSocket,
    relay: Option<&SocksUdp>,
    secret: &str,
    bound: UdpBound,
) -> io::Result<SessionKey> {
    let timeout = bound.timeout;
    let header = relay.map_or(&[][..], SocksUdp::header);
    let t0 = Instant::now();
    let now = || u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let limit = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
    let mut hs = ClientHandshake::new(secret.as_bytes(), nonce(), 0, limit);
    // Each message goes after the relay's header.
    let (mut out, mut inb) = (header.to_vec(), [0u8; 2048]);
    out.resize(header.len() + HS_LEN, 0);
    // Messages sent in the current step; whether the Challenge came (the step is then Auth);
    // the length of the last message sent (still in `out`, to tell a plain echo's return).
    let (mut sent, mut challenged, mut last) = (0u32, false, 0usize);
    let failed = |challenged: bool| {
        if challenged {
            not_accepted("UDP")
        } else {
            timed_out("UDP", timeout)
        }
    };
    let result = loop {
        if hs.check(now()).is_err() {
            break Err(failed(challenged));
        }
        if sent < bound.per_step {
            if let Some(n) = hs.poll_transmit(now(), &mut out[header.len()..]) {
                sock.send(&out[..header.len() + n])?;
                sent += 1;
                last = n;
            }
        }
        let Some(at) = hs.poll_timeout() else {
            break Err(failed(challenged));
        };
        // Out of messages for this step: only the answer (or the deadline) is left to wait for.
        let at = if sent >= bound.per_step { limit } else { at };
        let wait = at.saturating_sub(now()).max(1_000_000);
        sock.set_read_timeout(Some(Duration::from_nanos(wait)))?;
        match sock.recv(&mut inb) {
            // Anything that is not the answer (a stray datagram) is ignored.
            Ok(n) => match relay.map_or(Ok(&inb[..n]), |r| r.payload(&inb[..n])) {
                Err(_) => {}
                Ok(answer) => match returned_unchanged(&out[header.len()..][..last], answer) {
                    Some(e) => break Err(e),
                    None => match hs.handle(now(), answer) {
                        Ok(Some(k)) => break Ok(k),
                        Ok(None) if !challenged => {
                            challenged = true;
                            sent = 0;
                        }
                        _ => {}
                    },
                },
            },
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => break Err(e),
        }
    };
    sock.set_read_timeout(None)?;
    result
}

/// The handshake over a byte stream (blocking, with read and write timeouts set by the caller).
pub fn stream<S: Read + Write>(s: &mut S, secret: &str) -> io::Result<SessionKey> {
    let mut hs = ClientHandshake::new(secret.as_bytes(), nonce(), 0, u64::MAX);
    let mut m = [0u8; HS_LEN];
    for _ in 0..2 {
        let n = hs
            .poll_transmit(0, &mut m)
            .ok_or_else(|| io::Error::other("handshake: nothing to send"))?;
        let sent = m;
        s.write_all(&m[..n])?;
        s.flush()?;
        s.read_exact(&mut m).map_err(stream_read_error)?;
        if let Some(e) = returned_unchanged(&sent[..n], &m[..n]) {
            return Err(e);
        }
        if let Some(k) = stream_step(&mut hs, &m)? {
            return Ok(k);
        }
    }
    Err(stream_no_accept())
}

/// [`stream`] on a TCP socket that is otherwise non-blocking: blocking with timeouts for the
/// handshake, then back — the socket is left non-blocking, whatever it was before (a caller
/// that reads it blocking sets that again).
pub fn tcp(sock: &mut std::net::TcpStream, secret: &str) -> io::Result<SessionKey> {
    sock.set_nonblocking(false)?;
    sock.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    sock.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
    let r = stream(sock, secret).map_err(|e| {
        if matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ) {
            timed_out("TCP", HANDSHAKE_TIMEOUT)
        } else {
            e
        }
    });
    sock.set_read_timeout(None)?;
    sock.set_write_timeout(None)?;
    sock.set_nonblocking(true)?;
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_wire::auth::ServerAuth;

    /// A UDP responder that answers handshakes with `secret` (`None`: never answers), and
    /// counts the messages it got.
    fn responder(
        secret: Option<&'static str>,
    ) -> (std::net::SocketAddr, std::thread::JoinHandle<usize>) {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = s.local_addr().unwrap();
        s.set_read_timeout(Some(Duration::from_millis(1500)))
            .unwrap();
        let t = std::thread::spawn(move || {
            let auth = secret.map(|k| ServerAuth::new(k.as_bytes(), [7; 32]));
            let t0 = Instant::now();
            let (mut b, mut out, mut got) = ([0u8; 256], [0u8; HS_LEN], 0);
            while let Ok((n, peer)) = s.recv_from(&mut b) {
                got += 1;
                let now = u64::try_from(t0.elapsed().as_nanos()).unwrap();
                if let Some(a) = &auth {
                    if a.handle(now, peer, &b[..n], &mut out).is_ok() {
                        s.send_to(&out, peer).unwrap();
                    }
                }
            }
            got
        });
        (addr, t)
    }

    fn client(to: std::net::SocketAddr) -> UdpSocket {
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.connect(to).unwrap();
        c
    }

    const BOUND: UdpBound = UdpBound {
        timeout: Duration::from_millis(900),
        per_step: 2,
    };

    #[test]
    fn the_same_secret_gives_a_key_in_two_messages() {
        let (to, server) = responder(Some("S"));
        assert!(udp_within(&client(to), "S", BOUND).is_ok());
        assert_eq!(server.join().unwrap(), 2, "Hello and Auth");
    }

    /// Another secret: the Challenge comes, the Accept never does — said so, not a timeout;
    /// and a bounded handshake sends at most `per_step` messages per step.
    #[test]
    fn another_secret_is_refused_not_timed_out_and_the_messages_are_bounded() {
        let (to, server) = responder(Some("OTHER"));
        let e = udp_within(&client(to), "S", BOUND).unwrap_err();
        assert!(is_secret_refused(&e), "{e}");
        assert!(e.to_string().contains("its --token is another"), "{e}");
        assert_eq!(server.join().unwrap(), 1 + 2, "one Hello, two Auths");
    }

    #[test]
    fn a_silent_server_is_a_timeout_within_the_bound() {
        let (to, server) = responder(None);
        let t = Instant::now();
        let e = udp_within(&client(to), "S", BOUND).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(
            t.elapsed() < Duration::from_millis(1400),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(server.join().unwrap(), 2, "two Hellos at most");
    }

    /// A plain echo on loopback: every datagram, or every byte of each connection, returned
    /// as it came (what `socat … PIPE` does).
    fn plain_echo() -> (std::net::SocketAddr, std::net::SocketAddr) {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let t = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addrs = (u.local_addr().unwrap(), t.local_addr().unwrap());
        u.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        std::thread::spawn(move || {
            let mut b = [0u8; 2048];
            while let Ok((n, peer)) = u.recv_from(&mut b) {
                let _ = u.send_to(&b[..n], peer);
            }
        });
        std::thread::spawn(move || {
            for mut c in t.incoming().take(2).flatten() {
                let mut r = c.try_clone().unwrap();
                std::thread::spawn(move || io::copy(&mut r, &mut c));
            }
        });
        addrs
    }

    fn says_returned(e: &io::Error) {
        assert!(is_returned_unchanged(e), "{e}");
        assert_eq!(
            e.to_string(),
            "the far end returned the --token handshake unchanged: a plain echo, which cannot \
             check a token (drop --token)"
        );
    }

    /// Against a plain echo the handshake ends at its first answer — our own message back —
    /// and says so, over UDP and TCP, blocking and async (before: a timeout after the whole
    /// bound over UDP, "handshake message out of turn" over TCP).
    #[test]
    fn a_plain_echo_returning_the_handshake_is_named() {
        let (udp_at, tcp_at) = plain_echo();
        let t = Instant::now();
        let e = udp_within(&client(udp_at), "S", BOUND).unwrap_err();
        says_returned(&e);
        assert!(t.elapsed() < BOUND.timeout, "{:?}", t.elapsed());
        let mut c = std::net::TcpStream::connect(tcp_at).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        says_returned(&stream(&mut c, "S").unwrap_err());

        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let u = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            u.connect(udp_at).await.unwrap();
            let e = crate::auth_async::udp(&u, "S", Duration::from_secs(2))
                .await
                .unwrap_err();
            says_returned(&e);
            let mut c = tokio::net::TcpStream::connect(tcp_at).await.unwrap();
            says_returned(&crate::auth_async::stream(&mut c, "S").await.unwrap_err());
        });
    }
}
