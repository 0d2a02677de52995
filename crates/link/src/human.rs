//! The quantities a person writes in a link table — durations ("50ms"), percentages ("1%")
//! and bit rates ("10mbit") — parsed and formatted so that a file round-trips exactly, and the
//! one error type, which always names the field the bad value was written in.

use std::fmt;
use std::time::Duration;

/// A bad impairment value. Every variant names the field (`delay`, `loss.r`, `rate` …) so the
/// command line can print it and exit 2.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The text does not read as the kind of value the field holds.
    #[error("{field}: cannot read {value:?}: expected {expected}")]
    Unparsable {
        field: String,
        value: String,
        expected: &'static str,
    },
    /// The value reads but is outside what a link can do (negative delay, loss above 100 % …).
    #[error("{field}: {reason}")]
    OutOfRange { field: String, reason: String },
}

impl LinkError {
    /// The field the bad value was written in, as written in the file (`loss.p`, `rate` …).
    pub fn field(&self) -> &str {
        match self {
            LinkError::Unparsable { field, .. } | LinkError::OutOfRange { field, .. } => field,
        }
    }

    pub(crate) fn range(field: &str, reason: impl Into<String>) -> LinkError {
        LinkError::OutOfRange {
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    fn unparsable(field: &str, value: &str, expected: &'static str) -> LinkError {
        LinkError::Unparsable {
            field: field.to_string(),
            value: value.to_string(),
            expected,
        }
    }
}

const DURATION_EXPECTED: &str = "a duration such as \"50ms\", \"2.5ms\", \"500us\" or \"1s\"";
const PERCENT_EXPECTED: &str = "a percentage such as \"1%\" or \"0.5%\"";
const RATE_EXPECTED: &str =
    "a bit rate such as \"10mbit\", \"500kbit\", \"1gbit\", \"64000bps\" or a bare number of bit/s";

/// Reads a duration written for `field`. A leading minus is refused as out of range (a link
/// cannot deliver a packet before it arrives) rather than as unreadable.
pub fn parse_duration(field: &str, text: &str) -> Result<Duration, LinkError> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(LinkError::range(
            field,
            format!("negative duration {text:?}: a link cannot deliver a packet before it arrives"),
        ));
    }
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(t).map_err(|_| LinkError::unparsable(field, text, DURATION_EXPECTED))
}

/// Writes a duration the way [`parse_duration`] reads it back exactly ("50ms", "1s 500us").
pub fn format_duration(d: Duration) -> String {
    if d.is_zero() {
        "0ms".to_string()
    } else {
        humantime::format_duration(d).to_string()
    }
}

/// A probability written as a percentage. Holds the percentage itself (1.0 is 1 %), so the
/// number a person wrote is kept and printed back unchanged. Any finite value is held; the
/// range 0–100 is checked by [`crate::Impairments::validate`], which names the field.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Percent(f64);

impl Percent {
    pub const ZERO: Percent = Percent(0.0);

    /// `percent` in percent: `Percent::new(1.0)` is 1 %.
    pub const fn new(percent: f64) -> Percent {
        Percent(percent)
    }

    /// The value in percent (1.0 for 1 %).
    pub fn percent(self) -> f64 {
        self.0
    }

    /// The probability in 0..=1 (0.01 for 1 %), clamped into that range.
    pub fn fraction(self) -> f64 {
        if self.0.is_nan() {
            0.0
        } else {
            (self.0 / 100.0).clamp(0.0, 1.0)
        }
    }

    pub fn is_zero(self) -> bool {
        self.0 == 0.0
    }

    /// `Ok` when 0 ≤ value ≤ 100 %, else an error naming `field`.
    pub(crate) fn check(self, field: &str) -> Result<(), LinkError> {
        if (0.0..=100.0).contains(&self.0) {
            Ok(())
        } else {
            Err(LinkError::range(
                field,
                format!("{self} is outside 0%..100%"),
            ))
        }
    }
}

impl fmt::Display for Percent {
    /// Rust's shortest round-trip float formatting: "1%" reads back as exactly 1.0.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

/// Reads a percentage written for `field`. The `%` sign is required: a bare `1` could mean
/// 1 % or 100 %, and guessing wrong would silently change the experiment.
pub fn parse_percent(field: &str, text: &str) -> Result<Percent, LinkError> {
    let t = text.trim();
    let number = t
        .strip_suffix('%')
        .ok_or_else(|| LinkError::unparsable(field, text, PERCENT_EXPECTED))?;
    match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Percent(v)),
        _ => Err(LinkError::unparsable(field, text, PERCENT_EXPECTED)),
    }
}

/// A bottleneck rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(u64);

impl Rate {
    pub const fn bits_per_sec(bits: u64) -> Rate {
        Rate(bits)
    }

    pub const fn mbit(m: u64) -> Rate {
        Rate(m * 1_000_000)
    }

    pub fn as_bits_per_sec(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Rate {
    /// The largest unit that divides the rate exactly ("10mbit", "1500kbit", "777bit"), so the
    /// text reads back as the same number of bits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (div, unit) in [
            (1_000_000_000, "gbit"),
            (1_000_000, "mbit"),
            (1_000, "kbit"),
        ] {
            if n != 0 && n.is_multiple_of(div) {
                return write!(f, "{}{unit}", n / div);
            }
        }
        write!(f, "{n}bit")
    }
}

