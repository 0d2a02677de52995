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

/// `refused`, `reset`, `closed`, `timeout`, `local`, `tls`, `protocol` or `io`.
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
    use io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => "refused",
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => "reset",
        K::UnexpectedEof | K::NotConnected => "closed",
        K::TimedOut => "timeout",
        K::AddrInUse | K::AddrNotAvailable => "local",
        K::InvalidData => "protocol",
        _ => match e.raw_os_error() {
            Some(libc_code) if libc_code == 113 || libc_code == 101 => "unreachable",
            Some(24) | Some(23) => "local",
            _ => "io",
        },
    }
}
