//! The one vocabulary of error kinds every workload counts under (`errors.by_kind` in every
//! result), as a type: every classifier (probe, run, http, ping, the proxy client) returns an
//! [`ErrorKind`], so a kind outside the vocabulary cannot be counted, and a `refused` in a
//! probe means what it means in http or run. Results store the kinds by name
//! ([`ErrorKind::name`]); files written before the vocabulary read in it ([`error_kind`]).

use std::io;

/// Why an attempt failed, as every result counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorKind {
    /// The connection was refused.
    Refused,
    /// The connection was reset or aborted, or the pipe broke.
    Reset,
    /// The peer closed before the answer was complete.
    Closed,
    /// A TCP connection was accepted and then closed (EOF or reset) before a single byte of
    /// an answer came back on it: whatever accepted it — a relay or forwarder, which accepts
    /// by itself — closed without answering, so nothing behind it answered (its backend may
    /// be down). A connection that closes after some answers is [`ErrorKind::Closed`] or
    /// [`ErrorKind::Reset`]; only the connection's history tells them apart
    /// ([`unanswered_close`]).
    ClosedUnanswered,
    /// No answer, or no progress, within the timeout.
    Timeout,
    /// Host or network unreachable.
    Unreachable,
    /// The tester's own limits: no local address or port, out of file descriptors.
    Local,
    /// The TLS handshake or the certificate failed.
    Tls,
    /// An answer that is not what the protocol says.
    Protocol,
    /// Any other socket error.
    Io,
    /// A probe's relay pacing with nothing left to send.
    Stalled,
    /// A tester thread failed.
    Internal,
    /// A bad configuration found at run time.
    Config,
    /// The keyed `--token` handshake was answered but the secret not accepted: the peer's
    /// `npt serve --token` has another secret.
    Auth,
    /// The proxy (`--via`) failed: its own kinds, `proxy_*`.
    Proxy(ProxyErrorKind),
}

/// How a `--via` proxy failed (`proxy_refused` …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProxyErrorKind {
    /// The proxy itself refused the connection.
    Refused,
    /// The proxy did not answer in time.
    Timeout,
    /// The proxy could not be reached.
    Unreachable,
    /// The proxy rejected the credentials.
    AuthFailed,
    /// The proxy's rules do not allow the request.
    Denied,
    /// The proxy could not reach the target.
    TargetUnreachable,
    /// The target refused the proxy's connection.
    TargetRefused,
    /// The proxy does not support the request.
    Unsupported,
    /// Any other failure the proxy reported.
    Failure,
    /// The proxy's answer broke its protocol.
    Protocol,
    /// A socket error talking to the proxy.
    Io,
}

impl ProxyErrorKind {
    pub const ALL: [ProxyErrorKind; 11] = [
        ProxyErrorKind::Refused,
        ProxyErrorKind::Timeout,
        ProxyErrorKind::Unreachable,
        ProxyErrorKind::AuthFailed,
        ProxyErrorKind::Denied,
        ProxyErrorKind::TargetUnreachable,
        ProxyErrorKind::TargetRefused,
        ProxyErrorKind::Unsupported,
        ProxyErrorKind::Failure,
        ProxyErrorKind::Protocol,
        ProxyErrorKind::Io,
    ];
}

impl ErrorKind {
    /// The kinds of a failed socket or exchange (each with [`ErrorKind::meaning`]).
    pub const SOCKET: [ErrorKind; 10] = [
        ErrorKind::Refused,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::ClosedUnanswered,
        ErrorKind::Timeout,
        ErrorKind::Unreachable,
        ErrorKind::Local,
        ErrorKind::Tls,
        ErrorKind::Protocol,
        ErrorKind::Io,
    ];

    /// The tester's own kinds, beside [`ErrorKind::SOCKET`] and the proxy's.
    pub const TESTER: [ErrorKind; 3] = [ErrorKind::Stalled, ErrorKind::Internal, ErrorKind::Config];

    /// Every kind, the proxy's included.
    pub fn all() -> impl Iterator<Item = ErrorKind> {
        ErrorKind::SOCKET
            .into_iter()
            .chain(ErrorKind::TESTER)
            .chain([ErrorKind::Auth])
            .chain(ProxyErrorKind::ALL.into_iter().map(ErrorKind::Proxy))
    }

