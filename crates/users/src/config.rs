//! The typed configuration of a users run and the parsers for its compact flag forms
//! (`web=95,quic=5`, `100ms..10s`, `1KB..2MB`, `2..8`). Pure code: the CLI maps a
//! [`ConfigError`] to a usage error that names the flag.

use std::net::SocketAddr;
use std::time::Duration;

/// What a simulated user can do in one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Activity {
    Web,
    Quic,
    Download,
    Upload,
    Game,
}

impl Activity {
    pub const ALL: [Activity; 5] = [
        Activity::Web,
        Activity::Quic,
        Activity::Download,
        Activity::Upload,
        Activity::Game,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Activity::Web => "web",
            Activity::Quic => "quic",
            Activity::Download => "download",
            Activity::Upload => "upload",
            Activity::Game => "game",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// The transport the activity's requests travel on.
    pub fn protocol(self) -> Proto {
        match self {
            Activity::Web | Activity::Download | Activity::Upload => Proto::Tcp,
            Activity::Quic => Proto::Quic,
            Activity::Game => Proto::Udp,
        }
    }

    pub fn from_name(s: &str) -> Option<Activity> {
        Activity::ALL.into_iter().find(|a| a.name() == s)
    }
}

/// The transports results are grouped by (NPT's `latency.<proto>` keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Quic,
    Udp,
}

impl Proto {
    pub const ALL: [Proto; 3] = [Proto::Tcp, Proto::Quic, Proto::Udp];

    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Quic => "quic",
            Proto::Udp => "udp",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("empty value")]
    Empty,
    #[error("unknown activity {0:?} (use web, quic, download, upload, game)")]
    UnknownActivity(String),
    #[error("bad weight in {0:?}: expected NAME=NUMBER")]
    BadWeight(String),
    #[error("every weight is zero")]
    AllZero,
    #[error("bad range {0:?}: {1}")]
    BadRange(String, String),
    #[error("bad value {0:?}: {1}")]
    BadValue(String, String),
}

/// Activity weights, indexed by [`Activity::index`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    pub weights: [u32; 5],
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            weights: [95, 5, 0, 0, 0],
        }
    }
}

impl Mix {
    /// Parses `web=95,quic=5`. Activities not named get weight 0.
    pub fn parse(s: &str) -> Result<Mix, ConfigError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ConfigError::Empty);
        }
        let mut weights = [0u32; 5];
        for part in s.split(',') {
            let part = part.trim();
            let (name, w) = part
                .split_once('=')
                .ok_or_else(|| ConfigError::BadWeight(part.to_string()))?;
            let a = Activity::from_name(name.trim())
                .ok_or_else(|| ConfigError::UnknownActivity(name.trim().to_string()))?;
            let w: u32 = w
                .trim()
                .parse()
                .map_err(|_| ConfigError::BadWeight(part.to_string()))?;
            weights[a.index()] = w;
        }
        if weights.iter().all(|&w| w == 0) {
            return Err(ConfigError::AllZero);
        }
        Ok(Mix { weights })
    }

    pub fn weight(&self, a: Activity) -> u32 {
        self.weights[a.index()]
    }

    pub fn total(&self) -> u64 {
        self.weights.iter().map(|&w| w as u64).sum()
    }

    /// `web=95,quic=5`, in activity order, weights > 0 only.
    pub fn to_string_compact(&self) -> String {
        Activity::ALL
            .iter()
            .filter(|a| self.weight(**a) > 0)
            .map(|a| format!("{}={}", a.name(), self.weight(*a)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// An inclusive range `lo..=hi` of integers (byte sizes, counts, nanoseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub lo: u64,
    pub hi: u64,
}

impl Range {
    pub const fn new(lo: u64, hi: u64) -> Range {
        Range { lo, hi }
    }

    /// Parses `A..B` or a single `A` with `one` parsing each bound; `A > B` is an error.
    pub fn parse_with(
        s: &str,
        one: impl Fn(&str) -> Result<u64, String>,
    ) -> Result<Range, ConfigError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ConfigError::Empty);
        }
        let bad = |m: String| ConfigError::BadRange(s.to_string(), m);
        let (lo, hi) = match s.split_once("..") {
            Some((a, b)) => {
                let b = b.strip_prefix('=').unwrap_or(b);
                (one(a.trim()).map_err(bad)?, one(b.trim()).map_err(bad)?)
            }
            None => {
                let v = one(s).map_err(bad)?;
                (v, v)
            }
        };
        if lo > hi {
            return Err(bad("the lower bound is above the upper bound".into()));
        }
        Ok(Range { lo, hi })
    }

    /// Byte sizes: `400`, `2KB`, `4k`, `1.5MB` (K = 1024).
    pub fn parse_size(s: &str) -> Result<Range, ConfigError> {
        Range::parse_with(s, parse_size)
    }

    /// Durations in ns: `100ms..10s`.
    pub fn parse_duration(s: &str) -> Result<Range, ConfigError> {
        Range::parse_with(s, |x| {
            parse_duration(x).map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        })
    }

    /// Plain counts: `2..8`.
    pub fn parse_count(s: &str) -> Result<Range, ConfigError> {
        Range::parse_with(s, |x| {
            x.parse::<u64>()
                .map_err(|_| format!("{x:?} is not a whole number"))
        })
    }
}

