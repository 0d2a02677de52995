//! CI's short stand-in for `fuzz/fuzz_targets/xml.rs`: mutated copies of the line tester's XML
//! config through `probe::xml::parse` on stable Rust with a fixed seed. Nothing may panic;
//! an error names the element (and attribute) at fault; a config that parses holds only
//! values a probe can run with.

#![cfg(test)]

use npt_probe::xml::{parse, XmlError, XmlPacing};
use npt_testkit::fuzz::TextMutator;
use rand::{rngs::StdRng, SeedableRng};

const TEMPLATE: &str = include_str!("../../../examples/ConfigTemplate.xml");

/// Pieces a mutation may put anywhere: markup, and values that sit on the parsers' edges.
const TOKENS: &[&str] = &[
    "<",
    ">",
    "/>",
    "\"",
    "=",
    "&amp;",
    "<!--",
    "-->",
    "NaN",
    "inf",
    "0",
    "-1",
    "1e3",
    "99999999999999999999",
    " ",
    "onsend",
    "interval",
    "time",
    "manual",
    "tcp",
    "fakes5",
    "<settings>",
    "</settings>",
    "<relay mode=\"onsend\" maxpps=\"",
    "\u{e9}",
];

const MUTATOR: TextMutator = TextMutator {
    tokens: TOKENS,
    max_cut: 10,
    printable: false,
};

#[test]
fn mutated_configs_never_panic_and_errors_name_the_element() {
    let mut rng = StdRng::seed_from_u64(2);
    let (mut ok, mut bad_value) = (0, 0);
    // 20,000: a debug build reads the ~1 KiB template in ~0.1 ms.
    for _ in 0..20_000 {
        let mut text = TEMPLATE.to_string();
        MUTATOR.mutate(&mut rng, &mut text);
        match parse(&text) {
            Ok(c) => {
                ok += 1;
                assert!(c.clients >= 1 && c.threads_per_client >= 1 && c.port >= 1);
                assert!(!c.host.is_empty());
                if let XmlPacing::OnSend { maxpps } = c.pacing {
                    assert!(maxpps.is_finite() && maxpps > 0.0, "{text}");
                }
            }
            Err(e) => {
                let msg = e.to_string();
                match &e {
                    XmlError::MissingElement(el) => assert!(msg.contains(&format!("<{el}>"))),
                    XmlError::MissingAttr { element, attr }
                    | XmlError::BadValue { element, attr, .. } => {
                        bad_value += 1;
                        assert!(msg.contains(element) && msg.contains(attr), "{msg}");
                    }
                    XmlError::Syntax(_) | XmlError::Root(_) => assert!(msg.starts_with("config")),
                }
            }
        }
    }
    assert!(
        ok > 2_000 && bad_value > 200,
        "{ok} parsed, {bad_value} bad values"
    );
}
