//! Rollups are exact: an hour's (and a minute's) rollup holds exactly the sum of its rounds'
//! histograms and counts, on the in-memory store and on SQLite alike; rolling again changes
//! nothing; a range is covered by whole buckets where they are rolled and rounds elsewhere.

use npt_result::stats::PingStats;

use super::*;
use crate::kinds::Kind;
use crate::round::Status;
use crate::store::memory::Memory;
use crate::store::sqlite::Sqlite;
use crate::store::RoundRow;

const T0: i64 = 1_700_000_000_000 - 1_700_000_000_000 % 86_400_000; // a UTC midnight

/// xorshift: a seeded stream for the rounds' RTTs.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Two hours and a bit of 10-second ping rounds (some without answer, some the server refused
/// whole or in part, some skipped), stored.
fn fill(st: &mut dyn Store) -> (i64, Vec<(i64, Status, Option<PingStats>)>) {
    let t = st.target_id("relay", Kind::Ping).unwrap();
    let mut rng = Rng(7);
    let mut rounds = Vec::new();
    let mut rows = Vec::new();
    for k in 0..(2 * 360 + 17) {
        let start = T0 + 3 + k * 10_000;
        let status = match rng.next() % 50 {
            0 => Status::Skipped,
            1 => Status::NoAnswer,
            2 => Status::Refused,
            _ => Status::Ok,
        };
        let stats = status.measured().then(|| {
            let mut s = PingStats::default();
            for _ in 0..5 {
                s.sent += 1;
                if status == Status::Refused || rng.next().is_multiple_of(40) {
                    s.refused += 1;
                } else if status == Status::Ok && !rng.next().is_multiple_of(20) {
                    s.received += 1;
                    s.rtt.record(20_000_000 + rng.next() % 30_000_000);
                }
            }
            s
        });
        let ks = stats.clone().map(KindStats::Ping);
        rows.push(RoundRow {
            target: t,
            due_ms: start,
            start_ms: start,
            end_ms: start + 1_000,
            lateness_ns: rng.next() % 1_000_000,
            status,
            detail: None,
            figures: ks.as_ref().map(KindStats::figures).unwrap_or_default(),
            config: None,
            stats: ks.as_ref().map(KindStats::encode),
        });
        rounds.push((start, status, stats));
        // Commit in batches, as the writer does.
        if rows.len() == 25 {
            st.put_rounds(&rows).unwrap();
            rows.clear();
        }
    }
    st.put_rounds(&rows).unwrap();
    (t, rounds)
}

fn exact_rollups(st: &mut dyn Store) {
    let (t, rounds) = fill(st);
    let end = rounds.last().unwrap().0 + 10_000;
    // Roll minutes (in several calls, as the writer does), then hours, then days.
    let mut n = 0;
    for until in [T0 + 1_800_000, end] {
        n += roll(st, Level::Minute, until, T0).unwrap().rows;
    }
    assert_eq!(
        n, 122,
        "one row per whole minute with rounds (the last is still open)"
    );
    roll(st, Level::Hour, end, T0).unwrap();
    assert_eq!(
        roll(st, Level::Day, end, T0).unwrap().rows,
        0,
        "no whole day yet"
    );
    let hours = st.rollups(t, Level::Hour, T0, end, true).unwrap();
    assert_eq!(hours.len(), 2, "the third hour is still open");
    for h in &hours {
        let inside = rounds
            .iter()
            .filter(|(s, _, _)| *s >= h.start_ms && *s < h.start_ms + 3_600_000);
        let mut sum = PingStats::default();
        let mut count = 0;
        for (_, _, s) in inside {
            count += 1;
            if let Some(s) = s {
                sum += s;
            }
        }
        assert_eq!(h.rounds, count);
        let KindStats::Ping(got) = KindStats::decode(h.stats.as_deref().unwrap()).unwrap() else {
            panic!("a ping rollup")
        };
        assert_eq!((got.sent, got.received), (sum.sent, sum.received));
        assert_eq!(got.rtt.count(), sum.rtt.count());
        // The same histogram: every bucket's count.
        assert!(
            got.rtt == sum.rtt,
            "hour {} differs from its rounds' sum",
            h.start_ms
        );
        assert_eq!(h.figures, KindStats::Ping(sum).figures());
    }
    // Rolling again writes the same rows.
    let before = st.rollups(t, Level::Minute, T0, end, true).unwrap();
    st.set_mark(&store::rolled(Level::Minute), T0).unwrap();
    roll(st, Level::Minute, end, T0).unwrap();
    assert_eq!(st.rollups(t, Level::Minute, T0, end, true).unwrap(), before);
}

#[test]
fn an_hour_is_exactly_the_sum_of_its_rounds_in_memory() {
    exact_rollups(&mut Memory::new());
}

#[test]
fn an_hour_is_exactly_the_sum_of_its_rounds_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let mut st = Sqlite::open(&dir.path().join("m.db")).unwrap();
    exact_rollups(&mut st);
    // A second connection reads what the first wrote (WAL, no checkpoint needed).
    let r = Sqlite::open_read(&dir.path().join("m.db")).unwrap();
    assert_eq!(r.targets().unwrap().len(), 1);
    assert_eq!(
        r.rollups(1, Level::Hour, T0, T0 + 86_400_000, false)
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn both_stores_read_back_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = Memory::new();
    let mut b = Sqlite::open(&dir.path().join("m.db")).unwrap();
    let (ta, _) = fill(&mut a);
    let (tb, _) = fill(&mut b);
    assert_eq!(ta, tb);
    for stats in [false, true] {
        let ra = a.rounds(ta, T0, T0 + 86_400_000, stats).unwrap();
        let rb = b.rounds(tb, T0, T0 + 86_400_000, stats).unwrap();
        assert_eq!(ra.len(), 737);
        assert_eq!(ra, rb);
    }
    assert_eq!(b.prune(Level::Round, T0 + 3_600_000).unwrap(), 360);
    assert_eq!(a.prune(Level::Round, T0 + 3_600_000).unwrap(), 360);
    assert_eq!(
        b.mark(&store::pruned(Level::Round)).unwrap(),
        Some(T0 + 3_600_000)
    );
}

#[test]
fn a_range_takes_whole_rolled_buckets_and_rounds_at_its_edges() {
    const M: i64 = 60_000;
    const H: i64 = 60 * M;
    const D: i64 = 24 * H;
    let rolled = |l: Level| match l {
        Level::Minute => Some(3 * D + 5 * H + 30 * M),
        Level::Hour => Some(3 * D + 5 * H),
        Level::Day => Some(3 * D),
        Level::Round => None,
    };
    let spans = cover(D - 90 * M + 20_000, 3 * D + 6 * H, &rolled);
    let want = [
        (Level::Round, D - 90 * M + 20_000, D - 89 * M),
        (Level::Minute, D - 89 * M, D - H),
        (Level::Hour, D - H, D),
        (Level::Day, D, 3 * D),
        (Level::Hour, 3 * D, 3 * D + 5 * H),
        (Level::Minute, 3 * D + 5 * H, 3 * D + 5 * H + 30 * M),
        (Level::Round, 3 * D + 5 * H + 30 * M, 3 * D + 6 * H),
    ];
    let got: Vec<(Level, i64, i64)> = spans.iter().map(|s| (s.level, s.from, s.to)).collect();
    assert_eq!(got, want);
    // Nothing rolled: rounds only. Spans always tile the range.
    assert_eq!(
        cover(5, 10 * D, &|_| None),
        vec![Span {
            level: Level::Round,
            from: 5,
            to: 10 * D
        }]
    );
    assert!(cover(10, 10, &rolled).is_empty());
}
