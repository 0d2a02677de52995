//! Random text for the `*_fuzz.rs` tests, the stable-Rust stand-ins of the cargo-fuzz targets
//! that read user-written files (the XML config, topology and link tables): a seeded generator
//! makes every run feed the same inputs, so a failure reproduces and a test's threshold on how
//! many inputs reached a path ("only {n} mutants were planned") keeps holding.
//!
//! The mutators draw from the generator in a fixed order; the tests' thresholds were set on
//! the inputs that order produces, so it must not change.

use rand::Rng;

/// The largest char boundary of `text` at or below `at` (`at` itself when it is one).
pub fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Edits of a valid text at random char boundaries: insert a token that means something to
/// the parser, cut a few bytes, or (when `printable`) insert one printable ASCII character.
#[derive(Clone, Copy, Debug)]
pub struct TextMutator<'a> {
    /// What an insertion puts in: syntax, key names, values on the parsers' edges.
    pub tokens: &'a [&'a str],
    /// A cut removes 1 to `max_cut` bytes (fewer at the end of the text, or to stay on a char
    /// boundary).
    pub max_cut: usize,
    /// Whether a third kind of edit inserts one character from ' ' to '~'.
    pub printable: bool,
}

impl TextMutator<'_> {
    /// One edit.
    pub fn edit(&self, rng: &mut impl Rng, text: &mut String) {
        let at = floor_char_boundary(text, rng.gen_range(0..text.len() + 1));
        let kinds: i32 = if self.printable { 3 } else { 2 };
        match rng.gen_range(0..kinds) {
            0 => text.insert_str(at, self.tokens[rng.gen_range(0..self.tokens.len())]),
            1 => {
                let end = (at + 1 + rng.gen_range(0..self.max_cut)).min(text.len());
                text.replace_range(at..floor_char_boundary(text, end), "");
            }
            _ => {
                let offset: i32 = rng.gen_range(0..95);
                text.insert(at, char::from(b' ' + offset as u8));
            }
        }
    }

    /// The edits of one mutant: as many as `0..=gen_range(0..2) / 2` counts, which is always
    /// one. The draw stays: without it the fixed seeds would make other inputs than the ones
    /// the XML and topology tests' thresholds were set on.
    pub fn mutate(&self, rng: &mut impl Rng, text: &mut String) {
        let last: i32 = rng.gen_range(0..2) / 2;
        for _ in 0..=last {
            self.edit(rng, text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, SeedableRng};

    #[test]
    fn boundaries_never_split_a_character() {
        let text = "a\u{e9}b";
        assert_eq!(
            (0..=5)
                .map(|i| floor_char_boundary(text, i))
                .collect::<Vec<_>>(),
            [0, 1, 1, 3, 4, 4]
        );
    }

    #[test]
    fn edits_keep_valid_utf8_and_use_every_kind() {
        let m = TextMutator {
            tokens: &["\u{e9}", "<x>"],
            max_cut: 4,
            printable: true,
        };
        let mut rng = StdRng::seed_from_u64(1);
        let (mut longer, mut shorter) = (0, 0);
        for _ in 0..2_000 {
            let mut text = "\u{e9}t\u{e9}\u{e9}xt".to_string();
            let before = text.len();
            m.mutate(&mut rng, &mut text);
            // `String` methods would have panicked on a split character.
            longer += usize::from(text.len() > before);
            shorter += usize::from(text.len() < before);
        }
        assert!(
            longer > 1_000 && shorter > 300,
            "{longer} longer, {shorter} shorter"
        );
    }
}
