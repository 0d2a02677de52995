//! The pure core of `npt lab`'s link emulator: what happens to each packet on one direction of
//! an emulated link — loss, bottleneck rate and queue, propagation delay and jitter, reordering,
//! duplication — decided on a clock the caller supplies. This kernel has no netem, so the lab
//! moves packets between namespaces itself; this crate decides *when* each one leaves. It does
//! no I/O, reads no clock and starts no thread: the runtime calls [`Link::push`] with the time a
//! packet arrived, sleeps until [`Link::next_due`], takes packets with [`Link::pop_due`] and
//! reports the real release time with [`Link::record_release`]. Tests run it on a virtual
//! clock (a base `Instant` plus `Duration`s).
//!
//! # What happens to a packet, in order
//! 1. **Loss.** Random (each packet with probability `loss`) or Gilbert–Elliott: a good and a
//!    bad state, each with its own loss probability; the packet is lost or not in the current
//!    state, then the chain moves good→bad with probability `p` or bad→good with `r`. Bursts
//!    last 1/r packets on average. Lost packets never reach the queue.
//! 2. **Bottleneck** (only with `rate`). A FIFO of `queue` packets draining at `rate` bit/s:
//!    the packet's serialization ends at `max(now, previous end) + len·8/rate`, computed in
//!    integer nanoseconds with the remainder carried, so 10 Mbit/s and 1,250-byte packets leave
//!    exactly 1 ms apart and the long-run rate never drifts. A packet arriving while `queue`
//!    packets are still waiting or being serialized is dropped and counted (drop-tail).
//!    Lengths are what the runtime reads from the TUN (IP header included, no link framing).
//!    Each accepted packet's wait, from its arrival to the start of its serialization, goes
//!    into the stats' `queue_wait` histogram: what the queue really held. With an `ecn`
//!    threshold, an ECN-capable packet ([`Link::push_marking`]) that will wait at least that
//!    long is marked CE (the caller's `mark` rewrites it) and counted in `ce_marked`: step
//!    marking, as DCTCP's K threshold or a CoDel target marks instead of dropping. Packets that
//!    are not ECN-capable are never marked; a full queue still drops either kind.
//! 3. **Propagation delay and jitter.** Departure = serialization end + `delay` + an offset
//!    within ±`jitter`, then `max(that, previous departure)`. The offset is not drawn per
//!    packet but read off a random curve in time — knots uniform in ±`jitter` every
//!    2·`jitter`, joined by straight lines (see `jitter.rs`) — whose slope never falls below
//!    −1, so jitter never reorders and, unlike per-packet draws under the `max` rule, does not
//!    push the holds of closely spaced packets toward `delay + jitter`: the mean hold stays
//!    `delay`, every hold stays within `delay ± jitter` (standard deviation ≈ 0.47·`jitter`).
//!    The `max` only guards against nanosecond rounding. `jitter` may not exceed `delay`.
//! 4. **Reorder.** A `reorder` fraction of packets skip step 3 and leave when their
//!    serialization ends, overtaking the delayed packets before them. They cannot overtake on
//!    the bottleneck itself. A chosen packet counts as reordered only if it really is due
//!    before an earlier packet (with no delay nothing is overtaken, so nothing is counted).
//! 5. **Duplicate.** A `duplicate` fraction of packets is delivered twice, the copy due at the
//!    same time, right behind. Copies do not use bottleneck capacity.
//!
//! With every impairment at zero a packet is due at the `now` it was pushed with, and packets
//! leave in arrival order (ties are broken by arrival). Every random choice comes from one
//! `SmallRng` seeded by the caller, and is drawn only for impairments that are set: the same
//! seed, configuration and inputs give the same drops and times.
//!
//! # Compared with netem and Mahimahi
//! - **netem** reorders packets whenever jitter is larger than the packet spacing (its
//!   time-sorted queue releases each at its own jittered time) unless its child queue is
//!   replaced by a FIFO; here, as in Mahimahi's shells, packets keep their order: the delay
//!   varies but reordering is only what `reorder` asks for. netem draws each packet's jitter
//!   independently (uniform by default); here it follows a curve in time (step 3). netem's
//!   `limit` counts every packet it holds, delayed ones included, so a long delay at a high
//!   rate needs a big limit; here `queue` counts only the bottleneck backlog, as a router queue would. netem's
//!   duplicate re-enqueues the copy, which gets its own delay and uses rate; here it follows
//!   the original. netem's `reorder` (with a gap) likewise sends chosen packets immediately.
//!   netem's `loss gemodel p r 1-h 1-k` is the same Gilbert–Elliott chain (`bad` = 1-h,
//!   `good` = 1-k).
//! - **Mahimahi** chains shells: `mm-delay` holds every packet a fixed time (no jitter),
//!   `mm-loss` drops independently at random, `mm-link` releases packets at delivery
//!   opportunities read from a trace file (each opportunity carries up to 1,500 bytes) through
//!   a queue that is unbounded by default (droptail, drophead, CoDel or PIE optional). Here one
//!   link does all three in a fixed order, with a constant `rate` instead of a trace, exact
//!   per-byte serialization instead of 1,500-byte opportunities, a drop-tail queue counted in
//!   packets, and Gilbert–Elliott bursts besides random loss.
//!
//! # Holding packets, and memory
//! Delayed packets leave in arrival order and so do reordered ones (their due time is the
//! serialization end, which never decreases), so the link keeps two `VecDeque`s and pops the
//! earlier front: O(1) per push and pop, no heap. It holds at most `queue` packets waiting at
//! the bottleneck plus the packets that arrived during the last `delay + jitter` (with `rate`:
//! at most `(delay + jitter) · rate / (8 · smallest packet)` of them), each twice at most when
//! duplicated; plus one `Instant` per bottleneck packet. A `delay` of 1 h at most is accepted.
//!
//! # Driving it
//! ```
//! use std::time::{Duration, Instant};
//! use npt_link::{Impairments, Link, Verdict};
//!
//! let imp: Impairments = toml::from_str(r#"delay = "50ms"
//! loss = "1%""#).unwrap();
//! let mut link = Link::new(&imp, 7);
//! let t0 = Instant::now(); // the runtime's clock; tests use a virtual one
//! if let Verdict::Queued { due, .. } = link.push(t0, vec![0u8; 64], 64) {
//!     assert_eq!(due, t0 + Duration::from_millis(50));
//! }
//! // Runtime loop: sleep until just before `next_due()`, spin to it, then release.
//! while let Some(due) = link.next_due() {
//!     let now = due; // what the clock reads when the runtime wakes
//!     while let Some((pkt, due)) = link.pop_due(now) {
//!         // write `pkt` to the other TUN, then:
//!         link.record_release(due, now);
//!     }
//! }
//! println!("{:?}", link.stats().summary());
//! ```
#![deny(clippy::indexing_slicing)] // parses a user-written link config: see `[workspace.lints]`

mod config;
mod human;
mod jitter;
mod link;
mod settings;
mod stats;

pub use config::{Impairments, Loss, DEFAULT_QUEUE, MAX_DELAY};
pub use human::{
    format_duration, parse_duration, parse_percent, parse_rate, LinkError, Percent, Rate,
};
pub use link::{DropReason, Link, Verdict};
pub use settings::{is_setting_key, setting_keys, IMPAIRMENT_KEYS, LOSS_MODEL_KEYS, NONE};
pub use stats::{LinkStats, LinkSummary, LATE_RELEASE};
