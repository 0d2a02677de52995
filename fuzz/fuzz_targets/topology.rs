//! Fuzz target: the `npt lab` topology file, read and checked (`Topology::parse`) and then
//! planned into addresses and routes (`Plan::new`). A bad file is an error naming its key,
//! never a panic, and each link's impairments that were accepted write out and read back the
//! same.
//! Run: `cargo fuzz run topology` from fuzz/ (needs cargo-fuzz; see bench/fuzz.sh).
#![no_main]

use libfuzzer_sys::fuzz_target;
use npt_lab::{Plan, Topology};
use npt_link::Impairments;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let topo = match Topology::parse(text, "fuzz") {
        Ok(t) => t,
        Err(e) => {
            assert!(
                !e.key.is_empty() && !e.key.ends_with('.'),
                "an error names its key: {e}"
            );
            return;
        }
    };
    for l in &topo.links {
        for imp in [&l.a_to_b, &l.b_to_a] {
            imp.validate().unwrap();
            let written = toml::to_string(imp).unwrap();
            let back: Impairments = toml::from_str(&written).unwrap();
            assert_eq!(&back, imp, "{written}");
        }
    }
    match Plan::new(&topo) {
        Ok(plan) => {
            assert_eq!(plan.nodes.len(), topo.nodes.len());
            for l in &plan.links {
                assert!(l.a_if.len() <= 15 && l.b_if.len() <= 15, "{l:?}");
                assert!(plan.reaches(l.a, l.a_addr) && plan.reaches(l.b, l.b_addr));
            }
        }
        Err(e) => assert!(!e.key.is_empty(), "an error names its key: {e}"),
    }
});
