//! Session tests on a virtual clock and a fake link that delays, drops, duplicates and
//! reorders — exact expected counts, no sockets, no sleeping.

use npt_wire::frame::{self, Kind};
use npt_wire::Pacing;

use super::fake_link::{cfg, check_invariants, run, FakeLink, Fate, MS};
use super::session::*;

#[test]
fn clean_link_fixed_delay() {
    let mut s = Session::new(cfg(Pacing::Rate { pps: 1000.0 }));
    let mut link = FakeLink::new(10 * MS, |_| Fate::default());
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    assert_eq!(
        (
            t.packets.sent,
            t.packets.received,
            t.packets.lost,
            t.packets.duplicated,
            t.packets.reordered
        ),
        (1000, 1000, 0, 0, 0)
    );
    assert_eq!(t.corrupt, 0);
    let rtt = t.rtt.summary();
    assert!(
        (rtt.p50 - 10.0).abs() < 0.01 && (rtt.max - 10.0).abs() < 0.01,
        "{rtt:?}"
    );
    assert_eq!(t.bytes_up, 64_000);
    assert_eq!(t.bytes_down, 64_000);
    assert_eq!(iv.len(), 10, "1000 packets at 1000 pps in 100 ms stages");
    assert!(iv.iter().all(|i| i.packets.sent == 100));
    assert_eq!(s.stop_reason(), Some(StopReason::Count));
    check_invariants(t, &iv);
}

