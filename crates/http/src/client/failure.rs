//! Why a request got no complete response: the error kinds, from any error chain.

use super::*;

/// A request that got no complete response: kind (see [`classify`]) and message.
#[derive(Debug)]
pub struct Failure(pub ErrorKind, pub String);

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
pub fn classify(err: &(dyn std::error::Error + 'static)) -> ErrorKind {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut fallback: Option<ErrorKind> = None;
    while let Some(e) = cur {
        if let Some(ioe) = e.downcast_ref::<io::Error>() {
            if let Some(inner) = ioe.get_ref() {
                if inner.downcast_ref::<rustls::Error>().is_some() {
                    return ErrorKind::Tls;
                }
            }
            match npt_result::error::io_error_kind(ioe) {
                // Less telling than what an inner error may say: kept if nothing better.
                k @ (ErrorKind::Closed | ErrorKind::Protocol) => fallback = fallback.or(Some(k)),
                // A socket error of no other kind; an error of npt's own (no OS error code)
                // says no more than the chain below it, or is a `protocol` error.
                ErrorKind::Io if ioe.raw_os_error().is_some() => {
                    fallback = fallback.or(Some(ErrorKind::Io))
                }
                ErrorKind::Io => {}
                k => return k,
            }
        }
        if e.downcast_ref::<rustls::Error>().is_some() {
            return ErrorKind::Tls;
        }
        if let Some(h) = e.downcast_ref::<h2::Error>() {
            if let Some(ioe) = h.get_io() {
                return classify(ioe);
            }
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            if h.is_timeout() {
                return ErrorKind::Timeout;
            }
            if h.is_incomplete_message() || h.is_canceled() || h.is_closed() {
                fallback = fallback.or(Some(ErrorKind::Closed));
            }
        }
        cur = e.source();
    }
    fallback.unwrap_or(ErrorKind::Protocol)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (Every kind is in the one vocabulary of results by its type, [`ErrorKind`].) A TLS
    /// error wrapped in a socket error is `tls`; an unclassified socket error is `io`.
    #[test]
    fn tls_and_unclassified_errors_have_their_kinds() {
        let tls = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError);
        assert_eq!(classify(&tls), ErrorKind::Tls);
        // A failed connect with an unclassified socket error is `io` (was `connect`).
        assert_eq!(
            classify(&io::Error::from_raw_os_error(libc::EPERM)),
            ErrorKind::Io
        );
    }
}
