//! What one hop request may ask for, and how often: the bounds that keep an authenticated
//! client from turning an agent into a traffic source. Each request is bounded (attempts,
//! interval, timeout, datagram size, total time); requests are rate-limited per session and
//! for the whole agent (token buckets), and the measurements running at once are capped.
//!
//! The agent's bucket alone would let a few flooding sessions (each within its own bucket's
//! burst) drain it and have the agent say "busy" to everyone: a well-behaved client would be
//! refused because of others. So when the agent's bucket is empty a *quiet* session (its own
//! bucket at least half full) may still take from a reserve as large as the agent's burst;
//! a flooding session, its own bucket near empty, cannot. Over any window the agent then
//! answers at most `global_rate × window + 2 × global_burst` requests.
//! Sans-IO: buckets take `now` in ns, so the rules are tested on a virtual clock.

use std::time::Duration;

use npt_wire::hop::{HopProto, HopRequest, MAX_ATTEMPTS};

/// The agent's bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HopLimits {
    /// Attempts one request may ask for.
    pub max_attempts: u16,
    /// The shortest interval between attempts (so one request sends at most 1 / this).
    pub min_interval: Duration,
    /// The longest interval between attempts.
    pub max_interval: Duration,
    /// The longest one attempt may wait.
    pub max_timeout: Duration,
    /// The longest a request may take: attempts × interval + timeout (UDP: + one more
    /// timeout, for the keyed handshake before the echoes).
    pub max_duration: Duration,
    /// The largest UDP datagram the agent sends.
    pub max_size: u16,
    /// Requests per second one session (one authenticated connection) may make, and its burst.
    pub session_rate: f64,
    pub session_burst: f64,
    /// Requests per second of all sessions together, and their burst.
    pub global_rate: f64,
    pub global_burst: f64,
    /// Measurements running at once.
    pub max_in_flight: usize,
    /// Path-MTU searches (`HopProto::Mtu`): the longest one may take, the largest datagram it
    /// tries, how many request tokens one costs (of the session's and the agent's buckets: a
    /// search sends up to `npt_mtu`'s 40 sizes × 3 tries each way, not one attempt), and how
    /// many run at once.
    pub max_mtu_timeout: Duration,
    pub max_mtu_size: u16,
    pub mtu_cost: f64,
    pub max_mtu_in_flight: usize,
}

impl Default for HopLimits {
    fn default() -> Self {
        HopLimits {
            max_attempts: MAX_ATTEMPTS,
            min_interval: Duration::from_millis(10),
            max_interval: Duration::from_secs(10),
            max_timeout: Duration::from_secs(10),
            max_duration: Duration::from_secs(60),
            max_size: 1472,
            session_rate: 2.0,
            session_burst: 10.0,
            global_rate: 20.0,
            global_burst: 40.0,
            max_in_flight: 16,
            max_mtu_timeout: Duration::from_secs(30),
            max_mtu_size: 8972,
            mtu_cost: 5.0,
            max_mtu_in_flight: 2,
        }
    }
}

impl HopLimits {
    /// Ok when `req` is within the bounds; else what is out of them.
    pub fn check(&self, req: &HopRequest) -> Result<(), String> {
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        if req.proto == HopProto::Mtu {
            return self.check_mtu(req);
        }
        let (interval, timeout) = (u64::from(req.interval_us), u64::from(req.timeout_us));
        if req.attempts == 0 || req.attempts > self.max_attempts {
            return Err(format!(
                "attempts {} (at most {})",
                req.attempts, self.max_attempts
            ));
        }
        if interval < us(self.min_interval) || interval > us(self.max_interval) {
            return Err(format!(
                "interval {interval} µs (between {:?} and {:?})",
                self.min_interval, self.max_interval
            ));
        }
        if timeout == 0 || timeout > us(self.max_timeout) {
            return Err(format!(
                "timeout {timeout} µs (at most {:?})",
                self.max_timeout
            ));
        }
        // A UDP echo (and a marking read's) first does the keyed handshake with the agent's own
        // --token, given one more timeout (npt_ping::agent): it counts in the request's time.
        let udp = matches!(req.proto, HopProto::Udp | HopProto::Mark);
        let handshake = if udp { timeout } else { 0 };
        let total = u64::from(req.attempts) * interval + timeout + handshake;
        if total > us(self.max_duration) {
            return Err(format!(
                "{} attempts every {interval} µs take longer than {:?}{}",
                req.attempts,
                self.max_duration,
                if handshake > 0 {
                    " (with the UDP --token handshake's timeout)"
                } else {
                    ""
                }
            ));
        }
        if udp && req.size > self.max_size {
            return Err(format!("UDP size {} (at most {})", req.size, self.max_size));
        }
        if req.port == 0 {
            return Err("port 0".into());
        }
        Ok(())
    }

