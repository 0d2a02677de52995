//! The emulator state of one link direction: loss model, bottleneck, delay line. Sans-IO: the
//! runtime hands in packets with the time they arrived and asks which are due; this code never
//! reads a clock, sleeps or touches a device. The semantics are in the crate docs.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::config::{Impairments, Loss};
use crate::jitter::JitterCurve;
use crate::stats::LinkStats;

/// What happened to a pushed packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Held until `due`; `duplicated`: a second copy is due right after it; `reordered`: it
    /// skipped the delay and is due before a packet that arrived earlier.
    Queued {
        due: Instant,
        duplicated: bool,
        reordered: bool,
    },
    Dropped(DropReason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The loss model chose it.
    Loss,
    /// The bottleneck queue was full (or its departure time would not fit in an `Instant`).
    QueueFull,
}

/// The loss model with its state.
#[derive(Clone, Copy, Debug)]
enum LossState {
    None,
    Random(f64),
    Ge {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
        bad: bool,
    },
}

/// A packet in the delay line.
struct Held<P> {
    due: Instant,
    seq: u64,
    len: usize,
    pkt: P,
}

/// One direction of an emulated link. See the crate docs.
pub struct Link<P> {
    delay: Duration,
    jitter: JitterCurve,
    loss: LossState,
    duplicate: f64,
    reorder: f64,
    /// Bottleneck rate in bit/s, `None` when unlimited.
    rate: Option<u128>,
    queue: usize,
    /// ECN marking threshold on the bottleneck wait (`ecn`), `None` when the link marks nothing.
    ecn: Option<Duration>,
    rng: SmallRng,
    /// Latest `now` seen: time never goes back here.
    clock: Option<Instant>,
    /// When the bottleneck finishes serializing the last accepted packet.
    tx_end: Option<Instant>,
    /// Remainder (bit·ns numerator mod rate) carried so that rounding never drifts the rate.
    tx_carry: u128,
    /// Serialization end of each packet still in the bottleneck (waiting or on the wire).
    backlog: VecDeque<Instant>,
    /// Departure of the last delayed packet: delayed packets never overtake each other.
    last_due: Option<Instant>,
    seq: u64,
    /// Packets that took the delay; due times non-decreasing.
    delayed: VecDeque<Held<P>>,
    /// Packets chosen to be reordered (they skip the delay); due times non-decreasing.
    overtaking: VecDeque<Held<P>>,
    stats: LinkStats,
}

impl<P: Clone> Link<P> {
    /// A link applying `imp`, its random choices drawn from `seed`. `imp` should have passed
    /// [`Impairments::validate`]; values outside it are clamped here rather than refused
    /// (probabilities into 0–100 %, jitter to the delay, a zero rate means unlimited, a zero
    /// queue holds one packet), so no input makes the link panic.
    pub fn new(imp: &Impairments, seed: u64) -> Self {
        let delay = imp.delay.min(crate::config::MAX_DELAY);
        Link {
            delay,
            jitter: JitterCurve::new(imp.jitter.min(delay)),
            loss: loss_state(imp.loss, false),
            duplicate: imp.duplicate.fraction(),
            reorder: imp.reorder.fraction(),
            rate: rate_of(imp),
            queue: imp.queue_len().max(1),
            ecn: imp.ecn,
            rng: SmallRng::seed_from_u64(seed),
            clock: None,
            tx_end: None,
            tx_carry: 0,
            backlog: VecDeque::new(),
            last_due: None,
            seq: 0,
            delayed: VecDeque::new(),
            overtaking: VecDeque::new(),
            stats: LinkStats::default(),
        }
    }

    /// From `now` on the link applies `imp` instead (clamped as in [`Link::new`]). Packets
    /// already inside it keep their schedule: those waiting at the bottleneck or in the delay
    /// line leave when they were due, as packets already on a wire would. Packets arriving
    /// from `now` on get the new loss, rate, queue, delay and jitter, and still never overtake
    /// an earlier one (only `reorder` does that): after a delay is shortened by *d*, the
    /// arrivals of the next *d* wait behind the last packet of the old delay, so the delay
    /// steps down over *d* instead of reordering. The queue limit applies to the packets
    /// already waiting; a Gilbert–Elliott chain keeps its state when the new loss is one too;
    /// the random choices go on from the same generator, so a seed still replays a run.
    pub fn reconfigure(&mut self, now: Instant, imp: &Impairments) {
        let now = match self.clock {
            Some(c) if c > now => c,
            _ => now,
        };
        self.clock = Some(now);
        let delay = imp.delay.min(crate::config::MAX_DELAY);
        let jitter = imp.jitter.min(delay);
        if jitter != self.jitter.width() {
            self.jitter = JitterCurve::new(jitter);
        }
        self.delay = delay;
        let bad = matches!(self.loss, LossState::Ge { bad: true, .. });
        self.loss = loss_state(imp.loss, bad);
        self.duplicate = imp.duplicate.fraction();
        self.reorder = imp.reorder.fraction();
        let rate = rate_of(imp);
        if rate != self.rate {
            // The carried remainder was a fraction of the old rate's nanosecond.
            self.tx_carry = 0;
        }
        self.rate = rate;
        self.queue = imp.queue_len().max(1);
        self.ecn = imp.ecn;
    }

