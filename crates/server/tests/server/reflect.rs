//! Why this exists: a client can only place a lost packet (path up, path down, the server's
//! budget) and a millisecond (path or responder) if the responder tells it what it saw. Over
//! real loopback sockets: UDP replies carry the flow's receive count and stamps (the receive
//! time on the wall clock, the dwell, the refused count), flow queries get exact totals,
//! refusals of the budget or the token are counted in the flow and noticed — a few times, never
//! with more bytes than were refused — and TCP streams reflect per connection.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation)]

use crate::util;

use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use npt_netio::rxtime::wall_ns;
use npt_server::{Counters, Limits};
use npt_wire::auth::{Dir, SessionKey};
use npt_wire::frame::{status, Header, Kind, HEADER_LEN};
use npt_wire::reflect::{self, FlowReport, Reflection, REFLECT, REFLECTED, STAMPED};
use util::{settle, start, udp_client, udp_handshake};

const SECRET: &str = "a reflecting secret";

/// A frame asking for `REFLECT` (flow 5), payload bytes numbered so their echo can be checked.
fn frame(kind: Kind, len: usize, reply_len: u32, seq: u64, reflect: bool) -> Vec<u8> {
    let mut b: Vec<u8> = (0..len).map(|i| i as u8).collect();
    Header {
        kind,
        flags: if reflect { REFLECT } else { 0 },
        frame_len: len as u32,
        reply_len,
        flow: 5,
        status: 0,
        seq,
        send_ts: 42,
        token: 0,
    }
    .encode(&mut b)
    .unwrap();
    b
}

/// Sends `f` and reads its answer (bounded by the socket's timeout), with the client's wall
/// clock just before the send and just after the answer.
fn exchange(c: &UdpSocket, f: &[u8]) -> (Vec<u8>, u64, u64) {
    let before = wall_ns();
    c.send(f).unwrap();
    let mut buf = [0u8; 2048];
    let n = c.recv(&mut buf).expect("an answer");
    (buf[..n].to_vec(), before, wall_ns())
}

/// Asks for flow 5's report until answered (bounded).
fn query(c: &UdpSocket, flow: u32, key: Option<&SessionKey>) -> Header {
    let mut q = [0u8; reflect::FLOW_QUERY_LEN];
    let mut buf = [0u8; 2048];
    for seq in 0..20 {
        reflect::write_query(&mut q, flow, seq, 1).unwrap();
        if let Some(k) = key {
            k.seal(Dir::ToServer, &mut q).unwrap();
        }
        c.send(&q).unwrap();
        while let Ok(n) = c.recv(&mut buf) {
            let h = Header::decode(&buf[..n]).unwrap();
            if h.kind == Kind::FlowReport && reflect::read_notice(&h).is_none() {
                assert_eq!(
                    n,
                    reflect::FLOW_QUERY_LEN,
                    "a report is as long as its query"
                );
                return h;
            }
        }
    }
    panic!("no flow report");
}

fn report(c: &UdpSocket, key: Option<&SessionKey>) -> FlowReport {
    let mut q = [0u8; reflect::FLOW_QUERY_LEN];
    let h = query(c, 5, key);
    // Read the report's payload again through the codec.
    reflect::write_query(&mut q, 5, 99, 1).unwrap();
    if let Some(k) = key {
        k.seal(Dir::ToServer, &mut q).unwrap();
    }
    c.send(&q).unwrap();
    let mut buf = [0u8; 2048];
    let n = c.recv(&mut buf).unwrap();
    let back = Header::decode(&buf[..n]).unwrap();
    assert_eq!(back.status, h.status);
    reflect::read_report(&back, &buf[..n]).expect("the flow is known")
}

