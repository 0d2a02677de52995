//! The rounds the monitor derives from a config's targets: the flags each kind gets where its
//! args leave them out, and the bounds its engine gives.

use super::*;

/// Each target of `file`: its round's command line and bound, or the error's text.
fn rounds(file: &str) -> Result<Vec<(Vec<String>, Duration)>, String> {
    let plan =
        npt_monitor::config::parse(file, std::path::Path::new(".")).map_err(|e| e.to_string())?;
    plan.targets
        .iter()
        .map(|t| {
            target(t, &|e| usage!("{e}"))
                .map(|(t, _)| (t.plan.argv, t.timeout))
                .map_err(|e| e.to_string())
        })
        .collect()
}

fn argv(file: &str) -> Vec<Vec<String>> {
    rounds(file).unwrap().into_iter().map(|r| r.0).collect()
}

#[test]
fn every_kind_gets_its_defaults_where_its_args_leave_them_out() {
    let a = argv(
        r#"
[[target]]
name = "direct"
target = "tcp://127.0.0.1:7777"
[[target]]
name = "relay-udp"
kind = "probe"
target = "udp://127.0.0.1:7777"
via = "socks5://127.0.0.1:1080"
every = "1s"
length = "500ms"
args = ["--pps", "200", "--loss-timeout", "300ms"]
[[target]]
name = "gw"
target = "https://gw.example/health"
[[target]]
name = "chain"
kind = "trace"
target = "tcp://127.0.0.1:7777"
hops = ["npt://127.0.0.1:7778"]
token = "S"
[[target]]
name = "capacity"
kind = "bulk"
target = "tcp://127.0.0.1:7777"
every = "1h"
budget = "2GB"
"#,
    );
    assert_eq!(
        a[0],
        ["ping", "tcp://127.0.0.1:7777", "-i", "200ms", "-c", "5"]
    );
    assert_eq!(
        a[1],
        [
            "probe",
            "udp://127.0.0.1:7777",
            "--duration",
            "500ms",
            "--via",
            "socks5://127.0.0.1:1080",
            "--pps",
            "200",
            "--loss-timeout",
            "300ms"
        ]
    );
    assert_eq!(
        a[2],
        [
            "http",
            "https://gw.example/health",
            "--duration",
            "1000ms",
            "-c",
            "1",
            "--rate",
            "10",
            "--timeout",
            "5s"
        ]
    );
    assert_eq!(
        a[3],
        [
            "trace",
            "tcp://127.0.0.1:7777",
            "-i",
            "200ms",
            "-c",
            "5",
            "--token",
            "S",
            "--hop",
            "npt://127.0.0.1:7778"
        ]
    );
    assert_eq!(
        a[4],
        ["bulk", "tcp://127.0.0.1:7777", "--duration", "5000ms"]
    );
}

fn ping(extra: &str) -> Result<Vec<String>, String> {
    rounds(&format!(
        "[[target]]\nname = \"a\"\ntarget = \"udp://127.0.0.1:7\"\n{extra}"
    ))
    .map(|r| r[0].0[2..].to_vec())
}

#[test]
fn a_ping_round_is_its_length_in_attempts_unless_args_say() {
    assert_eq!(
        ping("length = \"2s\"").unwrap(),
        ["-i", "200ms", "-c", "10"]
    );
    assert_eq!(
        ping("length = \"2s\"\nargs = [\"-i\", \"500ms\"]").unwrap(),
        ["-c", "4", "-i", "500ms"]
    );
    assert_eq!(
        ping("args = [\"-c\", \"3\"]").unwrap(),
        ["-i", "200ms", "-c", "3"]
    );
    let e = ping("length = \"2s\"\nargs = [\"-c3\"]").unwrap_err();
    assert!(e.starts_with("target[0].length: give either"), "{e}");
}

/// The interval is read by clap, in every form it takes: the round is sized for it (a
/// flag once seen as given by its text, `-i500ms`, had its value left unread: the round
/// was sized for 200 ms, 10 attempts of 500 ms, 5 s, not 2 s).
#[test]
fn an_interval_in_any_form_sets_the_round_s_attempts() {
    for form in [
        r#""-i500ms""#,
        r#""-i", "500ms""#,
        r#""-i=500ms""#,
        r#""--interval=500ms""#,
        r#""--interval", "500ms""#,
    ] {
        let a = ping(&format!("length = \"2s\"\nargs = [{form}]")).unwrap();
        assert_eq!(a[..2], ["-c", "4"], "{form}");
    }
    // Given twice, it is refused as `npt ping` refuses it.
    let e = ping("args = [\"-i1s\", \"-i\", \"500ms\"]").unwrap_err();
    assert!(e.contains("cannot be used multiple times"), "{e}");
    let e = ping("length = \"2s\"\nargs = [\"-ifast\"]").unwrap_err();
    assert!(e.starts_with("target[0] (a).args: --interval"), "{e}");
}

#[test]
fn a_loaded_probe_needs_a_budget_and_is_its_phases() {
    let under = "[[target]]\nname = \"u\"\nkind = \"probe\"\ntarget = \"udp://127.0.0.1:7\"\nevery = \"1m\"\nargs = [\"--under-load\", \"tcp://127.0.0.1:7\"]";
    let e = rounds(under).unwrap_err();
    assert!(e.starts_with("target[0].budget: missing"), "{e}");
    let r = rounds(&format!("{under}\nbudget = \"500MB\"")).unwrap();
    assert_eq!(
        r[0].0,
        [
            "probe",
            "udp://127.0.0.1:7",
            "--under-load",
            "tcp://127.0.0.1:7"
        ]
    );
    let e = rounds(&format!("{under}\nbudget = \"500MB\"\nlength = \"5s\"")).unwrap_err();
    assert!(
        e.starts_with("target[0].length: an --under-load round"),
        "{e}"
    );
}