    /// A packet of `len` bytes arrives at `now`: drop it (loss, queue full), or queue it
    /// (twice when duplicated) with its departure time. An earlier `now` than one already
    /// seen is taken as that latest time.
    pub fn push(&mut self, now: Instant, pkt: P, len: usize) -> Verdict {
        self.push_marking(now, pkt, len, false, |_| {})
    }

    /// [`Link::push`] for a packet that says whether it is ECN-capable (`ect`: its ECN field
    /// is ECT(0) or ECT(1)). On a link with an `ecn` threshold, an ECN-capable packet that
    /// will wait at least that long in the bottleneck queue is passed to `mark` (which sets its
    /// ECN field to CE) before it is queued, and counted (`ce_marked`); a packet the queue has
    /// no room for is still dropped, marked or not, as a router's full queue drops.
    pub fn push_marking(
        &mut self,
        now: Instant,
        mut pkt: P,
        len: usize,
        ect: bool,
        mark: impl FnOnce(&mut P),
    ) -> Verdict {
        let now = match self.clock {
            Some(c) if c > now => c,
            _ => now,
        };
        self.clock = Some(now);
        self.stats.record_in(len);

        if self.lose() {
            self.stats.record_loss();
            return Verdict::Dropped(DropReason::Loss);
        }
        let Some((sent, wait)) = self.bottleneck(now, len) else {
            self.stats.record_queue_drop();
            return Verdict::Dropped(DropReason::QueueFull);
        };
        if ect && self.ecn.is_some_and(|k| wait >= k) && self.rate.is_some() {
            mark(&mut pkt);
            self.stats.record_ce_mark();
        }

        let reorder = self.reorder > 0.0 && self.rng.gen::<f64>() < self.reorder;
        let (due, reordered) = if reorder {
            // Skips the propagation delay (and jitter), not the bottleneck: a packet cannot
            // overtake another on the wire it is serialized onto.
            let overtakes = self.delayed.back().is_some_and(|h| h.due > sent);
            (sent, overtakes)
        } else {
            let Some(due) = sent.checked_add(self.hold(sent)) else {
                self.stats.record_queue_drop();
                return Verdict::Dropped(DropReason::QueueFull);
            };
            let due = self.last_due.map_or(due, |last| due.max(last));
            self.last_due = Some(due);
            (due, false)
        };
        if reordered {
            self.stats.record_reorder();
        }
        let duplicated = self.duplicate > 0.0 && self.rng.gen::<f64>() < self.duplicate;
        let lane = if reorder {
            &mut self.overtaking
        } else {
            &mut self.delayed
        };
        if duplicated {
            self.stats.record_duplicate();
            lane.push_back(Held {
                due,
                seq: self.seq,
                len,
                pkt: pkt.clone(),
            });
            self.seq += 1;
        }
        lane.push_back(Held {
            due,
            seq: self.seq,
            len,
            pkt,
        });
        self.seq += 1;
        Verdict::Queued {
            due,
            duplicated,
            reordered,
        }
    }

    /// When the next packet is due, if any (the runtime sleeps until just before, then spins).
    pub fn next_due(&self) -> Option<Instant> {
        self.next_lane().and_then(VecDeque::front).map(|h| h.due)
    }

    /// The next packet whose departure time is <= now, with its due time.
    pub fn pop_due(&mut self, now: Instant) -> Option<(P, Instant)> {
        let lane = self.next_lane_mut()?;
        if lane.front()?.due > now {
            return None;
        }
        let h = lane.pop_front()?;
        self.stats.record_out(h.len);
        Some((h.pkt, h.due))
    }

