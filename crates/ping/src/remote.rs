//! The client half of `npt ping --from npt://AGENT:PORT`: one TCP connection to a hop agent
//! (`npt serve --hop-agent`), the keyed `--token` handshake on it, then hop requests
//! ([`npt_wire::hop`]) answered by the agent's measurements. Blocking, with every wait bounded:
//! a dead agent, a silent one or a refusal is a [`RemoteError`] with a kind of the one error
//! vocabulary, never a hang.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use npt_result::error::ErrorKind;
use npt_result::workload::Stop;
use npt_wire::auth::SessionKey;
use npt_wire::frame::{Header, HEADER_LEN};
use npt_wire::hop::{self, status, HopError, HopReply, HopRequest};

use crate::net::classify_io;

/// How long connecting to the agent, and its handshake, may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Added to a request's own duration (attempts × interval + timeout) for the reply to come.
pub const REPLY_SLACK: Duration = Duration::from_secs(5);

const SLICE: Duration = Duration::from_millis(100);

/// A parsed `npt://HOST:PORT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agent {
    pub host: String,
    pub port: u16,
}

impl Agent {
    pub fn parse(s: &str) -> Option<Agent> {
        let rest = s.strip_prefix("npt://")?.trim_end_matches('/');
        let (host, port) = match rest.strip_prefix('[') {
            Some(r) => r.split_once("]:")?,
            None => rest.rsplit_once(':')?,
        };
        let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
        if host.is_empty() || host.contains(['/', '?', '#', '@', '[', ']']) {
            return None;
        }
        Some(Agent {
            host: host.to_string(),
            port,
        })
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "npt://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "npt://{}:{}", self.host, self.port)
        }
    }
}

/// Why the agent gave no measurements.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot reach the agent {agent}: {source}")]
    Connect { agent: String, source: io::Error },
    #[error("the agent {agent} did not complete the --token handshake: {source}")]
    Handshake { agent: String, source: io::Error },
    #[error("the agent {agent} refused {target}: {}", status::text(*status))]
    Refused {
        agent: String,
        target: String,
        status: u32,
    },
    #[error("the agent {agent}: {source}")]
    Io { agent: String, source: io::Error },
    #[error("the agent {agent} sent no reply within {wait:?}")]
    NoReply { agent: String, wait: Duration },
    #[error("the agent {agent} sent a bad reply: {source}")]
    Protocol { agent: String, source: HopError },
    #[error("stopped while the agent {agent} was measuring")]
    Aborted { agent: String },
}

impl RemoteError {
    /// The error kind every attempt of the request is counted under: the socket's for a dead
    /// or lost agent, `refused` for a handshake that failed or a rate limit, `config` for a
    /// target the agent will not measure (outside its `--hop-allow`, out of its bounds, no
    /// `--hop-agent`, a name it cannot resolve), `timeout` for a silent agent.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RemoteError::Connect { source, .. } | RemoteError::Io { source, .. } => {
                classify_io(source)
            }
            RemoteError::Handshake { source, .. } => match classify_io(source) {
                ErrorKind::Timeout => ErrorKind::Timeout,
                _ => ErrorKind::Refused,
            },
            RemoteError::Refused { status, .. } => match *status {
                status::RATE_LIMITED | status::BUSY => ErrorKind::Refused,
                _ => ErrorKind::Config,
            },
            RemoteError::NoReply { .. } | RemoteError::Aborted { .. } => ErrorKind::Timeout,
            RemoteError::Protocol { .. } => ErrorKind::Protocol,
        }
    }
}

/// An authenticated connection to an agent.
pub struct Conn {
    agent: String,
    addr: SocketAddr,
    sock: TcpStream,
    key: SessionKey,
    flow: u32,
    seq: u64,
}

