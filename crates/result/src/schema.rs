//! The JSON Schemas of the result documents, generated from the types that write and read them
//! (schemars), so that `schema/<kind>.schema.json` cannot drift from the code: a field added to
//! a body is in its kind's schema as soon as the files are regenerated, and a test
//! (`crates/result/tests/schemas.rs`) fails while the checked-in files are stale.
//!
//! The types carry what the schemas say beyond field names and types as schemars attributes
//! next to the fields (names of modes and protocols, histogram names, ranges, the error
//! vocabulary); the envelope's `kind` is the one thing the types cannot say per file, and
//! [`finish`] adds it. Shared types (`Summary`, `Directions`, `Interval` …) are `$defs`.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

use crate::Document;

/// The kinds with a schema, each checked in as `schema/<kind>.schema.json` ([`file_name`]).
pub const KINDS: &[&str] = crate::any::KINDS;

/// The per-packet log's line (`--packets`): its schema is checked in beside the kinds'.
pub const PACKET: &str = "packet";

/// Every checked-in schema: each kind's document, and the per-packet log's line.
pub fn names() -> impl Iterator<Item = &'static str> {
    KINDS.iter().copied().chain([PACKET])
}

/// The file `kind`'s schema is checked in as, under `schema/`.
pub fn file_name(kind: &str) -> String {
    format!("{kind}.schema.json")
}

/// The JSON Schema (2020-12) of `kind`'s documents; `None` for a kind npt does not write.
pub fn for_kind(kind: &str) -> Option<Value> {
    crate::any::derived_schema(kind).map(|generated| finish(kind, generated))
}

/// The JSON Schema of one line of the per-packet log (`--packets`).
pub fn packet_line() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<crate::packets::PacketLine>()
        .to_value();
    if let Some(root) = schema.as_object_mut() {
        root.insert(
            "$id".into(),
            format!("https://npt.invalid/schema/{}", file_name(PACKET)).into(),
        );
        root.insert("title".into(), "npt per-packet log line".into());
        root.insert(
            "description".into(),
            "One line of `npt probe --packets` or `npt ping --packets` (NDJSON: one such \
             object per line). Generated from the npt-result types: do not edit, regenerate \
             (docs/result-json.md)."
                .into(),
        );
    }
    without_null(&mut schema);
    plain_descriptions(&mut schema);
    schema
}

/// `name`'s schema as checked in (a kind's, or [`PACKET`]): pretty JSON and a final newline.
pub fn text(name: &str) -> Option<String> {
    let schema = if name == PACKET {
        packet_line()
    } else {
        for_kind(name)?
    };
    // A `Value` always serializes.
    let mut text = serde_json::to_string_pretty(&schema).ok()?;
    text.push('\n');
    Some(text)
}

/// The schema of a document with body `B`, as schemars derives it: the envelope and the body
/// flattened into one object, shared types under `$defs`. It describes what npt *reads*
/// (schemars' default contract): a field read with a default (`in_flight_at_end`, fields
/// added after v2 was first written) is not required, so older v2 files still validate.
pub(crate) fn generate<B: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Document<B>>()
        .to_value()
}

/// The one post-processing step of a generated schema, for what the types cannot say:
/// - the file's identity: `$id`, `title`, and a `description` naming the docs;
/// - `kind` as the constant of this file (the envelope type is shared by every kind);
/// - no `null` for an `Option` field: schemars allows it (serde would read it), but npt leaves
///   an absent value out and never writes `null`, and every `Option` field of the types is
///   `skip_serializing_if = "Option::is_none"`;
/// - descriptions without rustdoc's link syntax (`` [`hist`] `` reads `` `hist` ``), since
///   they come from the doc comments and are read by people who never see the Rust docs.
fn finish(kind: &str, mut schema: Value) -> Value {
    if let Some(root) = schema.as_object_mut() {
        root.insert(
            "$id".into(),
            format!("https://npt.invalid/schema/{}", file_name(kind)).into(),
        );
        root.insert("title".into(), format!("npt {kind} result document").into());
        root.insert(
            "description".into(),
            format!(
                "One `npt {kind}` result (schema {}). Generated from the npt-result types: do \
                 not edit, regenerate (docs/result-json.md). Field names are stable; \
                 docs/result-json.md says what they mean.",
                crate::SCHEMA
            )
            .into(),
        );
    }
    if let Some(k) = schema.pointer_mut("/properties/kind") {
        if let Some(k) = k.as_object_mut() {
            k.insert("const".into(), kind.into());
        }
    }
    without_null(&mut schema);
    plain_descriptions(&mut schema);
    schema
}

