//! The writer keeps measuring through a store that cannot be written: rounds wait in memory
//! (bounded, the overflow counted), the failure is said once, and everything waiting is written
//! when the store recovers — on the in-memory store and on a real SQLite file that is full.

use std::sync::Mutex;

use npt_result::stats::PingStats;

use super::*;
use crate::kinds::KindStats;
use crate::round::Status;
use crate::store::memory::Memory;
use crate::store::sqlite::Sqlite;
use crate::store::Shared;

/// Round `i` of three targets, 1 s apart from now (old rounds would be pruned).
fn round(i: i64) -> Box<Round> {
    let t = wall_ms(std::time::SystemTime::now()) / 1_000_000 * 1_000_000 + 1_000 * i;
    let mut s = PingStats {
        sent: 5,
        received: 5,
        ..PingStats::default()
    };
    for k in 0..5 {
        s.rtt.record(20_000_000 + k * 1000);
    }
    let st = KindStats::Ping(s);
    Box::new(Round {
        target: format!("t{}", i % 3),
        kind: Kind::Ping,
        due_ms: t,
        start_ms: t,
        end_ms: t + 900,
        lateness_ns: 5_000,
        status: Status::Ok,
        detail: None,
        figures: st.figures(),
        stats: Some(st.encode()),
        described: Some(Arc::new(crate::round::Described {
            meta: "{\"kind\":\"ping\"}".into(),
            config: "{}".into(),
        })),
    })
}

fn writer(store: Box<dyn Store>, backlog: u32) -> (Writer, Arc<Counts>, Arc<Mutex<Vec<String>>>) {
    let counts = Arc::new(Counts::default());
    let said = Arc::new(Mutex::new(Vec::new()));
    let s = said.clone();
    let w = Writer::new(
        store,
        Retention::default(),
        backlog,
        counts.clone(),
        Box::new(move |m| s.lock().unwrap().push(m.to_string())),
    )
    .unwrap();
    (w, counts, said)
}

fn count_rounds(w: &mut Writer) -> usize {
    let st = w.store();
    st.targets()
        .unwrap()
        .iter()
        .map(|t| st.rounds(t.id, i64::MIN, i64::MAX, false).unwrap().len())
        .sum()
}

#[test]
fn rounds_wait_in_memory_while_the_store_fails_and_are_written_after() {
    let mem = Shared::new(Memory::new());
    let (mut w, counts, said) = writer(Box::new(mem.clone()), 50);
    let t0 = Instant::now();
    w.tick(t0, true);
    // Now the disk fills.
    mem.0.lock().unwrap().fail_writes(Some("disk full"));
    for i in 0..80 {
        w.push(Pending::Round(round(i)));
        w.tick(t0, false);
    }
    assert_eq!(counts.backlog.load(Ordering::Relaxed), 50, "bounded");
    assert_eq!(
        counts.dropped.load(Ordering::Relaxed),
        30,
        "the overflow is counted"
    );
    assert!(counts.errors.load(Ordering::Relaxed) >= 1);
    assert_eq!(
        said.lock().unwrap().len(),
        1,
        "said once: {:?}",
        said.lock().unwrap()
    );
    assert!(said.lock().unwrap()[0].contains("disk full"));
    mem.0.lock().unwrap().fail_writes(None);
    // Not before the retry is due …
    w.tick(t0 + Duration::from_secs(1), false);
    assert_eq!(count_rounds(&mut w), 0);
    // … then all that waited, the newest 50.
    w.tick(t0 + RETRY, false);
    assert_eq!(count_rounds(&mut w), 50);
    assert_eq!(counts.stored.load(Ordering::Relaxed), 50);
    assert_eq!(counts.backlog.load(Ordering::Relaxed), 0);
    assert!(said.lock().unwrap()[1].contains("writable again"));
    let ev = w.store().events(i64::MIN, i64::MAX, 10).unwrap();
    assert_eq!(ev[0].kind, "store_recovered");
}