/// `400`, `2KB`, `4k`, `64KiB`, `1.5MB`, `1G` → bytes (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad size {s:?}: expected e.g. 400, 2KB, 1.5MB"))?;
    let mul = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        u => return Err(format!("bad size unit {u:?} in {s:?}: use B, KB, MB or GB")),
    };
    let b = v * mul;
    if !b.is_finite() || !(0.0..=1e15).contains(&b) {
        return Err(format!("bad size {s:?}"));
    }
    // NO-PANIC: 0 <= b <= 1e15, checked above.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let bytes = b.round() as u64;
    Ok(bytes)
}

/// `10ms`, `3.5s`, `2m`, `1h`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let split = s
        .find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration {s:?}: expected e.g. 10ms, 3.5s, 2m"))?;
    let secs = match unit {
        "" | "s" | "sec" => v,
        "ns" => v / 1e9,
        "us" | "µs" => v / 1e6,
        "ms" => v / 1e3,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("bad duration unit {unit:?} in {s:?}")),
    };
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("bad duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Web browsing over TCP: per visit `pages`; per page one connection, a handshake-sized
/// exchange, then `rounds` request/response rounds separated by `pause`.
#[derive(Clone, Debug)]
pub struct WebShape {
    pub pages: Range,
    pub rounds: Range,
    pub handshake_up: Range,
    pub handshake_down: Range,
    pub request_up: Range,
    pub request_down: Range,
    pub pause: Range,
}

impl Default for WebShape {
    fn default() -> Self {
        WebShape {
            pages: Range::new(1, 5),
            rounds: Range::new(2, 8),
            handshake_up: Range::new(400, 2000),
            handshake_down: Range::new(2048, 4096),
            request_up: Range::new(1024, 32 * 1024),
            request_down: Range::new(4 * 1024, 2 * 1024 * 1024),
            pause: Range::new(10_000_000, 200_000_000),
        }
    }
}

/// QUIC browsing: one connection per visit, a main document, then `resources` fetched on
/// concurrent bidirectional streams.
#[derive(Clone, Debug)]
pub struct QuicShape {
    pub resources: Range,
    pub doc_up: Range,
    pub doc_down: Range,
    pub resource_up: Range,
    pub resource_down: Range,
}

impl Default for QuicShape {
    fn default() -> Self {
        QuicShape {
            resources: Range::new(2, 16),
            doc_up: Range::new(500, 2000),
            doc_down: Range::new(8 * 1024, 128 * 1024),
            resource_up: Range::new(200, 1000),
            resource_down: Range::new(1024, 256 * 1024),
        }
    }
}

/// One large transfer per session, moved in chunks of `chunk` bytes.
#[derive(Clone, Debug)]
pub struct TransferShape {
    pub download: Range,
    pub upload: Range,
    pub chunk: u64,
}

impl Default for TransferShape {
    fn default() -> Self {
        TransferShape {
            download: Range::new(1 << 20, 16 << 20),
            upload: Range::new(1 << 20, 8 << 20),
            chunk: 64 * 1024,
        }
    }
}

/// Game-like UDP: fixed-size packets at a fixed tick for a session.
#[derive(Clone, Debug)]
pub struct GameShape {
    pub session: Range,
    pub tick_hz: Range,
    pub size: Range,
    pub loss_timeout: Duration,
}

impl Default for GameShape {
    fn default() -> Self {
        GameShape {
            session: Range::new(10_000_000_000, 60_000_000_000),
            tick_hz: Range::new(30, 60),
            size: Range::new(64, 1280),
            loss_timeout: Duration::from_secs(1),
        }
    }
}

/// Closed model (a fixed population of users that think between sessions) or open model
/// (sessions arriving at a fixed rate, each one visit, whatever the server's speed).
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    Users { users: u32, ramp_up: Duration },
    Arrivals { per_sec: f64, max_active: u32 },
}

