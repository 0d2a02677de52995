//! Fuzz target: the impairment strings of a lab link — durations, percentages, bit rates —
//! through their parsers, and a whole impairment table through its TOML reader; then a link
//! built from an accepted table carries a few packets on a virtual clock. Whatever a file
//! says, the result is a value that writes back as text reading the same, or an error naming
//! the field; the link never panics.
//! Run: `cargo fuzz run link` from fuzz/ (needs cargo-fuzz; see bench/fuzz.sh).
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use npt_link::{
    format_duration, parse_duration, parse_percent, parse_rate, Impairments, Link, LinkError,
    Verdict,
};

fn names_field(r: Result<(), LinkError>, field: &str) {
    if let Err(e) = r {
        assert_eq!(e.field(), field);
        assert!(e.to_string().starts_with(&format!("{field}: ")), "{e}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    names_field(
        parse_duration("delay", text).map(|d| {
            assert_eq!(
                parse_duration("delay", &format_duration(d)).unwrap(),
                d,
                "{text:?}"
            );
        }),
        "delay",
    );
    names_field(
        parse_percent("loss.p", text).map(|p| {
            assert_eq!(
                parse_percent("loss.p", &p.to_string()).unwrap(),
                p,
                "{text:?}"
            );
        }),
        "loss.p",
    );
    names_field(
        parse_rate("rate", text).map(|r| {
            assert_eq!(parse_rate("rate", &r.to_string()).unwrap(), r, "{text:?}");
        }),
        "rate",
    );

    let Ok(imp) = toml::from_str::<Impairments>(text) else {
        return;
    };
    imp.validate().unwrap();
    let written = toml::to_string(&imp).unwrap();
    assert_eq!(
        toml::from_str::<Impairments>(&written).unwrap(),
        imp,
        "{written}"
    );

    // A few packets, sized and spaced by the input's bytes, on a virtual clock.
    let mut link = Link::new(&imp, data.first().map_or(0, |&b| u64::from(b)));
    let t0 = Instant::now();
    let mut now = t0;
    for (i, &b) in data.iter().take(64).enumerate() {
        now += Duration::from_micros(u64::from(b) * 37);
        let len = 20 + usize::from(b) * 5;
        if let Verdict::Queued { due, .. } = link.push(now, vec![0u8; len], len) {
            assert!(due >= now, "packet {i} due before it arrived");
        }
        if b & 1 == 0 {
            while let Some((_, due)) = link.pop_due(now) {
                assert!(due <= now);
                link.record_release(due, now);
            }
        }
    }
    while let Some(due) = link.next_due() {
        assert!(due >= t0);
        while let Some((_, d)) = link.pop_due(due) {
            link.record_release(d, due);
        }
    }
    let _ = link.stats().summary();
});
