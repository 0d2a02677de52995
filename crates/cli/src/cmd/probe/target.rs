//! A probe's target: `udp://`, `tcp://` or `stamp://HOST:PORT` split into protocol and
//! address, and the address resolved for the source (`-4`, `-6`, `--bind`), or left to the
//! proxy (`socks5h://`).

use std::net::{SocketAddr, ToSocketAddrs};

use npt_client::source::Source;
use npt_probe::Proto;

use crate::flags::source::{self, SourceArgs};
use crate::usage;

/// Splits `udp://host:port` into protocol and address text. A path to an XML file in the
/// target's place is the line tester's config given without its flag: said so.
pub fn parse(t: &str) -> anyhow::Result<(Proto, String)> {
    if !t.contains("://") && t.to_ascii_lowercase().ends_with(".xml") {
        return Err(usage!(
            "target {t:?} is not udp://, tcp:// or stamp://HOST:PORT; for the line tester's XML \
             config, use npt probe --config {t}"
        ));
    }
    let (scheme, rest) = t.split_once("://").ok_or_else(|| {
        usage!("target {t:?}: expected udp://HOST:PORT, tcp://HOST:PORT or stamp://HOST:PORT")
    })?;
    let proto = match scheme.to_ascii_lowercase().as_str() {
        "udp" => Proto::Udp,
        "tcp" => Proto::Tcp,
        "stamp" => Proto::Stamp,
        other => {
            return Err(usage!(
                "target {t:?}: unsupported scheme {other:?} (probe speaks udp://, tcp:// and \
                 stamp://)"
            ))
        }
    };
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() {
        return Err(usage!("target {t:?}: missing HOST:PORT"));
    }
    Ok((proto, rest.to_string()))
}

/// `HOST:PORT` resolved for `src`: only addresses of its family (`-4`, `-6`, `--bind`'s).
pub fn resolve(hostport: &str, flag: &str, src: &Source) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = hostport.parse::<SocketAddr>() {
        SourceArgs::check_literal(src, &a.ip().to_string())?;
        return Ok(a);
    }
    let (host, port) = hostport
        .rsplit_once(':')
        .ok_or_else(|| usage!("{flag} {hostport:?}: missing :PORT"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| usage!("{flag} {hostport:?}: bad port {port:?}"))?;
    if port == 0 {
        return Err(usage!("{flag} {hostport:?}: port 0 is not a target"));
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    SourceArgs::check_literal(src, host)?;
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| usage!("{flag} {hostport:?}: cannot resolve host {host:?}: {e}"))?
        .collect();
    if addrs.is_empty() {
        return Err(usage!("{flag} {hostport:?}: host {host:?} has no address"));
    }
    let addrs = source::pick(src, host, addrs)?;
    addrs
        .into_iter()
        .next()
        .ok_or_else(|| usage!("{flag} {hostport:?}: host {host:?} has no address"))
}

/// A target the proxy will resolve: the unspecified address with the target's port.
pub fn unresolved(hostport: &str) -> anyhow::Result<SocketAddr> {
    let port = hostport
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .ok_or_else(|| usage!("target {hostport:?}: missing :PORT"))?;
    Ok(SocketAddr::from(([0, 0, 0, 0], port)))
}