    /// The bounds of a path-MTU search: one search (the codec checks it), no interval (it paces
    /// itself), a time bound, a largest datagram.
    fn check_mtu(&self, req: &HopRequest) -> Result<(), String> {
        let timeout = Duration::from_micros(u64::from(req.timeout_us));
        if req.interval_us != 0 {
            return Err("an MTU search takes no interval".into());
        }
        if timeout.is_zero() || timeout > self.max_mtu_timeout {
            return Err(format!(
                "MTU search time {timeout:?} (at most {:?})",
                self.max_mtu_timeout
            ));
        }
        if req.size > self.max_mtu_size {
            return Err(format!(
                "MTU size {} (at most {})",
                req.size, self.max_mtu_size
            ));
        }
        if req.port == 0 {
            return Err("port 0".into());
        }
        Ok(())
    }

    /// The request tokens `req` costs.
    pub fn cost(&self, req: &HopRequest) -> f64 {
        if req.proto == HopProto::Mtu {
            self.mtu_cost.max(1.0)
        } else {
            1.0
        }
    }
}

/// A token bucket: `rate` tokens a second up to `burst`, one per request. Starts full.
#[derive(Clone, Debug)]
pub struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: u64,
}

impl Bucket {
    pub fn new(rate: f64, burst: f64, now: u64) -> Bucket {
        let burst = burst.max(1.0);
        Bucket {
            rate: rate.max(0.0),
            burst,
            tokens: burst,
            last: now,
        }
    }

    /// Takes a token at `now` (ns) if there is one.
    pub fn take(&mut self, now: u64) -> bool {
        self.take_down_to(now, 1.0, 0.0)
    }

    /// Takes `n` tokens at `now` if there are that many.
    pub fn take_n(&mut self, now: u64, n: f64) -> bool {
        self.take_down_to(now, n, 0.0)
    }

    /// Takes a token at `now` even from the reserve: the bucket may go down to `-reserve`
    /// tokens (a debt that refills at `rate` like any other). For a caller the bucket owner
    /// ranks first: see [`Bucket::is_quiet`].
    pub fn take_from_reserve(&mut self, now: u64, reserve: f64) -> bool {
        self.take_down_to(now, 1.0, -reserve.max(0.0))
    }

    /// [`Bucket::take_from_reserve`] of `n` tokens.
    pub fn take_n_from_reserve(&mut self, now: u64, n: f64, reserve: f64) -> bool {
        self.take_down_to(now, n, -reserve.max(0.0))
    }

    /// Whether the bucket has at least half its burst at `now`: its owner asked at no more
    /// than about its rate lately.
    pub fn is_quiet(&mut self, now: u64) -> bool {
        self.refill(now);
        self.tokens >= self.burst / 2.0
    }

    fn refill(&mut self, now: u64) {
        let dt = now.saturating_sub(self.last) as f64 / 1e9;
        self.last = self.last.max(now);
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
    }

