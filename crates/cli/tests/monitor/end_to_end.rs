//! `npt monitor` end to end on loopback: rounds of each kind are stored and `npt report --from`
//! reads any range back as a valid result document whose counts are its rounds'; `kill -9` at
//! random moments loses no round the monitor had stored (or finished well before the kill),
//! each restart records the gap, and the minute and hour rollups of what survived are exactly the
//! sums of their rounds; SIGHUP applies a good config and refuses a bad one, naming the key; a
//! server's refusals are stored as refusals, never as the path's loss.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::monitor::{rounds, Monitor};
use common::*;
use npt_monitor::kinds::KindStats;
use npt_monitor::store::{Level, Store};

/// A config of three targets on `serve` every `every`, quick rounds, stored in `dir`.
pub(crate) fn config(
    dir: &std::path::Path,
    serve: std::net::SocketAddr,
    every: &str,
    extra: &str,
) -> String {
    format!(
        r#"
vantage = "test"
store = "m.db"
listen = "127.0.0.1:0"
every = "{every}"
[[target]]
name = "udp"
target = "udp://{serve}"
args = ["-c", "3", "-i", "50ms", "-W", "300ms"]
[[target]]
name = "tcp"
target = "tcp://{serve}"
args = ["-c", "3", "-i", "50ms", "-W", "300ms"]
group = "paths"
[[target]]
name = "probe"
kind = "probe"
target = "udp://{serve}"
length = "300ms"
args = ["--pps", "100", "--loss-timeout", "200ms"]
group = "paths"
{extra}"#
    )
    .replace("{dir}", &dir.display().to_string())
}

fn stored(m: &Monitor) -> f64 {
    m.metric("npt_monitor_rounds_stored_total", &[])
        .unwrap_or(0.0)
}