    /// The runtime reports when it actually released a packet that was due at `due`: the
    /// delay error (actual − due) goes into the histogram; an early release counts as 0 and
    /// is counted apart.
    pub fn record_release(&mut self, due: Instant, actual: Instant) {
        self.stats
            .record_delay_error(actual.saturating_duration_since(due), actual < due);
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Hands over the stats gathered so far and starts afresh: per-interval or per-scenario
    /// stats that add back up to the total with `+=`.
    pub fn take_stats(&mut self) -> LinkStats {
        std::mem::take(&mut self.stats)
    }

    /// Packets held in the delay line now (the bottleneck queue's packets included).
    pub fn held(&self) -> usize {
        self.delayed.len() + self.overtaking.len()
    }

    /// Runs the loss model for one packet: lose in the current state, then move.
    fn lose(&mut self) -> bool {
        match &mut self.loss {
            LossState::None => false,
            LossState::Random(p) => *p > 0.0 && self.rng.gen::<f64>() < *p,
            LossState::Ge {
                p,
                r,
                loss_good,
                loss_bad,
                bad,
            } => {
                let loss = if *bad { *loss_bad } else { *loss_good };
                let lost = loss > 0.0 && self.rng.gen::<f64>() < loss;
                let flip = if *bad { *r } else { *p };
                if flip > 0.0 && self.rng.gen::<f64>() < flip {
                    *bad = !*bad;
                }
                lost
            }
        }
    }

    /// The bottleneck: when the packet's serialization ends and how long it waits in the
    /// queue before it starts, or `None` when the queue is full. Without a rate the packet
    /// passes at `now`.
    fn bottleneck(&mut self, now: Instant, len: usize) -> Option<(Instant, Duration)> {
        let Some(rate) = self.rate else {
            return Some((now, Duration::ZERO));
        };
        while self.backlog.front().is_some_and(|&end| end <= now) {
            self.backlog.pop_front();
        }
        if self.backlog.len() >= self.queue {
            return None;
        }
        let start = match self.tx_end {
            Some(end) if end > now => end,
            _ => {
                // The wire went idle: no fraction of a previous packet's time carries over.
                self.tx_carry = 0;
                now
            }
        };
        let bit_ns = len as u128 * 8 * 1_000_000_000 + self.tx_carry;
        let ns = bit_ns / rate;
        let carry = bit_ns % rate;
        let end = start.checked_add(duration_from_nanos(ns)?)?;
        self.tx_carry = carry;
        self.tx_end = Some(end);
        self.backlog.push_back(end);
        let wait = start.saturating_duration_since(now);
        self.stats.record_queue_wait(wait);
        Some((end, wait))
    }

    /// The propagation hold of a packet leaving the bottleneck at `sent`: delay plus the
    /// jitter curve's offset (see `jitter.rs`).
    fn hold(&mut self, sent: Instant) -> Duration {
        let offset = self.jitter.offset(sent, &mut self.rng);
        if offset == 0 {
            return self.delay;
        }
        // jitter ≤ delay, so this is ≥ 0; clamp anyway.
        let ns = (crate::jitter::nanos(self.delay) + offset).max(0);
        u128::try_from(ns)
            .ok()
            .and_then(duration_from_nanos)
            .unwrap_or(self.delay)
    }

    /// The lane whose front packet leaves first: earliest due, then earliest arrival.
    fn next_lane(&self) -> Option<&VecDeque<Held<P>>> {
        match (self.delayed.front(), self.overtaking.front()) {
            (None, None) => None,
            (Some(_), None) => Some(&self.delayed),
            (None, Some(_)) => Some(&self.overtaking),
            (Some(d), Some(o)) => Some(if (o.due, o.seq) < (d.due, d.seq) {
                &self.overtaking
            } else {
                &self.delayed
            }),
        }
    }

    fn next_lane_mut(&mut self) -> Option<&mut VecDeque<Held<P>>> {
        let overtaking = match (self.delayed.front(), self.overtaking.front()) {
            (None, None) => return None,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some(d), Some(o)) => (o.due, o.seq) < (d.due, d.seq),
        };
        Some(if overtaking {
            &mut self.overtaking
        } else {
            &mut self.delayed
        })
    }
}

/// The loss model of `loss`; a Gilbert–Elliott chain starts in the bad state when `bad`.
fn loss_state(loss: Loss, bad: bool) -> LossState {
    match loss {
        Loss::None => LossState::None,
        Loss::Random { p } => LossState::Random(p.fraction()),
        Loss::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        } => LossState::Ge {
            p: p.fraction(),
            r: r.fraction(),
            loss_good: loss_good.fraction(),
            loss_bad: loss_bad.fraction(),
            bad,
        },
    }
}

/// The bottleneck rate in bit/s; `None` (unlimited) for no rate or a zero one.
fn rate_of(imp: &Impairments) -> Option<u128> {
    imp.rate
        .map(|r| u128::from(r.as_bits_per_sec()))
        .filter(|&r| r > 0)
}

fn duration_from_nanos(ns: u128) -> Option<Duration> {
    let secs = u64::try_from(ns / 1_000_000_000).ok()?;
    Some(Duration::new(secs, (ns % 1_000_000_000) as u32))
}
