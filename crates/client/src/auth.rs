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
/// `PermissionDenied` ([`is_secret_refused`]) when a Challenge came but no Accept.
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
    // Messages sent in the current step; whether the Challenge came (the step is then Auth).
    let (mut sent, mut challenged) = (0u32, false);
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
                Ok(answer) => match hs.handle(now(), answer) {
                    Ok(Some(k)) => break Ok(k),
                    Ok(None) if !challenged => {
                        challenged = true;
                        sent = 0;
                    }
                    _ => {}
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
        s.write_all(&m[..n])?;
        s.flush()?;
        s.read_exact(&mut m).map_err(stream_read_error)?;
        if let Some(k) = stream_step(&mut hs, &m)? {
            return Ok(k);
        }
    }
    Err(stream_no_accept())
}

/// [`stream`] on a TCP socket that is otherwise non-blocking: blocking with timeouts for the
/// handshake, then back.
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
}
