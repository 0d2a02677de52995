//! The two sides of the handshake as state machines: bytes and `now` (ns) in, bytes out.
//! Nonces and the cookie key come from the caller (the OS RNG in the drivers, fixed values in
//! tests), so every step is deterministic under test.

use std::net::SocketAddr;

use hmac::Mac;

use super::{
    addr_bytes, derive, keyed, AuthError, HmacSha256, Msg, MsgType, SessionKey, COOKIE_LEN,
    NONCE_LEN, PROOF_LEN,
};

/// How long a Challenge's cookie may be answered.
pub const COOKIE_TTL_NS: u64 = 10_000_000_000;
/// How often the client repeats an unanswered Hello or Auth (UDP may lose them).
pub const HS_RETRY_NS: u64 = 250_000_000;

/// What the server did with a handshake message (the reply is in the caller's buffer).
#[derive(Debug)]
pub enum ServerStep {
    /// Answered a Hello with a Challenge; no state kept.
    Challenge,
    /// Verified an Auth and answered it with an Accept: a session for this source.
    Accepted {
        key: SessionKey,
        cookie: [u8; COOKIE_LEN],
        issued: u64,
    },
}

/// The server side: stateless, one per process (or per socket).
pub struct ServerAuth {
    secret: HmacSha256,
    cookie_key: HmacSha256,
}

impl ServerAuth {
    /// `cookie_key`: 32 random bytes, never sent (the drivers take them from the OS RNG).
    pub fn new(secret: &[u8], cookie_key: [u8; 32]) -> ServerAuth {
        ServerAuth {
            secret: keyed(secret),
            cookie_key: keyed(&cookie_key),
        }
    }

    fn cookie_tag(&self, peer: SocketAddr, nonce: &[u8; NONCE_LEN], issued: u64) -> HmacSha256 {
        let mut m = self.cookie_key.clone();
        m.update(&addr_bytes(peer));
        m.update(nonce);
        m.update(&issued.to_be_bytes());
        m
    }

    fn cookie(&self, peer: SocketAddr, nonce: &[u8; NONCE_LEN], issued: u64) -> [u8; COOKIE_LEN] {
        let mut c = [0u8; COOKIE_LEN];
        c[..8].copy_from_slice(&issued.to_be_bytes());
        let t = self.cookie_tag(peer, nonce, issued).finalize().into_bytes();
        // The cookie's last COOKIE_LEN - 8 bytes: the front of the 32-byte HMAC.
        c[8..].iter_mut().zip(t.iter()).for_each(|(c, b)| *c = *b);
        c
    }

    /// The issue time of a cookie this server gave `peer` for `nonce`, if it did and it is
    /// not older than [`COOKIE_TTL_NS`] at `now`.
    fn check_cookie(
        &self,
        now: u64,
        peer: SocketAddr,
        nonce: &[u8; NONCE_LEN],
        cookie: &[u8; COOKIE_LEN],
    ) -> Result<u64, AuthError> {
        let mut t = [0u8; 8];
        t.copy_from_slice(&cookie[..8]);
        let issued = u64::from_be_bytes(t);
        self.cookie_tag(peer, nonce, issued)
            .verify_truncated_left(&cookie[8..])
            .map_err(|_| AuthError::BadCookie)?;
        if issued > now {
            return Err(AuthError::BadCookie);
        }
        if now - issued > COOKIE_TTL_NS {
            return Err(AuthError::Expired);
        }
        Ok(issued)
    }

    /// Handles one handshake message from `peer` at `now`, writing the reply (exactly as long
    /// as the message) into `out`. Nothing is written on an error: the server stays silent, so
    /// a wrong secret and a forged message look alike from outside.
    pub fn handle(
        &self,
        now: u64,
        peer: SocketAddr,
        msg: &[u8],
        out: &mut [u8],
    ) -> Result<ServerStep, AuthError> {
        let m = Msg::decode(msg)?;
        match m.typ {
            MsgType::Hello => {
                let reply = Msg {
                    typ: MsgType::Challenge,
                    nonce: m.nonce,
                    cookie: self.cookie(peer, &m.nonce, now),
                    proof: [0; PROOF_LEN],
                };
                reply.encode(out)?;
                Ok(ServerStep::Challenge)
            }
            MsgType::Auth => {
                let issued = self.check_cookie(now, peer, &m.nonce, &m.cookie)?;
                let want = derive(&self.secret, b"client", &m.nonce, &m.cookie);
                if !ct_eq(&want, &m.proof) {
                    return Err(AuthError::BadProof);
                }
                let reply = Msg {
                    typ: MsgType::Accept,
                    nonce: m.nonce,
                    cookie: m.cookie,
                    proof: derive(&self.secret, b"server", &m.nonce, &m.cookie),
                };
                reply.encode(out)?;
                Ok(ServerStep::Accepted {
                    key: SessionKey::from_bytes(&derive(
                        &self.secret,
                        b"session",
                        &m.nonce,
                        &m.cookie,
                    )),
                    cookie: m.cookie,
                    issued,
                })
            }
            MsgType::Challenge | MsgType::Accept => Err(AuthError::OutOfTurn),
        }
    }
}

