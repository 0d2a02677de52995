//! The config file: defaults, the round's command line per kind, and errors that name keys.

use super::*;
use crate::kinds::Kind;

fn plan(text: &str) -> Result<Plan, String> {
    parse(text, Path::new("/etc/npt")).map_err(|e| e.to_string())
}

const GOOD: &str = r#"
vantage = "hk-1"
store = "watch.db"
listen = "127.0.0.1:9600"
every = "10s"
[[target]]
name = "direct"
target = "tcp://10.0.1.2:7777"
[[target]]
name = "relay-udp"
kind = "probe"
target = "udp://10.0.2.2:7777"
via = "socks5://10.0.2.2:1080"
every = "1s"
length = "500ms"
jitter = "100ms"
args = ["--pps", "200", "--loss-timeout", "300ms"]
group = "line"
[[target]]
name = "gw"
target = "https://gw.example/health"
[[target]]
name = "chain"
kind = "trace"
target = "tcp://10.0.3.2:7777"
hops = ["npt://10.0.2.2:7777"]
token = "S"
[[target]]
name = "capacity"
kind = "bulk"
target = "tcp://10.0.3.2:7777"
every = "1h"
budget = "2GB"
[[alert]]
name = "loss"
metric = "loss_pct"
above = 5
targets = ["relay-*"]
"#;

#[test]
fn a_good_file_becomes_rounds_of_each_kind() {
    let p = plan(GOOD).unwrap();
    assert_eq!(p.vantage, "hk-1");
    assert_eq!(p.store, Path::new("/etc/npt/watch.db"));
    assert_eq!(p.listen, Some("127.0.0.1:9600".parse().unwrap()));
    let t = &p.targets;
    assert_eq!(t.len(), 5);
    assert_eq!(
        (t[0].kind, t[0].every),
        (Kind::Ping, Duration::from_secs(10))
    );
    // The file's command line; the cli adds what the kind's defaults stand for.
    assert_eq!(t[0].argv, ["ping", "tcp://10.0.1.2:7777"]);
    assert_eq!((t[0].length, t[0].own_length, t[0].index), (None, false, 0));
    assert_eq!(t[1].kind, Kind::Probe);
    assert_eq!(
        (t[1].every, t[1].jitter),
        (Duration::from_secs(1), Duration::from_millis(100))
    );
    assert_eq!(
        t[1].argv,
        [
            "probe",
            "udp://10.0.2.2:7777",
            "--via",
            "socks5://10.0.2.2:1080",
            "--pps",
            "200",
            "--loss-timeout",
            "300ms"
        ]
    );
    assert_eq!(
        (t[1].length, t[1].own_length),
        (Some(Duration::from_millis(500)), true)
    );
    assert_eq!(t[1].group.as_deref(), Some("line"));
    assert_eq!(t[2].kind, Kind::Http, "an http(s) URL is an http target");
    assert_eq!(t[2].argv, ["http", "https://gw.example/health"]);
    assert_eq!(
        t[3].argv,
        [
            "trace",
            "tcp://10.0.3.2:7777",
            "--token",
            "S",
            "--hop",
            "npt://10.0.2.2:7777"
        ]
    );
    assert_eq!(t[4].budget, Some(2_000_000_000));
    assert_eq!(t[4].argv, ["bulk", "tcp://10.0.3.2:7777"]);
    assert_eq!(p.alerts.len(), 1);
    assert_eq!(p.retention, Retention::default());
    assert_eq!(p.limits, Limits::default());
}

#[test]
fn a_file_wide_length_is_every_target_s_own_unless_it_gives_one() {
    let p = plan("length = \"2s\"\n[[target]]\nname = \"a\"\ntarget = \"udp://h:7\"\n[[target]]\nname = \"b\"\ntarget = \"udp://h:7\"\nlength = \"3s\"").unwrap();
    let t = &p.targets;
    assert_eq!(
        (t[0].length, t[0].own_length),
        (Some(Duration::from_secs(2)), false)
    );
    assert_eq!(
        (t[1].length, t[1].own_length),
        (Some(Duration::from_secs(3)), true)
    );
    assert_eq!((t[1].index, t[1].key.as_str()), (1, "target[1] (b)"));
}

