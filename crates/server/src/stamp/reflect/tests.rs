//! The reflector's decisions on a virtual clock: both sequence modes, the authenticated mode,
//! every refusal, and loops with another reflector or an echo service ended by the second
//! round.

use super::*;
use npt_wire::stamp::time::unix_ns_to_ntp;
use npt_wire::stamp::{AUTH_LEN, OPEN_LEN};

const NOW: u64 = 1_795_744_237_000_000_000; // 2026-11-27, Unix ns
const S: u64 = 1_000_000_000;

fn peer(port: u16) -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 1], port))
}

fn key() -> StampKey {
    StampKey::from_bytes(&[3; 32]).unwrap()
}

fn request(mode: Mode, seq: u32, ssid: u16, len: usize) -> Vec<u8> {
    let mut b = vec![0xA5; len];
    TestPacket {
        seq,
        timestamp: unix_ns_to_ntp(NOW - 1_000_000),
        error: ErrorEstimate::from_ns(1_000, true),
        ssid,
    }
    .encode(mode, &mut b)
    .unwrap();
    b
}

fn err() -> ErrorEstimate {
    ErrorEstimate::from_ns(2_000, false)
}

/// What the reflector does with one datagram: check, answer, stamp. None = refused.
fn reflect(r: &mut Reflector, from: SocketAddr, data: &mut [u8]) -> Result<Proof, Refusal> {
    let proof = r.check(from, data, NOW)?;
    r.answer(NOW, from, unix_ns_to_ntp(NOW + 10), 61, err(), data)?;
    r.stamp(data, unix_ns_to_ntp(NOW + 30), err());
    Ok(proof)
}

fn open(stateful: bool) -> Reflector {
    Reflector::new(ReflectorConfig {
        stateful,
        key: None,
    })
}

#[test]
fn stateless_answers_carry_the_senders_numbers_and_keep_the_length() {
    let mut r = open(false);
    let mut b = request(Mode::Open, 41, 9, 60);
    let tail = b[OPEN_LEN..].to_vec();
    assert_eq!(reflect(&mut r, peer(40000), &mut b), Ok(Proof::None));
    assert_eq!(b.len(), 60);
    assert_eq!(
        &b[OPEN_LEN..],
        &tail[..],
        "TLVs and padding go back as they came"
    );
    let a = ReflectedPacket::decode(Mode::Open, &b).unwrap();
    assert_eq!((a.seq, a.sender_seq, a.ssid, a.sender_ttl), (41, 41, 9, 61));
    assert_eq!(a.receive_timestamp, unix_ns_to_ntp(NOW + 10));
    assert_eq!(a.timestamp, unix_ns_to_ntp(NOW + 30));
    assert_eq!(a.sender_timestamp, unix_ns_to_ntp(NOW - 1_000_000));
    assert_eq!(a.sender_error, ErrorEstimate::from_ns(1_000, true));
    assert_eq!(a.error, err());
    assert_eq!(r.sessions(), 0);
}

#[test]
fn stateful_counts_per_source_and_ssid_from_zero() {
    let mut r = open(true);
    let mut seqs = Vec::new();
    for (port, ssid, sender_seq) in [
        (40000, 0, 100),
        (40000, 0, 105), // 4 lost on the way up: the reflector's count says so
        (40001, 0, 7),
        (40000, 5, 100),
        (40000, 0, 106),
    ] {
        let mut b = request(Mode::Open, sender_seq, ssid, OPEN_LEN);
        reflect(&mut r, peer(port), &mut b).unwrap();
        let a = ReflectedPacket::decode(Mode::Open, &b).unwrap();
        assert_eq!(a.sender_seq, sender_seq);
        seqs.push(a.seq);
    }
    assert_eq!(seqs, [0, 1, 0, 0, 2]);
    assert_eq!(r.sessions(), 3);
}

#[test]
fn a_full_table_refuses_new_sessions_until_idle_ones_are_swept() {
    let mut r = open(true);
    for i in 0..MAX_SESSIONS {
        let ip = std::net::Ipv4Addr::from(0x0A00_0000 | u32::try_from(i).unwrap());
        let from = SocketAddr::from((ip, 40000));
        let mut b = request(Mode::Open, 1, 0, OPEN_LEN);
        r.check(from, &b, NOW).unwrap();
        assert_eq!(r.answer(0, from, 0, 64, err(), &mut b), Ok(true));
    }
    let mut b = request(Mode::Open, 1, 0, OPEN_LEN);
    let late = peer(50000);
    assert_eq!(
        r.answer(SESSION_IDLE_NS - 1, late, 0, 64, err(), &mut b),
        Err(Refusal::SessionsFull)
    );
    // A known session still counts on.
    let known = SocketAddr::from(([10, 0, 0, 3], 40000));
    assert_eq!(
        r.answer(SESSION_IDLE_NS - 1, known, 0, 64, err(), &mut b),
        Ok(false)
    );
    // Idle long enough, but a sweep happened less than a second ago: still refused.
    assert_eq!(
        r.answer(SESSION_IDLE_NS + 1, late, 0, 64, err(), &mut b),
        Err(Refusal::SessionsFull)
    );
    // A second later the sweep runs: only the session that spoke stays.
    assert_eq!(
        r.answer(SESSION_IDLE_NS + S, late, 0, 64, err(), &mut b),
        Ok(true)
    );
    assert_eq!(r.sessions(), 2);
}