#[test]
fn udp_replies_carry_the_flows_counts_and_stamps() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(None, |_| {});
    let c = udp_client(addr);
    // 0, 1, 2, a duplicate of 1, then 5 before 4 (4 arrives reordered).
    for (i, seq) in [0u64, 1, 2, 1, 5, 4].into_iter().enumerate() {
        let f = frame(Kind::Echo, 100, 0, seq, true);
        let (back, before, after) = exchange(&c, &f);
        assert_eq!(back.len(), 100, "never larger than the request");
        let h = Header::decode(&back).unwrap();
        assert_eq!((h.kind, h.seq, h.send_ts), (Kind::EchoReply, seq, 42));
        assert_eq!(h.flags, REFLECT | REFLECTED | STAMPED);
        let Reflection { rx_count, stamps } = reflect::read_reply(&h, &back).unwrap();
        assert_eq!(
            rx_count as usize,
            i + 1,
            "the receive count, this frame included"
        );
        let st = stamps.expect("room for stamps");
        assert!(
            before <= st.rx_wall_ns && st.rx_wall_ns <= after,
            "received between the send and the answer on one wall clock: {before} {} {after}",
            st.rx_wall_ns
        );
        assert!(
            u64::from(st.dwell_ns) <= after - before,
            "dwell inside the round trip"
        );
        assert_eq!(st.refused, 0);
        assert_eq!(
            &back[64..],
            &f[64..],
            "the payload after the stamps comes back"
        );
    }
    let r = report(&c, None);
    assert_eq!(
        r,
        FlowReport {
            received: 6,
            refused: 0,
            duplicated: 1,
            reordered: 1
        }
    );
    let h = query(&c, 6, None);
    assert_eq!(h.status, status::UNKNOWN_FLOW, "a flow never seen");

    // No room for stamps: the count only, the payload untouched.
    let f = frame(Kind::Echo, 56, 0, 6, true);
    let (back, _, _) = exchange(&c, &f);
    let h = Header::decode(&back).unwrap();
    assert_eq!(h.flags, REFLECT | REFLECTED);
    assert_eq!((h.reply_len, &back[48..]), (7, &f[48..]));
    // Without REFLECT: the answer as before.
    let f = frame(Kind::Echo, 100, 0, 7, false);
    let (back, _, _) = exchange(&c, &f);
    assert_eq!(Header::decode(&back).unwrap().flags, 0);
    assert_eq!(&back[48..], &f[48..]);
    // A request asking for 64 bytes: a 64-byte response with the stamps.
    let f = frame(Kind::Request, 200, 64, 8, true);
    let (back, _, _) = exchange(&c, &f);
    let h = Header::decode(&back).unwrap();
    assert_eq!(
        (back.len(), h.kind, h.flags),
        (64, Kind::Response, REFLECT | REFLECTED | STAMPED)
    );
    assert_eq!(h.reply_len, 8);
    assert_eq!(
        report(&c, None).received,
        8,
        "not counted: queries, frames without REFLECT"
    );

    let k = s.counters();
    assert_eq!(settle(&k.udp_reflected, 8), 8);
    assert_eq!(Counters::get(&k.udp_flows), 1);
    assert_eq!(settle(&k.udp_flows_live, 1), 1);
    assert!(Counters::get(&k.udp_flow_reports) >= 4);
    assert!(k.line().contains("reflected 8 flows 1"), "{}", k.line());
}

