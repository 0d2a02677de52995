//! HTTP CONNECT (RFC 9110 section 9.3.6) as a sans-IO codec: the request to write, and the
//! proxy's response parsed with `httparse` from the bytes read so far. Only the status
//! matters; the response header is bounded so a proxy cannot make npt buffer without end.

use base64::Engine as _;

use crate::ProxyError;

/// Largest response header accepted from a proxy.
pub const MAX_HEADER: usize = 16 * 1024;

/// `CONNECT host:port HTTP/1.1` with a Host header and optional basic credentials.
pub fn request(authority: &str, credentials: Option<(&str, &str)>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"CONNECT ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b"\r\n");
    if let Some((u, p)) = credentials {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        out.extend_from_slice(b"Proxy-Authorization: Basic ");
        out.extend_from_slice(token.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// The proxy's answer: `Ok(Some(header_len))` once a 2xx status arrived (the tunnel starts
/// right after the header), `Ok(None)` while the header is incomplete.
pub fn parse_response(b: &[u8]) -> Result<Option<usize>, ProxyError> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    match resp.parse(b) {
        Ok(httparse::Status::Partial) => {
            if b.len() > MAX_HEADER {
                return Err(ProxyError::Protocol(format!(
                    "proxy response header longer than {MAX_HEADER} bytes"
                )));
            }
            Ok(None)
        }
        Ok(httparse::Status::Complete(len)) => {
            let code = resp.code.unwrap_or(0);
            let reason = resp.reason.unwrap_or("").to_string();
            match code {
                200..=299 => Ok(Some(len)),
                407 => Err(ProxyError::AuthFailed(format!(
                    "the proxy wants credentials or rejected them: {code} {reason}"
                ))),
                403 => Err(ProxyError::Denied(format!("{code} {reason}"))),
                // tinyproxy says "500 Unable to connect", squid 503, others 502 or 504.
                500 | 502 | 503 | 504 => {
                    Err(ProxyError::TargetUnreachable(format!("{code} {reason}")))
                }
                _ => Err(ProxyError::Protocol(format!(
                    "the proxy answered CONNECT with {code} {reason}"
                ))),
            }
        }
        Err(e) => Err(ProxyError::Protocol(format!(
            "not an HTTP response from the proxy: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_request() {
        let mut r = Vec::new();
        request("10.0.0.1:443", None, &mut r);
        assert_eq!(
            r,
            b"CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: 10.0.0.1:443\r\n\r\n".to_vec()
        );
        r.clear();
        request("h:1", Some(("Aladdin", "open sesame")), &mut r);
        let text = String::from_utf8(r).unwrap();
        assert!(text.contains("Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n"));
    }

    #[test]
    fn responses() {
        let ok = b"HTTP/1.1 200 Connection established\r\nProxy-agent: x\r\n\r\nTUNNEL";
        for cut in 0..ok.len() - 6 {
            assert_eq!(parse_response(&ok[..cut]).unwrap(), None, "cut at {cut}");
        }
        assert_eq!(parse_response(ok).unwrap(), Some(ok.len() - 6));
        let e = parse_response(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n").unwrap_err();
        assert_eq!(e.kind().name(), "proxy_auth_failed");
        let e = parse_response(b"HTTP/1.0 403 Access violation\r\n\r\n").unwrap_err();
        assert_eq!(e.kind().name(), "proxy_denied");
        let e = parse_response(b"HTTP/1.0 502 Bad Gateway\r\n\r\n").unwrap_err();
        assert_eq!(e.kind().name(), "proxy_target_unreachable");
        assert!(parse_response(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        let long = [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &[b'a'; MAX_HEADER]].concat();
        assert!(parse_response(&long).is_err(), "bounded header");
    }
}
