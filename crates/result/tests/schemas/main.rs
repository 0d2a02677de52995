//! The JSON Schemas under `schema/` are generated from the npt-result types
//! (`npt_result::schema`) and checked in, so that scripts and other tools can validate results
//! without building npt. This test keeps the checked-in files equal to what the types generate
//! today and fails naming each stale, missing or extra file (`NPT_REGENERATE=1` rewrites them
//! instead); and it shows that the generated schemas still reject what matters to a script: a
//! wrong `kind` or schema version, a missing block, a string where a number belongs, a name
//! outside the documented ones.
#![cfg(test)] // clippy.toml: test helpers count as tests

use std::path::{Path, PathBuf};

use npt_result::schema::{file_name, for_kind, names, packet_line, text, KINDS};
use serde_json::{json, Value};

const REGENERATE: &str =
    "NPT_REGENERATE=1 cargo test -p npt-result --test schemas   (then commit the files)";

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema")
}

/// The first JSON pointer at which `want` and `have` differ, for the failure message.
fn first_difference(want: &Value, have: &Value, at: &str) -> String {
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => {
            for (k, wv) in w {
                let here = format!("{at}/{k}");
                match h.get(k) {
                    None => return format!("{here}: generated, not checked in"),
                    Some(hv) if hv != wv => return first_difference(wv, hv, &here),
                    Some(_) => {}
                }
            }
            match h.keys().find(|k| !w.contains_key(*k)) {
                Some(k) => format!("{at}/{k}: checked in, no longer generated"),
                None => format!("{at}: differs"),
            }
        }
        (Value::Array(w), Value::Array(h)) if w.len() == h.len() => {
            match w.iter().zip(h).position(|(a, b)| a != b) {
                Some(i) => first_difference(&w[i], &h[i], &format!("{at}/{i}")),
                None => format!("{at}: differs"),
            }
        }
        _ => format!("{at}: generated {want}, checked in {have}"),
    }
}

