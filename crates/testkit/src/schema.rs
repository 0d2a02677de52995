//! Result documents checked against the JSON Schemas checked in under `schema/`, the contract
//! scripts read results by.

use std::path::{Path, PathBuf};

/// `schema/<kind>.schema.json` of this repository.
pub fn path(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../schema/{kind}.schema.json"))
}

/// Panics with every violation if `doc` does not match `schema/<kind>.schema.json`.
pub fn assert_valid(doc: &serde_json::Value, kind: &str) {
    let path = path(kind);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is JSON");
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "result does not match {}: {errors:#?}",
        path.display()
    );
}