#[test]
fn rounds_are_stored_and_report_from_reads_any_range_back() {
    let (_serve, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_file(dir.path(), "m.toml", &config(dir.path(), addr, "1s", ""));
    let store = dir.path().join("m.db");
    let mut m = Monitor::start(cfg.as_ref(), &store, true);
    m.until("12 rounds stored", Duration::from_secs(60), |m| {
        stored(m) >= 12.0
    });
    m.stop();
    let udp = rounds(&store, "udp");
    let probe = rounds(&store, "probe");
    assert!(
        udp.len() >= 4 && probe.len() >= 4,
        "{} {}",
        udp.len(),
        probe.len()
    );
    for (name, kind, rows) in [("udp", "ping", &udp), ("probe", "probe", &probe)] {
        let json = dir.path().join(format!("{name}.json"));
        let out = run(
            &[
                "report",
                "--from",
                store.to_str().unwrap(),
                "--target",
                name,
                "--since",
                "1h",
                "--format",
                "json",
                "-o",
                json.to_str().unwrap(),
            ],
            Duration::from_secs(60),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = common::json(&json);
        assert_valid(&doc, kind);
        assert_eq!(doc["config"]["monitor"]["rounds"], rows.len(), "{name}");
        // The document's counts are its rounds' counts, exactly.
        let sent: u64 = rows.iter().map(|r| r.figures.sent).sum();
        let lost: u64 = rows.iter().map(|r| r.figures.lost).sum();
        assert_eq!(u(&doc, "/summary/sent"), sent, "{name}");
        let count = match kind {
            "ping" => u(&doc, "/summary/received"),
            _ => u(&doc, "/summary/rtt_ms/count"),
        };
        assert_eq!(count, sent - lost, "{name}");
    }
    // A probe's range has a record per round (its chart is the history).
    let doc = common::json(&dir.path().join("probe.json"));
    assert_eq!(doc["intervals"].as_array().unwrap().len(), probe.len());
    // Every renderer takes it; a missing target is named.
    let s = store.to_str().unwrap();
    for format in ["text", "html", "csv", "md"] {
        let out = run(
            &[
                "report", "--from", s, "--target", "tcp", "--since", "1h", "--format", format,
            ],
            Duration::from_secs(60),
        );
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = run(
        &["report", "--from", s, "--target", "nope"],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no target \"nope\"") && err.contains("udp"),
        "{err}"
    );
}

/// xorshift for the kill moments; seeded by the clock and printed, so a failure can be re-run.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn kill_dash_9_loses_no_stored_round_and_rollups_stay_exact() {
    let (_serve, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_file(dir.path(), "m.toml", &config(dir.path(), addr, "500ms", ""));
    let store = dir.path().join("m.db");
    let seed = std::env::var("NPT_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos() as u64
                | 1
        });
    eprintln!("kill moments from NPT_KILL_SEED={seed}");
    let mut rng = Rng(seed);
    let kills = 3;
    for k in 0..kills {
        let m = Monitor::start(cfg.as_ref(), &store, true);
        // Let it run a random while, note what it had finished and stored, then, a random
        // moment later, kill it.
        std::thread::sleep(Duration::from_millis(1500 + rng.below(2500)));
        let total = |m: &Monitor| -> f64 {
            ["ok", "no_answer", "error", "timeout", "skipped", "budget"]
                .iter()
                .map(|s| {
                    let st = format!("status=\"{s}\"");
                    let mut sum = 0.0;
                    for t in ["\"udp\"", "\"tcp\"", "\"probe\""] {
                        let tl = format!("target={t}");
                        sum += m
                            .metric("npt_monitor_rounds_total", &[&tl, &st])
                            .unwrap_or(0.0);
                    }
                    sum
                })
                .sum()
        };
        let finished = total(&m);
        let committed = stored(&m);
        std::thread::sleep(Duration::from_millis(300 + rng.below(700)));
        let mut m = m;
        m.kill9();
        let in_file: usize = ["udp", "tcp", "probe"]
            .iter()
            .map(|t| rounds(&store, t).len())
            .sum();
        eprintln!("kill {k}: {finished} finished, {committed} stored, {in_file} in the file");
        assert!(in_file as f64 >= committed, "a stored round was lost");
        assert!(
            in_file as f64 >= finished,
            "a round finished 300 ms before the kill is not in the file"
        );
    }
    // A last run, stopped cleanly: every kill is a gap in the history.
    let mut m = Monitor::start(cfg.as_ref(), &store, true);
    m.wait_line("ended without stopping", Duration::from_secs(10));
    m.until("a round after the restart", Duration::from_secs(30), |m| {
        stored(m) >= 3.0
    });
    m.stop();
    let st = npt_monitor::store::sqlite::Sqlite::open_read(&store).unwrap();
    let events = st.events(i64::MIN, i64::MAX, 1000).unwrap();
    let gaps = events
        .iter()
        .filter(|e| e.kind == "gap" && e.detail.contains("without stopping"))
        .count();
    assert_eq!(gaps, kills, "{events:#?}");
    // Rolled up now, to the end (a copy: the file stays as the monitor left it), every minute
    // is exactly the sum of its rounds.
    let copy = dir.path().join("copy.db");
    std::fs::copy(&store, &copy).unwrap();
    let _ = std::fs::copy(
        store.with_extension("db-wal"),
        copy.with_extension("db-wal"),
    );
    let mut rw = npt_monitor::store::sqlite::Sqlite::open(&copy).unwrap();
    let far = npt_monitor::round::wall_ms(std::time::SystemTime::now()) + 3_600_000;
    npt_monitor::rollup::roll_all(&mut rw, far, 0).unwrap();
    // Every minute and every hour (not only its minutes) is exactly the sum of its rounds.
    let (mut checked, mut hours) = (0, 0);
    for t in rw.targets().unwrap() {
        checked += sums_of_rounds(&rw, &t, Level::Minute, 60_000, far);
        hours += sums_of_rounds(&rw, &t, Level::Hour, 3_600_000, far);
    }
    assert!(checked >= 3, "{checked}");
    assert!(hours >= 3, "an hour per target: {hours}");
}

/// A UDP echo on loopback that answers each datagram after the delay (µs) `delay` holds now:
/// a path whose step a test makes and undoes. One datagram at a time (the pings here leave
/// more than the delay between theirs); stops when `stop` is set.
fn delayed_echo(
    delay: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::net::SocketAddr {
    use std::sync::atomic::Ordering;
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let addr = sock.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                std::thread::sleep(Duration::from_micros(delay.load(Ordering::Relaxed)));
                let _ = sock.send_to(&buf[..n], from);
            }
        }
    });
    addr
}

