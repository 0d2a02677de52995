//! The workspace's dependencies flow one way (docs/development.md, "Layout"), checked
//! over `cargo metadata` so that a new `use` of the wrong crate fails here and not in review:
//! wire and stats at the bottom, the result types above them, engines above those, renderers,
//! compare and merge above the engines, the monitor above those, the cli on top. An engine never
//! depends on a renderer (`npt-report`), and `ping` needs neither `users` nor `probe` for its
//! transports.
#![cfg(test)] // clippy.toml: test helpers count as tests

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each crate's layer: a crate's normal (non-dev) dependencies on workspace crates are all in
/// lower layers, except those in [`SAME_LAYER`].
const LAYERS: &[(&str, u8)] = &[
    ("npt-wire", 0),
    ("npt-stats", 0),
    ("npt-netio", 0),
    ("npt-tls", 0),
    ("npt-result", 1),
    ("npt-client", 2),
    ("npt-metrics", 1),
    ("npt-link", 1),
    ("npt-proxy", 2),
    ("npt-server", 2),
    ("npt-lab", 2),
    ("npt-probe", 3),
    ("npt-users", 3),
    ("npt-http", 3),
    ("npt-ping", 3),
    ("npt-bulk", 3),
    ("npt-trace", 3),
    ("npt-report", 4),
    // The monitor runs rounds of every engine (handed to it by the cli, which owns the flags)
    // and serves a dashboard made of the renderers' pieces: above both, below the binary.
    ("npt-monitor", 5),
    ("npt", 6),
    // Test support, a dev-dependency only: no crate may depend on it for real.
    ("npt-testkit", 7),
];

/// Allowed edges within one layer, with why: `run`'s game users are measured by the probe's
/// sans-IO session (the same loss, reorder and jitter accounting as `npt probe`); `trace`
/// measures each segment with `ping`'s own run and `ping --from`'s loop; the loaded probe
/// (`npt probe --under-load`) runs the bulk engine's streams as its load, owned by the probe's
/// run so that one stop ends both and the load never outlives the probe; the client's `--token`
/// handshake over UDP goes through a SOCKS5 relay in the proxy's framing, as the flow after it.
const SAME_LAYER: &[(&str, &str)] = &[
    ("npt-client", "npt-proxy"),
    ("npt-users", "npt-probe"),
    ("npt-trace", "npt-ping"),
    ("npt-probe", "npt-bulk"),
];

const ENGINES: &[&str] = &[
    "npt-probe",
    "npt-users",
    "npt-http",
    "npt-ping",
    "npt-bulk",
    "npt-trace",
];

/// Workspace crate → its normal dependencies on workspace crates.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let ours: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null()) // normal, not dev or build
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|n| ours.contains(n) && *n != p["name"].as_str().unwrap())
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn every_workspace_crate_has_a_layer() {
    let g = graph();
    let layered: BTreeSet<&str> = LAYERS.iter().map(|(n, _)| *n).collect();
    for name in g.keys() {
        assert!(
            layered.contains(name.as_str()),
            "{name} has no layer in tests/cli/layering.rs"
        );
    }
}

#[test]
fn dependencies_point_down() {
    let layer: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut wrong = Vec::new();
    for (name, deps) in graph() {
        let Some(&l) = layer.get(name.as_str()) else {
            continue;
        };
        for d in deps {
            let dl = layer.get(d.as_str()).copied().unwrap_or(u8::MAX);
            let same_ok = SAME_LAYER.contains(&(name.as_str(), d.as_str()));
            if !(dl < l || (dl == l && same_ok)) {
                wrong.push(format!("{name} (layer {l}) -> {d} (layer {dl})"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "dependencies that point up or sideways: {wrong:#?}"
    );
}

#[test]
fn no_engine_depends_on_the_renderers_and_ping_needs_no_other_engine() {
    let g = graph();
    for e in ENGINES {
        let deps = &g[*e];
        assert!(!deps.contains("npt-report"), "{e} depends on npt-report");
    }
    let ping = &g["npt-ping"];
    assert!(
        !ping.contains("npt-users") && !ping.contains("npt-probe"),
        "npt-ping depends on {ping:?}"
    );
    let result: Vec<&String> = g["npt-result"].iter().collect();
    assert_eq!(
        result,
        ["npt-stats"],
        "npt-result holds types over stats only"
    );
}
