//! Payload fill: random (incompressible, the default), zero, or a byte pattern.
//!
//! Random fill is a pure function of `(seed, seq)`, so the sender can re-create what it sent
//! when the echo comes back and check the bytes (`--verify`) without keeping any payload.
//! A tunnel that compresses cannot make random fill smaller, so it cannot look fast.

/// How the bytes after the header are filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fill {
    #[default]
    Random,
    Zero,
    /// Bytes 0, 1, 2 … 255, 0, 1 … (compresses well; for testing compressing tunnels).
    Pattern,
}

impl std::str::FromStr for Fill {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "random" => Ok(Fill::Random),
            "zero" => Ok(Fill::Zero),
            "pattern" => Ok(Fill::Pattern),
            _ => Err(format!(
                "unknown fill {s:?}: expected random, zero or pattern"
            )),
        }
    }
}

/// SplitMix64: tiny, fast, and good enough that the output does not compress.
#[inline]
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `buf` for packet `seq` of a flow whose fill seed is `seed`.
pub fn fill(kind: Fill, seed: u64, seq: u64, buf: &mut [u8]) {
    match kind {
        Fill::Zero => buf.fill(0),
        Fill::Pattern => {
            for (b, i) in buf.iter_mut().zip((0..=u8::MAX).cycle()) {
                *b = i;
            }
        }
        Fill::Random => {
            let mut st = seed ^ seq.wrapping_mul(0xA24B_AED4_963E_E407);
            let mut chunks = buf.chunks_exact_mut(8);
            for c in &mut chunks {
                c.copy_from_slice(&splitmix(&mut st).to_le_bytes());
            }
            let rest = chunks.into_remainder();
            if !rest.is_empty() {
                let v = splitmix(&mut st).to_le_bytes();
                // `chunks_exact_mut(8)` leaves fewer than 8 bytes.
                rest.iter_mut().zip(v).for_each(|(r, b)| *r = b);
            }
        }
    }
}

/// True when `buf` holds exactly what [`fill`] would write for `(kind, seed, seq)`.
pub fn verify(kind: Fill, seed: u64, seq: u64, buf: &[u8], scratch: &mut Vec<u8>) -> bool {
    scratch.clear();
    scratch.resize(buf.len(), 0);
    fill(kind, seed, seq, scratch);
    scratch.as_slice() == buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_is_deterministic_per_seq_and_differs_between_seqs() {
        let (mut a, mut b, mut c) = ([0u8; 37], [0u8; 37], [0u8; 37]);
        fill(Fill::Random, 9, 1, &mut a);
        fill(Fill::Random, 9, 1, &mut b);
        fill(Fill::Random, 9, 2, &mut c);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut scratch = Vec::new();
        assert!(verify(Fill::Random, 9, 1, &a, &mut scratch));
        a[36] ^= 1;
        assert!(!verify(Fill::Random, 9, 1, &a, &mut scratch));
    }

    #[test]
    fn random_looks_incompressible() {
        // Every byte value should show up in 64 KiB, each about 256 times.
        let mut buf = vec![0u8; 65536];
        fill(Fill::Random, 1, 0, &mut buf);
        let mut counts = [0u32; 256];
        for b in &buf {
            counts[*b as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (150..370).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn zero_and_pattern() {
        let mut b = [7u8; 300];
        fill(Fill::Zero, 0, 0, &mut b);
        assert!(b.iter().all(|&x| x == 0));
        fill(Fill::Pattern, 0, 0, &mut b);
        assert_eq!(b[0], 0);
        assert_eq!(b[255], 255);
        assert_eq!(b[256], 0);
    }
}
