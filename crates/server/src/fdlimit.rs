//! Descriptors are what a connection-holding responder runs out of first. Before this, the
//! TCP cap defaulted to 65,536 while the process could open 1,024 or 20,000 files, and accept
//! failing with EMFILE was never reported: with 1,100 idle connections under a 1,024-file limit
//! TCP and HTTP stopped answering without a word.
//!
//! So: at start the soft `RLIMIT_NOFILE` is raised to the hard limit ([`raise_nofile`]); the
//! default connection cap is derived from it, keeping [`headroom`] descriptors for listeners,
//! UDP sockets, runtime internals and the accept-then-close of refused connections
//! ([`default_max_conns`]); a `--max-conns` the limit cannot hold is refused
//! ([`check_max_conns`]). Accept errors are classified and logged at most once per interval
//! ([`AcceptErrors`]), and the accept loops back off instead of spinning.

use std::io;
use std::time::{Duration, Instant};

/// The previous fixed default, kept as an upper bound for the derived one.
pub const MAX_DEFAULT_CONNS: usize = 65_536;
/// Descriptors always kept free, whatever the limit.
pub const MIN_HEADROOM: u64 = 64;
/// How long an accept loop sleeps after a failed accept (EMFILE would fail again at once).
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(20);
/// At most one log line about failed accepts per this interval.
pub const ACCEPT_LOG_EVERY: Duration = Duration::from_secs(5);

/// The process's open-file limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoFile {
    pub soft: u64,
    pub hard: u64,
}

fn get() -> io::Result<NoFile> {
    // SAFETY: getrlimit writes into a valid, zeroed struct.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(NoFile {
        soft: r.rlim_cur as u64,
        hard: r.rlim_max as u64,
    })
}

fn set_soft(soft: u64, hard: u64) -> bool {
    let r = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit reads a valid struct.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) == 0 }
}

/// Raises the soft open-file limit as far as the hard limit allows and returns the result.
/// An unlimited hard limit is not a valid soft limit for files on Linux: then the kernel's
/// ceiling (`/proc/sys/fs/nr_open`) is tried.
pub fn raise_nofile() -> io::Result<NoFile> {
    let now = get()?;
    if now.soft < now.hard && !set_soft(now.hard, now.hard) {
        let ceiling = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(1 << 20)
            .min(now.hard);
        if ceiling > now.soft {
            let _ = set_soft(ceiling, now.hard);
        }
    }
    get()
}

/// Descriptors kept free under a soft limit of `soft`: 1/16 of it, at least [`MIN_HEADROOM`].
pub fn headroom(soft: u64) -> u64 {
    (soft / 16).max(MIN_HEADROOM)
}

/// The largest `--max-conns` that `soft` descriptors can hold when `responders` connection
/// kinds (TCP, HTTP) may each have that many open at once.
pub fn max_conns_for(soft: u64, responders: usize) -> usize {
    let usable = soft.saturating_sub(headroom(soft));
    let each = usable / responders.max(1) as u64;
    usize::try_from(each).unwrap_or(usize::MAX)
}

/// The default cap: what the limit holds, at most [`MAX_DEFAULT_CONNS`], at least 1.
pub fn default_max_conns(soft: u64, responders: usize) -> usize {
    max_conns_for(soft, responders).clamp(1, MAX_DEFAULT_CONNS)
}

/// `Err(most)` when `want` connections per responder cannot fit under `soft` descriptors.
pub fn check_max_conns(want: usize, soft: u64, responders: usize) -> Result<(), usize> {
    let most = max_conns_for(soft, responders);
    if want > most {
        Err(most)
    } else {
        Ok(())
    }
}

/// True for the errors that mean "out of descriptors" (or kernel memory for sockets).
pub fn is_exhaustion(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Counts failed accepts and says when one is worth a log line (the first, then at most one
/// per [`ACCEPT_LOG_EVERY`], with how many happened since). Pure: the caller passes `now`.
#[derive(Debug, Default)]
pub struct AcceptErrors {
    last_log: Option<Instant>,
    since_log: u64,
}

impl AcceptErrors {
    /// Records one failure at `now`; returns the number of failures to report if a line is due.
    pub fn record(&mut self, now: Instant) -> Option<u64> {
        self.since_log += 1;
        let due = match self.last_log {
            None => true,
            Some(t) => now.saturating_duration_since(t) >= ACCEPT_LOG_EVERY,
        };
        if due {
            self.last_log = Some(now);
            Some(std::mem::take(&mut self.since_log))
        } else {
            None
        }
    }
}

/// The log line for `n` failed accepts ending with `e`, on the `what` listener.
pub fn accept_error_line(what: &str, n: u64, e: &io::Error) -> String {
    let hint = if is_exhaustion(e) {
        " (out of file descriptors: raise `ulimit -n`, lower --max-conns or shorten --idle-timeout)"
    } else {
        ""
    };
    format!("npt serve: {what} accept failed {n} time(s): {e}{hint}; backing off and serving on")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_leave_headroom_and_split_between_responders() {
        assert_eq!(headroom(1024), 64);
        assert_eq!(headroom(65_536), 4096);
        assert_eq!(max_conns_for(1024, 1), 960);
        assert_eq!(max_conns_for(1024, 2), 480);
        assert_eq!(default_max_conns(1_048_576, 1), MAX_DEFAULT_CONNS);
        assert_eq!(default_max_conns(10, 1), 1, "never zero");
        assert_eq!(check_max_conns(960, 1024, 1), Ok(()));
        assert_eq!(check_max_conns(961, 1024, 1), Err(960));
        assert_eq!(check_max_conns(65_536, 1024, 2), Err(480));
    }

    #[test]
    fn accept_errors_are_logged_once_per_interval() {
        let t0 = Instant::now();
        let mut a = AcceptErrors::default();
        assert_eq!(a.record(t0), Some(1), "the first is reported at once");
        for i in 1..1000 {
            assert_eq!(a.record(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(a.record(t0 + ACCEPT_LOG_EVERY), Some(1000));
    }

    #[test]
    fn exhaustion_is_recognised() {
        assert!(is_exhaustion(&io::Error::from_raw_os_error(libc::EMFILE)));
        assert!(is_exhaustion(&io::Error::from_raw_os_error(libc::ENFILE)));
        assert!(!is_exhaustion(&io::Error::from_raw_os_error(
            libc::ECONNABORTED
        )));
        assert!(
            accept_error_line("tcp", 3, &io::Error::from_raw_os_error(libc::EMFILE))
                .contains("ulimit")
        );
    }

    #[test]
    fn raising_never_lowers() {
        let before = get().unwrap();
        let after = raise_nofile().unwrap();
        assert!(after.soft >= before.soft && after.hard == before.hard);
    }
}
