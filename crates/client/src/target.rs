//! The `tcp://HOST:PORT`, `udp://…` and `quic://…` targets that `npt ping` and `npt bulk` (and
//! a hop agent's requests) name, parsed and resolved once: both engines had their own copy.

use std::net::{SocketAddr, ToSocketAddrs};

/// The transport a target is reached over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
    Quic,
}

impl Proto {
    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
            Proto::Quic => "quic",
        }
    }
}

/// A parsed `tcp://HOST:PORT`, `udp://…` or `quic://…` target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub proto: Proto,
    /// The host as written, without IPv6 brackets (the QUIC server name, a proxy's target).
    pub host: String,
    pub port: u16,
}

/// A target that is not `tcp://HOST:PORT`, `udp://HOST:PORT` or `quic://HOST:PORT`.
#[derive(Debug, thiserror::Error)]
#[error("target {0:?}: expected tcp://HOST:PORT, udp://HOST:PORT or quic://HOST:PORT")]
pub struct BadTarget(pub String);

/// A target whose host does not resolve; each engine words it in its own error type.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("cannot resolve {}:{}: {source}", .target.host, .target.port)]
    Lookup {
        target: Target,
        source: std::io::Error,
    },
    #[error("{}:{}: resolves to no address", .0.host, .0.port)]
    NoAddress(Target),
    /// `-4`/`-6` (or `--bind`'s family) left nothing.
    #[error(transparent)]
    Family(#[from] crate::source::NoAddressOfFamily),
}

impl Target {
    pub fn parse(s: &str) -> Result<Target, BadTarget> {
        let bad = || BadTarget(s.to_string());
        let (scheme, rest) = s.split_once("://").ok_or_else(bad)?;
        let proto = match scheme {
            "tcp" => Proto::Tcp,
            "udp" => Proto::Udp,
            "quic" => Proto::Quic,
            _ => return Err(bad()),
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = if let Some(r) = rest.strip_prefix('[') {
            r.split_once("]:").ok_or_else(bad)?
        } else {
            rest.rsplit_once(':').ok_or_else(bad)?
        };
        if host.is_empty() || host.contains(['/', '?', '#']) {
            return Err(bad());
        }
        let port: u16 = port.parse().map_err(|_| bad())?;
        if port == 0 {
            return Err(bad());
        }
        Ok(Target {
            proto,
            host: host.to_string(),
            port,
        })
    }

    /// Every address the host resolves to that `source` may use (its family), in resolver
    /// order.
    pub fn resolve_from(
        &self,
        source: &crate::source::Source,
    ) -> Result<Vec<SocketAddr>, ResolveError> {
        Ok(source.pick(&self.host, self.resolve()?)?)
    }

    /// Every address the host resolves to, in resolver order, duplicates removed.
    pub fn resolve(&self) -> Result<Vec<SocketAddr>, ResolveError> {
        let mut out: Vec<SocketAddr> = Vec::new();
        let found = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|source| ResolveError::Lookup {
                target: self.clone(),
                source,
            })?;
        for a in found {
            if !out.contains(&a) {
                out.push(a);
            }
        }
        if out.is_empty() {
            return Err(ResolveError::NoAddress(self.clone()));
        }
        Ok(out)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.proto.name(), self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.proto.name(), self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print() {
        let t = Target::parse("tcp://127.0.0.1:7777").unwrap();
        assert_eq!(
            (t.proto, t.host.as_str(), t.port),
            (Proto::Tcp, "127.0.0.1", 7777)
        );
        assert_eq!(t.to_string(), "tcp://127.0.0.1:7777");
        let t = Target::parse("quic://[::1]:7778").unwrap();
        assert_eq!(
            (t.proto, t.host.as_str(), t.port),
            (Proto::Quic, "::1", 7778)
        );
        assert_eq!(t.to_string(), "quic://[::1]:7778");
        assert_eq!(
            Target::parse("udp://localhost:9/").unwrap().host,
            "localhost"
        );
        for bad in [
            "127.0.0.1:1",
            "http://a:1",
            "tcp://a",
            "tcp://:1",
            "tcp://a:0",
            "udp://a:0",
            "tcp://a:x",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn localhost_resolves() {
        let t = Target::parse("tcp://localhost:7").unwrap();
        let addrs = t.resolve().unwrap();
        assert!(addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 7));
    }
}