/// Every subschema under `v` without its `null` alternative ([`finish`]): `"type": ["number",
/// "null"]` becomes `"type": "number"`, and `"anyOf": [S, {"type": "null"}]` becomes `S`
/// (keeping the description beside it).
fn without_null(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let null = serde_json::json!({"type": "null"});
            let other = match map.get("anyOf").and_then(Value::as_array) {
                Some(alts) if alts.len() == 2 && alts.contains(&null) => {
                    alts.iter().find(|a| **a != null).cloned()
                }
                _ => None,
            };
            if let Some(Value::Object(other)) = other {
                map.remove("anyOf");
                for (k, x) in other {
                    map.entry(k).or_insert(x);
                }
            }
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    map.insert("type".into(), only);
                }
            }
            map.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

/// Every `description` under `v` with rustdoc links made plain text: `` [`a::B`] `` becomes
/// `` `B` `` (the last path segment) and `[text](target)` becomes `text`.
fn plain_descriptions(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(s) if key == "description" => *s = plain(s),
                    _ => plain_descriptions(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(plain_descriptions),
        _ => {}
    }
}

/// One description with rustdoc links made plain ([`plain_descriptions`]), and the line
/// breaks of the doc comment's wrapping undone (paragraph breaks kept).
fn plain(text: &str) -> String {
    let text = text
        .split("\n\n")
        .map(|para| para.replace('\n', " "))
        .collect::<Vec<_>>()
        .join("\n\n");
    let text = text.as_str();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let inner = &after[..close];
        let mut tail = &after[close + 1..];
        // `[text](target)`: keep the text, drop the target.
        if let Some(t) = tail.strip_prefix('(') {
            if let Some(end) = t.find(')') {
                tail = &t[end + 1..];
            }
        }
        match inner.strip_prefix('`').and_then(|i| i.strip_suffix('`')) {
            Some(code) => {
                let item = code.rsplit("::").next().unwrap_or(code);
                out.push('`');
                out.push_str(item);
                out.push('`');
            }
            None => out.push_str(inner),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rustdoc_links_read_as_plain_text() {
        assert_eq!(
            plain("by name: [`hist`]. See [`crate::error::ErrorKind`]."),
            "by name: `hist`. See `ErrorKind`."
        );
        assert_eq!(
            plain("[`Errors::attempts_or`] and [the docs](x.md) [open"),
            "`attempts_or` and the docs [open"
        );
        assert_eq!(plain("`\"200\"` … no link"), "`\"200\"` … no link");
        assert_eq!(plain("one\nline\n\nnext"), "one line\n\nnext");
    }

    #[test]
    fn option_fields_are_left_out_never_null() {
        let mut v = serde_json::json!({"properties": {
            "a": {"anyOf": [{"$ref": "#/$defs/Summary"}, {"type": "null"}], "description": "d"},
            "b": {"type": ["number", "null"], "format": "double"},
            "c": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        }});
        without_null(&mut v);
        assert_eq!(
            v["properties"],
            serde_json::json!({
                "a": {"$ref": "#/$defs/Summary", "description": "d"},
                "b": {"type": "number", "format": "double"},
                "c": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            })
        );
    }

    #[test]
    fn every_kind_has_a_schema_whose_kind_is_its_own() {
        for kind in KINDS {
            let s = for_kind(kind).unwrap();
            assert_eq!(s["properties"]["kind"]["const"], *kind);
            assert_eq!(s["properties"]["schema"]["const"], crate::SCHEMA);
            assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
            assert!(s["$defs"].as_object().is_some_and(|d| !d.is_empty()));
        }
        assert!(for_kind("iperf").is_none());
    }
}