/// With loopback limited to 50 packets a second, 400 frames sent at once: the flow's counts
/// add up exactly (received + refused = sent; refused = what the server counted), the replies
/// carry the refused count so far, and the notices are few, 48 bytes each, and counted.
#[test]
fn budget_refusals_are_counted_in_the_flow_and_noticed_a_few_times() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(None, |cfg| {
        cfg.exempt_local = false;
        cfg.limits = Limits {
            pps: 50.0,
            ..Limits::safe()
        };
    });
    let c = udp_client(addr);
    let sent = 400u64;
    for seq in 0..sent {
        c.send(&frame(Kind::Echo, 100, 0, seq, true)).unwrap();
    }
    let (mut replies, mut notices, mut last_refused) = (0u64, 0u64, 0u32);
    let mut buf = [0u8; 2048];
    while let Ok(n) = c.recv(&mut buf) {
        let h = Header::decode(&buf[..n]).unwrap();
        if let Some(notice) = reflect::read_notice(&h) {
            assert_eq!(n, HEADER_LEN, "a notice is a bare header");
            assert_eq!((h.kind, notice.status), (Kind::EchoReply, status::BUDGET));
            let refused = notice.refused.expect("the flow's count");
            assert!(refused > last_refused, "counts grow");
            last_refused = refused;
            notices += 1;
        } else {
            let r = reflect::read_reply(&h, &buf[..n]).unwrap();
            assert_eq!(r.rx_count as u64, replies + 1);
            replies += 1;
        }
    }
    // Let the budget refill a little, then ask.
    std::thread::sleep(Duration::from_millis(200));
    let r = report(&c, None);
    let k = s.counters();
    assert_eq!(r.received, replies, "every answer arrived (loopback)");
    assert_eq!(r.received + r.refused, sent, "nothing lost on the way up");
    assert_eq!(
        settle(&k.udp_refused_rate, r.refused),
        r.refused,
        "the server's count"
    );
    assert!(
        (50..=60).contains(&replies),
        "{replies}: one second's burst"
    );
    assert!(
        (1..=6).contains(&notices),
        "{notices}: five a second, burst five"
    );
    assert_eq!(settle(&k.udp_notices_sent, notices), notices);
    assert_eq!(
        Counters::get(&k.udp_notices_sent) + settle(&k.udp_notices_suppressed, r.refused - notices),
        r.refused
    );
    // A reply after the refusals carries them in its stamps.
    let (back, _, _) = exchange(&c, &frame(Kind::Echo, 64, 0, sent, true));
    let h = Header::decode(&back).unwrap();
    let st = reflect::read_reply(&h, &back).unwrap().stamps.unwrap();
    assert_eq!(u64::from(st.refused), r.refused);
}

#[test]
fn token_refusals_get_a_notice_naming_the_reason() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(Some(SECRET), |_| {});
    let c = udp_client(addr);
    // Unsealed, to a server that wants the token.
    let (back, _, _) = exchange(&c, &frame(Kind::Echo, 100, 0, 1, true));
    let h = Header::decode(&back).unwrap();
    let n = reflect::read_notice(&h).unwrap();
    assert_eq!(
        (back.len(), n.status, n.refused),
        (HEADER_LEN, status::TOKEN_REQUIRED, Some(1))
    );
    // Sealed for a session the server does not have.
    let mut f = frame(Kind::Echo, 100, 0, 2, true);
    SessionKey::from_bytes(&[3; 32])
        .seal(Dir::ToServer, &mut f)
        .unwrap();
    let (back, _, _) = exchange(&c, &f);
    let n = reflect::read_notice(&Header::decode(&back).unwrap()).unwrap();
    assert_eq!((n.status, n.refused), (status::UNKNOWN_SESSION, Some(2)));
    // Without REFLECT: refused in silence, as before.
    c.send(&frame(Kind::Echo, 100, 0, 3, false)).unwrap();
    let mut buf = [0u8; 256];
    assert!(c.recv(&mut buf).is_err());

    // With a session: the reflected reply is sealed over its count.
    let c = udp_client(addr);
    let key = udp_handshake(&c, SECRET, 7).expect("handshake");
    let mut f = frame(Kind::Echo, 80, 0, 1, true);
    key.seal(Dir::ToServer, &mut f).unwrap();
    let (back, _, _) = exchange(&c, &f);
    key.open(Dir::ToClient, &back)
        .expect("sealed after the count was written");
    let h = Header::decode(&back).unwrap();
    assert_eq!(reflect::read_reply(&h, &back).unwrap().rx_count, 1);
    let r = report(&c, Some(&key));
    assert_eq!(
        (r.received, r.refused),
        (1, 0),
        "another socket, another flow"
    );
    let k = s.counters();
    assert_eq!(settle(&k.udp_notices_sent, 2), 2);

    // Sealed, to a server without --token.
    let (_s2, addr2) = start(None, |_| {});
    let c = udp_client(addr2);
    let mut f = frame(Kind::Echo, 100, 0, 1, true);
    key.seal(Dir::ToServer, &mut f).unwrap();
    let (back, _, _) = exchange(&c, &f);
    let n = reflect::read_notice(&Header::decode(&back).unwrap()).unwrap();
    assert_eq!(n.status, status::NO_TOKEN);
}