/// Constant-time equality of two 32-byte values.
fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientState {
    Hello,
    Auth { cookie: [u8; COOKIE_LEN] },
    Done,
}

/// The client side: sends Hello (repeated every [`HS_RETRY_NS`]), answers the Challenge with
/// an Auth (repeated likewise), and yields the session key once the server's proof verifies.
pub struct ClientHandshake {
    secret: HmacSha256,
    nonce: [u8; NONCE_LEN],
    state: ClientState,
    next_send: u64,
    deadline: u64,
}

impl ClientHandshake {
    /// `nonce`: 16 fresh random bytes; gives up at `now + timeout_ns`.
    pub fn new(secret: &[u8], nonce: [u8; NONCE_LEN], now: u64, timeout_ns: u64) -> Self {
        ClientHandshake {
            secret: keyed(secret),
            nonce,
            state: ClientState::Hello,
            next_send: now,
            deadline: now.saturating_add(timeout_ns),
        }
    }

    /// The message to send now, if one is due (written into `out`, [`super::HS_LEN`] bytes).
    pub fn poll_transmit(&mut self, now: u64, out: &mut [u8]) -> Option<usize> {
        if now < self.next_send || now >= self.deadline {
            return None;
        }
        let m = match self.state {
            ClientState::Hello => Msg {
                typ: MsgType::Hello,
                nonce: self.nonce,
                cookie: [0; COOKIE_LEN],
                proof: [0; PROOF_LEN],
            },
            ClientState::Auth { cookie } => Msg {
                typ: MsgType::Auth,
                nonce: self.nonce,
                cookie,
                proof: derive(&self.secret, b"client", &self.nonce, &cookie),
            },
            ClientState::Done => return None,
        };
        let n = m.encode(out).ok()?;
        self.next_send = now.saturating_add(HS_RETRY_NS);
        Some(n)
    }

    /// When to call again: the next repeat or the deadline.
    pub fn poll_timeout(&self) -> Option<u64> {
        match self.state {
            ClientState::Done => None,
            _ => Some(self.next_send.min(self.deadline)),
        }
    }

    /// `Err(TimedOut)` once the deadline passed without an Accept.
    pub fn check(&self, now: u64) -> Result<(), AuthError> {
        if self.state != ClientState::Done && now >= self.deadline {
            Err(AuthError::TimedOut)
        } else {
            Ok(())
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == ClientState::Done
    }

    /// Handles a message from the server. `Ok(Some(key))` when the handshake is complete;
    /// `Ok(None)` for a step (or a harmless repeat); `Err` for anything that is not a valid
    /// answer to this handshake (the caller ignores it on UDP, fails on a stream).
    pub fn handle(&mut self, _now: u64, msg: &[u8]) -> Result<Option<SessionKey>, AuthError> {
        let m = Msg::decode(msg)?;
        if m.nonce != self.nonce {
            return Err(AuthError::OutOfTurn);
        }
        match (m.typ, self.state) {
            (MsgType::Challenge, ClientState::Hello) => {
                self.state = ClientState::Auth { cookie: m.cookie };
                self.next_send = 0; // answer at once
                Ok(None)
            }
            (MsgType::Challenge, _) => Ok(None), // a repeat of one already answered
            (MsgType::Accept, ClientState::Auth { cookie }) if m.cookie == cookie => {
                let want = derive(&self.secret, b"server", &self.nonce, &cookie);
                if !ct_eq(&want, &m.proof) {
                    return Err(AuthError::BadProof);
                }
                self.state = ClientState::Done;
                Ok(Some(SessionKey::from_bytes(&derive(
                    &self.secret,
                    b"session",
                    &self.nonce,
                    &cookie,
                ))))
            }
            (MsgType::Accept, ClientState::Done) => Ok(None),
            _ => Err(AuthError::OutOfTurn),
        }
    }
}

/// For the stream drivers (blocking in npt-probe, tokio in npt-users): the io errors they
/// report, written once. A reply that did not come: the server hung up, which over a stream
/// means it refused (wrong secret, or no `--token` there).
pub fn stream_read_error(e: std::io::Error) -> std::io::Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the server closed the connection during the --token handshake: wrong secret, or \
             the server has no --token",
        )
    } else {
        e
    }
}

/// The handshake's step on a stream reply, as an io result: the key once accepted.
pub fn stream_step(hs: &mut ClientHandshake, msg: &[u8]) -> std::io::Result<Option<SessionKey>> {
    hs.handle(0, msg).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("--token handshake: {e}"),
        )
    })
}

/// Two round trips on a stream without an Accept.
pub fn stream_no_accept() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "--token handshake: no Accept after two round trips",
    )
}
