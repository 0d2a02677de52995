//! The ECN field of an IP packet as a marking link sees it: whether the packet is ECN-capable
//! (ECT(0) or ECT(1)), and the rewrite that marks it CE — in the IPv4 TOS byte, with the header
//! checksum updated (RFC 1624's incremental update, so the rest of the header is not summed
//! again), or in the IPv6 traffic class, which no checksum covers (UDP's checksum does not
//! cover either). A link with an `ecn` threshold ([`npt_link::Link::push_marking`]) asks
//! [`is_ect`] of every packet and calls [`mark_ce`] on the ones it marks.

/// The ECN codepoint CE (congestion experienced).
pub const CE: u8 = 3;

/// The packet's ECN field (0-3), or `None` for what is not an IPv4 or IPv6 header.
pub fn ecn(pkt: &[u8]) -> Option<u8> {
    match pkt.first()? >> 4 {
        4 => Some(pkt.get(1)? & 3),
        // Traffic class: the low four bits of byte 0 and the high four of byte 1; ECN is its
        // lowest two, bits 4-5 of byte 1.
        6 => Some((pkt.get(1)? >> 4) & 3),
        _ => None,
    }
}

/// Whether the packet says it is ECN-capable: ECT(0) or ECT(1).
pub fn is_ect(pkt: &[u8]) -> bool {
    matches!(ecn(pkt), Some(1 | 2))
}

/// Sets the packet's ECN field to CE; an IPv4 header's checksum follows. Anything that is not
/// an IP header of at least 20 (IPv4) or 2 (IPv6) bytes is left as it is.
pub fn mark_ce(pkt: &mut [u8]) {
    match pkt.first().map(|b| b >> 4) {
        Some(4) if pkt.len() >= 20 => {
            let (Some(&v), Some(&tos)) = (pkt.first(), pkt.get(1)) else {
                return;
            };
            let old = u16::from_be_bytes([v, tos]);
            let new = u16::from_be_bytes([v, tos | CE]);
            let (Some(&c0), Some(&c1)) = (pkt.get(10), pkt.get(11)) else {
                return;
            };
            let sum = update(u16::from_be_bytes([c0, c1]), old, new);
            if let Some(b) = pkt.get_mut(1) {
                *b = tos | CE;
            }
            if let Some(c) = pkt.get_mut(10..12) {
                c.copy_from_slice(&sum.to_be_bytes());
            }
        }
        Some(6) => {
            if let Some(b) = pkt.get_mut(1) {
                *b |= CE << 4;
            }
        }
        _ => {}
    }
}

/// RFC 1624 eqn. 3: the checksum `hc` of a header in which one 16-bit word went from `m` to
/// `m2`: HC' = ~(~HC + ~m + m').
fn update(hc: u16, m: u16, m2: u16) -> u16 {
    let mut sum = u32::from(!hc) + u32::from(!m) + u32::from(m2);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    // The fold leaves at most 16 bits.
    !u16::try_from(sum).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPv4 header checksum computed from scratch (the field itself as zero).
    fn checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for (i, w) in h.chunks(2).enumerate() {
            if i == 5 {
                continue;
            }
            sum += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !u16::try_from(sum).unwrap()
    }

    fn v4(tos: u8) -> Vec<u8> {
        let mut p = vec![
            0x45, tos, 0, 28, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 10, 0, 1, 1, 10, 0, 1, 2,
        ];
        let c = checksum(&p);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p.extend_from_slice(&[0; 8]);
        p
    }

    #[test]
    fn ipv4_is_marked_ce_and_its_checksum_stays_right() {
        for tos in 0..=255u8 {
            let mut p = v4(tos);
            assert_eq!(ecn(&p), Some(tos & 3));
            assert_eq!(is_ect(&p), matches!(tos & 3, 1 | 2));
            mark_ce(&mut p);
            assert_eq!(p[1], tos | 3, "DSCP kept, ECN CE");
            assert_eq!(ecn(&p), Some(CE));
            assert_eq!(
                u16::from_be_bytes([p[10], p[11]]),
                checksum(&p[..20]),
                "tos {tos:#x}"
            );
        }
        // Golden: DSCP 46 ECT(0) (0xba) → 0xbb.
        let mut p = v4(0xba);
        let before = u16::from_be_bytes([p[10], p[11]]);
        mark_ce(&mut p);
        assert_eq!(u16::from_be_bytes([p[10], p[11]]), before.wrapping_sub(1));
    }

    #[test]
    fn ipv6_traffic_class_is_marked_without_a_checksum() {
        // Version 6, traffic class 0xba (DSCP 46, ECT(0)), flow label 0x12345.
        let mut p = vec![0x6b, 0xa1, 0x23, 0x45, 0, 8, 17, 64];
        assert_eq!(ecn(&p), Some(2));
        assert!(is_ect(&p));
        mark_ce(&mut p);
        assert_eq!(p, vec![0x6b, 0xb1, 0x23, 0x45, 0, 8, 17, 64]);
        assert_eq!(ecn(&p), Some(CE));
    }

    /// Whatever a TUN hands over: random and truncated packets never panic, and an IP packet
    /// long enough to mark reads CE after the rewrite.
    #[test]
    fn random_packets_never_panic() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let n = usize::try_from(next() % 48).unwrap();
            let mut p: Vec<u8> = (0..n).map(|_| next().to_be_bytes()[0]).collect();
            let v = p.first().map(|b| b >> 4);
            mark_ce(&mut p);
            let long_enough = match v {
                Some(4) => n >= 20,
                Some(6) => n >= 2,
                _ => false,
            };
            if long_enough {
                assert_eq!(ecn(&p), Some(CE));
            }
        }
    }

    #[test]
    fn what_is_not_an_ip_header_is_left_alone() {
        for mut p in [vec![], vec![0x45], vec![0x45, 2, 0], vec![0x20; 40]] {
            let before = p.clone();
            assert!(!is_ect(&p) || p.len() < 20);
            mark_ce(&mut p);
            assert_eq!(p, before);
        }
    }
}