fn tcp_exchange(c: &mut TcpStream, f: &[u8], reply: usize) -> (Vec<u8>, u64, u64) {
    let before = wall_ns();
    c.write_all(f).unwrap();
    let mut back = vec![0u8; reply];
    c.read_exact(&mut back).unwrap();
    (back, before, wall_ns())
}

#[test]
fn tcp_streams_reflect_per_connection() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (_s, addr) = start(None, |_| {});
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t0 = Instant::now();
    for (i, len) in [100usize, 64, 300_000, 70].into_iter().enumerate() {
        let f = frame(Kind::Echo, len, 0, i as u64, true);
        let (back, before, after) = tcp_exchange(&mut c, &f, len);
        let h = Header::decode(&back).unwrap();
        assert_eq!(
            (h.kind, h.seq, h.flags),
            (Kind::EchoReply, i as u64, REFLECT | REFLECTED | STAMPED)
        );
        let r = reflect::read_reply(&h, &back).unwrap();
        assert_eq!(r.rx_count as usize, i + 1);
        let st = r.stamps.unwrap();
        assert!(before <= st.rx_wall_ns && st.rx_wall_ns <= after);
        assert!(u64::from(st.dwell_ns) <= after - before);
        assert!(
            back[64..] == f[64..],
            "payload after the stamps, frame of {len}"
        );
    }
    assert!(t0.elapsed() < Duration::from_secs(10));
    // A request for 1,000 bytes: stamps over the fill.
    let f = frame(Kind::Request, 64, 1000, 9, true);
    let (back, _, _) = tcp_exchange(&mut c, &f, 1000);
    let h = Header::decode(&back).unwrap();
    assert_eq!(
        (h.kind, h.frame_len, h.flags),
        (Kind::Response, 1000, REFLECT | REFLECTED | STAMPED)
    );
    assert_eq!(h.reply_len, 5);
    // Too short for stamps; and without REFLECT, as before.
    let f = frame(Kind::Echo, 50, 0, 10, true);
    let (back, _, _) = tcp_exchange(&mut c, &f, 50);
    let h = Header::decode(&back).unwrap();
    assert_eq!(
        (h.flags, h.reply_len, &back[48..]),
        (REFLECT | REFLECTED, 6, &f[48..])
    );
    let f = frame(Kind::Echo, 100, 0, 11, false);
    let (back, _, _) = tcp_exchange(&mut c, &f, 100);
    assert_eq!(
        (Header::decode(&back).unwrap().flags, &back[48..]),
        (0, &f[48..])
    );
    // Another connection counts from one.
    let mut c2 = TcpStream::connect(addr).unwrap();
    c2.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let (back, _, _) = tcp_exchange(&mut c2, &frame(Kind::Echo, 64, 0, 0, true), 64);
    assert_eq!(Header::decode(&back).unwrap().reply_len, 1);
}

