//! Link tables as a lab topology file writes them: a realistic table survives a TOML round
//! trip unchanged, and every bad value is refused with a message naming its field (the CLI
//! prints it and exits 2 before anything is created).

#![cfg(test)]

use std::collections::BTreeMap;
use std::time::Duration;

use npt_link::{Impairments, LinkError, Loss, Percent, Rate};
use serde::{Deserialize, Serialize};

/// The shape the lab's topology file gives a link: one table per direction.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkEntry {
    a: String,
    b: String,
    #[serde(default)]
    ab: Impairments,
    #[serde(default)]
    ba: Impairments,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Topology {
    links: BTreeMap<String, LinkEntry>,
}

const FORWARDING_SCENARIOS_LIKE: &str = r#"
[links.client-seattle]
a = "client"
b = "seattle"
ab = { delay = "60ms", jitter = "1ms" }
ba = { delay = "60ms", jitter = "1ms" }

[links.seattle-la]
a = "seattle"
b = "la"
ab = { delay = "16ms", rate = "1gbit", queue = 5000 }
ba = { delay = "16ms", rate = 1000000000 }

[links.la-target]
a = "la"
b = "target"
ab = { delay = "34.5ms", loss = "1%", duplicate = "0.1%", reorder = "0.5%" }
ba = { delay = "34500us", loss = { model = "gilbert-elliott", p = "1%", r = "30%", bad = "100%", good = "0%" } }

[links.lossy-dsl]
a = "client"
b = "dsl"
ab = { rate = "1.5mbit", queue = 50, loss = { model = "random", p = "2%" } }
ba = { rate = "640kbit" }
"#;

#[test]
fn a_realistic_link_table_round_trips() {
    let t: Topology = toml::from_str(FORWARDING_SCENARIOS_LIKE).unwrap();
    let la = &t.links["la-target"];
    assert_eq!(la.ab.delay, Duration::from_micros(34_500));
    assert_eq!(la.ab.delay, la.ba.delay);
    assert_eq!(
        la.ab.loss,
        Loss::Random {
            p: Percent::new(1.0)
        }
    );
    assert_eq!(
        la.ba.loss,
        Loss::GilbertElliott {
            p: Percent::new(1.0),
            r: Percent::new(30.0),
            loss_good: Percent::ZERO,
            loss_bad: Percent::new(100.0),
        }
    );
    assert_eq!(la.ab.duplicate.fraction(), 0.001);
    let sl = &t.links["seattle-la"];
    assert_eq!(sl.ab.rate, Some(Rate::bits_per_sec(1_000_000_000)));
    assert_eq!(sl.ab.rate, sl.ba.rate, "a bare number is bit/s");
    assert_eq!(sl.ab.queue_len(), 5000);
    assert_eq!(sl.ba.queue_len(), npt_link::DEFAULT_QUEUE);
    let dsl = &t.links["lossy-dsl"];
    assert_eq!(dsl.ab.rate, Some(Rate::bits_per_sec(1_500_000)));
    assert_eq!(
        dsl.ab.loss,
        Loss::Random {
            p: Percent::new(2.0)
        }
    );
    assert!(t.links["client-seattle"].ab.jitter == Duration::from_millis(1));

    let text = toml::to_string(&t).unwrap();
    let back: Topology = toml::from_str(&text).unwrap();
    assert_eq!(back, t, "{text}");
    // Written back in the same human units.
    assert!(text.contains("\"34ms 500us\""), "{text}");
    assert!(text.contains("\"1gbit\""), "{text}");
    assert!(text.contains("\"1500kbit\""), "{text}");
    assert!(text.contains("model = \"gilbert-elliott\""), "{text}");
    // And through JSON too (the lab's status output).
    let json = serde_json::to_string(&t).unwrap();
    assert_eq!(serde_json::from_str::<Topology>(&json).unwrap(), t);
}

#[test]
fn an_empty_table_is_a_perfect_wire() {
    let i: Impairments = toml::from_str("").unwrap();
    assert_eq!(i, Impairments::default());
    assert!(i.is_passthrough());
    assert_eq!(toml::to_string(&i).unwrap(), "");
}

