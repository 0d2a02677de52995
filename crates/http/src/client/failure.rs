//! Why a request got no complete response: the error kinds, from any error chain.

use super::*;

/// A request that got no complete response: kind (see [`classify`]) and message.
#[derive(Debug)]
pub struct Failure(pub &'static str, pub String);

impl Failure {
    pub(super) fn from_err(e: &(dyn std::error::Error + 'static)) -> Failure {
        Failure(classify(e), chain(e))
    }
}

pub(super) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

/// Error kinds: `refused`, `reset`, `timeout`, `closed` (the peer closed before the response
/// was complete), `tls`, `protocol` (unparsable response, h2 stream or connection errors),
/// `connect` (other connect failures).
pub fn classify(err: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut fallback: Option<&'static str> = None;
    while let Some(e) = cur {
        if let Some(ioe) = e.downcast_ref::<io::Error>() {
            match ioe.kind() {
                io::ErrorKind::ConnectionRefused => return "refused",
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe => return "reset",
                io::ErrorKind::TimedOut => return "timeout",
                io::ErrorKind::UnexpectedEof => fallback = fallback.or(Some("closed")),
                _ => {}
            }
            if let Some(inner) = ioe.get_ref() {
                if inner.downcast_ref::<rustls::Error>().is_some() {
                    return "tls";
                }
            }
        }
        if e.downcast_ref::<rustls::Error>().is_some() {
            return "tls";
        }
        if let Some(h) = e.downcast_ref::<h2::Error>() {
            if let Some(ioe) = h.get_io() {
                return classify(ioe);
            }
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            if h.is_timeout() {
                return "timeout";
            }
            if h.is_incomplete_message() || h.is_canceled() || h.is_closed() {
                fallback = fallback.or(Some("closed"));
            }
        }
        cur = e.source();
    }
    fallback.unwrap_or("protocol")
}
