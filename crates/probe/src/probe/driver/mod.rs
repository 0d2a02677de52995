//! Drivers: move probe sessions' bytes through real sockets. One OS thread drives one or more
//! flows; each flow is one connected socket and one [`Session`].
//!
//! The loop per wake-up: hand every due packet to the socket (UDP: one `sendmmsg` per batch),
//! read everything that arrived (UDP: `recvmmsg`), advance deadlines, forward finished
//! intervals to the runner, and sleep in `ppoll` until the earliest session timeout (with 1 ns
//! timer slack) or at most 50 ms, so Ctrl-C is seen promptly. UDP on a short path polls for a
//! reply for a while after each send instead of sleeping at once ([`ReplyPoll`]). Time is read once per step from
//! a shared monotonic epoch, so timestamps of all flows are comparable.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_client::source::Source;
use npt_netio::{MsgBatch, Ready};
use npt_result::workload::Stop;
use socket2::{Domain, Protocol, Socket, Type};

use super::session::{Arrival, Interval, Session, SessionConfig, StopReason, Totals};
use super::stream::ReplyStream;

mod reply_poll;
mod tcp;
mod udp;

use reply_poll::{PollTurn, ReplyPoll, GATE};

pub use tcp::{run_tcp, TcpTarget, TcpVia};
pub use udp::{run_udp, socks_udp, split_target, udp_socket, UdpOptions};

/// The run's monotonic clock: ns since a shared epoch.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    epoch: Instant,
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            epoch: Instant::now(),
        }
    }

    #[inline]
    pub fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The wall clock (ns since the Unix epoch) minus this clock, read now: what a session
    /// adds to its own times to compare them with a far end's wall-clock stamps
    /// ([`Session::set_wall_offset`]). Read inside a bracket of this clock
    /// ([`npt_netio::clockpair`]): read back to back, a preemption between the two reads
    /// would sit in every one-way delay until the next refresh.
    pub fn wall_offset(&self) -> i64 {
        let (mono, wall) = npt_netio::clockpair::now(|| self.now());
        let wall = i64::try_from(wall).unwrap_or(i64::MAX);
        wall.saturating_sub(i64::try_from(mono).unwrap_or(i64::MAX))
    }
}

/// How often a driver refreshes its sessions' wall-clock offset (a stepped or slewed wall
/// clock moves it; reading it costs a clock read).
const WALL_REFRESH_NS: u64 = 100_000_000;

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// A reply's receive time on the run's clock: `now` (read right after the receive returned)
/// less how long ago the kernel stamped its arrival, `real - stamp`, both read on the kernel's
/// `CLOCK_REALTIME`. The two clocks run at the same rate (an NTP slew adjusts both), so the
/// difference is exact unless the wall clock was stepped between the arrival and `real`: a
/// stamp from the future, or older than the run's clock, is such a step (or no stamp at all),
/// and the reply gets `now` instead.
fn rx_time(now: u64, real: u64, stamp: Option<u64>) -> u64 {
    match stamp {
        Some(k) if k <= real && real - k <= now => now - (real - k),
        _ => now,
    }
}

/// TCP connection timing of one flow.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpTimes {
    pub connect_start: u64,
    pub connect_ns: Option<u64>,
    /// Round-trip time of the first echo on the first connection.
    pub first_echo_ns: Option<u64>,
    /// `--via`: the proxy handshake's phases on the first connection (`connect_ns` is then the
    /// whole handshake: the time until the tunnel was open).
    pub proxy: Option<npt_proxy::Phases>,
}

/// What a driver thread reports to the runner.
pub enum Event {
    Interval {
        flow: usize,
        interval: Box<Interval>,
    },
    Done {
        flow: usize,
        result: Box<FlowResult>,
    },
    /// `--packets`: fates a flow decided in one step (`sent_ns` on the run's clock).
    Packets(Vec<npt_result::packets::PacketLine>),
    /// A flow stopped sending (its count, its time, Ctrl-C), with its packets then in flight:
    /// what it waits for, up to the loss timeout after its last send. Once per flow.
    SendEnded {
        flow: usize,
        in_flight: u64,
        why: Option<StopReason>,
    },
}

