//! CI's short stand-in for `fuzz/fuzz_targets/topology.rs`: mutated topology files through
//! `Topology::parse` and `Plan::new` on stable Rust with a fixed seed, plus each input the
//! fuzzer once crashed on. Nothing may panic; every error names a key; accepted impairments
//! write out and read back the same.

#![cfg(test)]

use npt_lab::{Plan, Topology};
use npt_link::Impairments;
use npt_testkit::fuzz::TextMutator;
use rand::{rngs::StdRng, SeedableRng};

const SEED: &str = r#"name = "forwarding-scenarios"
[[node]]
name = "client"
[[node]]
name = "la"
[[node]]
name = "hk"
[[link]]
a = "client"
b = "la"
delay = "76ms"
jitter = "2ms"
loss = "1%"
subnet = "10.0.1.0/24"
mtu = 1500
[link.b_to_a]
delay = "80ms"
rate = "10mbit"
queue = 50
[[link]]
a = "la"
b = "hk"
loss = { model = "gilbert-elliott", p = "1%", r = "30%", bad = "100%", good = "0%" }
duplicate = "0.1%"
reorder = "1%"
[[service]]
node = "hk"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.2.2:7777"
"#;

/// Pieces a mutation may put anywhere: TOML syntax, key names and values that mean something.
const TOKENS: &[&str] = &[
    "\n",
    "=",
    "\"",
    "[",
    "]",
    "[[link]]\n",
    "[[node]]\n",
    "name = \"x\"\n",
    "a = \"hk\"\n",
    "\"\" = 1\n",
    "subnet = \"10.0.0.0/8\"\n",
    "mtu = 575\n",
    "0",
    "9",
    "ms",
    "%",
    "-",
    ".",
    "1h",
    "mbit",
    "queue = 0\n",
    "ready = \"udp://1.2.3.4:0\"\n",
    "a_to_b",
    "client",
];

const MUTATOR: TextMutator = TextMutator {
    tokens: TOKENS,
    max_cut: 12,
    printable: true,
};

/// Runs one file through both steps; `true` when it was planned.
fn check(text: &str) -> bool {
    let topo = match Topology::parse(text, "fuzz") {
        Ok(t) => t,
        Err(e) => {
            assert!(
                !e.key.is_empty() && !e.key.ends_with('.'),
                "{e} for {text:?}"
            );
            return false;
        }
    };
    for l in &topo.links {
        for imp in [&l.a_to_b, &l.b_to_a] {
            let written = toml::to_string(imp).unwrap();
            let back: Impairments = toml::from_str(&written).unwrap();
            assert_eq!(&back, imp, "{written}");
        }
    }
    match Plan::new(&topo) {
        Ok(plan) => {
            for l in &plan.links {
                assert!(l.a_if.len() <= 15 && l.b_if.len() <= 15, "{l:?}");
                assert!(plan.reaches(l.a, l.a_addr) && plan.reaches(l.b, l.b_addr));
            }
            true
        }
        Err(e) => {
            assert!(!e.key.is_empty(), "{e} for {text:?}");
            false
        }
    }
}

#[test]
fn mutated_topologies_never_panic_and_errors_name_a_key() {
    let mut rng = StdRng::seed_from_u64(2026);
    let mut planned = 0;
    // 10,000, not hundreds of thousands: a debug build reads and plans one file in ~0.4 ms.
    for _ in 0..10_000 {
        let mut text = SEED.to_string();
        MUTATOR.mutate(&mut rng, &mut text);
        planned += usize::from(check(&text));
    }
    assert!(planned > 500, "only {planned} mutants were planned");
}

/// fuzz/topology crash: `"" = …` is a legal TOML key, and the unknown-key error named it as
/// the empty string (": unknown key"). The key now shows as `""`.
#[test]
fn fuzz_crash_an_empty_key_is_named() {
    let e = Topology::parse("\"\"=\"orate\"\n#=\"o", "x").unwrap_err();
    assert_eq!(e.key, "\"\"");
    let text = "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n\
                [link.a_to_b]\n\"\" = 1\n";
    let e = Topology::parse(text, "x").unwrap_err();
    assert_eq!(e.key, "link[0].a_to_b.\"\"");
}
