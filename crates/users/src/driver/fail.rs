//! Errors of one request, connection or session, classified into the kinds the result counts.

use super::*;
use npt_result::error::ErrorKind;

/// An error of one request, connection or session, classified.
#[derive(Debug)]
pub(super) struct Fail {
    pub(super) kind: ErrorKind,
    pub(super) msg: String,
}

impl Fail {
    pub(super) fn new(kind: ErrorKind, msg: impl Into<String>) -> Fail {
        Fail {
            kind,
            msg: msg.into(),
        }
    }

    pub(super) fn io(what: &str, e: &io::Error) -> Fail {
        Fail::new(classify_io(e), format!("{what}: {e}"))
    }

    /// A TCP connection's end (closed or reset) before a single response byte came back on
    /// it: whatever accepted the connection — a relay or forwarder accepts by itself — closed
    /// without answering (`closed_unanswered`). Other failures are kept as they are.
    pub(super) fn unanswered(self) -> Fail {
        if !matches!(self.kind, ErrorKind::Closed | ErrorKind::Reset) {
            return self;
        }
        Fail::new(
            ErrorKind::ClosedUnanswered,
            format!(
                "{}: nothing behind what accepted the connection answered (a relay or \
                 forwarder whose backend is down?)",
                self.msg
            ),
        )
    }

    pub(super) fn timeout(what: &str) -> Fail {
        Fail::new(
            ErrorKind::Timeout,
            format!("{what}: no progress within the timeout"),
        )
    }
}

/// A lost QUIC connection's reason, else the socket error's kind.
pub fn classify_io(e: &io::Error) -> ErrorKind {
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