#[test]
fn a_baseline_alert_firing_at_a_kill_clears_after_the_restart() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let delay = Arc::new(AtomicU64::new(2_000));
    let stop = Arc::new(AtomicBool::new(false));
    let echo = delayed_echo(delay.clone(), stop.clone());
    let dir = tempfile::tempdir().unwrap();
    let clear_rounds = 3;
    let cfg = write_file(
        dir.path(),
        "m.toml",
        &format!(
            r#"
vantage = "test"
store = "m.db"
listen = "127.0.0.1:0"
every = "400ms"
[[target]]
name = "path"
target = "udp://{echo}"
args = ["--raw", "-c", "3", "-i", "40ms", "-W", "200ms"]
[[alert]]
name = "step"
metric = "p50_ms"
above = 15
baseline_rounds = 5
rounds = 2
clear_rounds = {clear_rounds}
"#
        ),
    );
    let store = dir.path().join("m.db");
    let m = Monitor::start(cfg.as_ref(), &store, true);
    m.until("the baseline's rounds", Duration::from_secs(20), |m| {
        m.rounds_total("path", "ok") >= 6.0
    });
    // The step: +30 ms, until the rule fires and its state is in the file.
    delay.store(32_000, Ordering::Relaxed);
    m.until("the step's alert stored", Duration::from_secs(20), |_| {
        let st = npt_monitor::store::sqlite::Sqlite::open_read(&store).unwrap();
        st.alerts()
            .unwrap()
            .iter()
            .any(|a| a.rule == "step" && a.firing)
    });
    let mut m = m;
    m.kill9();
    // Undone while the monitor was down: every round after the restart reads the old path.
    delay.store(2_000, Ordering::Relaxed);
    let restart_ms = npt_monitor::round::wall_ms(std::time::SystemTime::now());
    let mut m = Monitor::start(cfg.as_ref(), &store, true);
    assert_eq!(
        m.metric("npt_monitor_alert_firing", &["alert=\"step\""]),
        Some(1.0),
        "the firing state is restored"
    );
    m.until("the alert clears", Duration::from_secs(15), |m| {
        m.metric("npt_monitor_alert_firing", &["alert=\"step\""]) == Some(0.0)
    });
    m.stop();
    stop.store(true, Ordering::Relaxed);
    let st = npt_monitor::store::sqlite::Sqlite::open_read(&store).unwrap();
    let resolved = st
        .events(restart_ms, i64::MAX, 100)
        .unwrap()
        .into_iter()
        .find(|e| e.kind == "alert_resolved")
        .expect("an alert_resolved event after the restart");
    let after: Vec<_> = rounds(&store, "path")
        .into_iter()
        .filter(|r| r.start_ms >= restart_ms && r.end_ms <= resolved.ts_ms)
        .collect();
    for r in &after {
        assert!(
            r.figures.p50_ms < 15.0,
            "a round back on the old path: {r:?}"
        );
    }
    assert_eq!(
        after.len(),
        clear_rounds,
        "cleared by the clear_rounds-th round back: {after:#?}"
    );
}

/// Checks that each of `t`'s rollups at `level` (buckets of `span_ms`) holds exactly the sum of
/// its rounds' stats values; how many it checked.
fn sums_of_rounds(
    st: &npt_monitor::store::sqlite::Sqlite,
    t: &npt_monitor::store::TargetRow,
    level: Level,
    span_ms: i64,
    far: i64,
) -> usize {
    let buckets = st.rollups(t.id, level, i64::MIN, far, true).unwrap();
    for b in &buckets {
        let rs = st
            .rounds(t.id, b.start_ms, b.start_ms + span_ms, true)
            .unwrap();
        assert_eq!(b.rounds, rs.len() as u64);
        let mut sum: Option<KindStats> = None;
        for r in rs.iter().filter_map(|r| r.stats.as_deref()) {
            let s = KindStats::decode(r).unwrap();
            match &mut sum {
                Some(x) => x.then(&s).unwrap(),
                None => sum = Some(s),
            }
        }
        let got = KindStats::decode(b.stats.as_deref().unwrap()).unwrap();
        let sum = sum.unwrap();
        assert!(
            got.headline() == sum.headline(),
            "{} {level:?} {}",
            t.name,
            b.start_ms
        );
        assert_eq!(got.figures(), sum.figures());
    }
    buckets.len()
}