/// Markings each way: a frame that asks (`MARK`) gets its reply with the TOS byte it asked for
/// (CE asked: sent without it) and learns the TOS byte it arrived with, in the same number of
/// bytes; a frame that does not ask is answered unmarked, as before; counted as `marked`.
#[test]
fn a_marked_request_is_answered_marked_and_says_what_it_arrived_with() {
    let _turn = npt_testkit::turn::turn(module_path!());
    use npt_wire::marking::{self, Marks, MARK, MARKED};
    use std::os::fd::AsRawFd;
    let (s, addr) = start(None, |_| {});
    let c = udp_client(addr);
    npt_netio::rxtime::enable_tos(c.as_raw_fd(), false).unwrap();
    // The client sends with DSCP 46 ECT(0).
    socket2::SockRef::from(&c).set_tos(0xba).unwrap();
    let ask = |want: Option<u8>, seq: u64| -> (Header, usize, Option<u8>) {
        let mut f = frame(Kind::Echo, 64, 0, seq, true);
        if let Some(w) = want {
            let mut h = Header::decode(&f).unwrap();
            h.flags |= MARK;
            h.status = marking::request_status(w);
            h.encode(&mut f).unwrap();
        }
        c.send(&f).unwrap();
        let mut inb = npt_netio::MsgBatch::new(1, 2048).with_rx_times();
        assert_eq!(inb.recv(c.as_raw_fd(), 1, 0).unwrap(), 1, "an answer");
        (
            Header::decode(inb.data(0)).unwrap(),
            inb.len(0),
            inb.rx_tos(0),
        )
    };
    let (h, len, tos) = ask(Some(0x28 | 1), 1);
    assert_eq!((h.kind, len), (Kind::EchoReply, 64));
    assert_eq!(h.flags & MARKED, MARKED);
    assert_eq!(
        marking::read_reply(&h),
        Some(Marks {
            sent: 0x29,
            seen: 0xba
        })
    );
    assert_eq!(marking::status_of(&h), status::OK);
    assert_eq!(tos, Some(0x29), "AF11 ECT(1) on the way back, as asked");
    // CE asked: the DSCP as asked, ECN Not-ECT.
    let (h, _, tos) = ask(Some(0xbb), 2);
    assert_eq!(marking::read_reply(&h).map(|m| m.sent), Some(0xb8));
    assert_eq!(tos, Some(0xb8));
    // Not asked: unmarked, status as before.
    let (h, _, tos) = ask(None, 3);
    assert_eq!((h.flags & MARKED, h.status, tos), (0, status::OK, Some(0)));
    let k = s.counters();
    assert_eq!(settle(&k.udp_marked, 2), 2);
    assert!(k.line().contains("marked 2"), "{}", k.line());
}

/// A client's GSO run of 40 frames, sent as one buffer (a server with GRO reads it as one):
/// every frame answered on its own, in order, each with its own receive count; and with a
/// budget of 25 packets a second, 25 answered and 15 refused — every datagram charged to the
/// budget and counted, none skipped because it came inside a run.
#[test]
fn a_gso_run_is_answered_counted_and_charged_datagram_by_datagram() {
    let _turn = npt_testkit::turn::turn(module_path!());
    for (limit, answered) in [(None, 40u64), (Some(25.0), 25)] {
        let (s, addr) = start(None, |cfg| {
            if let Some(pps) = limit {
                cfg.exempt_local = false;
                cfg.limits = Limits {
                    pps,
                    ..Limits::safe()
                };
            }
        });
        let c = udp_client(addr);
        let run: Vec<u8> = (0..40u64)
            .flat_map(|seq| frame(Kind::Echo, 100, 0, seq, true))
            .collect();
        match npt_netio::offload::send_gso(c.as_raw_fd(), &run, 100) {
            Ok(n) => assert_eq!(n, run.len()),
            Err(e) if npt_netio::offload::gso_unsupported(&e) => {
                eprintln!("SKIPPED: this kernel has no UDP GSO ({e})");
                return;
            }
            Err(e) => panic!("{e}"),
        }
        let (mut seqs, mut notices, mut buf) = (Vec::new(), 0u64, [0u8; 2048]);
        while let Ok(n) = c.recv(&mut buf) {
            let h = Header::decode(&buf[..n]).unwrap();
            if reflect::read_notice(&h).is_some() {
                notices += 1;
                continue;
            }
            assert_eq!((n, h.kind), (100, Kind::EchoReply));
            let r = reflect::read_reply(&h, &buf[..n]).unwrap();
            assert_eq!(u64::from(r.rx_count), h.seq + 1, "counted one by one");
            seqs.push(h.seq);
        }
        assert_eq!(seqs, (0..answered).collect::<Vec<_>>(), "limit {limit:?}");
        let k = s.counters();
        assert_eq!(settle(&k.udp_rx, 40), 40);
        // A refused frame may get a notice (a bare header, also sent and counted).
        let tx = answered + notices;
        assert_eq!(settle(&k.udp_tx, tx), tx);
        assert_eq!(Counters::get(&k.udp_refused_rate), 40 - answered);
    }
}