    /// The name results count it under (`errors.by_kind.<name>`).
    pub fn name(self) -> &'static str {
        use ProxyErrorKind as P;
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::ClosedUnanswered => "closed_unanswered",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Unreachable => "unreachable",
            ErrorKind::Local => "local",
            ErrorKind::Tls => "tls",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Io => "io",
            ErrorKind::Stalled => "stalled",
            ErrorKind::Internal => "internal",
            ErrorKind::Config => "config",
            ErrorKind::Auth => "auth",
            ErrorKind::Proxy(p) => match p {
                P::Refused => "proxy_refused",
                P::Timeout => "proxy_timeout",
                P::Unreachable => "proxy_unreachable",
                P::AuthFailed => "proxy_auth_failed",
                P::Denied => "proxy_denied",
                P::TargetUnreachable => "proxy_target_unreachable",
                P::TargetRefused => "proxy_target_refused",
                P::Unsupported => "proxy_unsupported",
                P::Failure => "proxy_failure",
                P::Protocol => "proxy_protocol",
                P::Io => "proxy_io",
            },
        }
    }

    /// What the kind means, for the docs' table.
    pub fn meaning(self) -> &'static str {
        match self {
            ErrorKind::Refused => "the connection was refused",
            ErrorKind::Reset => "the connection was reset or aborted, or the pipe broke",
            ErrorKind::Closed => "the peer closed before the answer was complete",
            ErrorKind::ClosedUnanswered => {
                "a TCP connection accepted, then closed before any answer: whatever accepted it \
                 (a relay or forwarder) closed without answering; nothing behind it answered"
            }
            ErrorKind::Timeout => "no answer, or no progress, within the timeout",
            ErrorKind::Unreachable => "host or network unreachable",
            ErrorKind::Local => {
                "the tester's own limits: no local address or port, out of file descriptors"
            }
            ErrorKind::Tls => "the TLS handshake or the certificate failed",
            ErrorKind::Protocol => "an answer that is not what the protocol says",
            ErrorKind::Io => "any other socket error",
            ErrorKind::Stalled => "a probe's relay pacing with nothing left to send",
            ErrorKind::Internal => "a tester thread failed",
            ErrorKind::Config => "a bad configuration found at run time",
            ErrorKind::Auth => {
                "the --token handshake was answered but the secret not accepted (another secret)"
            }
            ErrorKind::Proxy(_) => "the --via proxy failed (its own kinds)",
        }
    }

    /// Every name of the vocabulary, in [`ErrorKind::all`]'s order.
    pub fn names() -> Vec<&'static str> {
        ErrorKind::all().map(ErrorKind::name).collect()
    }

    /// The kind of a name ([`ErrorKind::name`]); `None` outside the vocabulary.
    pub fn parse(name: &str) -> Option<ErrorKind> {
        ErrorKind::all().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// True for a name of the vocabulary.
pub fn is_error_kind(kind: &str) -> bool {
    ErrorKind::parse(kind).is_some()
}

/// The kind of a socket error, for every classifier that meets one (probe, users, http,
/// ping): refused; reset, aborted or a broken pipe; closed (EOF, not connected); timeout (a
/// timed-out or would-block blocking call); unreachable (host or network); local (no local
/// address or port, out of file descriptors); protocol (invalid data); else io.
pub fn io_error_kind(e: &io::Error) -> ErrorKind {
    use io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => ErrorKind::Refused,
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => ErrorKind::Reset,
        K::UnexpectedEof | K::NotConnected => ErrorKind::Closed,
        K::TimedOut | K::WouldBlock => ErrorKind::Timeout,
        K::HostUnreachable | K::NetworkUnreachable => ErrorKind::Unreachable,
        K::AddrInUse | K::AddrNotAvailable => ErrorKind::Local,
        K::InvalidData => ErrorKind::Protocol,
        _ => match e.raw_os_error() {
            Some(libc::EHOSTUNREACH | libc::ENETUNREACH) => ErrorKind::Unreachable,
            Some(libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL) => ErrorKind::Local,
            _ => ErrorKind::Io,
        },
    }
}

/// The kind of a TCP connection's end (`e`: EOF as [`io::ErrorKind::UnexpectedEof`], a
/// reset, an aborted connection or a broken pipe) given whether any answer byte ever came back
/// on it: with none, [`ErrorKind::ClosedUnanswered`] — the listener accepted and closed without
/// answering — else the socket error's own kind ([`io_error_kind`]). Every TCP echo (probe,
/// run, ping `--echo`, trace's chain) classifies its connection's end with this one rule.
pub fn unanswered_close(e: &io::Error, answered: bool) -> ErrorKind {
    let kind = io_error_kind(e);
    if !answered && matches!(kind, ErrorKind::Closed | ErrorKind::Reset) {
        ErrorKind::ClosedUnanswered
    } else {
        kind
    }
}

/// What a [`ErrorKind::ClosedUnanswered`] error says, after what failed (`read`,
/// `receive`…): the listener at `at` accepted the connection and closed it without answering.
pub fn unanswered_close_msg(at: &str, e: &io::Error) -> String {
    format!(
        "{at} accepted the connection and closed it without answering ({e}): nothing behind \
         it answered — a relay or forwarder whose backend is down?"
    )
}

/// A kind of a file written before the one vocabulary, in it: `aborted` (a probe's) is
/// `reset`, `connect` (http's other connect failures) is `io`, every other name is kept.
pub fn error_kind(kind: &str) -> &str {
    match kind {
        "aborted" => "reset",
        "connect" => "io",
        k => k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_name_that_parses_back() {
        let names: Vec<&str> = ErrorKind::all().map(ErrorKind::name).collect();
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for k in ErrorKind::all() {
            assert_eq!(ErrorKind::parse(k.name()), Some(k));
        }
        assert!(ErrorKind::all()
            .all(|k| k.name().starts_with("proxy_") == matches!(k, ErrorKind::Proxy(_))));
        assert_eq!(ErrorKind::parse("aborted"), None);
    }
}
