//! The npt result document: one self-describing JSON value per run, the types of every
//! workload's body, the error vocabulary they count under, the interval series, and the atomic
//! writer. Engines write it and readers (`npt-report`'s renderers, compare and merge) read it;
//! it depends on `npt-stats`, serde and schemars only, so no engine depends on a renderer.
//!
//! The envelope (schema, kind, tool, host, times, config) is shared by every subcommand; the
//! body is per kind (see [`probe`], [`run`], [`http`], [`ping`], [`bulk`], [`trace`], [`lifetime`], [`mtu`], [`setup`]; the
//! registry of kinds is [`kinds`]), and [`any`] reads any of them as one type
//! ([`any::AnyBody`], which lends what every kind answers as a [`body::View`]). Types derive
//! `Deserialize` as well as `Serialize` so a saved result can be rendered again or merged
//! without re-running anything.
//! The blocks every kind shares are in [`common`] and [`health`]; each kind's measurements are
//! a value that adds, and the one function that makes its body from them is in [`stats`].
//! Types also derive `JsonSchema`, from which the checked-in `schema/<kind>.schema.json` are
//! generated ([`schema`]). [`workload`] is the contract an engine keeps with the command line:
//! run with a config and a stop control, report intervals, return a body.

pub mod any;
pub mod body;
pub mod bulk;
pub mod common;
pub mod directions;
pub mod error;
pub mod far_end;
pub mod health;
pub mod http;
pub mod interval;
pub mod kinds;
pub mod lifetime;
pub mod marking;
pub mod mtu;
pub mod packets;
pub mod ping;
pub mod probe;
pub mod run;
pub mod save;
pub mod schema;
pub mod series;
pub mod setup;
pub mod stats;
pub mod stop;
pub mod tcpinfo;
pub mod trace;
pub mod under_load;
pub mod workload;

pub use common::loss_pct;
pub use health::Health;
pub use kinds::Kind;
pub use stats::Stats;
pub use stop::StopReason;

use std::io::{self, Write};
use std::path::Path;
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use npt_stats::{ErrorCounts, SerializedHistogram, Summary};

/// Version string of the result document's layout; bumped on incompatible changes. v2 made
/// the interval records one type ([`interval::Interval`]) and `histograms` one flat map of
/// dotted names in every kind; v1 files are still read ([`result::READABLE`]).
pub const SCHEMA: &str = "npt.result.v2";

/// The schema before v2, still read (converted on read, [`result::from_value`]).
pub const SCHEMA_V1: &str = "npt.result.v1";

/// Serialized HDR histograms (ns) by dotted name (`rtt`, `proto.tcp.latency`, `hosts.a.test` …).
pub type Histograms = std::collections::BTreeMap<String, SerializedHistogram>;

/// One result document: the envelope every kind shares, then the body of its kind.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Document<B> {
    /// The layout's version, `npt.result.v2` ([`SCHEMA`]; v1 files are read, not written).
    #[schemars(extend("const" = SCHEMA))]
    pub schema: String,
    /// The workload: `probe`, `run`, `http`, `ping`, `bulk`, `trace`, `lifetime`, `mtu` or `setup` (a kind's body `KIND`).
    pub kind: String,
    pub tool: Tool,
    /// The machine that measured.
    pub host: Host,
    /// Wall-clock start, RFC 3339 (a label; intervals are timed on the monotonic clock).
    #[schemars(extend("format" = "date-time"))]
    pub started_at: String,
    #[schemars(extend("format" = "date-time"))]
    pub ended_at: String,
    pub duration_s: f64,
    /// Why the run ended ([`StopReason`]).
    #[schemars(description = "Why the run ended.")]
    pub stopped_by: StopReason,
    /// The effective configuration, after config files and flags (its fields per subcommand:
    /// docs/result-json.md).
    #[schemars(extend("type" = "object"))]
    pub config: serde_json::Value,
    #[serde(flatten)]
    pub body: B,
}

