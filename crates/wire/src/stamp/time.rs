//! STAMP's clock fields: 64-bit timestamps (NTP, or PTPv2 truncated) and the 16-bit Error
//! Estimate that says which format a timestamp is in and how far off its clock may be.
//!
//! NTP timestamp (RFC 5905 §6), seconds since 1900-01-01 and a binary fraction of a second:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |                 seconds since 1900 (mod 2^32)                 |
//! +---------------------------------------------------------------+
//! |                 fraction of a second (2^-32 s)                |
//! +---------------------------------------------------------------+
//! ```
//!
//! PTPv2 truncated (RFC 8762 §4.2.1, Z = 1): seconds since 1970-01-01, then nanoseconds.
//! npt sends NTP and reads both; a PTP timestamp is taken as UTC, as the peers npt was tested
//! with write it (a peer on TAI is off by the TAI-UTC offset: docs/stamp.md).
//!
//! Error Estimate (RFC 4656 §4.1.2, with RFC 8762 §4.2.1's Z bit):
//!
//! ```text
//!  0                   1
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |S|Z|   Scale   |   Multiplier  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! S: the clock is synchronized to UTC by an external source. Z: 0 = NTP timestamps, 1 = PTP.
//! The error is `Multiplier * 2^Scale * 2^-32` seconds; a Multiplier of 0 is not allowed.

/// Seconds from 1900-01-01 (NTP's epoch) to 1970-01-01 (Unix's).
pub const NTP_UNIX_OFFSET_S: u64 = 2_208_988_800;
const NS: u128 = 1_000_000_000;

/// Unix time in ns as an NTP timestamp, rounded to the nearest 2^-32 s. The seconds wrap
/// modulo 2^32 (NTP era 1 begins in 2036); [`ntp_to_unix_ns`] undoes it.
pub fn unix_ns_to_ntp(unix_ns: u64) -> u64 {
    let ns = u128::from(unix_ns);
    let secs = ns / NS + u128::from(NTP_UNIX_OFFSET_S);
    // Fraction rounded to nearest; a carry into the seconds is added, not lost.
    let frac = ((ns % NS) << 32).div_euclid(NS) + u128::from(((ns % NS) << 32) % NS >= NS / 2);
    let whole = (secs << 32) + frac;
    // Modulo 2^64 is modulo 2^32 seconds: the era is not on the wire.
    u64::try_from(whole & u128::from(u64::MAX)).unwrap_or(0)
}

/// An NTP timestamp as Unix ns, rounded to the nearest ns. Era per RFC 4330 §3: seconds with
/// the top bit set are 1968–2036, the others 2036–2104. Times before 1970 read as 0.
pub fn ntp_to_unix_ns(ntp: u64) -> u64 {
    let secs = u128::from(ntp >> 32);
    let frac = u128::from(ntp & 0xFFFF_FFFF);
    let era_secs = if secs & 0x8000_0000 != 0 {
        secs
    } else {
        secs + (1u128 << 32)
    };
    let Some(unix_s) = era_secs.checked_sub(u128::from(NTP_UNIX_OFFSET_S)) else {
        return 0;
    };
    let ns = unix_s * NS + ((frac * NS + (1 << 31)) >> 32);
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// Unix time in ns as a PTPv2 truncated timestamp (seconds, nanoseconds).
pub fn unix_ns_to_ptp(unix_ns: u64) -> u64 {
    let secs = (unix_ns / 1_000_000_000) & 0xFFFF_FFFF;
    (secs << 32) | (unix_ns % 1_000_000_000)
}

/// A PTPv2 truncated timestamp as Unix ns; None when the nanoseconds are not below 10^9.
pub fn ptp_to_unix_ns(ptp: u64) -> Option<u64> {
    let nanos = ptp & 0xFFFF_FFFF;
    if nanos >= 1_000_000_000 {
        return None;
    }
    (ptp >> 32).checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// The Error Estimate field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ErrorEstimate {
    /// S: synchronized to UTC by an external source.
    pub synced: bool,
    /// Z: the timestamps beside it are PTPv2 truncated (else NTP).
    pub ptp: bool,
    /// 6 bits.
    pub scale: u8,
    /// Never 0 in a valid estimate.
    pub multiplier: u8,
}

impl ErrorEstimate {
    pub fn from_u16(v: u16) -> ErrorEstimate {
        let [hi, lo] = v.to_be_bytes();
        ErrorEstimate {
            synced: hi & 0x80 != 0,
            ptp: hi & 0x40 != 0,
            scale: hi & 0x3F,
            multiplier: lo,
        }
    }

    pub fn to_u16(self) -> u16 {
        let hi = (u8::from(self.synced) << 7) | (u8::from(self.ptp) << 6) | (self.scale & 0x3F);
        u16::from_be_bytes([hi, self.multiplier])
    }

    /// The smallest NTP-format estimate that is at least `ns` (at least 1 unit: the
    /// multiplier may not be 0).
    pub fn from_ns(ns: u64, synced: bool) -> ErrorEstimate {
        // In units of 2^-32 s, rounded up.
        let units = (u128::from(ns) << 32).div_ceil(NS).max(1);
        let mut scale = 0u8;
        while scale < 63 && units.div_ceil(1u128 << scale) > 255 {
            scale += 1;
        }
        let m = units.div_ceil(1u128 << scale).clamp(1, 255);
        ErrorEstimate {
            synced,
            ptp: false,
            scale,
            multiplier: u8::try_from(m).unwrap_or(u8::MAX),
        }
    }

    /// What a host's clock deserves, from what the kernel says of it (`adjtimex`): when a
    /// daemon keeps it synchronized, S set and its estimated error, at least 1 µs (the
    /// software time-stamping npt does is no finer); when not, S clear and its maximum error
    /// (16 s on Linux for a clock nothing synchronizes), at least 1 µs too. The error is
    /// against UTC: two timestamps of one clock (the same host) differ far more exactly.
    pub fn of_clock(synced: bool, est_error_ns: u64, max_error_ns: u64) -> ErrorEstimate {
        let ns = if synced { est_error_ns } else { max_error_ns };
        ErrorEstimate::from_ns(ns.max(1_000), synced)
    }

    /// The error in ns (None for a multiplier of 0, which RFC 4656 forbids).
    pub fn ns(self) -> Option<f64> {
        if self.multiplier == 0 {
            return None;
        }
        let secs = f64::from(self.multiplier) * 2f64.powi(i32::from(self.scale) - 32);
        Some(secs * 1e9)
    }

    /// A timestamp written beside this estimate, as Unix ns (None: not a valid PTP time).
    pub fn to_unix_ns(self, ts: u64) -> Option<u64> {
        if self.ptp {
            ptp_to_unix_ns(ts)
        } else {
            Some(ntp_to_unix_ns(ts))
        }
    }
}
