//! The user model: every decision a simulated user makes (when it starts, which activity,
//! how long it thinks, how big each request and response is), as plain code over a seeded
//! RNG and caller-supplied times. No sockets and no clock, so it is tested with a virtual
//! clock and the same `--seed` always gives the same choices for the same user.
//!
//! Sizes and think times are drawn **log-uniformly** within their range (most pages small, a
//! few large — closer to real traffic than a flat draw, and the median sits at the geometric
//! mean of the bounds); counts (pages, rounds, resources, tick rate) uniformly.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::config::{Activity, Range, Shape};

/// A 64-bit mix (splitmix64) so that user `i` of seed `s` gets an unrelated stream.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The random choices of one user.
#[derive(Debug)]
pub struct Chooser {
    rng: SmallRng,
}

/// One web page: a connection, the handshake-sized exchange, then `rounds` requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagePlan {
    pub handshake_up: u64,
    pub handshake_down: u64,
    pub rounds: u32,
}

/// One QUIC visit: the main document, then `resources` fetched concurrently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuicPlan {
    pub doc_up: u64,
    pub doc_down: u64,
    pub resources: u32,
}

/// One game session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GamePlan {
    pub length: Duration,
    pub tick: Duration,
    pub size: u64,
}

impl Chooser {
    pub fn new(seed: u64, user: u64) -> Chooser {
        Chooser {
            rng: SmallRng::seed_from_u64(mix64(seed ^ mix64(user))),
        }
    }

    /// Uniform in `r`.
    pub fn uniform(&mut self, r: Range) -> u64 {
        if r.lo >= r.hi {
            return r.lo;
        }
        self.rng.gen_range(r.lo..=r.hi)
    }

    /// Log-uniform in `r` (a zero lower bound is treated as 1).
    pub fn log_uniform(&mut self, r: Range) -> u64 {
        if r.lo >= r.hi {
            return r.lo;
        }
        let lo = (r.lo.max(1) as f64).ln();
        let hi = (r.hi as f64).ln();
        // NO-PANIC: a float-to-int `as` saturates (NaN gives 0); the clamp below bounds it.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let v = self.rng.gen_range(lo..=hi).exp().round() as u64;
        v.clamp(r.lo, r.hi)
    }

    pub fn activity(&mut self, shape: &Shape) -> Activity {
        let total = shape.mix.total();
        if total == 0 {
            return Activity::Web;
        }
        let mut x = self.rng.gen_range(0..total);
        for a in Activity::ALL {
            let w = shape.mix.weight(a) as u64;
            if x < w {
                return a;
            }
            x -= w;
        }
        Activity::Web
    }

    pub fn think(&mut self, shape: &Shape) -> Duration {
        Duration::from_nanos(self.log_uniform(shape.think))
    }

    pub fn pages(&mut self, shape: &Shape) -> u32 {
        u32::try_from(self.uniform(shape.web.pages).max(1)).unwrap_or(u32::MAX)
    }

    pub fn page(&mut self, shape: &Shape) -> PagePlan {
        PagePlan {
            handshake_up: self.log_uniform(shape.web.handshake_up),
            handshake_down: self.log_uniform(shape.web.handshake_down),
            rounds: u32::try_from(self.uniform(shape.web.rounds).max(1)).unwrap_or(u32::MAX),
        }
    }

    /// (bytes up, bytes down) of one web request round.
    pub fn web_round(&mut self, shape: &Shape) -> (u64, u64) {
        (
            self.log_uniform(shape.web.request_up),
            self.log_uniform(shape.web.request_down),
        )
    }

    pub fn pause(&mut self, shape: &Shape) -> Duration {
        Duration::from_nanos(self.log_uniform(shape.web.pause))
    }

    pub fn quic_visit(&mut self, shape: &Shape) -> QuicPlan {
        QuicPlan {
            doc_up: self.log_uniform(shape.quic.doc_up),
            doc_down: self.log_uniform(shape.quic.doc_down),
            resources: u32::try_from(self.uniform(shape.quic.resources)).unwrap_or(u32::MAX),
        }
    }

    pub fn quic_resource(&mut self, shape: &Shape) -> (u64, u64) {
        (
            self.log_uniform(shape.quic.resource_up),
            self.log_uniform(shape.quic.resource_down),
        )
    }

    pub fn download(&mut self, shape: &Shape) -> u64 {
        self.log_uniform(shape.transfer.download)
    }