#[test]
fn checked_in_schemas_are_the_generated_ones() {
    let dir = schema_dir();
    let regenerate = std::env::var("NPT_REGENERATE").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for kind in names() {
        let file = file_name(kind);
        let path = dir.join(&file);
        let want = text(kind).expect("every kind has a schema");
        let have = std::fs::read_to_string(&path).ok();
        if have.as_deref() == Some(want.as_str()) {
            continue;
        }
        if regenerate {
            std::fs::write(&path, &want).unwrap();
            continue;
        }
        let why = match have {
            None => "missing".to_string(),
            Some(h) => match serde_json::from_str::<Value>(&h) {
                Err(e) => format!("not JSON: {e}"),
                Ok(h) if h == serde_json::from_str::<Value>(&want).unwrap() => {
                    "the same schema, formatted differently".to_string()
                }
                Ok(h) => first_difference(&serde_json::from_str(&want).unwrap(), &h, ""),
            },
        };
        stale.push(format!("schema/{file}: {why}"));
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let ours = names().any(|k| file_name(k) == name);
        if name.ends_with(".schema.json") && !ours {
            if regenerate {
                std::fs::remove_file(dir.join(&name)).unwrap();
            } else {
                stale.push(format!("schema/{name}: no type generates it"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "the checked-in schemas are not what the npt-result types generate:\n  {}\nregenerate: {REGENERATE}",
        stale.join("\n  ")
    );
}

/// Every violation of `kind`'s generated schema by `doc`. Formats (`date-time`) are asserted,
/// as a strict validator would: in 2020-12 they are annotations unless the validator opts in.
fn violations(doc: &Value, kind: &str) -> Vec<String> {
    let schema = for_kind(kind).unwrap();
    let v = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the generated schema compiles");
    v.iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

mod examples;
use examples::documents;

/// Sets the value at JSON pointer `at` (whose parent exists) in a copy of `doc`.
fn with(doc: &Value, at: &str, value: Value) -> Value {
    let mut doc = doc.clone();
    let (parent, key) = at.rsplit_once('/').unwrap();
    doc.pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at {parent}"))
        .insert(key.to_string(), value);
    doc
}

/// A copy of `doc` without the member at JSON pointer `at`.
fn without(doc: &Value, at: &str) -> Value {
    let mut doc = doc.clone();
    let (parent, key) = at.rsplit_once('/').unwrap();
    let removed = doc
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .and_then(|o| o.remove(key));
    assert!(removed.is_some(), "nothing at {at}");
    doc
}

#[test]
fn real_documents_of_every_kind_validate() {
    let docs = documents();
    assert_eq!(
        docs.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        KINDS,
        "one document per kind"
    );
    for (kind, doc) in &docs {
        assert_eq!(violations(doc, kind), Vec::<String>::new(), "{kind}");
    }
}

#[test]
fn schemas_reject_what_matters() {
    for (kind, doc) in documents() {
        // The latency block's protocol: the first key of `latency`.
        let proto = doc["latency"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let other_kind = KINDS.iter().find(|k| **k != kind).unwrap();
        let number = match kind {
            "ping" | "probe" => "/summary/sent",
            "bulk" => "/summary/goodput_mbps",
            "trace" => "/summary/segments",
            "lifetime" => "/summary/rounds",
            "mtu" => "/summary/up/sent",
            "setup" => "/summary/attempts",
            _ => "/summary/requests",
        };
        let cases = [
            ("a wrong kind", with(&doc, "/kind", json!(other_kind))),
            (
                "another schema version",
                with(&doc, "/schema", json!("npt.result.v1")),
            ),
            ("a missing summary", without(&doc, "/summary")),
            ("a missing errors block", without(&doc, "/errors")),
            (
                "a string where a count belongs",
                with(&doc, number, json!("12")),
            ),
            (
                "a string where a latency belongs",
                with(&doc, &format!("/latency/{proto}/p99_ms"), json!("1.5")),
            ),
            (
                "a missing p99_ms",
                without(&doc, &format!("/latency/{proto}/p99_ms")),
            ),
            ("another tool", with(&doc, "/tool/name", json!("iperf"))),
            (
                "an unknown stop reason",
                with(&doc, "/stopped_by", json!("finished")),
            ),
            (
                "a misspelt summary field",
                with(&doc, "/summary/recieved", json!(1)),
            ),
            (
                "an error kind outside the vocabulary",
                with(
                    &doc,
                    "/errors/by_kind/aborted",
                    json!({"count": 1, "examples": []}),
                ),
            ),
            (
                "an error rate above 1",
                with(&doc, "/errors/error_rate", json!(1.5)),
            ),
            (
                "a start time that is no date",
                with(&doc, "/started_at", json!("yesterday")),
            ),
        ];
        for (what, bad) in cases {
            assert!(
                !violations(&bad, kind).is_empty(),
                "{kind}: the schema accepts {what}"
            );
        }
    }
}

#[test]
fn schemas_reject_names_outside_each_kinds_documented_ones() {
    let docs: std::collections::BTreeMap<_, _> = documents().into_iter().collect();
    let histogram = &docs["probe"]["histograms"]["rtt"];
    let cases = [
        ("probe", "/summary/mode", json!("burst")),
        ("probe", "/summary/protocol", json!("sctp")),
        ("probe", "/histograms/rtt_p99", histogram.clone()),
        ("run", "/summary/model", json!("both")),
        ("run", "/histograms/proto.sctp.latency", histogram.clone()),
        (
            "run",
            "/activities/chat",
            docs["run"]["activities"]["web"].clone(),
        ),
        ("http", "/summary/protocol", json!("h3")),
        ("http", "/summary/status/2xx", json!(1)),
        ("http", "/histograms/hosts", histogram.clone()),
        ("ping", "/proto", json!("sctp")),
        ("ping", "/target", json!("127.0.0.1:9")),
        ("ping", "/histogram/unit", json!("us")),
        ("bulk", "/summary/direction", json!("sideways")),
        ("bulk", "/histograms/goodput", histogram.clone()),
        ("bulk", "/intervals/0/streams/0/cwnd", json!("10")),
        ("trace", "/proto", json!("icmp")),
        ("trace", "/histograms/segment.x", histogram.clone()),
        ("trace", "/rounds/0/phase", json!("after")),
        ("trace", "/segments/0/to", json!("10.0.5.2:7777")),
    ];
    for (kind, at, value) in cases {
        assert_eq!(
            violations(&docs[kind], kind),
            Vec::<String>::new(),
            "{kind}"
        );
        let bad = with(&docs[kind], at, value.clone());
        assert!(
            !violations(&bad, kind).is_empty(),
            "{kind}: the schema accepts {value} at {at}"
        );
    }
    // Each kind's own part of the one health type.
    for (kind, field) in [
        ("probe", "sends_behind_schedule"),
        ("http", "send_lateness_ms"),
        ("bulk", "behind_threshold_ms"),
        ("run", "late_wakeups"),
    ] {
        let bad = without(&docs[kind], &format!("/health/{field}"));
        assert!(
            !violations(&bad, kind).is_empty(),
            "{kind}: the schema accepts a health block without {field}"
        );
    }
    // Open loop: the latency is corrected, so the uncorrected one must be there too (the
    // fixture is a closed-loop run, which has none).
    let http = &docs["http"];
    assert!(http["summary"].get("latency_uncorrected_ms").is_none());
    let open = with(
        &with(http, "/summary/open_loop", json!(true)),
        "/summary/rate",
        json!(100.0),
    );
    assert!(
        !violations(&open, "http").is_empty(),
        "open loop without the uncorrected latency"
    );
    let latency = http["summary"]["latency_ms"].clone();
    let complete = with(&open, "/summary/latency_uncorrected_ms", latency);
    assert_eq!(violations(&complete, "http"), Vec::<String>::new());
}

/// A per-packet log line as npt writes it validates; a fate outside the documented ones, a
/// string for a number or a missing `seq` does not.
#[test]
fn packet_lines_follow_their_schema() {
    use npt_result::packets::{Direction, Fate, PacketLine};
    let schema = packet_line();
    let v = jsonschema::options().build(&schema).expect("compiles");
    let mut line = PacketLine::new(3, Fate::Lost).sent(1_000, 1_763_000_000_000_000_000);
    line.flow = Some(1);
    line.direction = Some(Direction::Up);
    let good = serde_json::to_value(&line).unwrap();
    assert!(v.is_valid(&good), "{good}");
    for bad in [
        json!({"seq": 1, "fate": "vanished"}),
        json!({"seq": "1", "fate": "lost"}),
        json!({"fate": "received", "rtt_ns": 5}),
        json!({"seq": 1, "fate": "lost", "direction": "sideways"}),
    ] {
        assert!(!v.is_valid(&bad), "{bad} must be refused");
    }
}
