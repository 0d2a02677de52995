//! `npt bulk`: capacity, iperf3's job done through npt's own responder on the one port every
//! other test uses (the protocol is [`npt_wire::bulk`]; the responder `npt_server::bulk`).
//!
//! - TCP ([`tcp`]): N connections up, down or both, each reading the kernel's `TCP_INFO` every
//!   [`SAMPLE_EVERY`] — retransmits, RTT and its variance, the congestion window, the delivery
//!   rate — through `--via` (SOCKS5, HTTP CONNECT) and `--token` too;
//! - QUIC ([`quic`]): N streams over as few connections as the responder's stream limit allows,
//!   with the connection's RTT, window and lost packets;
//! - TCP and QUIC streams at a rate (`--rate`, each stream's): paced by [`pace`] as they are
//!   written here, by the responder when they come down;
//! - UDP ([`udp`]): one flow at a rate and size, paced by the sans-IO schedule of
//!   [`npt_wire::pacing`]; the responder reports what arrived (delivered rate, loss, jitter);
//!   down ([`udp_down`]): the tester paces small pulls and the responder answers each with a
//!   burst of datagrams, for `--token` sessions and loopback sources only.
//!
//! Streams publish what they measured into a [`StreamState`] each; the caller's thread samples
//! them on a fixed tick and the pure [`collect::Collector`] turns the samples into the interval
//! series and the result body ([`npt_result::bulk`]). For an upload, "arrived" is what the
//! responder reported it received, never what the tester's socket buffer took. [`workload`]
//! is the contract with the cli (run a [`Config`], hand over intervals, return the body);
//! [`metrics`] writes the `--metrics` series.
// Parses peer reports: no panic path outside tests (README, "No panic on input").
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap
    )
)]

pub mod collect;
mod engine;
mod frames;
pub mod lateness;
pub mod metrics;
mod pace;
pub mod quic;
pub mod tcp;
pub mod udp;
pub mod udp_down;
mod udp_sock;
pub mod workload;

use npt_result::error::ErrorKind;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub use engine::run;
pub use npt_client::QuicTrust;
pub use npt_wire::bulk::Direction;

/// How often streams read their transport's state and the collector samples them.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// The most streams one run opens (each way).
pub const MAX_STREAMS: u32 = 1024;

pub use npt_client::target::{Proto, Target};

/// Which ways the bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ways {
    Up,
    Down,
    Both,
}

impl Ways {
    pub fn name(self) -> &'static str {
        match self {
            Ways::Up => "up",
            Ways::Down => "down",
            Ways::Both => "both",
        }
    }

    /// The directions of the streams, each `streams` times.
    pub fn directions(self) -> &'static [Direction] {
        match self {
            Ways::Up => &[Direction::Up],
            Ways::Down => &[Direction::Down],
            Ways::Both => &[Direction::Down, Direction::Up],
        }
    }
}

impl From<npt_client::target::BadTarget> for BulkError {
    fn from(e: npt_client::target::BadTarget) -> BulkError {
        BulkError::BadTarget(e.0)
    }
}

impl From<npt_client::target::ResolveError> for BulkError {
    fn from(e: npt_client::target::ResolveError) -> BulkError {
        use npt_client::target::ResolveError as R;
        match e {
            R::Lookup { target, source } => BulkError::Resolve(target.to_string(), source),
            R::NoAddress(t) => {
                BulkError::Resolve(t.to_string(), std::io::Error::other("no address"))
            }
            R::Family(f) => {
                BulkError::Resolve(f.what.clone(), std::io::Error::other(f.to_string()))
            }
        }
    }
}

/// UDP at a rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UdpRate {
    /// Bits/s of datagrams (the npt header counts; IP and UDP headers do not).
    pub rate_bps: f64,
    /// Datagram size in bytes (at least a report's, [`npt_wire::bulk::REPLY_LEN`]).
    pub size: usize,
}

/// A bulk run's configuration (the command validates flags into this).
#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    /// Streams each way (TCP connections, QUIC streams); 1 for UDP.
    pub streams: u32,
    pub ways: Ways,
    pub duration: Duration,
    /// Length of one interval record.
    pub interval: Duration,
    /// UDP only.
    pub udp: Option<UdpRate>,
    /// TCP and QUIC (`--rate`): each stream's pace, bits/s of payload, each way; `None` goes
    /// as fast as the path does. This host paces what it sends ([`pace`]); a download is
    /// paced by the responder, which must say it does.
    pub rate_bps: Option<f64>,
    /// `--token`: the keyed handshake on every connection, stream or flow.
    pub token: Option<String>,
    /// QUIC certificate trust.
    pub trust: QuicTrust,
    /// `--via`: TCP through SOCKS5 or HTTP CONNECT, UDP through a SOCKS5 UDP relay.
    pub via: Option<npt_proxy::Via>,
    /// Connect, handshake and first answer, each.
    pub timeout: Duration,
    /// TCP: this host's congestion control on every stream (`TCP_CONGESTION`, e.g. `cubic`);
    /// `None` keeps the system's default. It governs what this host sends (up); a download is
    /// paced by the responder's.
    pub congestion: Option<String>,
    /// `--threads`: the runtime's worker threads; `None` picks by protocol (one for TCP).
    pub threads: Option<usize>,
    /// `-4`/`-6`, `--bind`, `--dscp`: the TCP connections and the UDP flow (not QUIC's
    /// endpoint, nor `--via`'s proxy connection: the command line refuses those).
    pub source: npt_client::source::Source,
}