#[test]
fn limits_are_one_value_per_kind_over_the_defaults() {
    let p = plan(&format!(
        "[limits]\nhttp = 4\nbacklog = 10\n{}",
        &GOOD[GOOD.find("[[target]]").unwrap()..]
    ))
    .unwrap();
    assert_eq!((p.limits.of(Kind::Http), p.limits.of(Kind::Ping)), (4, 256));
    assert_eq!((p.limits.of(Kind::Bulk), p.limits.backlog), (1, 10));
    assert_eq!(p.limits.of(Kind::Run), 0, "a monitor runs no `run`");
}

#[test]
fn the_quick_form_watches_each_url() {
    let f = quick(
        &["udp://relay:7777".into(), "tcp://direct:7777".into()],
        Some("5s"),
    )
    .unwrap();
    let p = check(f, Path::new(".")).unwrap();
    assert_eq!(p.targets.len(), 2);
    assert_eq!(p.targets[1].name, "tcp://direct:7777");
    assert_eq!(p.targets[1].every, Duration::from_secs(5));
    assert!(quick(&[], None)
        .unwrap_err()
        .to_string()
        .starts_with("--target"));
}

#[test]
fn bad_files_name_the_key() {
    let e = |from: &str, to: &str| {
        let t = GOOD.replacen(from, to, 1);
        assert_ne!(t, GOOD, "{from:?} is in GOOD");
        plan(&t).unwrap_err()
    };
    assert!(
        e("every = \"1s\"", "every = \"soon\"").starts_with("target[1].every"),
        "{}",
        e("every = \"1s\"", "every = \"soon\"")
    );
    assert!(e("every = \"1s\"", "every = \"0s\"").starts_with("target[1].every: must be above 0"));
    assert!(e("jitter = \"100ms\"", "jitter = \"2s\"").starts_with("target[1].jitter"));
    assert!(e("length = \"500ms\"", "lenght = \"500ms\"").contains("unknown field `lenght`"));
    assert!(e("name = \"gw\"", "name = \"direct\"")
        .starts_with("target[2].name: \"direct\" is used twice"));
    assert!(e("kind = \"probe\"", "kind = \"iperf\"").contains("unknown variant `iperf`"));
    // Names that become /metrics label values: a `"` or `\` would break the whole scrape.
    for (from, to, key) in [
        (
            "name = \"gw\"",
            "name = 'g\"w'",
            "target[2].name: at most 200",
        ),
        (
            "name = \"gw\"",
            "name = 'g\\w'",
            "target[2].name: at most 200",
        ),
        (
            "vantage = \"hk-1\"",
            "vantage = 'hk\"1'",
            "vantage: at most 200",
        ),
        (
            "name = \"loss\"",
            "name = 'lo\"ss'",
            "alert[0].name: at most 200",
        ),
    ] {
        let err = e(from, to);
        assert!(err.starts_with(key), "{err}");
    }
    assert!(e("\"--pps\", \"200\"", "\"--json\", \"x\"")
        .starts_with("target[1].args: --json is not allowed"));
    assert!(e("\"--pps\", \"200\"", "\"--via\", \"x\"").starts_with("target[1].args: --via"));
    assert!(e("budget = \"2GB\"", "").starts_with("target[4].budget: missing"));
    assert!(e("budget = \"2GB\"", "budget = \"2 parsecs\"").starts_with("target[4].budget"));
    assert!(e("hops = [\"npt://10.0.2.2:7777\"]", "").starts_with("target[3].hops: missing"));
    assert!(
        e("listen = \"127.0.0.1:9600\"", "listen = \"0.0.0.0:9600\"").starts_with("token: missing")
    );
    assert!(plan(&GOOD.replace(
        "listen = \"127.0.0.1:9600\"",
        "listen = \"0.0.0.0:9600\"\ntoken = \"t\""
    ))
    .is_ok());
    assert!(e("listen = \"127.0.0.1:9600\"", "listen = \"localhost\"").starts_with("listen"));
    assert!(
        e("targets = [\"relay-*\"]", "targets = [\"nope-*\"]").starts_with("alert[0].targets[0]")
    );
    assert!(
        e("[[alert]]", "[retention]\nrounds = \"0s\"\n[[alert]]").starts_with("retention.rounds")
    );
    assert!(e("[[alert]]", "[limits]\nping = 0\n[[alert]]").starts_with("limits.ping"));
    assert!(
        e("[[alert]]", "[notify]\nwebhook = \"ftp://x\"\n[[alert]]").starts_with("notify.webhook")
    );
    assert!(plan("vantage = \"x\"\n")
        .unwrap_err()
        .starts_with("target: no [[target]]"));
    // A bulk target is heavy: it needs a budget (an --under-load probe's is the cli's check).
    assert!(e("budget = \"2GB\"", "").starts_with("target[4].budget: missing"));
    assert!(e("kind = \"probe\"", "kind = \"run\"").contains(
        "unknown variant `run`, expected one of `ping`, `probe`, `trace`, `http`, `bulk`"
    ));
    assert!(e("[[alert]]", "[limits]\nicmp = 3\n[[alert]]").contains(
        "unknown field `icmp`, expected one of `ping`, `probe`, `trace`, `http`, `bulk`, `lifetime`, `mtu`, `setup`, `backlog`"
    ));
    assert!(e("[[alert]]", "[limits]\nbulk = 0\n[[alert]]")
        .starts_with("limits.bulk: must be at least 1"));
    // Alerts on a probe's marking: each way as sent, and its CE marks as a share.
    let loss = "metric = \"loss_pct\"\nabove = 5";
    for ok in ["metric = \"bleached\"", "metric = \"ce_pct\"\nabove = 5"] {
        assert!(plan(&GOOD.replacen(loss, ok, 1)).is_ok(), "{ok}");
    }
    assert!(e(loss, "metric = \"bleached\"\nabove = 0")
        .starts_with("alert[0].above: bleached has no threshold"));
    assert!(e(loss, "metric = \"ce_pct\"\nabove = 150").starts_with("alert[0].above: 150"));
}