#[test]
fn loss_is_attributed_to_the_send_interval() {
    let mut s = Session::new(cfg(Pacing::Rate { pps: 1000.0 }));
    let mut link = FakeLink::new(10 * MS, |seq| Fate {
        drop: seq % 10 == 3,
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    assert_eq!(
        (
            t.packets.sent,
            t.packets.received,
            t.packets.lost,
            t.packets.late
        ),
        (1000, 900, 100, 0)
    );
    assert!(
        iv.iter().all(|i| i.packets.lost == 10),
        "10 lost in each 100-packet stage"
    );
    check_invariants(t, &iv);
}

#[test]
fn late_reply_is_late_and_stays_lost() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(100);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(MS, |seq| Fate {
        extra_delay: if seq == 5 { 1500 * MS } else { 0 },
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    // The session stops waiting at the loss timeout; the late reply arrives only if still
    // draining. Here nothing else is in flight, so the drain ends at seq 5's deadline.
    assert_eq!(
        (t.packets.sent, t.packets.received, t.packets.lost),
        (100, 99, 1)
    );
    check_invariants(t, &iv);
}

#[test]
fn late_reply_during_the_run_is_counted_once() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(3000);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(MS, |seq| Fate {
        extra_delay: if seq == 5 { 1500 * MS } else { 0 },
        copies: if seq == 5 { 2 } else { 1 },
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    assert_eq!(
        (
            t.packets.sent,
            t.packets.received,
            t.packets.lost,
            t.packets.late,
            t.packets.duplicated
        ),
        (3000, 2999, 1, 1, 1)
    );
    assert_eq!(iv.iter().map(|i| i.packets.late).sum::<u64>(), 1);
    check_invariants(t, &iv);
}

#[test]
fn duplicates_and_reordering() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(50);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(MS, |seq| Fate {
        copies: if seq == 3 { 3 } else { 1 },
        extra_delay: if seq == 7 { 5 * MS + MS / 2 } else { 0 },
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    assert_eq!(
        (
            t.packets.received,
            t.packets.duplicated,
            t.packets.reordered,
            t.packets.lost
        ),
        (50, 2, 1, 0)
    );
    check_invariants(t, &iv);
}

#[test]
fn corrupted_payload_is_caught_by_verify() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(20);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(MS, |seq| Fate {
        corrupt: seq == 4,
        ..Fate::default()
    });
    run(&mut s, &mut link, None);
    assert_eq!(s.totals().corrupt, 1);
    assert_eq!(s.totals().packets.received, 20);
}

#[test]
fn open_loop_correction_shows_a_stalled_sender() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(500);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(MS, |_| Fate::default());
    // The client freezes for 100 ms at t = 200 ms, then makes up the backlog.
    run(&mut s, &mut link, Some((200 * MS, 300 * MS)));
    let t = s.totals();
    assert_eq!(t.packets.sent, 500);
    let raw = t.rtt.summary();
    let corrected = t.rtt_corrected.summary();
    assert!(
        raw.max < 1.01,
        "uncorrected RTT never sees the stall: {raw:?}"
    );
    assert!(
        corrected.max >= 100.0,
        "corrected RTT shows it: {corrected:?}"
    );
    assert!(t.behind_schedule >= 99, "{}", t.behind_schedule);
}

#[test]
fn relay_keeps_the_window_and_is_closed_loop() {
    let mut c = cfg(Pacing::Relay {
        warmup: 8,
        every: MS,
    });
    c.count = None;
    c.send_until = Some(200 * MS);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(2 * MS, |_| Fate::default());
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    // 8 in flight, 2 ms round trip: 4 packets per ms once warm.
    assert!(
        t.packets.sent > 700 && t.packets.sent <= 800,
        "{}",
        t.packets.sent
    );
    assert_eq!(t.packets.lost, 0);
    assert!(
        t.rtt_corrected.is_empty(),
        "closed loop has no corrected latency"
    );
    assert_eq!(s.stop_reason(), Some(StopReason::Duration));
    check_invariants(t, &iv);
}

#[test]
fn interval_pacing_waits_after_each_send() {
    let mut c = cfg(Pacing::Interval { every: 10 * MS });
    c.count = Some(10);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(MS, |_| Fate::default());
    run(&mut s, &mut link, None);
    assert_eq!(s.totals().first_send, Some(0));
    assert_eq!(s.totals().last_send, Some(90 * MS));
}

#[test]
fn drain_ends_early_when_everything_is_answered() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(10);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(MS, |_| Fate::default());
    run(&mut s, &mut link, None);
    assert_eq!(
        s.totals().last_reply,
        Some(10 * MS),
        "done at the last reply, not at +1 s"
    );
}

#[test]
fn stop_and_abort() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = None;
    let mut s = Session::new(c);
    let mut buf = [0u8; 64];
    for ms in 0..5 {
        while s.poll_transmit(ms * MS, &mut buf).is_some() {}
    }
    s.stop(5 * MS, StopReason::Signal);
    assert!(
        s.poll_transmit(6 * MS, &mut buf).is_none(),
        "no sends after stop"
    );
    assert!(!s.is_done(), "still waiting for replies in flight");
    s.abort(7 * MS, StopReason::Abort);
    assert!(s.is_done());
    let t = s.totals();
    assert_eq!((t.packets.sent, t.packets.lost), (5, 5));
    assert_eq!(
        s.stop_reason(),
        Some(StopReason::Abort),
        "the second signal aborts"
    );
}

#[test]
fn foreign_and_truncated_input_is_counted_never_trusted() {
    let mut s = Session::new(cfg(Pacing::Rate { pps: 1000.0 }));
    let mut buf = [0u8; 64];
    let n = s.poll_transmit(0, &mut buf).unwrap();
    let mut reply = buf[..n].to_vec();
    frame::set_kind_status(&mut reply, Kind::EchoReply, 0);
    // Truncations, garbage, wrong flow, a request kind, a sequence never sent.
    for k in 0..reply.len() {
        s.handle_reply(1, &reply[..k]);
    }
    s.handle_reply(1, b"not ours at all, just bytes");
    let mut other_flow = reply.clone();
    other_flow[19] = 9;
    s.handle_reply(1, &other_flow);
    let mut unsent = reply.clone();
    unsent[31] = 200;
    s.handle_reply(1, &unsent);
    let mut x = 0x1234_5678u64;
    for _ in 0..2000 {
        let mut junk = reply.clone();
        for b in junk.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b ^= (x & 0x3) as u8;
        }
        s.handle_reply(1, &junk);
    }
    let t = s.totals();
    assert!(t.foreign >= (reply.len() as u64) + 3);
    assert!(t.packets.received <= 1);
    s.handle_reply(2, &reply);
    assert!(s.totals().packets.received + s.totals().packets.duplicated >= 1);
}

#[test]
fn raw_framing_round_trip() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.framing = Framing::Raw;
    c.count = Some(30);
    let mut s = Session::new(c);
    let mut buf = vec![0u8; 64];
    let mut now = 0;
    let mut replies = Vec::new();
    while !s.is_done() && now < 5000 * MS {
        while let Some(n) = s.poll_transmit(now, &mut buf) {
            replies.push((now + 3 * MS, buf[..n].to_vec())); // a plain echo returns the bytes
        }
        replies.retain(|(t, b)| {
            if *t <= now {
                s.handle_reply(now, b);
                false
            } else {
                true
            }
        });
        s.handle_timeout(now);
        now += MS / 2;
    }
    let t = s.totals();
    assert_eq!((t.packets.sent, t.packets.received, t.corrupt), (30, 30, 0));
    assert!((t.rtt.summary().p50 - 3.0).abs() < 0.51);
}

