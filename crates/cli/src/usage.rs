//! Usage errors: a bad flag or config value. They exit with 2 and name what was wrong.

use std::time::Duration;

/// A flag or config value that cannot be used; the message names it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Shorthand: `Err(usage!("--pps must be positive"))`.
#[macro_export]
macro_rules! usage {
    ($($t:tt)*) => { anyhow::Error::new($crate::usage::UsageError(format!($($t)*))) };
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

/// A bit rate given on the command line (`--rate`, `--load-rate`): a number *with* a unit
/// (`20mbit`, `500kbit`, `1gbit`, `100bit`), positive. A bare number is refused: as bits/s it
/// would quietly make `--rate 100` a test at 100 bit/s, which nobody means.
pub fn rate_flag(flag: &str, text: &str) -> anyhow::Result<npt_link::Rate> {
    let t = text.trim();
    if !t.is_empty() && t.parse::<f64>().is_ok() {
        return Err(crate::usage!(
            "{flag} {t}: give a unit, e.g. {t}mbit, {t}kbit or {t}bit (bits per second)"
        ));
    }
    let rate = npt_link::parse_rate(flag, text).map_err(|e| crate::usage!("{e}"))?;
    if rate.as_bits_per_sec() == 0 {
        return Err(crate::usage!("{flag} must be positive, got {text:?}"));
    }
    Ok(rate)
}

/// A TCP congestion control flag (`--congestion`, `--load-congestion`): a name the kernel
/// offers (`/proc/sys/net/ipv4/tcp_available_congestion_control`, when readable), else every
/// stream would fail on its first socket option.
pub fn congestion_flag(flag: &str, name: &str) -> anyhow::Result<String> {
    let path = "/proc/sys/net/ipv4/tcp_available_congestion_control";
    if name.is_empty() {
        return Err(crate::usage!(
            "{flag} must name an algorithm, e.g. cubic or bbr"
        ));
    }
    if let Ok(avail) = std::fs::read_to_string(path) {
        if !avail.split_whitespace().any(|n| n == name) {
            return Err(crate::usage!(
                "{flag} {name:?}: this kernel offers {}",
                avail.trim()
            ));
        }
    }
    Ok(name.to_string())
}

/// A packets-per-second flag: more than 0 and at most `max`.
pub fn pps_flag(flag: &str, pps: f64, max: f64) -> anyhow::Result<f64> {
    if !(pps.is_finite() && pps > 0.0 && pps <= max) {
        return Err(crate::usage!(
            "{flag} {pps}: must be more than 0 and at most {}",
            thousands(max)
        ));
    }
    Ok(pps)
}

/// `10000000` as `10,000,000` (whole numbers; for messages).
fn thousands(v: f64) -> String {
    let digits = format!("{v:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
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

    #[test]
    fn a_rate_needs_its_unit() {
        let e = rate_flag("--rate", "100").unwrap_err().to_string();
        assert!(e.contains("--rate 100: give a unit"), "{e}");
        assert_eq!(
            rate_flag("--rate", "20mbit").unwrap().as_bits_per_sec(),
            20_000_000
        );
        assert_eq!(
            rate_flag("--rate", "100bit").unwrap().as_bits_per_sec(),
            100
        );
        assert!(rate_flag("--rate", "0mbit")
            .unwrap_err()
            .to_string()
            .contains("positive"));
        assert!(rate_flag("--rate", "fast").is_err());
    }

    #[test]
    fn a_congestion_control_must_be_offered() {
        let e = congestion_flag("--congestion", "no-such-cc").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--congestion \"no-such-cc\": this kernel offers"));
        assert!(congestion_flag("--congestion", "").is_err());
        assert_eq!(congestion_flag("--congestion", "cubic").unwrap(), "cubic");
    }

    #[test]
    fn pps_bounds_read_right() {
        let e = pps_flag("--pps", 0.0, 1e7).unwrap_err().to_string();
        assert_eq!(e, "--pps 0: must be more than 0 and at most 10,000,000");
        assert!(pps_flag("--pps", -5.0, 1e7).is_err());
        assert!(pps_flag("--pps", f64::NAN, 1e7).is_err());
        assert_eq!(pps_flag("--pps", 1e7, 1e7).unwrap(), 1e7);
        assert_eq!(thousands(1e6), "1,000,000");
        assert_eq!(thousands(999.0), "999");
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
