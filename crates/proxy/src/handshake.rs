//! The whole client handshake with a proxy as a sans-IO state machine, so the blocking driver
//! (`npt probe`'s threads) and the async one (`npt run`, `npt http` on tokio) are thin loops
//! over the same logic: write [`Handshake::output`], feed what is read to
//! [`Handshake::on_read`], until it says [`Step::Done`]. The driver reads the clock at each
//! [`Step::Authenticated`] and [`Step::Done`] to time the phases.

use crate::socks5::{self, Target};
use crate::{http_connect, ProxyError, Via, ViaKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Method,
    Auth,
    Reply,
    HttpReply,
    Done,
}

/// What the bytes just read completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing yet: read more.
    NeedMore,
    /// Method choice (and user/password) done; the request is in [`Handshake::output`].
    Authenticated,
    /// The proxy accepted: the tunnel (or UDP relay, at `bound`) is open.
    Done { bound: Option<Target> },
}

pub struct Handshake {
    state: State,
    cmd: u8,
    target: Target,
    credentials: Option<(String, String)>,
    out: Vec<u8>,
    buf: Vec<u8>,
}

impl Handshake {
    /// A SOCKS5 CONNECT or UDP ASSOCIATE (`cmd`) for `target`; the greeting is ready to write.
    pub fn socks(via: &Via, cmd: u8, target: Target) -> Handshake {
        let credentials = via
            .credentials()
            .map(|(u, p)| (u.to_string(), p.to_string()));
        let mut out = Vec::with_capacity(64);
        socks5::greeting(credentials.is_some(), &mut out);
        Handshake {
            state: State::Method,
            cmd,
            target,
            credentials,
            out,
            buf: Vec::with_capacity(64),
        }
    }

    /// An HTTP CONNECT to `authority` (`host:port`); the request is ready to write.
    pub fn http(via: &Via, authority: &str) -> Handshake {
        debug_assert_eq!(via.kind, ViaKind::Http);
        let mut out = Vec::with_capacity(128);
        http_connect::request(authority, via.credentials(), &mut out);
        Handshake {
            state: State::HttpReply,
            cmd: 0,
            target: Target::Name(String::new(), 0),
            credentials: None,
            out,
            buf: Vec::new(),
        }
    }

    /// For `host:port`, the handshake `via` needs: SOCKS5 CONNECT (resolving the name here
    /// unless `socks5h://`) or HTTP CONNECT.
    pub fn connect(via: &Via, host: &str, port: u16) -> Result<Handshake, ProxyError> {
        Ok(match via.kind {
            ViaKind::Socks5 { .. } => Handshake::socks(
                via,
                socks5::CMD_CONNECT,
                crate::connect::target_for(via, host, port)?,
            ),
            ViaKind::Http => {
                let authority = if host.contains(':') && !host.starts_with('[') {
                    format!("[{host}]:{port}")
                } else {
                    format!("{host}:{port}")
                };
                Handshake::http(via, &authority)
            }
        })
    }

    /// Bytes to write to the proxy now (empty: wait for its answer).
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// The caller wrote all of [`output`](Handshake::output).
    pub fn written(&mut self) {
        self.out.clear();
    }

