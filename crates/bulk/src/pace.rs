//! A stream's pace on this host (`--rate` on tcp:// and quic://): the driver of the sans-IO
//! token bucket ([`npt_wire::bucket`], whose doc says why a bucket and the kernel's pacing
//! together) on tokio's clock, and the kernel's pacing cap of a TCP socket. An unpaced stream
//! goes through the same calls and is granted every write at once.

use std::os::fd::RawFd;
use std::time::Duration;

use tokio::time::Instant;

use npt_wire::bucket::{kernel_pacing_rate, TokenBucket};

/// How much a stream may write, and when.
pub(crate) struct Pace {
    bucket: Option<TokenBucket>,
    t0: Instant,
}

impl Pace {
    /// `rate_bps` bits/s of payload from now; `None`: as fast as the stream takes it.
    pub(crate) fn new(rate_bps: Option<f64>) -> Pace {
        Pace {
            bucket: rate_bps.map(|r| TokenBucket::new(r, 0)),
            t0: Instant::now(),
        }
    }

    fn ns(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Waits until bytes may be written; how many (at most `max`).
    pub(crate) async fn grant(&mut self, max: usize) -> usize {
        loop {
            let now = self.ns();
            let Some(b) = self.bucket.as_mut() else {
                return max;
            };
            match b.grant(now, max as u64) {
                0 => {
                    let at = self.t0 + Duration::from_nanos(b.next_at());
                    tokio::time::sleep_until(at).await;
                }
                n => return usize::try_from(n).unwrap_or(max),
            }
        }
    }

    /// `n` of the granted bytes were written.
    pub(crate) fn spend(&mut self, n: usize) {
        if let Some(b) = self.bucket.as_mut() {
            b.spend(n as u64);
        }
    }
}

/// Caps the kernel's pacing of the TCP socket `fd` a little above `rate_bps` of payload, so
/// that the packets of each write leave evenly spaced instead of in a burst.
pub(crate) fn cap_kernel(fd: RawFd, rate_bps: f64) -> std::io::Result<()> {
    npt_netio::tcpinfo::set_max_pacing_rate(fd, kernel_pacing_rate(rate_bps))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On tokio's paused clock: a paced writer gets the rate, an unpaced one all it asks.
    #[tokio::test(start_paused = true)]
    async fn grants_follow_the_rate_on_the_runtimes_clock() {
        let mut open = Pace::new(None);
        assert_eq!(open.grant(1000).await, 1000);
        // 8 Mbit/s: 1 MB/s. Written for one (virtual) second.
        let mut p = Pace::new(Some(8e6));
        let t = tokio::time::Instant::now();
        let mut total = 0;
        while t.elapsed() < Duration::from_secs(1) {
            let n = p.grant(128 * 1024).await;
            p.spend(n);
            total += n;
        }
        assert!((total as f64 - 1e6).abs() <= 4000.0, "{total} B in 1 s");
    }
}
