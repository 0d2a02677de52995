//! The timing group: when attempts go and how long each waits (`-i/--interval`,
//! `-W/--timeout`, `npt ping` and `npt trace` alike), and the one check of a duration flag
//! that must be positive (`bulk`'s too).

use std::time::Duration;

use clap::Args;

use crate::usage;
use crate::usage::parse_duration;

/// When attempts go and how long each waits: `npt ping` and `npt trace` alike.
#[derive(Args, Debug)]
pub struct AttemptTiming {
    /// Time between attempts (e.g. 200ms, 1s).
    #[arg(
        long,
        short = 'i',
        value_name = "DUR",
        default_value = "1s",
        allow_hyphen_values = true
    )]
    pub interval: String,
    /// How long one attempt waits for its answer.
    #[arg(
        long,
        short = 'W',
        value_name = "DUR",
        default_value = "1s",
        allow_hyphen_values = true
    )]
    pub timeout: String,
}

impl AttemptTiming {
    /// The interval and the timeout, each positive (an error names its flag).
    pub fn durations(&self) -> anyhow::Result<(Duration, Duration)> {
        Ok((
            positive("--interval", &self.interval)?,
            positive("--timeout", &self.timeout)?,
        ))
    }
}

/// A duration flag that must be positive: exit 2 naming `flag` otherwise.
pub fn positive(flag: &str, s: &str) -> anyhow::Result<Duration> {
    let d = parse_duration(s).map_err(|e| usage!("{flag} {s:?}: {e}"))?;
    if d.is_zero() {
        return Err(usage!("{flag} must be positive, got {s:?}"));
    }
    Ok(d)
}
