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

/// Error kinds, in the one vocabulary of every result (`npt_result::error::ERROR_KINDS`):
/// a socket error's kind (`refused`, `reset`, `timeout`, `unreachable`, `local`, `io` …),
/// `closed` (the peer closed before the response was complete), `tls`, `protocol`
/// (unparsable response, h2 stream or connection errors).
pub fn classify(err: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut fallback: Option<&'static str> = None;
    while let Some(e) = cur {
        if let Some(ioe) = e.downcast_ref::<io::Error>() {
            if let Some(inner) = ioe.get_ref() {
                if inner.downcast_ref::<rustls::Error>().is_some() {
                    return "tls";
                }
            }
            match npt_result::error::io_error_kind(ioe) {
                // Less telling than what an inner error may say: kept if nothing better.
                k @ ("closed" | "protocol") => fallback = fallback.or(Some(k)),
                // A socket error of no other kind; an error of npt's own (no OS error code)
                // says no more than the chain below it, or is a `protocol` error.
                "io" if ioe.raw_os_error().is_some() => fallback = fallback.or(Some("io")),
                "io" => {}
                k => return k,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind the client can count is in the one vocabulary of results: the classifier's
    /// over socket errors (bare and wrapped), TLS errors and closed streams, and the literal
    /// kinds the client uses itself.
    #[test]
    fn every_kind_is_in_the_vocabulary_of_results() {
        let mut kinds: Vec<&str> = vec!["timeout", "protocol", "tls"];
        for errno in 1..200 {
            let e = io::Error::from_raw_os_error(errno);
            kinds.push(classify(&e));
            kinds.push(crate::h1::H1Error::Io(e).kind());
        }
        for k in [
            io::ErrorKind::UnexpectedEof,
            io::ErrorKind::TimedOut,
            io::ErrorKind::Other,
        ] {
            kinds.push(classify(&io::Error::new(k, "x")));
        }
        let tls = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError);
        assert_eq!(classify(&tls), "tls");
        kinds.push(crate::h1::H1Error::Closed.kind());
        kinds.push(crate::h1::H1Error::Protocol("x".into()).kind());
        for k in kinds {
            assert!(npt_result::error::is_error_kind(k), "{k}");
        }
        // A failed connect with an unclassified socket error is `io` (was `connect`).
        assert_eq!(classify(&io::Error::from_raw_os_error(libc::EPERM)), "io");
    }
}