#[test]
fn stage_by_packet_count() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(250);
    c.stage = Stage::Packets(100);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(MS, |_| Fate::default());
    let iv = run(&mut s, &mut link, None);
    let sent: Vec<u64> = iv.iter().map(|i| i.packets.sent).collect();
    assert_eq!(sent, vec![100, 100, 50]);
    check_invariants(s.totals(), &iv);
}

#[test]
fn relay_with_every_warmup_packet_lost_ends_instead_of_waiting_for_ever() {
    let mut c = cfg(Pacing::Relay {
        warmup: 10,
        every: MS,
    });
    c.count = Some(1_000_000);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(MS, |_| Fate {
        drop: true,
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    assert_eq!(
        (t.packets.sent, t.packets.lost, t.packets.received),
        (10, 10, 0)
    );
    assert_eq!(s.stop_reason(), Some(StopReason::Stalled));
    assert_eq!(t.errors.get("stalled"), 1);
    check_invariants(t, &iv);
}

#[test]
fn relay_stalls_only_when_the_last_packet_in_flight_is_lost() {
    // Every second packet is lost: each loss shrinks the relay window by one, so 4 warm-up
    // packets dwindle to none; until then the schedule keeps sending on replies.
    let mut c = cfg(Pacing::Relay {
        warmup: 4,
        every: MS,
    });
    c.count = Some(1_000_000);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(MS, |seq| Fate {
        drop: seq % 2 == 1,
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    assert_eq!(s.stop_reason(), Some(StopReason::Stalled));
    assert!(
        t.packets.sent > 4,
        "replies released more packets: {}",
        t.packets.sent
    );
    assert_eq!(t.packets.received + t.packets.lost, t.packets.sent);
    check_invariants(t, &iv);
}

#[test]
fn replies_after_the_end_are_stale_not_a_panic() {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = None;
    let mut s = Session::new(c);
    let mut buf = [0u8; 64];
    let mut sent = Vec::new();
    for ms in 0..3 {
        while let Some(n) = s.poll_transmit(ms * MS, &mut buf) {
            let mut reply = buf[..n].to_vec();
            frame::set_kind_status(&mut reply, Kind::EchoReply, 0);
            sent.push(reply);
        }
    }
    s.stop(3 * MS, StopReason::Signal);
    s.abort(4 * MS, StopReason::Abort); // the second Ctrl-C
    assert!(s.is_done());
    // The abandoned packets' replies, one of them twice, arrive after the end.
    for r in sent.iter().chain(sent.first()) {
        s.handle_reply(5 * MS, r);
    }
    let t = s.totals();
    assert_eq!(
        (t.packets.sent, t.packets.lost, t.packets.received),
        (3, 3, 0)
    );
    assert_eq!(t.stale, 4);
}

#[test]
fn under_load_phases_take_each_rtt_by_its_send_time() {
    // 1000 packets over 1 s; the link queues 50 ms more for packets sent in 300..700 ms.
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.phases = Some([300 * MS, 700 * MS]);
    let mut s = Session::new(c);
    let mut link = FakeLink::new(10 * MS, |seq| Fate {
        extra_delay: if (300..700).contains(&seq) {
            50 * MS
        } else {
            0
        },
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    assert_eq!(t.phase_rtt.len(), 3);
    let [idle, loaded, recovery] = [0, 1, 2].map(|i| t.phase_rtt[i].summary());
    assert_eq!(
        (idle.count, loaded.count, recovery.count),
        (300, 400, 300),
        "a packet is in the phase it was sent in"
    );
    assert!((idle.p50 - 10.0).abs() < 0.01, "{idle:?}");
    assert!((loaded.p50 - 60.0).abs() < 0.1, "{loaded:?}");
    assert!((recovery.max - 10.0).abs() < 0.01, "{recovery:?}");
    check_invariants(t, &iv);
    // Without phases no phase histograms are kept.
    let mut s = Session::new(cfg(Pacing::Rate { pps: 1000.0 }));
    run(&mut s, &mut FakeLink::new(MS, |_| Fate::default()), None);
    assert!(s.totals().phase_rtt.is_empty());
}