#[derive(Debug, thiserror::Error)]
pub enum BulkError {
    #[error("target {0:?}: expected tcp://HOST:PORT, udp://HOST:PORT or quic://HOST:PORT")]
    BadTarget(String),
    #[error("cannot resolve {0}: {1}")]
    Resolve(String, std::io::Error),
    #[error("cannot start: {0}")]
    Start(std::io::Error),
    #[error("QUIC: {0}")]
    Quic(String),
}

/// What a transport knew of a stream at one reading.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reading {
    /// Bumped on every new reading, so one reading is sampled once.
    pub generation: u64,
    pub rtt_ns: Option<u64>,
    pub rttvar_ns: Option<u64>,
    /// Segments retransmitted (TCP, sending) or packets lost (QUIC), since the stream began.
    pub retransmits: Option<u64>,
    pub cwnd: Option<u64>,
    pub delivery_rate_bps: Option<f64>,
}

/// UDP: what the responder last reported and what the tester sent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UdpCounts {
    pub sent: u64,
    /// The responder's count of datagrams, and the highest sequence number + 1 it saw.
    pub received: u64,
    pub expected: u64,
    /// The flow's datagrams the responder's budget refused, when it says (`npt serve` since
    /// refusals are reported; None from an older one, or down).
    pub refused: Option<u64>,
    pub jitter_ns: u64,
    pub behind_schedule: u64,
    /// The sender's stalls beyond the path's queueing delay, added
    /// ([`lateness::Lateness::uncovered_ns`]).
    pub stalled_ns: u64,
}

/// One stream's measurements, written by its task and sampled by the collector.
#[derive(Debug)]
pub struct StreamState {
    pub index: u32,
    pub direction: Direction,
    /// Payload bytes that arrived (down: read by the tester; up: reported by the responder).
    pub bytes: AtomicU64,
    /// The time the delivered bytes took, in ns: up, the responder's time of its last report
    /// since the transfer began there; UDP down, the tester's first to last arrival; else 0
    /// (the run's length is used).
    pub reported_ns: AtomicU64,
    pub reading: Mutex<Reading>,
    pub udp: Mutex<UdpCounts>,
    /// UDP: every paced send's lateness (ns), stored when the sending ends.
    pub lateness: Mutex<npt_stats::Histogram>,
    /// The error kind and a detail, when the stream ended with one.
    pub error: Mutex<Option<(ErrorKind, String)>>,
    /// TCP: the congestion control the kernel ran on this stream's socket, read back once it
    /// was set up.
    pub congestion: Mutex<Option<String>>,
    pub done: AtomicBool,
}

impl StreamState {
    pub fn new(index: u32, direction: Direction) -> StreamState {
        StreamState {
            index,
            direction,
            bytes: AtomicU64::new(0),
            reported_ns: AtomicU64::new(0),
            reading: Mutex::new(Reading::default()),
            udp: Mutex::new(UdpCounts::default()),
            lateness: Mutex::new(npt_stats::Histogram::default()),
            error: Mutex::new(None),
            congestion: Mutex::new(None),
            done: AtomicBool::new(false),
        }
    }

    /// Stores a new reading (its generation bumped).
    pub fn set_reading(&self, mut r: Reading) {
        let mut g = self.reading.lock().unwrap_or_else(|p| p.into_inner());
        r.generation = g.generation + 1;
        *g = r;
    }

    pub fn reading(&self) -> Reading {
        *self.reading.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records why the stream ended (the first error wins).
    pub fn fail(&self, kind: ErrorKind, detail: String) {
        let mut e = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if e.is_none() {
            *e = Some((kind, detail));
        }
    }

    pub fn error(&self) -> Option<(ErrorKind, String)> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_congestion(&self, name: String) {
        *self.congestion.lock().unwrap_or_else(|p| p.into_inner()) = Some(name);
    }

    pub fn congestion(&self) -> Option<String> {
        self.congestion
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn finish(&self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_count_their_generations_and_the_first_error_wins() {
        let s = StreamState::new(0, Direction::Up);
        s.set_reading(Reading::default());
        s.set_reading(Reading {
            rtt_ns: Some(5),
            ..Reading::default()
        });
        assert_eq!((s.reading().generation, s.reading().rtt_ns), (2, Some(5)));
        s.fail(ErrorKind::Reset, "a".into());
        s.fail(ErrorKind::Timeout, "b".into());
        assert_eq!(s.error().unwrap().0, ErrorKind::Reset);
    }
}