/// A trace round's bound is its engine's: the attempts, and a hop agent's 8 s of connect and
/// reply slack (left out before: a default round was bound at 8 s, and a hung agent's
/// round timed out while the engine still waited for it).
#[test]
fn a_trace_round_is_bound_by_what_its_engine_may_take() {
    let r = rounds(
        "[[target]]\nname = \"t\"\nkind = \"trace\"\ntarget = \"tcp://127.0.0.1:7\"\nhops = [\"npt://127.0.0.1:8\"]\ntoken = \"S\"",
    )
    .unwrap();
    // 5 attempts 200 ms apart + 1 s timeout = 2 s, + 8 s slack = 10 s; × 1.5 + 5 s.
    assert_eq!(r[0].1, Duration::from_secs(20));
    // `every` is checked against the plan (2 s), not the slack: a 5 s schedule still fits.
    let r = rounds(
        "every = \"5s\"\n[[target]]\nname = \"t\"\nkind = \"trace\"\ntarget = \"tcp://127.0.0.1:7\"\nhops = [\"npt://127.0.0.1:8\"]\ntoken = \"S\"",
    );
    assert!(r.is_ok(), "{r:?}");
}

/// A lifetime round is its search: `--max` in its args (120 s unless given), bounded by
/// the search's length; its `every` must leave room for the ladder and one round inside
/// the bracket, and `length` is refused.
#[test]
fn a_lifetime_round_is_its_search() {
    let r = rounds(
        r#"
[[target]]
name = "nat"
kind = "lifetime"
target = "udp://127.0.0.1:7777"
every = "1h"
via = "socks5://127.0.0.1:1080"
args = ["--max", "40s"]
"#,
    )
    .unwrap();
    assert_eq!(
        r[0].0,
        [
            "lifetime",
            "udp://127.0.0.1:7777",
            "--via",
            "socks5://127.0.0.1:1080",
            "--max",
            "40s"
        ]
    );
    let longest = npt_lifetime::workload::length(Duration::from_secs(40)).longest();
    assert_eq!(r[0].1, longest + longest / 2 + GRACE);
    let short = rounds(
        "[[target]]\nname = \"nat\"\nkind = \"lifetime\"\ntarget = \"udp://h:1\"\nevery = \"1m\"\n",
    )
    .unwrap_err();
    assert!(short.contains("every"), "{short}");
    let length = rounds(
        "[[target]]\nname = \"nat\"\nkind = \"lifetime\"\ntarget = \"udp://h:1\"\nevery = \"1h\"\nlength = \"5s\"\n",
    )
    .unwrap_err();
    assert!(length.contains("--max"), "{length}");
}

/// An mtu round is its search: bounded by `--timeout` (60 s unless its args say), and a
/// handshake's with a token; an `every` shorter than that, and `length`, are refused.
#[test]
fn an_mtu_round_is_its_search() {
    let mtu = |extra: &str| {
        rounds(&format!(
            "[[target]]\nname = \"tunnel\"\nkind = \"mtu\"\ntarget = \"udp://127.0.0.1:7777\"\n{extra}"
        ))
    };
    let r = mtu("every = \"10s\"\nargs = [\"--timeout\", \"5s\"]").unwrap();
    assert_eq!(r[0].0, ["mtu", "udp://127.0.0.1:7777", "--timeout", "5s"]);
    assert_eq!(r[0].1, Duration::from_millis(7500) + GRACE);
    let e = mtu("every = \"30s\"").unwrap_err();
    assert!(e.contains("every") && e.contains("60s"), "{e}");
    let e = mtu("every = \"6s\"\ntoken = \"S\"\nargs = [\"--timeout\", \"5s\"]").unwrap_err();
    assert!(e.contains("every") && e.contains("8s"), "{e}");
    let e = mtu("every = \"1h\"\nlength = \"5s\"").unwrap_err();
    assert!(e.contains("--timeout"), "{e}");
}

/// A setup round is its connections: 5 of up to 1 s unless its args say (6 s, inside the
/// default every of 10 s), bounded by its engine's length; `length` is refused.
#[test]
fn a_setup_round_is_its_connections() {
    let t = "[[target]]\nname = \"s\"\nkind = \"setup\"\ntarget = \"https://h:1\"\n";
    let r = rounds(t).unwrap();
    assert_eq!(
        r[0].0,
        ["setup", "https://h:1", "-c", "5", "--timeout", "1s"]
    );
    let longest = npt_setup::workload::length(5, Duration::from_secs(1)).longest();
    assert_eq!(r[0].1, longest + longest / 2 + GRACE);
    let own = rounds(&format!("{t}args = [\"-c\", \"20\"]")).unwrap_err();
    assert!(
        own.contains("fewer connections (-c)"),
        "21 s of plan in 10 s: {own}"
    );
    let length = rounds(&format!("{t}length = \"5s\"")).unwrap_err();
    assert!(length.contains("-c and --timeout"), "{length}");
}
