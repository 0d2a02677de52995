//! Usage errors: a bad flag or config value. They exit with 2 and name what was wrong.

use std::time::Duration;

/// A flag or config value that cannot be used; the message names it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Shorthand: `Err(usage!("--pps must be positive"))`.
#[macro_export]
macro_rules! usage {
    ($($t:tt)*) => { anyhow::Error::new($crate::UsageError(format!($($t)*))) };
}

/// Parses `10ms`, `3.5s`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return secs_to_duration(secs, s);
    }
    let split = s
        .find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
        .ok_or_else(|| format!("bad duration {s:?}"))?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration {s:?}: expected e.g. 10ms, 3.5s, 2m"))?;
    let secs = match unit {
        "ns" => v / 1e9,
        "us" | "µs" => v / 1e6,
        "ms" => v / 1e3,
        "s" | "sec" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "bad duration unit {unit:?} in {s:?}: use ns, us, ms, s, m or h"
            ))
        }
    };
    secs_to_duration(secs, s)
}

fn secs_to_duration(secs: f64, s: &str) -> Result<Duration, String> {
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("bad duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_duration("3.5s").unwrap(), Duration::from_millis(3500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }
}

/// What the subcommands' unit tests share: a subcommand's flags parsed as clap parses them, and
/// the message of the usage error a refused config gives.
#[cfg(test)]
pub(crate) mod testing {
    use clap::{Args, Command, FromArgMatches};

    /// `args` (flags and operands, without the subcommand's name) parsed as the flags `A`.
    pub fn flags<A: Args + FromArgMatches>(args: &[&str]) -> Result<A, clap::Error> {
        let m = A::augment_args(Command::new("npt"))
            .try_get_matches_from(std::iter::once("npt").chain(args.iter().copied()))?;
        A::from_arg_matches(&m)
    }

    /// The message of the usage error (exit 2) in `r`; panics when `r` is Ok or another error.
    pub fn usage_msg<C>(r: anyhow::Result<C>) -> String {
        let Err(e) = r else { panic!("must be refused") };
        assert!(e.downcast_ref::<crate::UsageError>().is_some(), "{e}");
        e.to_string()
    }
}
