//! CI's short stand-in for `fuzz/fuzz_targets/link.rs`: random and mutated impairment strings
//! (durations, percentages, bit rates) and tables through their parsers on stable Rust with a
//! fixed seed. Nothing may panic; an accepted value writes back as text that reads the same;
//! an error names the field it was written for.

#![cfg(test)]

use npt_link::{
    format_duration, parse_duration, parse_percent, parse_rate, Impairments, LinkError,
};
use npt_testkit::fuzz::TextMutator;
use rand::{rngs::StdRng, Rng, SeedableRng};

/// What the strings are made of: digits, units, signs, exponents and a few odd characters.
const PIECES: &[&str] = &[
    "0",
    "1",
    "5",
    "9",
    ".",
    "-",
    "+",
    "e",
    "E",
    "%",
    " ",
    "ms",
    "us",
    "ns",
    "s",
    "h",
    "min",
    "d",
    "y",
    "kbit",
    "mbit",
    "gbit",
    "bps",
    "bit",
    "NaN",
    "inf",
    "1e308",
    "18446744073709551616",
    "\u{e9}",
    "\t",
];

fn names(r: Result<bool, LinkError>, field: &str) -> bool {
    match r {
        Ok(read) => read,
        Err(e) => {
            assert_eq!(e.field(), field);
            assert!(e.to_string().starts_with(&format!("{field}: ")), "{e}");
            false
        }
    }
}

#[test]
fn random_strings_round_trip_or_name_the_field() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut read = 0;
    for _ in 0..300_000 {
        let text: String = (0..1 + rng.gen_range(0..5))
            .map(|_| PIECES[rng.gen_range(0..PIECES.len())])
            .collect();
        let d = parse_duration("delay", &text).map(|d| {
            let back = parse_duration("delay", &format_duration(d)).unwrap();
            assert_eq!(back, d, "{text:?}");
            true
        });
        let p = parse_percent("loss.p", &text).map(|p| {
            assert_eq!(parse_percent("x", &p.to_string()).unwrap(), p, "{text:?}");
            true
        });
        let r = parse_rate("rate", &text).map(|r| {
            assert_eq!(parse_rate("x", &r.to_string()).unwrap(), r, "{text:?}");
            true
        });
        read += usize::from(names(d, "delay"))
            + usize::from(names(p, "loss.p"))
            + usize::from(names(r, "rate"));
    }
    assert!(read > 10_000, "only {read} strings were read as values");
}

#[test]
fn mutated_tables_round_trip() {
    const TABLE: &str = "delay = \"50ms\"\njitter = \"2.5ms\"\nloss = { model = \
                         \"gilbert-elliott\", p = \"1%\", r = \"30%\" }\nduplicate = \"0.1%\"\n\
                         reorder = \"1%\"\nrate = \"10mbit\"\nqueue = 1000\n";
    // Every piece but the last two (é, tab), as when the threshold below was set.
    let mutator = TextMutator {
        tokens: &PIECES[..PIECES.len() - 2],
        max_cut: 6,
        printable: false,
    };
    let mut rng = StdRng::seed_from_u64(8);
    let mut accepted = 0;
    for _ in 0..20_000 {
        let mut text = TABLE.to_string();
        mutator.edit(&mut rng, &mut text);
        if let Ok(imp) = toml::from_str::<Impairments>(&text) {
            accepted += 1;
            imp.validate().unwrap();
            let written = toml::to_string(&imp).unwrap();
            assert_eq!(
                toml::from_str::<Impairments>(&written).unwrap(),
                imp,
                "{written}"
            );
        }
    }
    assert!(accepted > 800, "only {accepted} tables accepted");
}
