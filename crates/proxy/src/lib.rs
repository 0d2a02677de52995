//! Reaching a target through a proxy the way a real client of that proxy would: SOCKS5 CONNECT
//! and UDP ASSOCIATE (RFC 1928, username/password per RFC 1929) and HTTP CONNECT.
//!
//! - [`socks5`] and [`http_connect`] are sans-IO codecs (bytes in, bytes out, golden-byte
//!   tests, fuzzed by the random-bytes tests);
//! - [`Via`] is the one `--via` URL grammar every subcommand shares (curl's conventions:
//!   `socks5://`, `socks5h://` = the proxy resolves the name, `http://`; credentials in the URL);
//! - [`handshake`] is the client handshake as a sans-IO state machine; [`connect`] drives it
//!   over a blocking socket (and `connect_async`, feature `tokio`, over tokio) with a deadline,
//!   timing each phase
//!   (connect to the proxy, authentication, the CONNECT / ASSOCIATE reply), which the reports
//!   show beside the latency the user feels; [`udp_flow`] is one UDP flow through a SOCKS5
//!   relay (its header built once, each reply's checked and stripped).
//!
//! Errors are classified ([`ProxyError::kind`]) with the proxy's reply code in words.
#![deny(clippy::indexing_slicing)] // parses proxy replies from the network: see `[workspace.lints]`

pub mod connect;
#[cfg(feature = "tokio")]
pub mod connect_async;
pub mod handshake;
pub mod http_connect;
pub mod socks5;
pub mod udp_flow;

use std::fmt;
use std::io;

use npt_result::error::ErrorKind;
use percent_encoding::percent_decode_str;

