//! A run's interval records in bounded memory. Every interval of a run goes into its result
//! document, and each carries a compressed histogram (~3 KiB at 20,000 pps), so a collector
//! that kept them all in a `Vec` grew by megabytes an hour and by hundreds of megabytes a day
//! (bench/soak.sh saw a 30-minute probe's RSS grow 60 %). [`Series`] keeps the newest records
//! in memory and appends older ones, as JSON lines, to an unlinked temporary file; the
//! document is built from [`Series::into_vec`] once, when the run ends. If the temporary file
//! cannot be written (no space, no temp dir) the records stay in memory: a record is never
//! lost to save memory.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, Write};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// How many records a [`Series`] keeps in memory by default: the live view and the metrics
/// read only the newest.
pub const KEEP: usize = 64;

/// Interval records of one run, oldest first: the newest [`KEEP`] in memory, the rest in a
/// temporary file.
pub struct Series<T> {
    recent: VecDeque<T>,
    keep: usize,
    /// Made on the first spill; unlinked, so it goes when the process does.
    file: Option<File>,
    /// Whole lines in `file`, one record each, oldest first.
    spilled: u64,
    /// The file could not be made or written: everything stays in memory from then on.
    failed: bool,
}

impl<T: Serialize + DeserializeOwned> Series<T> {
    /// A series that keeps `keep` (at least one) records in memory.
    pub fn new(keep: usize) -> Series<T> {
        Series {
            recent: VecDeque::new(),
            keep: keep.max(1),
            file: None,
            spilled: 0,
            failed: false,
        }
    }

    /// Appends the newest record; moves the oldest in memory to the file when over `keep`.
    pub fn push(&mut self, rec: T) {
        self.recent.push_back(rec);
        if self.recent.len() > self.keep && !self.failed {
            self.failed = self.spill_oldest().is_err();
        }
    }

    /// One line per record, written whole with one call (an interval ends about once a
    /// second): a line cut short by an error is after the `spilled` lines and never read.
    fn spill_oldest(&mut self) -> io::Result<()> {
        let Some(oldest) = self.recent.front() else {
            return Ok(());
        };
        let mut line = serde_json::to_vec(oldest)?;
        line.push(b'\n');
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(tempfile::tempfile()?),
        };
        file.write_all(&line)?;
        self.recent.pop_front();
        self.spilled += 1;
        Ok(())
    }

    /// Records pushed so far.
    pub fn len(&self) -> u64 {
        self.spilled + self.recent.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The newest record.
    pub fn last(&self) -> Option<&T> {
        self.recent.back()
    }

    /// Records in memory (the newest ones), oldest first.
    pub fn recent(&self) -> impl Iterator<Item = &T> {
        self.recent.iter()
    }

    /// Every record, oldest first (the file read back, then those in memory), and how many
    /// spilled records could not be read back (0 unless the temporary file failed us; the
    /// caller says so, since the document then lacks them).
    pub fn into_vec(self) -> (Vec<T>, u64) {
        let mut all = Vec::with_capacity(usize::try_from(self.len()).unwrap_or(0));
        let mut missing = 0;
        if let Some(f) = self.file {
            let read = read_back(f, self.spilled, &mut all);
            if read.is_err() {
                missing = self.spilled - all.len() as u64;
            }
        }
        all.extend(self.recent);
        (all, missing)
    }

    /// [`Series::into_vec`] for a collector building its document: the records, and a line
    /// on stderr if the document lacks some.
    pub fn into_vec_logged(self) -> Vec<T> {
        let (all, missing) = self.into_vec();
        if missing > 0 {
            eprintln!(
                "npt: {missing} interval records could not be read back from their temporary \
                 file and are not in the result"
            );
        }
        all
    }
}

/// The first `n` lines of `f`, one record each, into `out`.
fn read_back<T: DeserializeOwned>(mut f: File, n: u64, out: &mut Vec<T>) -> io::Result<()> {
    f.rewind()?;
    let mut lines = BufReader::new(f).lines();
    for _ in 0..n {
        let line = lines.next().ok_or_else(|| {
            io::Error::new(io::ErrorKind::UnexpectedEof, "interval spill file is short")
        })??;
        out.push(serde_json::from_str(&line)?);
    }
    Ok(())
}

impl<T: Serialize + DeserializeOwned> Default for Series<T> {
    fn default() -> Series<T> {
        Series::new(KEEP)
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    struct Rec {
        index: u32,
        data: String,
    }

    fn rec(i: u32) -> Rec {
        Rec {
            index: i,
            data: format!("histogram {i}\nwith a newline and \"quotes\""),
        }
    }

    #[test]
    fn every_record_comes_back_in_order_with_only_the_newest_in_memory() {
        let mut s = Series::new(3);
        for i in 0..1000 {
            s.push(rec(i));
            assert!(s.recent().count() <= 3);
            assert_eq!(s.last(), Some(&rec(i)));
        }
        assert_eq!(s.len(), 1000);
        let (all, missing) = s.into_vec();
        assert_eq!(missing, 0);
        assert_eq!(all.len(), 1000);
        assert!(all.iter().enumerate().all(|(i, r)| *r == rec(i as u32)));
    }

    #[test]
    fn a_short_series_never_makes_a_file() {
        let mut s = Series::new(KEEP);
        for i in 0..KEEP as u32 {
            s.push(rec(i));
        }
        assert!(s.file.is_none());
        let want: Vec<Rec> = (0..KEEP as u32).map(rec).collect();
        assert_eq!(s.into_vec(), (want, 0));
        assert!(Series::<Rec>::default().into_vec().0.is_empty());
    }

    #[test]
    fn a_failed_spill_keeps_the_records_in_memory() {
        let mut s = Series::new(2);
        for i in 0..5 {
            s.push(rec(i));
        }
        assert_eq!(s.spilled, 3);
        s.failed = true;
        for i in 5..10 {
            s.push(rec(i));
        }
        assert_eq!(s.recent().count(), 7);
        assert_eq!(s.len(), 10);
        let (all, missing) = s.into_vec();
        assert_eq!(missing, 0);
        assert!(all.iter().enumerate().all(|(i, r)| *r == rec(i as u32)));
    }
}
