//! A config's values read and checked, every error naming its key (`target[2].every: …`):
//! the error every section of the file returns ([`ConfigError`]) and the readers of the values
//! they share (durations, byte counts). It sits below the sections (config, alert, notify) so
//! none of them imports another for it.

use std::time::Duration;

/// What is wrong with a config; the message names the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Toml(String),
    #[error("{key}: {msg}")]
    Invalid { key: String, msg: String },
}

pub(crate) fn invalid(key: impl Into<String>, msg: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        msg: msg.into(),
    }
}

/// Parses a duration as the monitor's files write them: `500ms`, `10s`, `5m`, `2h`, `14d`, `1y`.
pub fn duration(key: &str, s: &str) -> Result<Duration, ConfigError> {
    humantime::parse_duration(s.trim())
        .map_err(|e| invalid(key, format!("{s:?}: {e} (e.g. 500ms, 10s, 5m, 2h, 14d)")))
}

pub(crate) fn positive(key: &str, s: &str) -> Result<Duration, ConfigError> {
    let d = duration(key, s)?;
    if d.is_zero() {
        return Err(invalid(key, "must be above 0"));
    }
    Ok(d)
}

/// Parses a byte count: `500`, `20kB`, `2MB`, `1.5GB`, `1TB` (powers of 1000), or `MiB`/`GiB`.
pub fn bytes(key: &str, s: &str) -> Result<u64, ConfigError> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| invalid(key, format!("{s:?}: expected a byte count such as 2GB")))?;
    let scale = match unit.trim() {
        "" | "B" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        u => {
            return Err(invalid(
                key,
                format!("{s:?}: unit {u:?} is not B, kB, MB, GB, TB, KiB, MiB or GiB"),
            ))
        }
    };
    let b = v * scale;
    if !b.is_finite() || !(1.0..=1e18).contains(&b) {
        return Err(invalid(key, format!("{s:?}: must be at least 1 byte")));
    }
    // NO-PANIC: checked finite and within 1..=1e18 just above, which a u64 holds.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(b as u64)
}