/// Reads a bit rate written for `field`: a number with an optional unit, case-insensitive.
/// `bit`/`bps` = bit/s, `kbit`/`kbps`, `mbit`/`mbps`, `gbit`/`gbps` = 10^3, 10^6, 10^9 bit/s;
/// a bare number is bit/s. Unlike tc, where `kbps` means kilo*bytes* per second, every unit
/// here counts bits: that is what people mean by "10 Mbps" for a link. A fractional result
/// is rounded to the nearest bit/s.
pub fn parse_rate(field: &str, text: &str) -> Result<Rate, LinkError> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let mult: f64 = match unit.trim() {
        "" | "bit" | "bps" => 1.0,
        "kbit" | "kbps" => 1e3,
        "mbit" | "mbps" => 1e6,
        "gbit" | "gbps" => 1e9,
        _ => return Err(LinkError::unparsable(field, text, RATE_EXPECTED)),
    };
    let v: f64 = number
        .trim()
        .parse()
        .map_err(|_| LinkError::unparsable(field, text, RATE_EXPECTED))?;
    if !v.is_finite() {
        return Err(LinkError::unparsable(field, text, RATE_EXPECTED));
    }
    let bits = v * mult;
    if bits < 0.0 {
        return Err(LinkError::range(field, format!("negative rate {text:?}")));
    }
    if bits >= u64::MAX as f64 {
        return Err(LinkError::range(
            field,
            format!("rate {text:?} is too large"),
        ));
    }
    // NO-PANIC: 0 <= bits < 2^64, checked above.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let bits = bits.round() as u64;
    Ok(Rate(bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_round_trip() {
        assert_eq!(
            parse_duration("delay", "50ms").unwrap(),
            Duration::from_millis(50)
        );
        assert_eq!(
            parse_duration("delay", "2.5ms").unwrap(),
            Duration::from_micros(2500)
        );
        assert_eq!(parse_duration("delay", " 0 ").unwrap(), Duration::ZERO);
        for d in [
            Duration::ZERO,
            Duration::from_millis(50),
            Duration::from_micros(1_500_250),
            Duration::from_nanos(7),
        ] {
            assert_eq!(parse_duration("delay", &format_duration(d)).unwrap(), d);
        }
        let e = parse_duration("jitter", "-5ms").unwrap_err();
        assert_eq!(e.field(), "jitter");
        assert!(e.to_string().contains("negative"), "{e}");
        let e = parse_duration("delay", "fast").unwrap_err();
        assert!(matches!(e, LinkError::Unparsable { .. }));
        assert!(e.to_string().starts_with("delay: "), "{e}");
    }

    #[test]
    fn percents_need_the_sign_and_round_trip() {
        assert_eq!(parse_percent("loss", "1%").unwrap(), Percent::new(1.0));
        assert_eq!(parse_percent("loss", "0.5 %").unwrap().fraction(), 0.005);
        assert_eq!(parse_percent("loss", "150%").unwrap().percent(), 150.0);
        assert!(parse_percent("loss", "1").is_err());
        assert!(parse_percent("loss", "NaN%").is_err());
        assert!(parse_percent("loss", "%").is_err());
        for p in [0.0, 1.0, 0.1, 33.333, 100.0] {
            let text = Percent::new(p).to_string();
            assert_eq!(
                parse_percent("x", &text).unwrap(),
                Percent::new(p),
                "{text}"
            );
        }
        assert_eq!(Percent::new(250.0).fraction(), 1.0);
        assert_eq!(Percent::new(-3.0).fraction(), 0.0);
    }

    #[test]
    fn rates_in_every_unit() {
        let r = |s: &str| parse_rate("rate", s).unwrap().as_bits_per_sec();
        assert_eq!(r("10mbit"), 10_000_000);
        assert_eq!(r("10Mbit"), 10_000_000);
        assert_eq!(r("10mbps"), 10_000_000);
        assert_eq!(r("1.5mbit"), 1_500_000);
        assert_eq!(r("500kbit"), 500_000);
        assert_eq!(r("1gbit"), 1_000_000_000);
        assert_eq!(r("64000bps"), 64_000);
        assert_eq!(r("64000"), 64_000);
        assert_eq!(r("1e6"), 1_000_000);
        for bad in ["fast", "10 furlongs", "mbit", "", "10xbit"] {
            let e = parse_rate("rate", bad).unwrap_err();
            assert_eq!(e.field(), "rate");
            assert!(e.to_string().starts_with("rate: cannot read"), "{e}");
        }
        assert!(matches!(
            parse_rate("rate", "-1mbit"),
            Err(LinkError::OutOfRange { .. })
        ));
        for bits in [1, 999, 1_500_000, 10_000_000, 2_000_000_000, 1_234_567] {
            let text = Rate::bits_per_sec(bits).to_string();
            assert_eq!(r(&text), bits, "{text}");
        }
    }
}
