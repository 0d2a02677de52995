//! A live TCP stream's hold on the virtual clock: a ping-pong whose reply is late (a TCP
//! retransmission's backoff) waits for it and goes on, with the wait in its round trip and
//! its total; a stream whose connection is gone, and UDP, still declare loss at the loss
//! timeout and stall.

use npt_wire::Pacing;

use super::fake_link::{cfg, check_invariants, run, FakeLink, Fate, MS};
use super::session::*;

const N: u64 = 50;
const SLOW: u64 = 7;

/// quic-tun's latency test: one message in flight, the next sent when its echo is back.
fn ping_pong() -> SessionConfig {
    let mut c = cfg(Pacing::Relay {
        warmup: 1,
        every: MS,
    });
    c.count = Some(N);
    c
}

/// Every echo takes 1 ms, reply `SLOW` 3 s more (three times the loss timeout).
fn slow_link() -> FakeLink {
    FakeLink::new(MS, |seq| Fate {
        extra_delay: if seq == SLOW { 3000 * MS } else { 0 },
        ..Fate::default()
    })
}

#[test]
fn tcp_ping_pong_waits_for_a_late_reply_and_completes() {
    let mut s = Session::new(ping_pong());
    s.connection_up(0);
    let iv = run(&mut s, &mut slow_link(), None);
    let t = s.totals();
    assert_eq!(s.stop_reason(), Some(StopReason::Count));
    assert_eq!(
        (
            t.packets.sent,
            t.packets.received,
            t.packets.lost,
            t.packets.late
        ),
        (N, N, 0, 0),
        "every echo came back on the live stream: none lost, none late"
    );
    assert_eq!(t.errors.get("stalled"), 0);
    // The wait is in the slow reply's round trip and in the total (first send to last
    // reply): N − 1 echoes of 1 ms and one of 3001 ms, back to back.
    assert_eq!(t.rtt.count(), N);
    let max = t.rtt.max_ns();
    assert!(
        max.abs_diff(3001 * MS) <= 3001 * MS / 1000,
        "max RTT {max} ns (HDR's 0.1 %)"
    );
    let total = t.last_reply.unwrap() - t.first_send.unwrap();
    assert_eq!(total, 3001 * MS + (N - 1) * MS);
    check_invariants(t, &iv);
}

#[test]
fn without_the_hold_the_same_ping_pong_stalls_at_the_late_reply() {
    // UDP (no connection to hold for): the slow reply is lost at the loss timeout, nothing
    // is in flight, and the relay stops as stalled; the reply then comes back late.
    let mut s = Session::new(ping_pong());
    let iv = run(&mut s, &mut slow_link(), None);
    let t = s.totals();
    assert_eq!(s.stop_reason(), Some(StopReason::Stalled));
    assert_eq!((t.packets.sent, t.packets.lost), (SLOW + 1, 1));
    check_invariants(t, &iv);
}

#[test]
fn udp_relay_with_every_packet_lost_still_stalls() {
    let mut s = Session::new(ping_pong());
    let mut link = FakeLink::new(MS, |_| Fate {
        drop: true,
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    assert_eq!(s.stop_reason(), Some(StopReason::Stalled));
    assert_eq!((t.packets.sent, t.packets.lost), (1, 1));
    assert_eq!(t.errors.get("stalled"), 1);
    check_invariants(t, &iv);
}

#[test]
fn a_dead_stream_loses_what_was_in_flight_at_the_loss_timeout_and_stalls() {
    // The connection is up, the first echo never comes back, and the connection breaks 2 s
    // later: held until then, the packet is lost at once (its loss timeout has passed) and the
    // ping-pong, with nothing in flight, stops as stalled — no 60 s hold on a dead stream.
    let mut s = Session::new(ping_pong());
    s.connection_up(0);
    let mut buf = vec![0u8; 2048];
    assert!(s.poll_transmit(0, &mut buf).is_some());
    s.handle_timeout(1500 * MS);
    assert_eq!(
        s.in_flight(),
        1,
        "held past the loss timeout while the stream lives"
    );
    assert!(s.is_sending());
    s.connection_down(2000 * MS);
    let t = s.totals();
    assert_eq!((t.packets.sent, t.packets.lost), (1, 1));
    assert_eq!(s.stop_reason(), Some(StopReason::Stalled));
}

#[test]
fn a_live_stream_that_never_answers_gives_up_after_the_hold() {
    let mut s = Session::new(ping_pong());
    s.connection_up(0);
    let mut link = FakeLink::new(MS, |_| Fate {
        drop: true,
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    assert_eq!(s.stop_reason(), Some(StopReason::Stalled));
    assert_eq!((t.packets.sent, t.packets.lost), (1, 1));
    check_invariants(t, &iv);
}

#[test]
fn a_reconnect_loses_what_was_sent_on_the_old_connection() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(5);
    let mut s = Session::new(c);
    s.connection_up(0);
    let mut buf = vec![0u8; 2048];
    for ms in 0..5 {
        assert!(s.poll_transmit(ms * MS, &mut buf).is_some());
    }
    // Broken and reconnected before the loss timeout: nothing sent on the old stream returns.
    s.connection_down(10 * MS);
    assert_eq!(s.in_flight(), 5);
    s.connection_up(20 * MS);
    assert_eq!(s.in_flight(), 0);
    assert_eq!(s.totals().packets.lost, 5);
}

#[test]
fn a_stream_out_of_step_stops_holding_what_was_in_flight() {
    // A stray byte cost the stream its step: the reply of the packet in flight may be among
    // the skipped bytes, so it is lost at its loss timeout, and the ping-pong stalls there
    // instead of after the hold.
    let mut s = Session::new(ping_pong());
    s.connection_up(0);
    let mut buf = vec![0u8; 2048];
    assert!(s.poll_transmit(0, &mut buf).is_some());
    s.stream_out_of_step(10 * MS);
    s.handle_timeout(999 * MS);
    assert_eq!(s.in_flight(), 1, "not before its loss timeout");
    s.handle_timeout(1000 * MS);
    let t = s.totals();
    assert_eq!((t.packets.sent, t.packets.lost), (1, 1));
    assert_eq!(s.stop_reason(), Some(StopReason::Stalled));
}

#[test]
fn a_paced_tcp_run_keeps_its_loss_timeout() {
    // A rate schedule does not wait for replies: the slow reply is lost at the loss timeout,
    // and the run ends on its own schedule — its drain (one loss timeout after the last send)
    // is over before the reply, 3 s late, comes back.
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(N);
    let mut s = Session::new(c);
    s.connection_up(0);
    let iv = run(&mut s, &mut slow_link(), None);
    let t = s.totals();
    assert_eq!(s.stop_reason(), Some(StopReason::Count));
    assert_eq!(
        (
            t.packets.sent,
            t.packets.received,
            t.packets.lost,
            t.packets.late
        ),
        (N, N - 1, 1, 0),
        "the slow reply is lost at the loss timeout"
    );
    check_invariants(t, &iv);
}