#[test]
fn short_packets_and_service_ports_are_refused() {
    let mut r = open(false);
    let mut b = request(Mode::Open, 1, 0, OPEN_LEN);
    assert_eq!(
        r.check(peer(40000), &b[..OPEN_LEN - 1], NOW),
        Err(Refusal::Short)
    );
    for port in [0, 7, 19, 53, 123, 1023] {
        assert_eq!(r.check(peer(port), &b, NOW), Err(Refusal::Port), "{port}");
    }
    for port in [862, 863, 1024, 65535] {
        assert_eq!(reflect(&mut r, peer(port), &mut b.clone()), Ok(Proof::None));
    }
    let mut a = open(false);
    a.cfg.key = Some(key());
    b.resize(AUTH_LEN - 1, 0);
    assert_eq!(a.check(peer(40000), &b, NOW), Err(Refusal::Short));
}

#[test]
fn authenticated_mode_answers_only_what_the_key_sealed_and_seals_the_answer() {
    let mut r = Reflector::new(ReflectorConfig {
        stateful: true,
        key: Some(key()),
    });
    let mut b = request(Mode::Authenticated, 8, 0, AUTH_LEN);
    assert_eq!(
        r.check(peer(40000), &b, NOW),
        Err(Refusal::BadMac),
        "unsealed"
    );
    key().seal(&mut b).unwrap();
    let other = StampKey::from_bytes(&[4; 32]).unwrap();
    let mut forged = b.clone();
    other.seal(&mut forged).unwrap();
    assert_eq!(r.check(peer(40000), &forged, NOW), Err(Refusal::BadMac));
    assert_eq!(reflect(&mut r, peer(40000), &mut b), Ok(Proof::Keyed));
    assert!(key().verify(&b), "the answer is sealed");
    let a = ReflectedPacket::decode(Mode::Authenticated, &b).unwrap();
    assert_eq!((a.seq, a.sender_seq, a.sender_ttl), (0, 8, 61));
}

/// Another reflector, as RFC 8762 describes one, with no loop check of its own: it answers
/// whatever reaches it, stateless.
fn naive_reflector(data: &mut [u8], t: u64) {
    let req = TestPacket::decode(Mode::Open, data).unwrap();
    ReflectedPacket {
        seq: req.seq,
        timestamp: t,
        error: err(),
        ssid: req.ssid,
        receive_timestamp: t,
        sender_seq: req.seq,
        sender_timestamp: req.timestamp,
        sender_error: req.error,
        sender_ttl: 64,
    }
    .encode(Mode::Open, data)
    .unwrap();
}

#[test]
fn a_loop_with_another_reflector_ends_at_the_second_round() {
    let other = peer(862);
    for stateful in [false, true] {
        let mut r = open(stateful);
        // A forged test packet "from" the other reflector; its timestamp is the attacker's.
        let mut b = request(Mode::Open, 1, 0, OPEN_LEN);
        assert_eq!(reflect(&mut r, other, &mut b), Ok(Proof::None));
        naive_reflector(&mut b, unix_ns_to_ntp(NOW + 500));
        assert_eq!(reflect(&mut r, other, &mut b), Err(Refusal::Loop));
    }
}

#[test]
fn a_loop_with_an_echo_service_ends_at_the_second_round() {
    let mut r = open(false);
    let echo = peer(1024); // an echo on a high port: the port rule does not catch it
    let mut b = request(Mode::Open, 1, 0, OPEN_LEN);
    // The attacker's timestamp is far from the reflector's clock: answered, echoed unchanged.
    b[4..12].copy_from_slice(&unix_ns_to_ntp(NOW - 3600 * S).to_be_bytes());
    assert_eq!(reflect(&mut r, echo, &mut b), Ok(Proof::None));
    assert_eq!(reflect(&mut r, echo, &mut b), Ok(Proof::None), "round 2");
    assert_eq!(
        reflect(&mut r, echo, &mut b),
        Err(Refusal::Loop),
        "round 3 carries our T3"
    );
}

#[test]
fn padding_where_the_copy_would_be_is_a_loop_only_near_our_clock() {
    let r = open(false);
    let mut b = request(Mode::Open, 1, 0, OPEN_LEN);
    for (field, loops) in [
        (0, false),
        (unix_ns_to_ntp(NOW - LOOP_WINDOW_NS - 1), false),
        (unix_ns_to_ntp(NOW + LOOP_WINDOW_NS + 1), false),
        (unix_ns_to_ntp(NOW - LOOP_WINDOW_NS), true),
        (unix_ns_to_ntp(NOW + 5 * S), true),
        (0xDEAD_BEEF_0123_4567, false),
    ] {
        b[28..36].copy_from_slice(&u64::to_be_bytes(field));
        assert_eq!(
            r.check(peer(40000), &b, NOW) == Err(Refusal::Loop),
            loops,
            "{field:#x}"
        );
    }
}