impl<B> Document<B> {
    /// The same document with its body made another type (a kind's body as the one result
    /// type of `any`, say); the envelope is kept as it is.
    pub fn map_body<C>(self, f: impl FnOnce(B) -> C) -> Document<C> {
        Document {
            schema: self.schema,
            kind: self.kind,
            tool: self.tool,
            host: self.host,
            started_at: self.started_at,
            ended_at: self.ended_at,
            duration_s: self.duration_s,
            stopped_by: self.stopped_by,
            config: self.config,
            body: f(self.body),
        }
    }
}

impl<B: Serialize> Document<B> {
    pub fn new(
        kind: &str,
        started: SystemTime,
        ended: SystemTime,
        stopped_by: StopReason,
        config: serde_json::Value,
        body: B,
    ) -> Document<B> {
        Document {
            schema: SCHEMA.to_string(),
            kind: kind.to_string(),
            tool: Tool::this(),
            host: Host::this(),
            started_at: rfc3339(started),
            ended_at: rfc3339(ended),
            duration_s: ended
                .duration_since(started)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
            stopped_by,
            config,
            body,
        }
    }

    // NO-PANIC: every field is a number, string, list or string-keyed map (JSON values
    // included), which serde_json writes into a `Vec` without fail.
    #[allow(clippy::expect_used)]
    pub fn to_json_pretty(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("result documents always serialize");
        v.push(b'\n');
        v
    }
}

/// The program that wrote the document.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Tool {
    #[schemars(extend("const" = "npt"))]
    pub name: String,
    pub version: String,
}

impl Tool {
    pub fn this() -> Tool {
        Tool {
            name: "npt".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Host {
    pub hostname: String,
    pub os: String,
    pub arch: String,
    #[schemars(range(min = 1))]
    pub cpus: usize,
}

impl Host {
    pub fn this() -> Host {
        Host {
            hostname: hostname(),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            cpus: cpus(),
        }
    }
}

/// The CPUs this process may use, read once: `available_parallelism` opens the cgroup's
/// files each time, and a monitor writes a thousand documents a second (it was a tenth of the
/// monitor's CPU). A process's CPU quota is fixed for its life in practice.
pub fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".to_string();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// User and system CPU seconds this process has used so far.
pub fn cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Peak resident set size of this process in bytes.
///
/// Read from `/proc/self/status` (`VmHWM`) where it exists: `getrusage`'s `ru_maxrss` survives
/// `exec`, so under `cargo run` it reported cargo's own peak (63 MiB instead of 9).
pub fn max_rss_bytes() -> u64 {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        let hwm = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
        if let Some(kib) = hwm {
            return kib * 1024;
        }
    }
    // SAFETY: getrusage fills the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return 0;
    }
    u64::try_from(ru.ru_maxrss).unwrap_or(0) * 1024
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to
/// disk, then renamed over the target. A reader never sees half a result.
///
/// Only a regular file (or a new name) is replaced that way. A path that is something else —
/// `/dev/null`, `/dev/stdout`, a FIFO a script reads from — is written into as it is: renaming
/// over it would replace the device or pipe with a plain file (as root, `--json /dev/null`
/// would have turned the machine's `/dev/null` into a file). A symbolic link is followed, so
/// the file it points to is replaced and the link stays.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if !m.file_type().is_file() => {
            let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
            return f.write_all(bytes);
        }
        _ => {}
    }
    let resolved;
    let path = if path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        resolved = std::fs::canonicalize(path)?;
        resolved.as_path()
    } else {
        path
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "result path has no file name")
    })?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn a_pipe_is_written_into_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomic(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(kind.is_fifo(), "still a FIFO, not a file put in its place");
    }

    #[test]
    fn a_link_is_followed_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
    }

    #[test]
    fn peak_rss_is_plausible() {
        let rss = max_rss_bytes();
        assert!(rss > 100 * 1024 && rss < 64 << 30, "{rss}");
    }

    #[test]
    fn atomic_write_into_missing_dir_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nope/r.json");
        assert!(write_atomic(&p, b"x").is_err());
    }
}
