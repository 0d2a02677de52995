//! `--packets FILE|-`: the per-packet log's writer, one of the consumers of a run (beside the
//! live view, the progress lines and `--metrics`). Each [`PacketLine`] the workload hands over
//! is written as one line of JSON as soon as it comes (streamed through a small buffer, flushed
//! at least every [`FLUSH_EVERY`], so `tail -f` follows the run and memory does not grow with
//! it). A write that fails mid-run (disk full) stops the log, not the run; the end says so.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use npt_result::packets::PacketLine;

use crate::usage;

/// The longest a written line waits in the buffer.
const FLUSH_EVERY: Duration = Duration::from_millis(200);

pub struct PacketLog {
    out: BufWriter<Box<dyn Write>>,
    shown: String,
    lines: u64,
    flushed: Instant,
    failed: Option<io::Error>,
}

impl PacketLog {
    /// Creates (or truncates) `path`, or writes to stdout for `-`; an error names `--packets`.
    pub fn open(path: &Path) -> anyhow::Result<PacketLog> {
        let (out, shown): (Box<dyn Write>, String) = if path == Path::new("-") {
            (Box::new(io::stdout()), "stdout".into())
        } else {
            let f = File::create(path).map_err(|e| usage!("--packets {}: {e}", path.display()))?;
            (Box::new(f), path.display().to_string())
        };
        Ok(PacketLog {
            out: BufWriter::with_capacity(64 << 10, out),
            shown,
            lines: 0,
            flushed: Instant::now(),
            failed: None,
        })
    }

    /// One packet's line (nothing once a write has failed).
    pub fn line(&mut self, l: &PacketLine) {
        if self.failed.is_some() {
            return;
        }
        let r = serde_json::to_writer(&mut self.out, l)
            .map_err(io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"));
        let r = r.and_then(|()| {
            if self.flushed.elapsed() >= FLUSH_EVERY {
                self.flushed = Instant::now();
                self.out.flush()
            } else {
                Ok(())
            }
        });
        match r {
            Ok(()) => self.lines += 1,
            Err(e) => self.failed = Some(e),
        }
    }

    /// Flushes the log: `Err` with a message for stderr when a line could not be written
    /// (a closed stdout is not an error: whoever read it has gone).
    pub fn finish(mut self) -> Result<u64, String> {
        let r = match self.failed.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        };
        match r {
            Ok(()) => Ok(self.lines),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(self.lines),
            Err(e) => Err(format!(
                "--packets {}: the log stopped after {} lines: {e}",
                self.shown, self.lines
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::packets::Fate;

    #[test]
    fn lines_are_one_json_object_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.ndjson");
        let mut log = PacketLog::open(&path).unwrap();
        for seq in 1..=3 {
            log.line(&PacketLine::new(seq, Fate::Lost));
        }
        assert_eq!(log.finish(), Ok(3));
        let text = std::fs::read_to_string(&path).unwrap();
        let seqs: Vec<u64> = text
            .lines()
            .map(|l| serde_json::from_str::<PacketLine>(l).unwrap().seq)
            .collect();
        assert_eq!(seqs, [1, 2, 3]);
    }

    #[test]
    fn a_failed_write_stops_the_log_and_says_so() {
        let Ok(full) = File::options().write(true).open("/dev/full") else {
            eprintln!("SKIPPED: no /dev/full");
            return;
        };
        let mut log = PacketLog {
            out: BufWriter::with_capacity(16, Box::new(full)),
            shown: "/dev/full".into(),
            lines: 0,
            flushed: Instant::now(),
            failed: None,
        };
        for seq in 1..=100 {
            log.line(&PacketLine::new(seq, Fate::Lost));
        }
        let msg = log.finish().unwrap_err();
        assert!(
            msg.starts_with("--packets /dev/full: the log stopped after"),
            "{msg}"
        );
    }
}