    pub fn upload(&mut self, shape: &Shape) -> u64 {
        self.log_uniform(shape.transfer.upload)
    }

    pub fn game(&mut self, shape: &Shape) -> GamePlan {
        let hz = self.uniform(shape.game.tick_hz).max(1);
        GamePlan {
            length: Duration::from_nanos(self.uniform(shape.game.session)),
            tick: Duration::from_nanos(1_000_000_000 / hz),
            size: self.uniform(shape.game.size),
        }
    }
}

/// What the driver should do next for a user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Sleep until this offset from the run's start, then ask again.
    WaitUntil(Duration),
    /// Carry out one session of this activity, then ask again.
    Act(Activity),
    /// The user is finished (the run's end is reached, or an open-model visit is over).
    Done,
}

/// One user's life: wait for its start, then act and think in turn until the end.
/// Times are offsets from the run's start, supplied by the caller (real or virtual clock).
#[derive(Debug)]
pub struct User {
    pub chooser: Chooser,
    wake: Option<Duration>,
    end: Duration,
    /// Open model: one session, then done.
    once: bool,
    acted: bool,
}

impl User {
    /// A closed-model user that starts at `start` and stops at `end`.
    pub fn new(seed: u64, id: u64, start: Duration, end: Duration) -> User {
        User {
            chooser: Chooser::new(seed, id),
            wake: Some(start),
            end,
            once: false,
            acted: false,
        }
    }

    /// An open-model visitor: one session at `start`, then gone.
    pub fn visitor(seed: u64, id: u64, start: Duration, end: Duration) -> User {
        User {
            once: true,
            ..User::new(seed, id, start, end)
        }
    }

    /// The next step at time `now`. Call again after each wait and each activity.
    pub fn next(&mut self, now: Duration, shape: &Shape) -> Step {
        if now >= self.end {
            return Step::Done;
        }
        match self.wake {
            Some(t) if t >= self.end => Step::Done,
            Some(t) if now < t => Step::WaitUntil(t),
            Some(_) => {
                self.wake = None;
                if self.once && self.acted {
                    return Step::Done;
                }
                self.acted = true;
                Step::Act(self.chooser.activity(shape))
            }
            None => {
                if self.once {
                    return Step::Done;
                }
                let t = now + self.chooser.think(shape);
                if t >= self.end {
                    return Step::Done;
                }
                self.wake = Some(t);
                Step::WaitUntil(t)
            }
        }
    }
}