#[test]
fn a_full_sqlite_file_is_a_clear_error_and_writing_resumes_when_there_is_room() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let sql = Shared::new(Sqlite::open(&path).unwrap());
    // A file that cannot grow: as a full disk, SQLite answers SQLITE_FULL.
    sql.0.lock().unwrap().limit_pages(12).unwrap();
    let (mut w, counts, said) = writer(Box::new(sql.clone()), 100_000);
    let t0 = Instant::now();
    let mut i = 0;
    while counts.errors.load(Ordering::Relaxed) == 0 && i < 5_000 {
        w.push(Pending::Round(round(i)));
        w.tick(t0, true);
        i += 1;
    }
    assert!(i < 5_000, "the file never filled");
    let msg = said.lock().unwrap()[0].clone();
    assert!(
        msg.contains("store cannot be written") && msg.contains("full"),
        "{msg}"
    );
    let stored = counts.stored.load(Ordering::Relaxed);
    for k in 0..20 {
        w.push(Pending::Round(round(i + k)));
        w.tick(t0, false);
    }
    assert_eq!(
        counts.stored.load(Ordering::Relaxed),
        stored,
        "nothing written while full"
    );
    // Room again (another connection would not see the limit: it is per connection).
    sql.0.lock().unwrap().limit_pages(1_000_000).unwrap();
    w.tick(t0 + RETRY, false);
    assert_eq!(
        counts.stored.load(Ordering::Relaxed),
        stored + 21,
        "the round that failed and the 20 after it"
    );
    let r = Sqlite::open_read(&path).unwrap();
    let n: usize = r
        .targets()
        .unwrap()
        .iter()
        .map(|t| r.rounds(t.id, i64::MIN, i64::MAX, false).unwrap().len())
        .sum();
    assert_eq!(u64::try_from(n).unwrap(), stored + 21);
}

#[test]
fn a_restart_records_the_gap_and_whether_the_stop_was_clean() {
    let mut st = Memory::new();
    assert_eq!(
        gap_since_last_run(&mut st, 1_000).unwrap(),
        None,
        "first run"
    );
    st.set_mark("alive", 10_000).unwrap();
    let g = gap_since_last_run(&mut st, 70_000).unwrap().unwrap();
    assert_eq!((g.ts_ms, g.until_ms), (10_000, Some(70_000)));
    assert!(g.detail.contains("without stopping"), "{}", g.detail);
    st.put_event(&Event {
        ts_ms: 80_000,
        kind: "stop".into(),
        target: None,
        rule: None,
        until_ms: None,
        detail: String::new(),
    })
    .unwrap();
    st.set_mark("alive", 79_000).unwrap();
    let g = gap_since_last_run(&mut st, 90_000).unwrap().unwrap();
    assert_eq!((g.ts_ms, g.until_ms), (80_000, Some(90_000)));
    assert_eq!(g.detail, "the monitor was stopped");
}

/// A byte budget survives a restart whatever the rounds' retention: the day's rolled-up
/// minutes count, then the rounds after them.
#[test]
fn the_bytes_of_today_outlive_the_rounds() {
    let mut st = Memory::new();
    let t = st.target_id("t", Kind::Probe).unwrap();
    let day = 1_700_000_000_000 - 1_700_000_000_000 % 86_400_000;
    let mut s = npt_result::stats::ProbeStats::default();
    s.bytes.up = 100.0;
    let ks = KindStats::Probe(Box::new(s));
    let rows: Vec<RoundRow> = (0..60)
        .map(|k| RoundRow {
            target: t,
            due_ms: day + k * 60_000,
            start_ms: day + k * 60_000 + 5,
            end_ms: day + k * 60_000 + 900,
            lateness_ns: 0,
            status: Status::Ok,
            detail: None,
            figures: ks.figures(),
            config: None,
            stats: Some(ks.encode()),
        })
        .collect();
    st.put_rounds(&rows).unwrap();
    crate::rollup::roll_all(&mut st, day + 30 * 60_000, day).unwrap();
    st.prune(Level::Round, day + 20 * 60_000).unwrap();
    assert_eq!(bytes_today(&st, t, day + 3_600_000).unwrap(), 6_000);
}
