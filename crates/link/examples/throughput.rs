//! How fast the emulator core decides: pushes and pops a few million 64-byte packets through
//! a link with every impairment set, on a virtual clock, and prints ns per packet. The runtime
//! must move ≥ 75,000 packets/s per link (13 µs a packet); this shows how little of that
//! budget the core uses.
//!
//! Run: `cargo run --release -p npt-link --example throughput`

use std::time::{Duration, Instant};

use npt_link::{Impairments, Link};

fn main() -> Result<(), toml::de::Error> {
    let cases = [
        ("passthrough", ""),
        ("delay 20ms", "delay = \"20ms\""),
        (
            "everything",
            "delay = \"20ms\"\njitter = \"2ms\"\nloss = \"1%\"\nduplicate = \"1%\"\n\
             reorder = \"1%\"\nrate = \"1gbit\"\nqueue = 1000",
        ),
    ];
    let n: u32 = 3_000_000;
    for (name, table) in cases {
        let imp: Impairments = toml::from_str(table)?;
        let mut link = Link::new(&imp, 1);
        let t0 = Instant::now();
        let start = Instant::now();
        let mut out = 0u64;
        for i in 0..n {
            // 1,000,000 packets/s of virtual time.
            let now = t0 + Duration::from_micros(i as u64);
            link.push(now, [0u8; 64], 64);
            while let Some((_, due)) = link.pop_due(now) {
                link.record_release(due, now);
                out += 1;
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "{name:12} {ns:6.1} ns/packet  ({out} released, {} held)",
            link.held()
        );
    }
    Ok(())
}
