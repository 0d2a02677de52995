//! Output files on the command line: every path a subcommand will write a result or a report to
//! (`--json`, `--markdown`, `--html`, `--packets`, `--out-dir`, `-o`) is checked before the run
//! sends anything — a bad one is exit 2 naming its flag — and a result that still cannot be
//! written at the end is kept in a temporary file, said on stderr, exit 1
//! ([`npt_result::save`] has the rules: missing parent directories are not created).
//!
//! [`OutputArgs`] is the one output group every test subcommand flattens: `--json FILE|-`,
//! `--format text|json`, `-q`, with one meaning everywhere and its paths checked here.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::usage;

/// What goes to stdout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    #[default]
    Text,
    Json,
}

/// `--json FILE|-`, `--format`, `-q`: where a test's result goes, the same in every subcommand.
#[derive(Args, Debug, Default, Clone)]
pub struct OutputArgs {
    /// Write the result document (JSON) to FILE, atomically (checked before anything is sent),
    /// or `-` for stdout (the text report then goes to stderr).
    #[arg(long, value_name = "FILE|-")]
    pub json: Option<PathBuf>,
    /// What goes to stdout: a text report, or the JSON result document (then no text at all).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Quiet: no banner and no progress, stage or per-attempt lines; only the report.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl OutputArgs {
    /// The result document's file (`--json FILE`; not `-`).
    pub fn json_file(&self) -> Option<&Path> {
        self.json.as_deref().filter(|p| *p != Path::new("-"))
    }

    /// The result document goes to stdout (`--format json` or `--json -`).
    pub fn json_stdout(&self) -> bool {
        self.format == Format::Json || self.json.as_deref() == Some(Path::new("-"))
    }

    /// Where the text report goes: stdout; stderr with `--json -` (it does not mix with the
    /// document); nowhere with `--format json`.
    pub fn text(&self) -> Sink {
        if self.format == Format::Json {
            Sink::Nowhere
        } else if self.json_stdout() {
            Sink::Stderr
        } else {
            Sink::Stdout
        }
    }
}

/// Where a text report goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sink {
    Stdout,
    Stderr,
    Nowhere,
}

impl Sink {
    /// A writer for text that goes with the report (a header before the run, lines during it).
    pub fn writer(self) -> Box<dyn Write> {
        match self {
            Sink::Stdout => Box::new(std::io::stdout()),
            Sink::Stderr => Box::new(std::io::stderr()),
            Sink::Nowhere => Box::new(std::io::sink()),
        }
    }
}

/// `path`, given as `flag`, can take a result file; else a usage error naming the flag.
pub fn check(flag: &str, path: &Path) -> anyhow::Result<()> {
    npt_result::save::check_writable(path).map_err(|e| usage!("{flag} {}: {e}", path.display()))
}

/// As [`check`], with `-` (stdout) accepted.
pub fn check_or_dash(flag: &str, path: &Path) -> anyhow::Result<()> {
    if path == Path::new("-") {
        return Ok(());
    }
    check(flag, path)
}

/// `--out-dir`: a directory that results and logs are written into, created (with its
/// parents: it is the run's own folder) if missing; else a usage error naming the flag.
pub fn check_dir(flag: &str, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| usage!("{flag} {}: {e}", dir.display()))?;
    check(flag, &dir.join("npt-check"))
}

/// Writes `bytes` to `path` atomically. When that fails the bytes are kept in a temporary
/// file (named after `what`: `probe`, `compare` …) and stderr says where; when even that
/// fails and `dump` is true, the bytes follow on stderr. Returns whether `path` was written.
pub fn save(what: &str, path: &Path, bytes: &[u8], dump: bool) -> bool {
    let Err(kept) = npt_result::save::save(path, bytes, what) else {
        return true;
    };
    eprintln!("npt {what}: {}", kept.message(path));
    if kept.kept.is_err() && dump {
        eprintln!("npt {what}: the result follows on stderr");
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(bytes);
        let _ = err.flush();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_output_group_one_meaning() {
        let o = OutputArgs::default();
        assert_eq!(
            (o.json_file(), o.json_stdout(), o.text()),
            (None, false, Sink::Stdout)
        );
        let o = OutputArgs {
            json: Some("-".into()),
            ..OutputArgs::default()
        };
        assert_eq!(
            (o.json_file(), o.json_stdout(), o.text()),
            (None, true, Sink::Stderr)
        );
        let o = OutputArgs {
            json: Some("r.json".into()),
            format: Format::Json,
            quiet: true,
        };
        assert_eq!(o.json_file(), Some(Path::new("r.json")));
        assert_eq!((o.json_stdout(), o.text()), (true, Sink::Nowhere));
    }

    #[test]
    fn a_bad_path_names_its_flag_and_a_dash_is_stdout() {
        let e = check("--json", Path::new("/nonexistent/x.json")).unwrap_err();
        assert!(e.downcast_ref::<crate::UsageError>().is_some());
        let msg = e.to_string();
        assert!(msg.starts_with("--json /nonexistent/x.json: "), "{msg}");
        assert!(msg.contains("does not exist"), "{msg}");
        check_or_dash("--packets", Path::new("-")).unwrap();
    }

    #[test]
    fn an_out_dir_is_created_with_its_parents() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b");
        check_dir("--out-dir", &out).unwrap();
        assert!(out.is_dir());
        assert_eq!(
            std::fs::read_dir(&out).unwrap().count(),
            0,
            "no probe file left"
        );
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        let msg = check_dir("--out-dir", &file).unwrap_err().to_string();
        assert!(msg.starts_with("--out-dir "), "{msg}");
    }
}