/// How the user model decides (no addresses, no sockets).
#[derive(Clone, Debug)]
pub struct Shape {
    pub mix: Mix,
    pub think: Range,
    pub web: WebShape,
    pub quic: QuicShape,
    pub transfer: TransferShape,
    pub game: GameShape,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            mix: Mix::default(),
            think: Range::new(100_000_000, 10_000_000_000),
            web: WebShape::default(),
            quic: QuicShape::default(),
            transfer: TransferShape::default(),
            game: GameShape::default(),
        }
    }
}

/// Where the traffic goes.
#[derive(Clone, Debug)]
pub struct Targets {
    /// `npt serve` addresses (TCP and UDP on one port), used round-robin by user number.
    pub stream: Vec<SocketAddr>,
    /// The QUIC responder, if any activity needs it.
    pub quic: Option<SocketAddr>,
    /// Name checked against the QUIC server's certificate.
    pub quic_server_name: String,
    /// `--via`: TCP connections go through this proxy (SOCKS5 or HTTP CONNECT).
    pub via: Option<npt_proxy::Via>,
    /// `--bind`, `--dscp`: the TCP connections and the game's UDP sockets (not QUIC's
    /// endpoint: the command line refuses that).
    pub source: npt_client::source::Source,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_parses_and_rejects() {
        let m = Mix::parse("web=95,quic=5").unwrap();
        assert_eq!(m.weights, [95, 5, 0, 0, 0]);
        assert_eq!(m.to_string_compact(), "web=95,quic=5");
        assert_eq!(Mix::parse(""), Err(ConfigError::Empty));
        assert_eq!(
            Mix::parse("web=1,chat=2"),
            Err(ConfigError::UnknownActivity("chat".into()))
        );
        assert_eq!(Mix::parse("web=0"), Err(ConfigError::AllZero));
        assert!(matches!(Mix::parse("web"), Err(ConfigError::BadWeight(_))));
        assert!(matches!(
            Mix::parse("web=x"),
            Err(ConfigError::BadWeight(_))
        ));
    }

    #[test]
    fn ranges_parse_and_reject() {
        let r = Range::parse_duration("100ms..10s").unwrap();
        assert_eq!((r.lo, r.hi), (100_000_000, 10_000_000_000));
        assert!(matches!(
            Range::parse_duration("5s..1s"),
            Err(ConfigError::BadRange(..))
        ));
        assert!(Range::parse_duration("1s..").is_err());
        assert_eq!(
            Range::parse_size("1KB..2MB").unwrap(),
            Range::new(1024, 2 << 20)
        );
        assert_eq!(Range::parse_size("400").unwrap(), Range::new(400, 400));
        assert_eq!(Range::parse_count("2..=8").unwrap(), Range::new(2, 8));
        assert!(Range::parse_count("2.5..3").is_err());
        assert!(Range::parse_size("3 parsecs").is_err());
        assert_eq!(parse_size("1.5MB").unwrap(), 1_572_864);
    }
}