/// Start offset of user `i` of `n` with a linear ramp-up.
pub fn ramp_start(i: u32, n: u32, ramp_up: Duration) -> Duration {
    if n <= 1 {
        return Duration::ZERO;
    }
    let ramp = u64::try_from(ramp_up.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(ramp.saturating_mul(i as u64) / n as u64)
}

/// Arrival time of open-model session `k` at `per_sec` sessions per second.
pub fn arrival_at(k: u64, per_sec: f64) -> Duration {
    Duration::from_secs_f64(k as f64 / per_sec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mix;

    const MS: Duration = Duration::from_millis(1);

    /// Drives a user on a virtual clock; each activity takes `busy`. Returns (activity, start).
    fn simulate(user: &mut User, shape: &Shape, busy: Duration) -> Vec<(Activity, Duration)> {
        let mut now = Duration::ZERO;
        let mut out = Vec::new();
        for _ in 0..1_000_000 {
            match user.next(now, shape) {
                Step::WaitUntil(t) => {
                    assert!(t > now, "a wait must move time forward");
                    now = t;
                }
                Step::Act(a) => {
                    out.push((a, now));
                    now += busy;
                }
                Step::Done => return out,
            }
        }
        panic!("user never finished");
    }

    #[test]
    fn user_starts_thinks_and_stops_on_the_virtual_clock() {
        let shape = Shape {
            think: Range::new(100_000_000, 10_000_000_000),
            ..Shape::default()
        };
        let end = Duration::from_secs(600);
        let mut u = User::new(7, 3, Duration::from_secs(5), end);
        let acts = simulate(&mut u, &shape, 50 * MS);
        assert!(acts.len() > 10);
        assert_eq!(
            acts[0].1,
            Duration::from_secs(5),
            "first session at its start"
        );
        for w in acts.windows(2) {
            let gap = w[1].1 - w[0].1 - 50 * MS;
            assert!(gap >= 100 * MS && gap <= Duration::from_secs(10), "{gap:?}");
        }
        assert!(acts.last().unwrap().1 < end);
    }

    #[test]
    fn the_same_seed_gives_the_same_user_and_other_users_differ() {
        let shape = Shape::default();
        let end = Duration::from_secs(300);
        let a = simulate(&mut User::new(42, 1, Duration::ZERO, end), &shape, 20 * MS);
        let b = simulate(&mut User::new(42, 1, Duration::ZERO, end), &shape, 20 * MS);
        let c = simulate(&mut User::new(42, 2, Duration::ZERO, end), &shape, 20 * MS);
        let d = simulate(&mut User::new(43, 1, Duration::ZERO, end), &shape, 20 * MS);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        let mut x = Chooser::new(9, 9);
        let mut y = Chooser::new(9, 9);
        for _ in 0..100 {
            assert_eq!(x.page(&shape), y.page(&shape));
            assert_eq!(x.web_round(&shape), y.web_round(&shape));
        }
    }

    #[test]
    fn mix_is_followed() {
        let shape = Shape {
            mix: Mix::parse("web=95,quic=5").unwrap(),
            ..Shape::default()
        };
        let mut c = Chooser::new(1, 1);
        let mut counts = [0u32; 5];
        for _ in 0..20_000 {
            counts[c.activity(&shape).index()] += 1;
        }
        assert_eq!(counts[2] + counts[3] + counts[4], 0);
        let quic = counts[1] as f64 / 20_000.0;
        assert!((quic - 0.05).abs() < 0.01, "quic share {quic}");
        let only_game = Shape {
            mix: Mix::parse("game=1").unwrap(),
            ..Shape::default()
        };
        assert!((0..100).all(|_| c.activity(&only_game) == Activity::Game));
    }

    #[test]
    fn draws_stay_in_their_ranges() {
        let shape = Shape::default();
        let mut c = Chooser::new(5, 0);
        let mut below_geo_mean = 0;
        for _ in 0..10_000 {
            let p = c.page(&shape);
            assert!((400..=2000).contains(&p.handshake_up));
            assert!((2048..=4096).contains(&p.handshake_down));
            assert!((2..=8).contains(&p.rounds));
            let (up, down) = c.web_round(&shape);
            assert!((1024..=32 * 1024).contains(&up));
            assert!((4096..=2 << 20).contains(&down));
            // log-uniform: half the draws below the geometric mean of the bounds (~90 KB)
            if down < 92_682 {
                below_geo_mean += 1;
            }
            let g = c.game(&shape);
            assert!(
                g.tick >= Duration::from_nanos(16_666_666)
                    && g.tick <= Duration::from_nanos(33_333_333)
            );
            assert!((64..=1280).contains(&g.size));
            let t = c.think(&shape);
            assert!(t >= 100 * MS && t <= Duration::from_secs(10));
        }
        assert!((4500..5500).contains(&below_geo_mean), "{below_geo_mean}");
        assert_eq!(c.uniform(Range::new(3, 3)), 3);
        assert_eq!(c.log_uniform(Range::new(0, 0)), 0);
    }

    #[test]
    fn visitor_does_one_session() {
        let shape = Shape::default();
        let mut v = User::visitor(1, 1, Duration::from_secs(2), Duration::from_secs(60));
        assert_eq!(
            v.next(Duration::ZERO, &shape),
            Step::WaitUntil(Duration::from_secs(2))
        );
        assert!(matches!(
            v.next(Duration::from_secs(2), &shape),
            Step::Act(_)
        ));
        assert_eq!(v.next(Duration::from_secs(3), &shape), Step::Done);
    }

    #[test]
    fn ramp_and_arrivals() {
        let r = Duration::from_secs(30);
        assert_eq!(ramp_start(0, 300, r), Duration::ZERO);
        assert_eq!(ramp_start(150, 300, r), Duration::from_secs(15));
        assert!(ramp_start(299, 300, r) < r);
        assert_eq!(ramp_start(5, 10, Duration::ZERO), Duration::ZERO);
        assert_eq!(arrival_at(10, 20.0), Duration::from_millis(500));
    }

    #[test]
    fn a_user_past_the_end_is_done() {
        let shape = Shape::default();
        let mut u = User::new(1, 1, Duration::from_secs(100), Duration::from_secs(10));
        assert_eq!(u.next(Duration::ZERO, &shape), Step::Done);
        let mut u = User::new(1, 1, Duration::ZERO, Duration::from_secs(10));
        assert_eq!(u.next(Duration::from_secs(10), &shape), Step::Done);
    }
}
