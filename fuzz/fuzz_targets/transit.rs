//! Fuzz target: the lab's transit matcher (`npt_lab::transit`) fed whatever the bytes say, as
//! an IP packet a node's TUN device handed over. Nothing may panic; what reads as a UDP
//! datagram has its payload inside the packet; a packet delivered into a node and read back
//! out unchanged is matched exactly when it is a datagram not addressed back to its source.
//! Run: `cargo +nightly fuzz run transit` from the repository root (needs cargo-fuzz).
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use npt_lab::transit::{datagram, Transit};

fuzz_target!(|data: &[u8]| {
    let d = datagram(data);
    if let Some(d) = &d {
        let (start, end) = (data.as_ptr() as usize, data.as_ptr() as usize + data.len());
        let p = d.payload.as_ptr() as usize;
        assert!(p >= start && p + d.payload.len() <= end);
    }
    let t0 = Instant::now();
    let mut t = Transit::default();
    t.delivered(t0, data, 0);
    let took = t.sent(t0 + Duration::from_micros(5), data, 1);
    assert_eq!(took.is_some(), d.is_some_and(|d| d.src != d.dst));
});