impl Conn {
    /// Connects to `agent` (each address it resolves to in turn) and does the handshake.
    pub fn open(agent: &Agent, secret: &str) -> Result<Conn, RemoteError> {
        let name = agent.to_string();
        let connect = |source| RemoteError::Connect {
            agent: name.clone(),
            source,
        };
        let addrs: Vec<SocketAddr> = (agent.host.as_str(), agent.port)
            .to_socket_addrs()
            .map_err(connect)?
            .collect();
        let mut last = io::Error::new(io::ErrorKind::NotFound, "resolves to no address");
        let mut found = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    found = Some((s, a));
                    break;
                }
                Err(e) => last = e,
            }
        }
        let (mut sock, addr) = found.ok_or_else(|| connect(last))?;
        let _ = sock.set_nodelay(true);
        let handshake = |source| RemoteError::Handshake {
            agent: name.clone(),
            source,
        };
        sock.set_read_timeout(Some(CONNECT_TIMEOUT))
            .and_then(|()| sock.set_write_timeout(Some(CONNECT_TIMEOUT)))
            .map_err(handshake)?;
        let key = npt_client::auth::stream(&mut sock, secret).map_err(handshake)?;
        let flow = std::process::id().rotate_left(16) ^ u32::from(sock_port(&sock));
        Ok(Conn {
            agent: name,
            addr,
            sock,
            key,
            flow,
            seq: 0,
        })
    }

    /// The agent's address this connection reached.
    pub fn peer(&self) -> SocketAddr {
        self.addr
    }

    /// Asks the agent to measure `req` and waits for the reply (at most the request's own
    /// duration plus [`REPLY_SLACK`]). `stop`: at 2 requests or more the wait is given up.
    pub fn ask(&mut self, req: &HopRequest, stop: &Stop) -> Result<HopReply, RemoteError> {
        self.seq += 1;
        let frame =
            hop::request_frame(req, self.flow, self.seq, 0, Some(&self.key)).map_err(|source| {
                RemoteError::Protocol {
                    agent: self.agent.clone(),
                    source,
                }
            })?;
        let io_err = |agent: &str, source| RemoteError::Io {
            agent: agent.to_string(),
            source,
        };
        self.sock
            .write_all(&frame)
            .map_err(|e| io_err(&self.agent, e))?;
        let wait = Duration::from_micros(u64::from(req.attempts) * u64::from(req.interval_us))
            + Duration::from_micros(u64::from(req.timeout_us))
            + REPLY_SLACK;
        let deadline = Instant::now() + wait;
        let mut hdr = [0u8; HEADER_LEN];
        self.read_until(&mut hdr, deadline, wait, stop)?;
        let h = Header::decode(&hdr).map_err(|e| self.protocol(e.into()))?;
        let len = usize::try_from(h.frame_len).unwrap_or(usize::MAX);
        if len > frame.len() {
            // Never larger than the request: anything else is not an agent's reply.
            return Err(self.protocol(HopError::TooLarge {
                reply: len,
                request: frame.len(),
            }));
        }
        // `len >= HEADER_LEN`: the header decoded.
        let mut whole = hdr.to_vec();
        whole.resize(len, 0);
        let rest = whole.get_mut(HEADER_LEN..).unwrap_or_default();
        self.read_until(rest, deadline, wait, stop)?;
        match hop::open_reply(&whole, self.seq, Some(&self.key)) {
            Ok((_, Ok(reply))) => Ok(reply),
            Ok((_, Err(status))) => Err(RemoteError::Refused {
                agent: self.agent.clone(),
                target: target_name(req),
                status,
            }),
            Err(e) => Err(self.protocol(e)),
        }
    }

    fn protocol(&self, source: HopError) -> RemoteError {
        RemoteError::Protocol {
            agent: self.agent.clone(),
            source,
        }
    }

    /// Fills `buf` by `deadline`, looking at `stop` every [`SLICE`].
    fn read_until(
        &mut self,
        buf: &mut [u8],
        deadline: Instant,
        wait: Duration,
        stop: &Stop,
    ) -> Result<(), RemoteError> {
        let mut got = 0;
        while let Some(rest) = buf.get_mut(got..).filter(|r| !r.is_empty()) {
            if stop.level() >= 2 {
                return Err(RemoteError::Aborted {
                    agent: self.agent.clone(),
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RemoteError::NoReply {
                    agent: self.agent.clone(),
                    wait,
                });
            }
            let _ = self.sock.set_read_timeout(Some(left.min(SLICE)));
            match self.sock.read(rest) {
                Ok(0) => {
                    return Err(RemoteError::Io {
                        agent: self.agent.clone(),
                        source: io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the agent closed the connection",
                        ),
                    })
                }
                Ok(n) => got += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => {
                    return Err(RemoteError::Io {
                        agent: self.agent.clone(),
                        source: e,
                    })
                }
            }
        }
        Ok(())
    }
}

/// What a request measures, as a URL: an MTU search is of the target's UDP port.
fn target_name(req: &HopRequest) -> String {
    let scheme = match req.proto {
        hop::HopProto::Mtu => "udp",
        p => p.name(),
    };
    format!("{scheme}://{}", host_port(&req.host, req.port))
}

/// The local port of a connection (its flow id tells its frames apart in a capture).
fn sock_port(s: &TcpStream) -> u16 {
    s.local_addr().map_or(0, |a| a.port())
}

/// `host:port`, IPv6 in brackets.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_parse() {
        assert_eq!(
            Agent::parse("npt://la:7777"),
            Some(Agent {
                host: "la".into(),
                port: 7777
            })
        );
        let v6 = Agent::parse("npt://[::1]:7777/").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 7777));
        assert_eq!(v6.to_string(), "npt://[::1]:7777");
        for bad in [
            "la:7777",
            "tcp://la:7777",
            "npt://la",
            "npt://:1",
            "npt://la:0",
            "npt://la:x",
            "npt://u@la:1",
        ] {
            assert_eq!(Agent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_dead_agent_is_a_classified_error_at_once() {
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let agent = Agent::parse(&format!("npt://{dead}")).unwrap();
        let t = Instant::now();
        let e = Conn::open(&agent, "s").err().expect("nothing listens");
        assert_eq!(e.kind().name(), "refused");
        assert!(e.to_string().contains(&agent.to_string()), "{e}");
        assert!(t.elapsed() < CONNECT_TIMEOUT);
    }

    #[test]
    fn an_agent_that_hangs_up_on_the_handshake_is_refused() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            drop(s);
        });
        let agent = Agent::parse(&format!("npt://{addr}")).unwrap();
        let e = Conn::open(&agent, "s").err().expect("hung up");
        assert_eq!(e.kind().name(), "refused", "{e}");
        assert!(e.to_string().contains("--token"), "{e}");
        t.join().unwrap();
    }

    #[test]
    fn refusals_are_classified() {
        let r = |status| RemoteError::Refused {
            agent: "npt://a:1".into(),
            target: "tcp://t:1".into(),
            status,
        };
        assert_eq!(r(status::NOT_ALLOWED).kind().name(), "config");
        assert_eq!(r(status::DISABLED).kind().name(), "config");
        assert_eq!(r(status::RATE_LIMITED).kind().name(), "refused");
        assert_eq!(r(status::BUSY).kind().name(), "refused");
        let msg = r(status::NOT_ALLOWED).to_string();
        assert!(
            msg.contains("tcp://t:1") && msg.contains("--hop-allow"),
            "{msg}"
        );
    }
}
