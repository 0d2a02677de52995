//! Bytes for the decoders' random-bytes tests (the fuzz target's property on stable): a frame
//! cut short and with a few bytes overwritten, from one xorshift generator a test can also draw
//! from, so a test that needs more random values takes them from the same sequence.

/// A xorshift64 generator and the frames it mangles.
pub(crate) struct Mangler(u64);

impl Mangler {
    pub(crate) fn new(seed: u64) -> Mangler {
        Mangler(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `base` cut to under `len` bytes, then `edits` of its bytes (where any are left)
    /// overwritten with random ones.
    pub(crate) fn mangle(&mut self, base: &[u8], len: u64, edits: u64) -> Vec<u8> {
        let mut b = base.to_vec();
        b.truncate(usize::try_from(self.next() % len).unwrap_or(0));
        for _ in 0..edits {
            if !b.is_empty() {
                let k = usize::try_from(self.next()).unwrap_or(0) % b.len();
                b[k] = self.next().to_be_bytes()[0];
            }
        }
        b
    }
}