/// Tells the runner once, the first time `s` is seen no longer sending, that its send phase
/// ended ([`Event::SendEnded`]). `told`: whether it was told already.
fn send_ended(flow: usize, s: &Session, told: &mut bool, tx: &Sender<Event>) {
    if !*told && !s.is_sending() {
        *told = true;
        let _ = tx.send(Event::SendEnded {
            flow,
            in_flight: s.in_flight(),
            why: s.stop_reason(),
        });
    }
}

/// Hands the fates `s` decided since the last call to the runner (`--packets`; nothing to do
/// otherwise).
fn send_packets(s: &mut Session, tx: &Sender<Event>) {
    let lines = s.take_packets();
    if !lines.is_empty() {
        let _ = tx.send(Event::Packets(lines));
    }
}

pub struct FlowResult {
    pub totals: Totals,
    pub stop: Option<StopReason>,
    pub tcp: Option<TcpTimes>,
    /// TCP: what the kernel saw of the flow's connections, and its RTT samples.
    pub kernel: Option<(npt_result::tcpinfo::TcpKernelStats, npt_stats::Histogram)>,
}

const MAX_WAIT: Duration = Duration::from_millis(50);
const BATCH: usize = 32;
/// Packets a UDP flow hands to the socket at once: as many as one GSO send carries, so a
/// relay's window of small packets leaves in a few sends.
const SEND_BATCH: usize = npt_netio::offload::GSO_MAX_SEGMENTS;
/// Batches one UDP flow may send per wake-up before replies, deadlines and Ctrl-C get their
/// turn (512 packets): a schedule that is always due (a tiny interval, a rate above what the
/// host can send) must not starve the receive side or ignore a stop.
const MAX_BATCHES_PER_STEP: usize = 8;

/// A socket error's kind, in the one vocabulary of every result.
fn classify(e: &io::Error) -> npt_result::error::ErrorKind {
    npt_result::error::io_error_kind(e)
}

/// The run's stop requests, shared with the runner: 1 = stop sending and drain, 2 = abandon
/// in-flight packets now.
fn apply_stop(s: &mut Session, stop: &Stop, now: u64) {
    match stop.level() {
        0 => {}
        1 => s.stop(now, StopReason::Signal),
        _ => s.abort(now, StopReason::Abort),
    }
}

fn wait_until(
    clock: &Clock,
    fds: &[RawFd],
    want_write: &[bool],
    deadline: Option<u64>,
    ready: &mut Vec<Ready>,
) {
    let now = clock.now();
    let timeout = match deadline {
        Some(d) if d <= now => Duration::ZERO,
        Some(d) => Duration::from_nanos(d - now).min(MAX_WAIT),
        None => MAX_WAIT,
    };
    if timeout.is_zero() {
        ready.clear();
        ready.resize(
            fds.len(),
            Ready {
                readable: true,
                ..Ready::default()
            },
        );
        return;
    }
    if npt_netio::wait(fds, want_write, Some(timeout), ready).is_err() {
        ready.clear();
        ready.resize(fds.len(), Ready::default());
    }
}

#[cfg(test)]
mod tests {
    use super::rx_time;

    #[test]
    fn kernel_stamps_move_the_receive_time_back_by_their_age() {
        // Read at 5,000 ns on the run's clock, 1,000,000 ns on the wall clock; the kernel
        // stamped the arrival 300 ns before that.
        assert_eq!(rx_time(5_000, 1_000_000, Some(999_700)), 4_700);
        assert_eq!(rx_time(5_000, 1_000_000, None), 5_000);
        // A stamp from the future, or from before the run's clock began: the wall clock was
        // stepped in between, and the reply keeps the time its receive returned.
        assert_eq!(rx_time(5_000, 1_000_000, Some(1_000_001)), 5_000);
        assert_eq!(rx_time(5_000, 1_000_000, Some(990_000)), 5_000);
        assert_eq!(rx_time(5_000, 1_000_000, Some(995_000)), 0);
    }
}
