//! The gate in front of the responder's routes: with a token, requests without it get 401 for
//! anything but the 3-byte `GET /` (a health check); `/bytes/N` is charged to the source
//! address's reply budget and answered 429 when it does not hold N. Both are counted. A
//! request for a host named by `--http-delay` waits that long first (counted in `delayed`).

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;

use super::{conn, plain, respond, Policy, RespBody, MAX_BYTES, TOKEN_HEADER, TOKEN_QUERY};

/// True if the request carries the secret, in the [`TOKEN_HEADER`] header or the
/// [`TOKEN_QUERY`] query parameter (compared as sent: no percent-decoding).
fn authorized(req: &Request<Incoming>, secret: &str) -> bool {
    let s = secret.as_bytes();
    if let Some(v) = req.headers().get(TOKEN_HEADER) {
        if conn::token_matches(v.as_bytes(), s) {
            return true;
        }
    }
    req.uri().query().is_some_and(|q| {
        q.split('&').any(|kv| {
            kv.split_once('=')
                .is_some_and(|(k, v)| k == TOKEN_QUERY && conn::token_matches(v.as_bytes(), s))
        })
    })
}

/// The `--http-delay` of the request's host: its `Host` header (HTTP/1.1) or the URI's
/// authority (h2's `:authority`), without the port, compared case-insensitively.
fn host_delay<B>(req: &Request<B>, delays: &[(String, Duration)]) -> Option<Duration> {
    if delays.is_empty() {
        return None;
    }
    let authority = match req.uri().authority() {
        Some(a) => a.as_str(),
        None => req.headers().get(http::header::HOST)?.to_str().ok()?,
    };
    let host = match authority.rsplit_once(':') {
        // `[::1]:80` and `name:80` lose the port; a bare IPv6 address in brackets keeps it all.
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !h.is_empty() => h,
        _ => authority,
    };
    delays
        .iter()
        .find(|(h, _)| h.eq_ignore_ascii_case(host))
        .map(|(_, d)| *d)
}

/// [`respond`] under a policy: the token gate and the reply budget.
pub(super) async fn route(
    req: Request<Incoming>,
    policy: &Policy,
    peer: Option<IpAddr>,
) -> Response<RespBody> {
    let c = &policy.counters;
    if let Some(secret) = &policy.opts.token {
        let tiny = (req.method() == Method::GET || req.method() == Method::HEAD)
            && req.uri().path() == "/";
        if !tiny && !authorized(&req, secret) {
            c.refused_token.fetch_add(1, Ordering::Relaxed);
            return plain(
                StatusCode::UNAUTHORIZED,
                "token required: x-npt-token header or ?token= query parameter\n",
            );
        }
    }
    if let (Some(hook), Some(ip)) = (&policy.opts.reply_budget, peer) {
        if req.method() != Method::POST && req.method() != Method::PUT {
            if let Some(n) = req.uri().path().strip_prefix("/bytes/") {
                if let Ok(n) = n.parse::<u64>() {
                    if !(hook.0)(ip, n.min(MAX_BYTES)) {
                        c.refused_budget.fetch_add(1, Ordering::Relaxed);
                        return plain(StatusCode::TOO_MANY_REQUESTS, "reply budget exceeded\n");
                    }
                }
            }
        }
    }
    if let Some(d) = host_delay(&req, &policy.opts.host_delays) {
        c.delayed.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(d).await;
    }
    match respond(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_follows_the_host_port_aside() {
        let delays = vec![
            ("slow.test".to_string(), Duration::from_millis(20)),
            ("[::1]".to_string(), Duration::from_millis(5)),
        ];
        let req = |host: &str| {
            Request::builder()
                .uri("/")
                .header(http::header::HOST, host)
                .body(())
                .unwrap()
        };
        let ms = |d: Option<Duration>| d.map(|d| d.as_millis());
        assert_eq!(ms(host_delay(&req("slow.test"), &delays)), Some(20));
        assert_eq!(ms(host_delay(&req("SLOW.test:8080"), &delays)), Some(20));
        assert_eq!(ms(host_delay(&req("fast.test"), &delays)), None);
        assert_eq!(ms(host_delay(&req("[::1]:80"), &delays)), Some(5));
        // h2: the authority of the request target.
        let h2 = Request::builder()
            .uri("http://slow.test:80/x")
            .body(())
            .unwrap();
        assert_eq!(ms(host_delay(&h2, &delays)), Some(20));
        assert_eq!(host_delay(&req("slow.test"), &[]), None);
    }
}