#[test]
fn byte_counts() {
    assert_eq!(bytes("k", "2GB").unwrap(), 2_000_000_000);
    assert_eq!(bytes("k", "1.5 MiB").unwrap(), 1_572_864);
    assert_eq!(bytes("k", "100").unwrap(), 100);
    assert!(bytes("k", "0").is_err());
    assert!(bytes("k", "-5MB").is_err());
    assert!(bytes("k", "1e30").is_err());
}

/// A store an earlier npt wrote keeps that version's retention on every level the config
/// leaves unset (so upgrading prunes nothing kept); a level the config sets is as set; any
/// other store is as configured.
#[test]
fn a_store_of_an_earlier_npt_keeps_its_retention_where_the_config_sets_none() {
    let p = parse(
        "[retention]\nhour = \"7d\"\n[[target]]\nname = \"a\"\ntarget = \"udp://127.0.0.1:9\"\n",
        Path::new("."),
    )
    .unwrap();
    assert_eq!(p.retention.given, [false, false, true, false]);
    assert_eq!(p.retention.for_store(false), p.retention);
    let kept = p.retention.for_store(true);
    let e = EARLIER_RETENTION;
    assert_eq!(
        (kept.rounds, kept.minute, kept.hour, kept.day),
        (e.rounds, e.minute, Duration::from_secs(7 * 86_400), e.day)
    );
}
