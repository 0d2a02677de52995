//! CI's short stand-in for `fuzz/fuzz_targets/transit.rs`: IPv4 and IPv6 UDP packets with
//! random addresses, ports and payloads, some bytes changed or cut short, through the lab's
//! transit matcher on stable Rust with a fixed seed. Nothing may panic; a packet read as a
//! datagram has its payload inside it; a packet delivered into a node and read back out
//! unchanged is matched exactly when it is a datagram not sent back to its own source.

#![cfg(test)]

use std::time::{Duration, Instant};

use npt_lab::transit::{datagram, Transit};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// A UDP packet, IPv4 or IPv6, with random endpoints (sometimes the same) and payload.
fn packet(rng: &mut StdRng) -> Vec<u8> {
    let payload: Vec<u8> = (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect();
    let v6 = rng.gen_bool(0.3);
    let alen = if v6 { 16 } else { 4 };
    let src: Vec<u8> = (0..alen).map(|_| rng.gen_range(0..2)).collect();
    let dst: Vec<u8> = (0..alen).map(|_| rng.gen_range(0..2)).collect();
    let udp_len = u16::try_from(8 + payload.len()).unwrap();
    let mut p = if v6 {
        let mut h = vec![0x60, 0, 0, 0];
        h.extend_from_slice(&udp_len.to_be_bytes());
        h.extend_from_slice(&[17, 64]);
        h
    } else {
        let total = udp_len + 20;
        let mut h = vec![0x45, 0];
        h.extend_from_slice(&total.to_be_bytes());
        h.extend_from_slice(&[0, 1, 0x40, 0, 64, 17, 0, 0]);
        h
    };
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    for port in [rng.gen_range(1..3u16), rng.gen_range(1..3u16)] {
        p.extend_from_slice(&port.to_be_bytes());
    }
    p.extend_from_slice(&udp_len.to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(&payload);
    p
}

#[test]
fn mutated_packets_never_panic_and_match_only_forwarded_datagrams() {
    let mut rng = StdRng::seed_from_u64(25);
    let t0 = Instant::now();
    let (mut parsed, mut matched, mut echoes) = (0, 0, 0);
    for i in 0..50_000u32 {
        let mut p = packet(&mut rng);
        if rng.gen_bool(0.5) {
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..p.len());
                p[at] = rng.gen();
            }
        }
        if rng.gen_bool(0.2) {
            p.truncate(rng.gen_range(0..p.len()));
        }
        let d = datagram(&p);
        if let Some(d) = &d {
            parsed += 1;
            let start = p.as_ptr() as usize;
            let at = d.payload.as_ptr() as usize;
            assert!(at >= start && at + d.payload.len() <= start + p.len());
        }
        // A fresh node each time: copies of one payload across packets must not interfere.
        let mut t = Transit::default();
        let now = t0 + Duration::from_micros(u64::from(i));
        t.delivered(now, &p, 0);
        let took = t.sent(now + Duration::from_micros(3), &p, 1);
        let forwarded = d.as_ref().is_some_and(|d| d.src != d.dst);
        assert_eq!(took.is_some(), forwarded, "{p:02x?}");
        if forwarded {
            matched += 1;
            assert_eq!(took, Some(Duration::from_micros(3)));
        } else if d.is_some() {
            echoes += 1;
        }
    }
    // The mutations keep enough packets whole to exercise both outcomes.
    assert!(
        parsed > 20_000 && matched > 15_000 && echoes > 100,
        "{parsed} {matched} {echoes}"
    );
}
