//! Nothing lost: a result path is checked before a run starts, and a result that still cannot
//! be written where it was asked (the directory went away, the disk filled up, permissions
//! changed during the run) is kept in a temporary file instead of being dropped.
//!
//! [`check_writable`] is what every subcommand asks of its output paths (`--json`, `--html`,
//! `--packets` …) before it sends anything: the file can be created or replaced the way
//! [`crate::write_atomic`] writes it. Missing parent directories are *not* created (as iperf3
//! and curl do not): a typo in a directory name is an error, not a new directory.
//! [`save`] writes atomically and, when that fails, puts the bytes in the system's temporary
//! directory and says where ([`Kept`]).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Whether `path` can take a result file: an existing regular file in a directory this process
/// can create files in, a new name in such a directory, or something that is written into as it
/// is (`/dev/null`, a FIFO). The error says what is wrong in words a user can act on.
pub fn check_writable(path: &Path) -> io::Result<()> {
    if path.as_os_str().is_empty() {
        return Err(invalid("an empty path"));
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{} is a directory", path.display()),
        )),
        // A device or a pipe is written into, not replaced (see write_atomic).
        Ok(m) if !m.file_type().is_file() => Ok(()),
        Ok(_) => dir_accepts_files(&parent_of(&std::fs::canonicalize(path)?)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if path.symlink_metadata().is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "{} is a symbolic link to a path that does not exist",
                        path.display()
                    ),
                ));
            }
            if path.file_name().is_none() {
                return Err(invalid(&format!("{} names no file", path.display())));
            }
            let dir = parent_of(path);
            match std::fs::metadata(&dir) {
                Ok(m) if m.is_dir() => dir_accepts_files(&dir),
                Ok(_) => Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("{} is not a directory", dir.display()),
                )),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "directory {} does not exist (npt does not create it)",
                        dir.display()
                    ),
                )),
                Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
            }
        }
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
}

/// The directory a path's file goes in (`.` for a bare name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}

/// Creates and removes a file in `dir`: the one test that answers for permissions, read-only
/// mounts and root alike (`access(2)` says yes to root where a write would still fail).
fn dir_accepts_files(dir: &Path) -> io::Result<()> {
    match tempfile::Builder::new()
        .prefix(".npt-check-")
        .tempfile_in(dir)
    {
        Ok(f) => f.close(),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot create files in {}: {e}", dir.display()),
        )),
    }
}

/// A result that could not be written where it was asked, and where it is instead.
#[derive(Debug)]
pub struct Kept {
    /// Why the write failed.
    pub error: io::Error,
    /// The temporary file that holds the result, or why that failed too.
    pub kept: io::Result<PathBuf>,
}

impl Kept {
    /// One line for stderr: what failed, and where the result is.
    pub fn message(&self, path: &Path) -> String {
        match &self.kept {
            Ok(tmp) => format!(
                "cannot write {}: {}; the result is kept in {}",
                path.display(),
                self.error,
                tmp.display()
            ),
            Err(e) => format!(
                "cannot write {}: {}; nor a temporary file ({e})",
                path.display(),
                self.error
            ),
        }
    }
}

/// Writes `bytes` to `path` atomically; when that fails, to a new file in the temporary
/// directory named after `stem` and `path`'s extension (`npt-probe-….json`), returned in the
/// error so the caller says where.
pub fn save(path: &Path, bytes: &[u8], stem: &str) -> Result<(), Kept> {
    let error = match crate::write_atomic(path, bytes) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let ext = path
        .extension()
        .map_or_else(|| "out".to_string(), |e| e.to_string_lossy().into_owned());
    let kept = keep_in(&std::env::temp_dir(), bytes, stem, &ext);
    Err(Kept { error, kept })
}

/// A new file in `dir` holding `bytes`, kept (not removed when done).
fn keep_in(dir: &Path, bytes: &[u8], stem: &str, ext: &str) -> io::Result<PathBuf> {
    let mut f = tempfile::Builder::new()
        .prefix(&format!("npt-{stem}-"))
        .suffix(&format!(".{ext}"))
        .tempfile_in(dir)?;
    f.write_all(bytes)?;
    f.as_file().sync_all()?;
    let (_, path) = f.keep().map_err(|e| e.error)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_name_in_a_directory_is_fine_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        check_writable(&dir.path().join("r.json")).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        std::fs::write(dir.path().join("r.json"), b"old").unwrap();
        check_writable(&dir.path().join("r.json")).unwrap();
        check_writable(Path::new("/dev/null")).unwrap();
    }

    #[test]
    fn what_cannot_take_a_file_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let msg = |p: &Path| check_writable(p).unwrap_err().to_string();
        let missing = dir.path().join("nope/r.json");
        assert!(
            msg(&missing).contains("does not exist"),
            "{}",
            msg(&missing)
        );
        assert!(msg(dir.path()).contains("is a directory"));
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        let under_file = msg(&file.join("r.json")).to_lowercase();
        assert!(under_file.contains("not a directory"), "{under_file}");
        let link = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("gone/x"), &link).unwrap();
        assert!(msg(&link).contains("symbolic link"));
        assert!(msg(Path::new("")).contains("empty"));
    }

    #[test]
    fn a_read_only_directory_is_refused_even_to_root() {
        // A read-only bind mount would be the real thing; a directory that a file sits on
        // (ENOTDIR) and one that was removed (ENOENT) fail the same creation test.
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        check_writable(&sub.join("r.json")).unwrap();
        std::fs::remove_dir(&sub).unwrap();
        assert!(check_writable(&sub.join("r.json")).is_err());
    }

    #[test]
    fn a_failed_write_is_kept_in_a_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone/r.json");
        let kept = save(&gone, b"{\"kind\":\"probe\"}\n", "probe").unwrap_err();
        let tmp = kept.kept.as_ref().unwrap().clone();
        assert_eq!(std::fs::read(&tmp).unwrap(), b"{\"kind\":\"probe\"}\n");
        let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("npt-probe-") && name.ends_with(".json"),
            "{name}"
        );
        let msg = kept.message(&gone);
        assert!(msg.contains("cannot write") && msg.contains(&tmp.display().to_string()));
        std::fs::remove_file(tmp).unwrap();
        let ok = dir.path().join("r.json");
        save(&ok, b"x", "probe").unwrap();
        assert_eq!(std::fs::read(ok).unwrap(), b"x");
    }
}
