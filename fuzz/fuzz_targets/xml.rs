//! Fuzz target: the line tester's XML config (`npt probe --config`) as any file could hold it. A bad
//! file is an error that names what is wrong, never a panic, and a config that parses holds
//! only values a probe can run with.
//! Run: `cargo fuzz run xml` from fuzz/ (needs cargo-fuzz; see bench/fuzz.sh).
#![no_main]

use libfuzzer_sys::fuzz_target;
use npt_probe::xml::{parse, XmlError, XmlPacing};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse(text) {
        Ok(c) => {
            assert!(c.clients >= 1 && c.threads_per_client >= 1 && c.port >= 1);
            assert!(!c.host.is_empty());
            if let XmlPacing::OnSend { maxpps } = c.pacing {
                assert!(maxpps.is_finite() && maxpps > 0.0, "maxpps {maxpps}");
            }
        }
        Err(e) => {
            let msg = e.to_string();
            match &e {
                XmlError::MissingElement(el) => assert!(msg.contains(&format!("<{el}>"))),
                XmlError::MissingAttr { element, attr }
                | XmlError::BadValue { element, attr, .. } => {
                    assert!(msg.contains(element) && msg.contains(attr), "{msg}")
                }
                XmlError::Syntax(_) | XmlError::Root(_) => assert!(msg.starts_with("config")),
            }
        }
    }
});
