//! The URL a run targets, and resolving its host (the first address that accepts wins).

use super::*;

/// A parsed `http://` or `https://` URL.
#[derive(Clone, Debug)]
pub struct Target {
    pub url: String,
    pub https: bool,
    /// Host as written in the URL (no brackets around IPv6).
    pub host: String,
    pub port: u16,
    /// `host[:port]` as written.
    pub authority: String,
    pub path_and_query: String,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, Error> {
        let bad = |why: &str| Error::Url(url.to_string(), why.to_string());
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            Some(other) => {
                return Err(bad(&format!(
                    "unsupported scheme {other:?}: use http:// or https://"
                )))
            }
            None => return Err(bad("no scheme: use http://HOST[:PORT]/PATH")),
        };
        let auth = uri.authority().ok_or_else(|| bad("no host"))?;
        let host = auth.host().trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        if auth.as_str().contains('@') {
            return Err(bad("user info in URLs is not supported"));
        }
        let port = auth.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path_and_query = uri
            .path_and_query()
            .map_or("/".to_string(), |p| p.as_str().to_string());
        let path_and_query = if path_and_query.is_empty() {
            "/".to_string()
        } else {
            path_and_query
        };
        Ok(Target {
            url: url.to_string(),
            https,
            host: host.to_string(),
            port,
            authority: auth.as_str().to_string(),
            path_and_query,
        })
    }
}

/// Resolves the URL's host. With several addresses (`localhost` → `::1` and `127.0.0.1`) the
/// first that accepts a TCP connection within 1 s wins, as a browser's fallback would find it;
/// when none does (a cold start has not begun yet) the first address is used.
/// Only addresses of `source`'s family count (`-4`, `-6`).
pub fn resolve(t: &Target, source: &npt_client::source::Source) -> Result<SocketAddr, Error> {
    let addrs: Vec<SocketAddr> = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| Error::Io(format!("resolving {}", t.host), e))?
        .collect();
    let addrs = if addrs.is_empty() {
        addrs
    } else {
        source
            .pick(&t.host, addrs)
            .map_err(|e| Error::Url(t.url.clone(), e.to_string()))?
    };
    let first = *addrs
        .first()
        .ok_or_else(|| Error::Url(t.url.clone(), "host has no address".into()))?;
    if addrs.len() == 1 {
        return Ok(first);
    }
    Ok(addrs
        .iter()
        .copied()
        .find(|a| std::net::TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
        .unwrap_or(first))
}