pub use connect::{tcp_connect, udp_associate, Phases, UdpAssociation};
pub use socks5::Target;

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// A bad `--via` (exit 2 territory).
    #[error("{0}")]
    Usage(String),
    #[error("cannot reach the proxy {addr}: {source}")]
    Connect { addr: String, source: io::Error },
    #[error("proxy authentication failed: {0}")]
    AuthFailed(String),
    #[error("the proxy denied the request: {0}")]
    Denied(String),
    #[error("the proxy answered {code} ({words})")]
    Refused { code: u8, words: &'static str },
    #[error("the proxy cannot reach the target: {0}")]
    TargetUnreachable(String),
    #[error("proxy protocol error: {0}")]
    Protocol(String),
    #[error("the proxy did not answer within the timeout ({0})")]
    Timeout(&'static str),
    #[error("proxy connection: {0}")]
    Io(#[from] io::Error),
}

impl ProxyError {
    /// The error kind reports count this under.
    pub fn kind(&self) -> ErrorKind {
        use npt_result::error::ProxyErrorKind as P;
        match self {
            ProxyError::Usage(_) => ErrorKind::Config,
            ProxyError::Connect { source, .. } => match source.kind() {
                io::ErrorKind::ConnectionRefused => ErrorKind::Proxy(P::Refused),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ErrorKind::Proxy(P::Timeout),
                _ => ErrorKind::Proxy(P::Unreachable),
            },
            ProxyError::AuthFailed(_) => ErrorKind::Proxy(P::AuthFailed),
            ProxyError::Denied(_) => ErrorKind::Proxy(P::Denied),
            ProxyError::Refused { code, .. } => match code {
                2 => ErrorKind::Proxy(P::Denied),
                3 | 4 => ErrorKind::Proxy(P::TargetUnreachable),
                5 => ErrorKind::Proxy(P::TargetRefused),
                7 | 8 => ErrorKind::Proxy(P::Unsupported),
                _ => ErrorKind::Proxy(P::Failure),
            },
            ProxyError::TargetUnreachable(_) => ErrorKind::Proxy(P::TargetUnreachable),
            ProxyError::Protocol(_) => ErrorKind::Proxy(P::Protocol),
            ProxyError::Timeout(_) => ErrorKind::Proxy(P::Timeout),
            ProxyError::Io(_) => ErrorKind::Proxy(P::Io),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViaKind {
    /// SOCKS5; `remote_dns` (`socks5h://`): the proxy resolves the target's name.
    Socks5 { remote_dns: bool },
    /// HTTP CONNECT.
    Http,
}

/// A proxy to go through: `socks5://[user[:pass]@]host[:port]`, `socks5h://…`, `http://…`.
/// Port defaults to 1080 as in curl.
#[derive(Clone, PartialEq, Eq)]
pub struct Via {
    pub kind: ViaKind,
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub pass: Option<String>,
}

impl fmt::Debug for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for Via {
    /// The URL with the password left out (it lands in logs and result files).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.kind {
            ViaKind::Socks5 { remote_dns: false } => "socks5",
            ViaKind::Socks5 { remote_dns: true } => "socks5h",
            ViaKind::Http => "http",
        };
        let user = match (&self.user, &self.pass) {
            (Some(u), Some(_)) => format!("{u}:***@"),
            (Some(u), None) => format!("{u}@"),
            _ => String::new(),
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(f, "{scheme}://{user}{host}:{}", self.port)
    }
}

impl Via {
    pub fn parse(url: &str) -> Result<Via, ProxyError> {
        let bad = |why: &str| ProxyError::Usage(format!("--via {url:?}: {why}"));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("expected socks5://, socks5h:// or http://HOST:PORT"))?;
        let kind = match scheme.to_ascii_lowercase().as_str() {
            "socks5" => ViaKind::Socks5 { remote_dns: false },
            "socks5h" => ViaKind::Socks5 { remote_dns: true },
            "http" => ViaKind::Http,
            other => {
                return Err(bad(&format!(
                    "unsupported proxy scheme {other:?} (socks5, socks5h or http)"
                )))
            }
        };
        let rest = rest.trim_end_matches('/');
        let (userinfo, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        let decode = |s: &str| {
            percent_decode_str(s)
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| bad("credentials are not UTF-8 after percent-decoding"))
        };
        let (user, pass) = match userinfo {
            Some(u) => match u.split_once(':') {
                Some((a, b)) => (Some(decode(a)?), Some(decode(b)?)),
                None => (Some(decode(u)?), None),
            },
            None => (None, None),
        };
        if matches!(&user, Some(u) if u.is_empty()) {
            return Err(bad("empty user name"));
        }
        let (host, port) = split_host_port(hostport).map_err(|e| bad(&e))?;
        Ok(Via {
            kind,
            host,
            port: port.unwrap_or(1080),
            user,
            pass,
        })
    }

    /// `--via-user user:pass` (curl's `--proxy-user`): credentials outside the URL.
    pub fn with_user(mut self, userpass: &str) -> Result<Via, ProxyError> {
        let (u, p) = userpass.split_once(':').unwrap_or((userpass, ""));
        if u.is_empty() {
            return Err(ProxyError::Usage("--via-user: empty user name".into()));
        }
        self.user = Some(u.to_string());
        self.pass = Some(p.to_string());
        Ok(self)
    }

    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.user
            .as_deref()
            .map(|u| (u, self.pass.as_deref().unwrap_or("")))
    }

    /// `host:port` for connecting (IPv6 in brackets).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The layers a connection through this proxy sets up, as every setup block names them
    /// ([`npt_result::stats::setup::tcp_plan`]): the connect to the proxy, then its SOCKS5
    /// greeting (and user/password when the URL has credentials) and CONNECT, or UDP ASSOCIATE
    /// (`udp`), or its HTTP CONNECT.
    pub fn setup_plan(&self, udp: bool) -> Vec<npt_result::stats::setup::Plan> {
        use npt_result::stats::setup::{tcp_plan, Proxy};
        let proxy = match self.kind {
            ViaKind::Socks5 { .. } => Proxy::Socks5 {
                auth: self.credentials().is_some(),
                udp,
            },
            ViaKind::Http => Proxy::Http,
        };
        tcp_plan(Some((proxy, &self.authority())))
    }
}

/// `host:port`, `[v6]:port` or `host` → (host, port).
fn split_host_port(s: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(r) = s.strip_prefix('[') {
        let (h, after) = r.split_once(']').ok_or("unclosed [ in the host")?;
        (h, after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if host.is_empty() {
        return Err("missing host".into());
    }
    let port = match port {
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("bad port {p:?}"))?,
        ),
        None => None,
    };
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_in_the_vocabulary_of_results() {
        let io = || io::Error::from(io::ErrorKind::ConnectionRefused);
        let all = [
            ProxyError::Usage("x".into()),
            ProxyError::Connect {
                addr: "a".into(),
                source: io(),
            },
            ProxyError::Connect {
                addr: "a".into(),
                source: io::ErrorKind::TimedOut.into(),
            },
            ProxyError::Connect {
                addr: "a".into(),
                source: io::ErrorKind::Other.into(),
            },
            ProxyError::AuthFailed("x".into()),
            ProxyError::Denied("x".into()),
            ProxyError::TargetUnreachable("x".into()),
            ProxyError::Protocol("x".into()),
            ProxyError::Timeout("x"),
            ProxyError::Io(io()),
        ];
        let refused = (0..=255u8).map(|code| ProxyError::Refused { code, words: "w" });
        for e in all.into_iter().chain(refused) {
            assert!(
                npt_result::error::is_error_kind(e.kind().name()),
                "{e}: {}",
                e.kind()
            );
        }
    }

    #[test]
    fn via_grammar() {
        let v = Via::parse("socks5://user:p%40ss@127.0.0.1:1081").unwrap();
        assert_eq!(v.kind, ViaKind::Socks5 { remote_dns: false });
        assert_eq!((v.host.as_str(), v.port), ("127.0.0.1", 1081));
        assert_eq!(v.credentials(), Some(("user", "p@ss")));
        assert_eq!(v.to_string(), "socks5://user:***@127.0.0.1:1081");
        let v = Via::parse("socks5h://[::1]").unwrap();
        assert_eq!((v.host.as_str(), v.port), ("::1", 1080));
        assert_eq!(v.authority(), "[::1]:1080");
        assert_eq!(
            Via::parse("HTTP://proxy:3128/").unwrap().kind,
            ViaKind::Http
        );
        let v = Via::parse("socks5://h:1")
            .unwrap()
            .with_user("a:b")
            .unwrap();
        assert_eq!(v.credentials(), Some(("a", "b")));
        for (bad, why) in [
            ("proxy:1080", "expected socks5://"),
            ("socks4://h:1", "unsupported proxy scheme"),
            ("socks5://h:0", "bad port"),
            ("socks5://h:99999", "bad port"),
            ("socks5://:1080", "missing host"),
            ("socks5://@h:1", "empty user name"),
            ("socks5://[::1:1080", "unclosed"),
        ] {
            let e = Via::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