/// A server that refuses part of a round (its per-source budget) or all of it (it wants a
/// `--token` the target does not give): the rounds keep what it refused apart from what the
/// path lost — on loopback, which loses nothing, loss 0 — a round refused whole is `refused`
/// (not `no_answer`), and the scrape counts refusals apart from loss.
#[test]
fn refusals_are_stored_as_refusals_not_as_loss() {
    let (_limited, limited) = serve(&["--source-pps", "50"]);
    let (_tokened, tokened) = serve(&["--token", "s3cret"]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_file(
        dir.path(),
        "m.toml",
        &format!(
            r#"
vantage = "test"
store = "m.db"
listen = "127.0.0.1:0"
every = "2s"
[[target]]
name = "limited"
target = "udp://{limited}"
args = ["-c", "150", "-i", "5ms", "-W", "300ms"]
[[target]]
name = "tokened"
target = "udp://{tokened}"
args = ["-c", "3", "-i", "50ms", "-W", "300ms"]
"#
        ),
    );
    let store = dir.path().join("m.db");
    let mut m = Monitor::start(cfg.as_ref(), &store, true);
    let n = |m: &Monitor, t: &str, s: &str| m.rounds_total(t, s);
    m.until("3 rounds of each", Duration::from_secs(60), |m| {
        n(m, "limited", "ok") >= 3.0 && n(m, "tokened", "refused") >= 3.0
    });
    let metric = |name: &str, t: &str| {
        m.metric(name, &[&format!("target=\"{t}\"")])
            .unwrap_or(-1.0)
    };
    let refused = metric("npt_monitor_refused_total", "limited");
    eprintln!(
        "limited: sent {} lost {} refused {refused}; tokened: refused {}",
        metric("npt_monitor_sent_total", "limited"),
        metric("npt_monitor_lost_total", "limited"),
        metric("npt_monitor_refused_total", "tokened")
    );
    assert!(refused > 0.0, "the budget refused some: {refused}");
    assert_eq!(metric("npt_monitor_lost_total", "limited"), 0.0);
    assert_eq!(metric("npt_monitor_lost_total", "tokened"), 0.0);
    assert_eq!(n(&m, "tokened", "no_answer"), 0.0);
    m.stop();
    let limited = rounds(&store, "limited");
    let some = limited.iter().filter(|r| r.figures.refused > 0).count();
    assert!(some > 0, "a round with refusals in the store");
    for r in &limited {
        let f = &r.figures;
        assert_eq!(r.status.name(), "ok", "{r:?}");
        assert_eq!(f.lost, 0, "{r:?}");
        assert_eq!(f.count + f.refused, f.sent, "answered or refused: {r:?}");
        assert_eq!(f.loss_pct(), Some(0.0), "{r:?}");
    }
    let tokened = rounds(&store, "tokened");
    assert!(tokened.len() >= 3);
    for r in &tokened {
        let f = &r.figures;
        assert_eq!(r.status.name(), "refused", "{r:?}");
        assert_eq!((f.count, f.lost, f.refused), (0, 0, f.sent), "{r:?}");
        assert!(f.sent > 0);
        assert_eq!(f.loss_pct(), None, "no path loss to tell");
    }
}

#[test]
fn sighup_applies_a_good_config_and_refuses_a_bad_one_naming_the_key() {
    let (_serve, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let one = format!(
        "store = \"m.db\"\nlisten = \"127.0.0.1:0\"\nevery = \"500ms\"\n[[target]]\nname = \"a\"\n\
         target = \"udp://{addr}\"\nargs = [\"-c\", \"2\", \"-i\", \"50ms\", \"-W\", \"200ms\"]\n"
    );
    let cfg = write_file(dir.path(), "m.toml", &one);
    let mut m = Monitor::start(cfg.as_ref(), &dir.path().join("m.db"), true);
    let rounds_of = |m: &Monitor, t: &str| m.rounds_total(t, "ok");
    m.until("target a measures", Duration::from_secs(30), |m| {
        rounds_of(m, "a") >= 2.0
    });
    let two = format!("{one}[[target]]\nname = \"b\"\ntarget = \"tcp://{addr}\"\nargs = [\"-c\", \"2\", \"-i\", \"50ms\", \"-W\", \"200ms\"]\n");
    std::fs::write(&cfg, &two).unwrap();
    m.signal(libc::SIGHUP);
    m.wait_line("reloaded: 2 targets", Duration::from_secs(10));
    m.until("target b measures", Duration::from_secs(30), |m| {
        rounds_of(m, "b") >= 2.0
    });
    std::fs::write(&cfg, two.replace("every = \"500ms\"", "every = \"soon\"")).unwrap();
    m.signal(libc::SIGHUP);
    let line = m.wait_line("reload refused", Duration::from_secs(10));
    assert!(line.contains("every") && line.contains("soon"), "{line}");
    let before = rounds_of(&m, "b");
    m.until("b still measures", Duration::from_secs(30), |m| {
        rounds_of(m, "b") > before
    });
    m.stop();
}
