//! The one vocabulary of error kinds every workload counts under (`errors.by_kind` in every
//! result), and the classifier every engine uses for a socket error, so that a `refused` in a
//! probe means what it means in http or run.

use std::io;

/// The one vocabulary of error kinds every workload counts under (`errors.by_kind`), with what
/// each means. Besides these: `stalled` (a probe's relay pacing with nothing left to send),
/// `internal`, `config`, and the proxy's own `proxy_*` kinds.
pub const ERROR_KINDS: &[(&str, &str)] = &[
    ("refused", "the connection was refused"),
    (
        "reset",
        "the connection was reset or aborted, or the pipe broke",
    ),
    ("closed", "the peer closed before the answer was complete"),
    ("timeout", "no answer, or no progress, within the timeout"),
    ("unreachable", "host or network unreachable"),
    (
        "local",
        "the tester's own limits: no local address or port, out of file descriptors",
    ),
    ("tls", "the TLS handshake or the certificate failed"),
    ("protocol", "an answer that is not what the protocol says"),
    ("io", "any other socket error"),
];

/// Error kinds outside [`ERROR_KINDS`] that a result may still count: a probe's relay pacing
/// with nothing left to send, a panicked thread, a bad configuration found at run time, and
/// the proxy's own kinds (`proxy_refused`, `proxy_auth` …, any name with this prefix).
pub const EXTRA_ERROR_KINDS: &[&str] = &["stalled", "internal", "config"];

/// The prefix of the proxy's own error kinds.
pub const PROXY_ERROR_PREFIX: &str = "proxy_";

/// True for a name in [`ERROR_KINDS`], [`EXTRA_ERROR_KINDS`] or with [`PROXY_ERROR_PREFIX`].
pub fn is_error_kind(kind: &str) -> bool {
    ERROR_KINDS.iter().any(|(k, _)| *k == kind)
        || EXTRA_ERROR_KINDS.contains(&kind)
        || kind.starts_with(PROXY_ERROR_PREFIX)
}

/// The kind in [`ERROR_KINDS`] of a socket error, for every classifier that meets one (probe,
/// users, http, ping): refused; reset, aborted or a broken pipe; closed (EOF, not connected);
/// timeout (a timed-out or would-block blocking call); unreachable (host or network); local (no
/// local address or port, out of file descriptors); protocol (invalid data); else io.
pub fn io_error_kind(e: &io::Error) -> &'static str {
    use io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => "refused",
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => "reset",
        K::UnexpectedEof | K::NotConnected => "closed",
        K::TimedOut | K::WouldBlock => "timeout",
        K::HostUnreachable | K::NetworkUnreachable => "unreachable",
        K::AddrInUse | K::AddrNotAvailable => "local",
        K::InvalidData => "protocol",
        _ => match e.raw_os_error() {
            Some(libc::EHOSTUNREACH | libc::ENETUNREACH) => "unreachable",
            Some(libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL) => "local",
            _ => "io",
        },
    }
}

/// A kind of a file written before the one vocabulary ([`ERROR_KINDS`]), in it: `aborted`
/// (a probe's) is `reset`, `connect` (http's other connect failures) is `io`, every other name
/// is kept. For reading old files: the classifiers emit the vocabulary's names themselves (the
/// probe session still passes the kinds it records through this, a no-op for them now).
pub fn error_kind(kind: &str) -> &str {
    match kind {
        "aborted" => "reset",
        "connect" => "io",
        k => k,
    }
}