    fn take_down_to(&mut self, now: u64, n: f64, floor: f64) -> bool {
        self.refill(now);
        if self.tokens - n >= floor {
            self.tokens -= n;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn req() -> HopRequest {
        HopRequest {
            proto: HopProto::Tcp,
            host: "10.0.0.1".into(),
            port: 7777,
            attempts: 5,
            interval_us: 200_000,
            timeout_us: 1_000_000,
            size: 0,
            tos: 0,
        }
    }

    #[test]
    fn requests_within_bounds_pass_and_each_bound_is_named() {
        let l = HopLimits::default();
        assert_eq!(l.check(&req()), Ok(()));
        let cases: [(HopRequest, &str); 7] = [
            (
                HopRequest {
                    attempts: 101,
                    ..req()
                },
                "attempts",
            ),
            (
                HopRequest {
                    interval_us: 9_999,
                    ..req()
                },
                "interval",
            ),
            (
                HopRequest {
                    interval_us: 10_000_001,
                    ..req()
                },
                "interval",
            ),
            (
                HopRequest {
                    timeout_us: 0,
                    ..req()
                },
                "timeout",
            ),
            (
                HopRequest {
                    timeout_us: 10_000_001,
                    ..req()
                },
                "timeout",
            ),
            (
                HopRequest {
                    attempts: 100,
                    interval_us: 600_000,
                    ..req()
                },
                "longer than",
            ),
            (
                HopRequest {
                    proto: HopProto::Udp,
                    size: 1500,
                    ..req()
                },
                "UDP size",
            ),
        ];
        for (r, what) in cases {
            let e = l.check(&r).expect_err(what);
            assert!(e.contains(what), "{e}");
        }
        // The largest request the defaults allow: 100 attempts at 10 ms, 10 s timeout.
        let big = HopRequest {
            attempts: 100,
            interval_us: 10_000,
            timeout_us: 10_000_000,
            ..req()
        };
        assert_eq!(l.check(&big), Ok(()));
    }

    /// A UDP echo's keyed handshake is given one more timeout: it counts in the request's time.
    #[test]
    fn a_udp_request_counts_its_handshake_timeout() {
        let l = HopLimits::default();
        // 50 × 1 s + 10 s = 60 s: within the bound over TCP, 70 s with UDP's handshake.
        let r = HopRequest {
            attempts: 50,
            interval_us: 1_000_000,
            timeout_us: 10_000_000,
            ..req()
        };
        assert_eq!(l.check(&r), Ok(()));
        let udp = HopRequest {
            proto: HopProto::Udp,
            ..r.clone()
        };
        let e = l.check(&udp).unwrap_err();
        assert!(e.contains("--token handshake"), "{e}");
        let fits = HopRequest {
            attempts: 40,
            ..udp
        };
        assert_eq!(l.check(&fits), Ok(()));
    }

    #[test]
    fn bucket_allows_its_burst_then_its_rate() {
        let mut b = Bucket::new(2.0, 10.0, 0);
        let first: usize = (0..100).filter(|_| b.take(0)).count();
        assert_eq!(first, 10, "the burst at one instant");
        assert!(!b.take(S / 4), "half a token after 250 ms");
        assert!(b.take(S / 2), "one token after 500 ms");
        assert!(!b.take(S / 2));
        // Over ten seconds of a flood (one try per ms) it lets through ~rate × 10.
        let through = (1..=10_000u64)
            .filter(|ms| b.take(S / 2 + ms * 1_000_000))
            .count();
        assert_eq!(through, 20);
        // Idle for a minute: back to the burst, never more.
        let at = 100 * S;
        assert_eq!((0..100).filter(|_| b.take(at)).count(), 10);
    }

    #[test]
    fn the_reserve_is_a_debt_that_refills_and_is_bounded() {
        let mut g = Bucket::new(20.0, 40.0, 0);
        assert_eq!((0..100).filter(|_| g.take(0)).count(), 40);
        assert!(!g.take(0), "empty for the flood");
        let reserved = (0..100).filter(|_| g.take_from_reserve(0, 40.0)).count();
        assert_eq!(reserved, 40, "the reserve is as large as asked, no more");
        // 40 tokens in debt: two seconds at 20/s before anyone but a quiet session gets one.
        assert!(!g.take(S));
        assert!(!g.take(2 * S - 1));
        assert!(g.take(2 * S + S / 20));
    }

    #[test]
    fn quiet_is_at_least_half_the_burst() {
        let mut b = Bucket::new(2.0, 10.0, 0);
        assert!(b.is_quiet(0));
        assert_eq!((0..5).filter(|_| b.take(0)).count(), 5);
        assert!(b.is_quiet(0), "5 of 10 left");
        assert!(b.take(0));
        assert!(!b.is_quiet(0));
        assert!(b.is_quiet(S / 2), "a token back after 500 ms");
        // A flood at 100/s keeps its bucket empty: never quiet.
        let quiet = (1..=300u64)
            .filter(|ms| {
                b.take(ms * 10_000_000);
                b.is_quiet(ms * 10_000_000)
            })
            .count();
        assert_eq!(quiet, 0);
    }

    #[test]
    fn a_clock_that_steps_back_does_not_mint_tokens() {
        let mut b = Bucket::new(1.0, 1.0, 10 * S);
        assert!(b.take(10 * S));
        assert!(!b.take(5 * S), "earlier than the last take");
        assert!(!b.take(10 * S + S / 2));
        assert!(b.take(11 * S));
    }
}
