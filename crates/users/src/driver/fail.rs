//! Errors of one request, connection or session, classified into the kinds the result counts.

use super::*;

/// An error of one request, connection or session, classified.
#[derive(Debug)]
pub(super) struct Fail {
    pub(super) kind: &'static str,
    pub(super) msg: String,
}

impl Fail {
    pub(super) fn new(kind: &'static str, msg: impl Into<String>) -> Fail {
        Fail {
            kind,
            msg: msg.into(),
        }
    }

    pub(super) fn io(what: &str, e: &io::Error) -> Fail {
        Fail::new(classify_io(e), format!("{what}: {e}"))
    }

    pub(super) fn timeout(what: &str) -> Fail {
        Fail::new("timeout", format!("{what}: no progress within the timeout"))
    }
}

/// A kind of the one vocabulary (`npt_result::error::ERROR_KINDS`): a lost QUIC connection's
/// reason, else the socket error's kind.
pub fn classify_io(e: &io::Error) -> &'static str {
    if let Some(inner) = e.get_ref() {
        if let Some(quinn::ReadError::ConnectionLost(c)) = inner.downcast_ref::<quinn::ReadError>()
        {
            return quic::classify_connection(c);
        }
        if let Some(quinn::WriteError::ConnectionLost(c)) =
            inner.downcast_ref::<quinn::WriteError>()
        {
            return quic::classify_connection(c);
        }
    }
    npt_result::error::io_error_kind(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind a user's request, connection or session can fail with is in the one
    /// vocabulary of results: socket errors, a lost QUIC connection, and the literal kinds.
    #[test]
    fn every_kind_is_in_the_vocabulary_of_results() {
        use quinn::ConnectionError as C;
        let mut kinds: Vec<&str> = vec!["timeout", "protocol", "config", "local"];
        for errno in 1..200 {
            kinds.push(Fail::io("x", &io::Error::from_raw_os_error(errno)).kind);
        }
        for c in [
            C::TimedOut,
            C::Reset,
            C::LocallyClosed,
            C::VersionMismatch,
            C::CidsExhausted,
        ] {
            kinds.push(quic::classify_connection(&c));
        }
        kinds.push(Fail::timeout("x").kind);
        for k in kinds {
            assert!(npt_result::error::is_error_kind(k), "{k}");
        }
    }
}
