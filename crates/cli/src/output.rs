//! Output files on the command line: every path a subcommand will write a result or a report to
//! (`--json`, `--markdown`, `--html`, `--packets`, `--out-dir`, `-o`) is checked before the run
//! sends anything — a bad one is exit 2 naming its flag — and a result that still cannot be
//! written at the end is kept in a temporary file, said on stderr, exit 1
//! ([`npt_result::save`] has the rules: missing parent directories are not created).

use std::io::Write;
use std::path::Path;

use crate::usage;

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