    /// What the proxy is being waited for, for error messages.
    pub fn phase(&self) -> &'static str {
        match self.state {
            State::Method => "method choice",
            State::Auth => "authentication",
            State::Reply => "request reply",
            State::HttpReply => "CONNECT reply",
            State::Done => "tunnel",
        }
    }

    /// Feeds bytes read from the proxy.
    pub fn on_read(&mut self, bytes: &[u8]) -> Result<Step, ProxyError> {
        if self.state == State::Done {
            return Err(ProxyError::Protocol(
                "the proxy sent data before the tunnel was open".into(),
            ));
        }
        self.buf.extend_from_slice(bytes);
        let mut authenticated = false;
        // Bounded: each pass consumes a whole message or returns.
        for _ in 0..4 {
            match self.state {
                State::Method => match socks5::parse_method(&self.buf)? {
                    None => break,
                    Some((method, used)) => {
                        self.buf.drain(..used);
                        if method == socks5::METHOD_USERPASS {
                            let (u, p) = self.credentials.as_ref().ok_or_else(|| {
                                ProxyError::AuthFailed(
                                    "the proxy asks for a user name and password".into(),
                                )
                            })?;
                            socks5::auth_request(u, p, &mut self.out)?;
                            self.state = State::Auth;
                        } else {
                            self.request()?;
                            authenticated = true;
                        }
                    }
                },
                State::Auth => match socks5::parse_auth_reply(&self.buf)? {
                    None => break,
                    Some(used) => {
                        self.buf.drain(..used);
                        self.request()?;
                        authenticated = true;
                    }
                },
                State::Reply => match socks5::parse_reply(&self.buf)? {
                    None => break,
                    Some((bound, used)) => return self.finish(used, Some(bound)),
                },
                State::HttpReply => match http_connect::parse_response(&self.buf)? {
                    None => break,
                    Some(used) => return self.finish(used, None),
                },
                State::Done => break,
            }
        }
        Ok(if authenticated {
            Step::Authenticated
        } else {
            Step::NeedMore
        })
    }

    fn request(&mut self) -> Result<(), ProxyError> {
        socks5::request(self.cmd, &self.target, &mut self.out)?;
        self.state = State::Reply;
        Ok(())
    }

    fn finish(&mut self, used: usize, bound: Option<Target>) -> Result<Step, ProxyError> {
        self.buf.drain(..used);
        if !self.buf.is_empty() {
            return Err(ProxyError::Protocol(
                "the proxy sent data before the tunnel was open".into(),
            ));
        }
        self.state = State::Done;
        Ok(Step::Done { bound })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn via(s: &str) -> Via {
        Via::parse(s).unwrap()
    }

    #[test]
    fn socks_with_password_step_by_step() {
        let t = Target::Addr("10.0.0.1:7".parse().unwrap());
        let mut h = Handshake::socks(&via("socks5://u:p@x:1"), socks5::CMD_CONNECT, t);
        assert_eq!(h.output(), [5, 2, 0, 2]);
        h.written();
        assert_eq!(h.on_read(&[5]).unwrap(), Step::NeedMore);
        assert_eq!(h.on_read(&[2]).unwrap(), Step::NeedMore);
        assert_eq!(h.output(), [1, 1, b'u', 1, b'p']);
        h.written();
        assert_eq!(h.phase(), "authentication");
        assert_eq!(h.on_read(&[1, 0]).unwrap(), Step::Authenticated);
        assert_eq!(h.output(), [5, 1, 0, 1, 10, 0, 0, 1, 0, 7]);
        h.written();
        let done = h.on_read(&[5, 0, 0, 1, 127, 0, 0, 1, 4, 0x38]).unwrap();
        assert_eq!(
            done,
            Step::Done {
                bound: Some(Target::Addr("127.0.0.1:1080".parse().unwrap()))
            }
        );
        assert!(h.on_read(b"x").is_err(), "nothing after the end");
    }

    #[test]
    fn socks_without_auth_and_early_data() {
        let t = Target::Name("h".into(), 80);
        let mut h = Handshake::socks(&via("socks5h://x:1"), socks5::CMD_CONNECT, t);
        h.written();
        // Method choice and reply in one read, plus a stray byte: refused.
        let mut bytes = vec![5, 0];
        assert_eq!(h.on_read(&bytes).unwrap(), Step::Authenticated);
        h.written();
        bytes = vec![5, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xEE];
        assert!(matches!(h.on_read(&bytes), Err(ProxyError::Protocol(_))));
    }

    #[test]
    fn a_proxy_that_wants_credentials_we_lack() {
        let t = Target::Name("h".into(), 80);
        let mut h = Handshake::socks(&via("socks5://x:1"), socks5::CMD_CONNECT, t);
        let e = h.on_read(&[5, 2]).unwrap_err();
        assert_eq!(e.kind().name(), "proxy_auth_failed");
    }

    #[test]
    fn http_connect() {
        let mut h = Handshake::connect(&via("http://p:3128"), "::1", 443).unwrap();
        assert!(h.output().starts_with(b"CONNECT [::1]:443 HTTP/1.1\r\n"));
        h.written();
        assert_eq!(h.on_read(b"HTTP/1.1 200 OK\r\n").unwrap(), Step::NeedMore);
        assert_eq!(h.on_read(b"\r\n").unwrap(), Step::Done { bound: None });
    }
}