/// Parses one direction's table and returns the error text.
fn refused(table: &str) -> String {
    match toml::from_str::<Impairments>(table) {
        Ok(i) => panic!("accepted {table:?} as {i:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_values_are_refused_naming_the_field() {
    let cases = [
        ("delay = \"-5ms\"", "delay: negative duration"),
        ("delay = \"soon\"", "delay: cannot read"),
        ("delay = \"2h\"", "delay: 2h is more than 1h"),
        ("delay = \"5ms\"\njitter = \"-1ms\"", "jitter: negative"),
        (
            "delay = \"2ms\"\njitter = \"5ms\"",
            "jitter: 5ms is more than delay (2ms)",
        ),
        ("loss = \"150%\"", "loss: 150% is outside 0%..100%"),
        ("loss = \"-1%\"", "loss: -1% is outside"),
        ("loss = \"1\"", "loss: cannot read \"1\""),
        (
            "loss = { model = \"gilbert-elliott\", p = \"1%\" }",
            "loss.r: required",
        ),
        (
            "loss = { model = \"gilbert-elliott\", p = \"1%\", r = \"130%\" }",
            "loss.r: 130% is outside",
        ),
        (
            "loss = { model = \"gilbert-elliott\", p = \"1%\", r = \"30%\", bad = \"x\" }",
            "loss.bad: cannot read",
        ),
        (
            "loss = { model = \"random\", p = \"1%\", r = \"3%\" }",
            "loss.r: only",
        ),
        (
            "loss = { model = \"bursty\", p = \"1%\" }",
            "loss.model: cannot read \"bursty\"",
        ),
        (
            "loss = { model = \"random\", q = \"1%\" }",
            "unknown field `q`",
        ),
        ("duplicate = \"101%\"", "duplicate: 101% is outside"),
        ("reorder = \"lots\"", "reorder: cannot read"),
        ("rate = \"fast\"", "rate: cannot read \"fast\""),
        ("rate = \"10 furlongs\"", "rate: cannot read"),
        ("rate = \"-10mbit\"", "rate: negative rate"),
        ("rate = 0", "rate: must be above 0"),
        (
            "rate = \"10mbit\"\nqueue = 0",
            "queue: must hold at least 1 packet",
        ),
        ("dealy = \"5ms\"", "unknown field `dealy`"),
    ];
    for (table, want) in cases {
        let got = refused(table);
        assert!(got.contains(want), "{table:?}: want {want:?} in:\n{got}");
    }
}

#[test]
fn validate_names_the_field_of_values_built_in_code() {
    let check = |i: Impairments| i.validate().unwrap_err();
    let e = check(Impairments {
        loss: Loss::Random {
            p: Percent::new(120.0),
        },
        ..Default::default()
    });
    assert_eq!(e.field(), "loss");
    assert!(matches!(e, LinkError::OutOfRange { .. }));
    let e = check(Impairments {
        loss: Loss::GilbertElliott {
            p: Percent::new(1.0),
            r: Percent::new(30.0),
            loss_good: Percent::new(f64::NAN),
            loss_bad: Percent::new(100.0),
        },
        ..Default::default()
    });
    assert_eq!(e.field(), "loss.good");
    let e = check(Impairments {
        delay: Duration::from_millis(1),
        jitter: Duration::from_millis(2),
        ..Default::default()
    });
    assert_eq!(e.field(), "jitter");
    let e = check(Impairments {
        rate: Some(Rate::bits_per_sec(0)),
        ..Default::default()
    });
    assert_eq!(e.field(), "rate");
    let e = check(Impairments {
        reorder: Percent::new(-0.5),
        ..Default::default()
    });
    assert_eq!(e.field(), "reorder");
    assert!(e.to_string().starts_with("reorder: "), "{e}");
    let ok = Impairments {
        delay: Duration::from_millis(50),
        jitter: Duration::from_millis(50),
        loss: Loss::Random {
            p: Percent::new(100.0),
        },
        rate: Some(Rate::mbit(10)),
        queue: Some(1),
        ..Default::default()
    };
    ok.validate().unwrap();
    assert!(!ok.is_passthrough());
}

#[test]
fn parse_errors_point_at_the_value() {
    let file = "[x]\ndelay = \"5ms\"\n\n[y]\ndelay = \"5ms\"\nrate = \"fast\"\n";
    let e = toml::from_str::<BTreeMap<String, Impairments>>(file)
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 6"), "{e}");
    assert!(e.contains("rate: cannot read \"fast\""), "{e}");
    let file = "[y]\nloss = { model = \"gilbert-elliott\", p = \"1\", r = \"30%\" }\n";
    let e = toml::from_str::<BTreeMap<String, Impairments>>(file)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 2") && e.contains("loss.p: cannot read \"1\""),
        "{e}"
    );
}
