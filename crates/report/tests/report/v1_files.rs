//! Why this exists: results written by an older npt (schema `npt.result.v1`: an interval record
//! per kind, http's per-host histograms nested under `histograms.hosts`) must stay readable.
//! The fixtures under `tests/fixtures/v1` were written by npt before v2 (a TCP probe in rate
//! mode, a `run` of web users, an `http` run; two segments each), with the text and CSV
//! `npt report` printed for them then, and the text of `npt merge` of the two parts. Read
//! through the v2 model they must render exactly that again, and come out as valid v2.

#![cfg(test)]

use std::path::{Path, PathBuf};

use npt_report::merge::{merge, Part};
use npt_result::any::{self, AnyResult};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1")
}

fn golden(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

/// Panics with every violation if `doc` does not match `schema/<kind>.schema.json`.
fn validate(doc: &serde_json::Value) {
    npt_testkit::schema::assert_valid(doc, doc["kind"].as_str().unwrap());
}

fn text(doc: &AnyResult) -> String {
    let mut out = Vec::new();
    npt_report::text::write_text(&mut out, doc).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn every_v1_fixture_reads_as_v2_and_renders_as_it_did() {
    let _turn = npt_testkit::turn::turn(module_path!());
    for kind in ["probe", "run", "http"] {
        for part in 0..2 {
            let stem = format!("{kind}-{part}");
            let file = fixtures().join(format!("{stem}.json"));
            let raw: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            assert_eq!(raw["schema"], npt_result::SCHEMA_V1, "{stem} is a v1 file");
            let doc = any::read(&file).unwrap();
            assert_eq!(doc.schema, npt_result::SCHEMA, "{stem}");
            assert_eq!(doc.body.kind().name(), kind);
            let v2 = serde_json::to_value(&doc).unwrap();
            validate(&v2);
            // The same figures under the v2 names.
            let (old, new) = (&raw["intervals"][0], &v2["intervals"][0]);
            assert!(!doc.body.view().intervals().is_empty(), "{stem}");
            match kind {
                "probe" => {
                    assert_eq!(new["completed"], old["received"]);
                    assert_eq!(new["rate_per_s"], old["pps"]);
                    assert_eq!(new["latency_ms"], old["rtt_ms"]);
                }
                "http" => {
                    assert_eq!(new["completed"], old["requests"]);
                    assert_eq!(new["rate_per_s"], old["rps"]);
                    for (host, h) in raw["histograms"]["hosts"].as_object().unwrap() {
                        assert_eq!(&v2["histograms"][format!("hosts.{host}")], h);
                    }
                    assert!(v2["histograms"].get("hosts").is_none());
                }
                _ => assert_eq!(new["completed"], old["requests"]),
            }
            assert_eq!(text(&doc), golden(&format!("{stem}.txt")), "{stem} text");
            let mut csv = Vec::new();
            npt_report::page::write_csv(&mut csv, &doc).unwrap();
            assert_eq!(
                String::from_utf8(csv).unwrap(),
                golden(&format!("{stem}.csv")),
                "{stem} csv"
            );
            let page = npt_report::page::html_page(&doc, &stem);
            let ids: Vec<&str> = page.charts.iter().map(|c| c.id.as_str()).collect();
            assert_eq!(
                ids,
                ["latency", "rate", "errors", "spectrum", "cdf"],
                "{stem}"
            );
            assert!(
                page.charts.iter().all(|c| c.drawable_points() > 0),
                "{stem}"
            );
            // Read again from its own v2 JSON: nothing lost.
            let again = any::from_value("again", v2.clone()).unwrap();
            assert_eq!(serde_json::to_value(&again).unwrap(), v2, "{stem}");
        }
    }
}

#[test]
fn v1_parts_merge_as_they_did() {
    let _turn = npt_testkit::turn::turn(module_path!());
    for kind in ["probe", "run", "http"] {
        let parts: Vec<Part> = (0..2)
            .map(|i| Part::read(&fixtures().join(format!("{kind}-{i}.json"))).unwrap())
            .collect();
        let (merged, coverage) = merge(&parts).unwrap();
        assert!(coverage.missing.is_empty(), "{kind}");
        assert_eq!(
            merged["schema"],
            npt_result::SCHEMA,
            "{kind}: the merge is v2"
        );
        validate(&merged);
        let doc = any::from_value("the merge", merged).unwrap();
        assert_eq!(text(&doc), golden(&format!("{kind}-merged.txt")), "{kind}");
        // Intervals joined by index: the merged series counts every part's completions.
        let sum = |d: &AnyResult| {
            d.body
                .view()
                .intervals()
                .iter()
                .map(|i| i.completed)
                .sum::<u64>()
        };
        let parts_sum: u64 = (0..2)
            .map(|i| sum(&any::read(&fixtures().join(format!("{kind}-{i}.json"))).unwrap()))
            .sum();
        assert_eq!(sum(&doc), parts_sum, "{kind}");
    }
}

#[test]
fn an_unknown_schema_is_refused_naming_file_and_version() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let mut doc: serde_json::Value = serde_json::from_str(&golden("probe-0.json")).unwrap();
    doc["schema"] = "npt.result.v3".into();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("future.json");
    std::fs::write(&f, doc.to_string()).unwrap();
    let e = any::read(&f).unwrap_err().to_string();
    assert!(
        e.contains("future.json") && e.contains("npt.result.v3"),
        "{e}"
    );
    let e = Part::read(&f).err().unwrap().to_string();
    assert!(
        e.contains("future.json") && e.contains("npt.result.v3"),
        "{e}"
    );
}
