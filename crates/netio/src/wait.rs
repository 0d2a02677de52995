//! Waiting on sockets with a nanosecond timeout: `poll` over a few descriptors for the UDP hot
//! loops ([`wait`], readiness per descriptor), and a fixed set polled again and again without
//! allocating ([`PollSet`]). tokio's timer has millisecond granularity, too coarse for a send
//! every 50 µs.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// Readiness of one descriptor after [`wait`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Ready {
    pub readable: bool,
    pub writable: bool,
    pub error: bool,
}

/// Waits until one of `fds` is ready or `timeout` passes (None = forever). `want_write[i]`
/// asks for writability of `fds[i]` as well. Returns readiness per descriptor.
/// An interrupted wait (a signal) returns all-not-ready, so callers re-check their flags.
pub fn wait(
    fds: &[RawFd],
    want_write: &[bool],
    timeout: Option<Duration>,
    out: &mut Vec<Ready>,
) -> io::Result<()> {
    // Up to 16 descriptors (every probe thread's usual share) on the stack: a wait per
    // packet must not allocate.
    let mut small = [libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    }; 16];
    let mut big = Vec::new();
    let p: &mut [libc::pollfd] = match small.get_mut(..fds.len()) {
        Some(p) => p,
        None => {
            big.resize(fds.len(), small[0]);
            &mut big
        }
    };
    for ((q, &fd), &w) in p
        .iter_mut()
        .zip(fds)
        .zip(want_write.iter().chain(std::iter::repeat(&false)))
    {
        *q = libc::pollfd {
            fd,
            events: libc::POLLIN | if w { libc::POLLOUT } else { 0 },
            revents: 0,
        };
    }
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: p is a valid array of pollfd; tsp is null or points to a live timespec.
    let rc = unsafe {
        libc::ppoll(
            p.as_mut_ptr(),
            p.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    out.clear();
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            out.resize(fds.len(), Ready::default());
            return Ok(());
        }
        return Err(e);
    }
    out.extend(p.iter().map(|q| Ready {
        readable: q.revents & libc::POLLIN != 0,
        writable: q.revents & libc::POLLOUT != 0,
        error: q.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0,
    }));
    Ok(())
}

/// A fixed set of descriptors waited on for readability again and again without allocating
/// (a hot loop that polls between busy waits, like the lab's link threads).
pub struct PollSet {
    fds: Vec<libc::pollfd>,
}

impl PollSet {
    pub fn new(fds: &[RawFd]) -> PollSet {
        PollSet {
            fds: fds
                .iter()
                .map(|&fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect(),
        }
    }

    /// Waits until one descriptor is readable or `timeout` passes (zero: just looks). True if
    /// one is readable; an interrupted wait (a signal) is false.
    pub fn readable(&mut self, timeout: Duration) -> io::Result<bool> {
        let ts = libc::timespec {
            tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: fds is a valid array of pollfd; ts is a live timespec.
        let rc = unsafe {
            libc::ppoll(
                self.fds.as_mut_ptr(),
                self.fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            };
        }
        Ok(self.fds.iter().any(|p| p.revents & libc::POLLIN != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn wait_times_out() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut ready = Vec::new();
        wait(
            &[a.as_raw_fd()],
            &[false],
            Some(Duration::from_millis(5)),
            &mut ready,
        )
        .unwrap();
        assert!(!ready[0].readable);
    }
}
