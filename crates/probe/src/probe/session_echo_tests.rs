//! A plain echo at the far end (it returns each request unchanged: socat, a forwarder in front
//! of one): the session counts its answers as replies with no flag, with loss, late,
//! duplicates and reordering exactly as against `npt serve` — on a virtual clock and a fake
//! link, no sockets.

use npt_result::far_end;
use npt_wire::auth::SessionKey;
use npt_wire::Pacing;

use super::fake_link::{cfg, check_invariants, run, FakeLink, Fate, MS};
use super::session::*;

fn plain(delay: u64, fate: impl Fn(u64) -> Fate + 'static) -> FakeLink {
    let mut link = FakeLink::new(delay, fate);
    link.plain = true;
    link
}

/// As a UDP probe runs by default: framed, asking the far end what it saw (a plain echo
/// says nothing, and the flow must end without waiting for a report that never comes).
fn udp_cfg(count: u64) -> SessionConfig {
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(count);
    c.reflect = Reflect::Full;
    c
}

#[test]
fn loss_duplicates_and_reordering_through_a_plain_echo_are_exact() {
    let mut s = Session::new(udp_cfg(1000));
    let mut link = plain(MS, |seq| Fate {
        drop: seq % 10 == 3,
        copies: if seq == 5 { 3 } else { 1 },
        // Arrives after the replies of 8..=12 (1 ms apart), long before its timeout.
        extra_delay: if seq == 7 { 5 * MS + MS / 2 } else { 0 },
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    let p = &t.packets;
    assert_eq!(
        (
            p.sent,
            p.received,
            p.lost,
            p.late,
            p.duplicated,
            p.reordered
        ),
        (1000, 900, 100, 0, 2, 1)
    );
    assert_eq!(
        (t.foreign, t.corrupt),
        (0, 0),
        "verify passes: bytes unchanged"
    );
    assert_eq!(
        t.answered,
        Answered {
            echo: 902,
            ..Answered::default()
        }
    );
    assert_eq!(t.answered.name(), far_end::ECHO);
    assert_eq!(
        t.dir.flows.reflected, 0,
        "a plain echo tells nothing per direction"
    );
    let rtt = t.rtt.summary();
    assert!((rtt.p50 - 1.0).abs() < 0.01, "{rtt:?}");
    check_invariants(t, &iv);
}

#[test]
fn a_late_echo_is_late_and_the_flow_ends_without_asking_the_echo() {
    let mut s = Session::new(udp_cfg(3000));
    let mut link = plain(MS, |seq| Fate {
        extra_delay: if seq == 5 { 1500 * MS } else { 0 },
        ..Fate::default()
    });
    let iv = run(&mut s, &mut link, None);
    let t = s.totals();
    let p = &t.packets;
    assert_eq!((p.sent, p.received, p.lost, p.late), (3000, 2999, 1, 1));
    assert_eq!(t.answered.echo, 3000, "2999 on time and the late one");
    // Sent 3000 at 1000 pps from 0: the last is answered at 2999 + 1 ms, and nothing (no
    // flow query to a far end that never reflected) holds the flow open after it.
    assert_eq!(t.last_reply, Some(3000 * MS));
    assert!(s.is_done());
    check_invariants(t, &iv);
}

#[test]
fn npt_serve_replies_are_named_too() {
    let mut s = Session::new(udp_cfg(10));
    let mut link = FakeLink::new(MS, |_| Fate::default());
    run(&mut s, &mut link, None);
    assert_eq!(s.totals().answered.npt_serve, 10);
    assert_eq!(s.totals().answered.name(), far_end::NPT_SERVE);
    assert_eq!(s.totals().foreign_example, None);
}

#[test]
fn under_token_an_unchanged_request_is_not_the_server() {
    let mut c = udp_cfg(20);
    c.auth = Some(SessionKey::from_bytes(&[7; 32]));
    let mut s = Session::new(c);
    let mut link = plain(MS, |_| Fate::default());
    run(&mut s, &mut link, None);
    let t = s.totals();
    assert_eq!((t.packets.received, t.packets.lost, t.foreign), (0, 20, 20));
    assert_eq!(t.answered.name(), far_end::NONE);
    let e = t.foreign_example.as_deref().unwrap();
    assert!(
        e.starts_with("64 B, 1e4e5054 0101") && e.contains("cannot answer a --token session"),
        "{e}"
    );
}

#[test]
fn a_request_changed_on_the_way_back_stays_foreign() {
    let mut s = Session::new(udp_cfg(1));
    let mut buf = [0u8; 64];
    let n = s.poll_transmit(0, &mut buf).unwrap();
    let mut changed = buf[..n].to_vec();
    changed[21] = 1; // a status the request never had
    s.handle_reply(MS, &changed);
    changed = buf[..n].to_vec();
    changed[19] ^= 1; // another flow
    s.handle_reply(MS, &changed);
    assert_eq!((s.totals().foreign, s.totals().packets.received), (2, 0));
    s.handle_reply(2 * MS, &buf[..n]);
    assert_eq!(
        s.totals().packets.received,
        1,
        "the unchanged request is the reply"
    );
}

#[test]
fn an_echo_that_coalesced_requests_is_split_back_into_them() {
    let mut s = Session::new(udp_cfg(3));
    let mut buf = [0u8; 64];
    let mut both = Vec::new();
    for t in 0..3 {
        let n = s.poll_transmit(t * MS, &mut buf).unwrap();
        both.extend_from_slice(&buf[..n]);
    }
    // Two requests in one datagram, as socat's PIPE returns them under load; then one whose
    // tail is not whole.
    assert_eq!(s.reply_len_in(&both[..128]), 64);
    assert_eq!(s.reply_len_in(&both[..100]), 100);
    s.handle_reply(3 * MS, &both[..128]);
    s.handle_reply(3 * MS, &both[128..]);
    let t = s.totals();
    assert_eq!((t.packets.received, t.foreign, t.answered.echo), (3, 0, 3));
    let mut other = both[..128].to_vec();
    other[64 + 19] ^= 1; // the second is another flow's: the datagram is not ours
    assert_eq!(s.reply_len_in(&other), 128);
}

/// Over TCP a plain echo returns the request stream itself. The stream is cut into replies by
/// the same test as `npt serve`'s (a whole frame of this flow, fields as sent): a stray byte
/// costs one loss of step and no reply, and a garbage stream still breaks after the skip limit
/// instead of yielding replies.
#[test]
fn a_tcp_echo_stream_resyncs_on_whole_requests_only() {
    use super::stream::ReplyStream;
    let mut c = cfg(Pacing::Rate { pps: 1000.0 });
    c.count = Some(20);
    c.reflect = Reflect::Timing;
    let mut s = Session::new(c);
    let mut sent = Vec::new();
    let mut buf = [0u8; 64];
    for t in 0..20 {
        let n = s.poll_transmit(t * MS, &mut buf).unwrap();
        sent.extend_from_slice(&buf[..n]);
    }
    let mut echoed = sent.clone();
    echoed.insert(5 * 64, 0x00); // a stray byte before request 5
    let mut r = ReplyStream::new(64);
    let mut lost_step = 0;
    for piece in echoed.chunks(7) {
        r.push(piece);
        lost_step += r.drain(|b| s.try_handle_reply(30 * MS, b)).lost_step;
    }
    assert_eq!((lost_step, s.totals().packets.received), (1, 20));
    assert_eq!(s.totals().answered.echo, 20);
    let mut r = ReplyStream::new(64);
    r.push(&vec![0x1E; 70 * 1024]);
    let d = r.drain(|b| s.try_handle_reply(31 * MS, b));
    assert!(d.broken, "garbage is never a reply, however it starts");
    assert_eq!(s.totals().packets.received, 20);
}
