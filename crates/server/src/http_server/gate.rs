//! The gate in front of the responder's routes: with a token, requests without it get 401 for
//! anything but the 3-byte `GET /` (a health check); `/bytes/N` is charged to the source
//! address's reply budget and answered 429 when it does not hold N. Both are counted.

use std::net::IpAddr;
use std::sync::atomic::Ordering;

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
    match respond(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}
