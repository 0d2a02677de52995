//! The workspace's dependencies flow one way (docs/development.md, "Layout"), checked
//! over `cargo metadata` so that a new `use` of the wrong crate fails here and not in review:
//! wire and stats at the bottom, the result types above them, engines above those, renderers,
//! compare and merge above the engines, the monitor above those, the cli on top. An engine never
//! depends on a renderer (`npt-report`), and `ping` needs neither `users` nor `probe` for its
//! transports.
//!
//! Inside the cli the same holds for its folders, checked over its source (`crate::` and
//! `super::` paths): `usage` at the bottom, the flag groups (`flags/`) above it, the run
//! sequence (`execute/`) above those, the subcommands (`cmd/<name>/`) on top; a subcommand
//! reaches another only where it runs it (compare, lab, monitor, demo), and no two modules
//! import each other.
#![cfg(test)] // clippy.toml: test helpers count as tests

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
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
    ("npt-lifetime", 3),
    ("npt-mtu", 3),
    ("npt-setup", 3),
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
/// measures each segment with `ping`'s own run and `ping --from`'s loop, and reads each
/// segment's marking with the probe's marked echoes (as its agents do); the loaded probe
/// (`npt probe --under-load`) runs the bulk engine's streams as its load, owned by the probe's
/// run so that one stop ends both and the load never outlives the probe; the client's `--token`
/// handshake over UDP goes through a SOCKS5 relay in the proxy's framing, as the flow after it.
const SAME_LAYER: &[(&str, &str)] = &[
    ("npt-client", "npt-proxy"),
    ("npt-users", "npt-probe"),
    ("npt-trace", "npt-ping"),
    ("npt-trace", "npt-mtu"),
    ("npt-trace", "npt-probe"),
    ("npt-probe", "npt-bulk"),
];

const ENGINES: &[&str] = &[
    "npt-probe",
    "npt-users",
    "npt-http",
    "npt-ping",
    "npt-bulk",
    "npt-trace",
    "npt-lifetime",
    "npt-mtu",
    "npt-setup",
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

/// The cli's folders, bottom up: a module may use its own folder's modules and those of lower
/// folders only (the crate root, `main.rs`, is on top).
const CLI_LAYERS: &[(&str, u8)] = &[
    ("crate::usage", 0),
    ("crate::flags", 1),
    ("crate::execute", 2),
    ("crate::cmd", 3),
];

/// The subcommands that run other subcommands, from those subcommands' own parsed arguments
/// and configs: compare's scenarios and the monitor's rounds run probe, ping, http, bulk, trace,
/// lifetime, mtu and setup (and compare's `run` too); `npt lab run` runs compare's scenarios;
/// `npt demo` is a probe of its own server.
const CMD_USES: &[(&str, &[&str])] = &[
    (
        "compare",
        &[
            "bulk", "http", "lifetime", "mtu", "ping", "probe", "run", "setup", "trace",
        ],
    ),
    (
        "monitor",
        &[
            "compare", "bulk", "http", "lifetime", "mtu", "ping", "probe", "setup", "trace",
        ],
    ),
    ("lab", &["compare"]),
    ("demo", &["probe"]),
];

/// The modules that read the crate root: the manual pages and completions are made from the
/// whole command tree (`Cli`).
const READ_THE_ROOT: &[&str] = &["crate::cmd::manual"];

/// The cli's modules (`crate`, `crate::cmd::probe` …), each with its source: comments and
/// the unit tests at its end (which may reach anywhere) left out.
fn cli_modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
                continue;
            }
            // A folder module's `tests.rs` is its unit tests, which may reach anywhere.
            let stem = path.file_stem().and_then(|e| e.to_str());
            if path.extension().and_then(|e| e.to_str()) != Some("rs") || stem == Some("tests") {
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "main")) {
                parts.pop();
            }
            let module = std::iter::once("crate".to_string())
                .chain(parts)
                .collect::<Vec<_>>()
                .join("::");
            let text = std::fs::read_to_string(&path).unwrap();
            out.insert(module, code_of(&text));
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

/// `text` without its comments and its trailing `#[cfg(test)] mod …`.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod "))
        {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        code.push_str(line.split(" // ").next().unwrap_or(line));
        code.push('\n');
    }
    code
}

/// The paths written after each `crate::` and `super::` in `code`, braces expanded
/// (`crate::flags::{source, via}` → `crate::flags::source`, `crate::flags::via`), as absolute
/// paths seen from `module`.
fn paths_in(module: &str, code: &str) -> Vec<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for (start, anchor) in [("crate::", "crate"), ("super::", "super")] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            if code[..at].chars().next_back().is_some_and(ident) {
                continue; // `$crate::`, `foo_super::`
            }
            let base = match anchor {
                "crate" => "crate".to_string(),
                _ => module
                    .rsplit_once("::")
                    .map_or("crate", |(p, _)| p)
                    .to_string(),
            };
            let rest = &code[from..];
            let mut path = base;
            let mut tail = rest;
            loop {
                let seg: String = tail.chars().take_while(|c| ident(*c)).collect();
                if seg.is_empty() {
                    break;
                }
                path = format!("{path}::{seg}");
                tail = &tail[seg.len()..];
                match tail.strip_prefix("::") {
                    Some(t) => tail = t,
                    None => break,
                }
            }
            let Some(group) = tail.strip_prefix('{') else {
                out.push(path);
                continue;
            };
            let inner: String = group.chars().take_while(|c| *c != '}').collect();
            for item in inner.split(',') {
                let seg: String = item.trim().chars().take_while(|c| ident(*c)).collect();
                match seg.as_str() {
                    "" => {}
                    "self" => out.push(path.clone()),
                    _ => out.push(format!("{path}::{seg}")),
                }
            }
        }
    }
    out
}

/// Module → the cli modules it uses: the longest module each path names, and each child it
/// declares (`mod x;`: a parent owns its children, so a child that reads its parent is a cycle).
fn cli_graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = cli_modules();
    let mut g = BTreeMap::new();
    for (module, code) in &modules {
        let mut uses = BTreeSet::new();
        for path in paths_in(module, code) {
            let mut p = path.as_str();
            while !modules.contains_key(p) {
                match p.rsplit_once("::") {
                    Some((parent, _)) => p = parent,
                    None => break,
                }
            }
            if modules.contains_key(p) && p != module {
                uses.insert(p.to_string());
            }
        }
        for child in modules.keys() {
            if child.rsplit_once("::").map(|(p, _)| p) == Some(module.as_str()) {
                uses.insert(child.clone());
            }
        }
        g.insert(module.clone(), uses);
    }
    g
}

fn cli_layer(module: &str) -> Option<(u8, &'static str)> {
    CLI_LAYERS
        .iter()
        .find(|(prefix, _)| module == *prefix || module.starts_with(&format!("{prefix}::")))
        .map(|(prefix, l)| (*l, *prefix))
}

/// `crate::cmd::probe::config` → `probe`.
fn subcommand(module: &str) -> Option<&str> {
    module.strip_prefix("crate::cmd::")?.split("::").next()
}

#[test]
fn the_cli_folders_point_down_and_subcommands_reach_only_what_they_run() {
    let g = cli_graph();
    assert!(
        g.contains_key("crate::cmd::probe") && g.contains_key("crate::flags::source"),
        "the cli's modules were read: {:?}",
        g.keys()
    );
    let mut wrong = Vec::new();
    for (module, uses) in &g {
        for u in uses {
            let ok = match (cli_layer(module), cli_layer(u)) {
                // The crate root declares the folders and dispatches to the subcommands.
                (None, _) => true,
                (Some(_), None) => READ_THE_ROOT.contains(&module.as_str()),
                (Some((lm, _)), Some((lu, _))) if lu < lm => true,
                (Some((lm, _)), Some((lu, _))) if lu > lm => false,
                _ => match (subcommand(module), subcommand(u)) {
                    (Some(a), Some(b)) => {
                        a == b
                            || CMD_USES
                                .iter()
                                .any(|(from, to)| *from == a && to.contains(&b))
                    }
                    _ => true,
                },
            };
            if !ok {
                wrong.push(format!("{module} -> {u}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "cli modules that reach up or across: {wrong:#?}"
    );
}

#[test]
fn no_two_cli_modules_import_each_other() {
    let mut g = cli_graph();
    for m in READ_THE_ROOT {
        g.get_mut(*m).map(|uses| uses.remove("crate"));
    }
    let mut cycles = Vec::new();
    // Every module's reach, a cycle being a module that reaches itself through another.
    for start in g.keys() {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&String> = g[start].iter().collect();
        while let Some(m) = todo.pop() {
            if !seen.insert(m.clone()) {
                continue;
            }
            if m == start {
                break;
            }
            todo.extend(g.get(m).into_iter().flatten());
        }
        if seen.contains(start) {
            let through: Vec<&String> = g[start]
                .iter()
                .filter(|n| {
                    // The neighbours that lead back.
                    let mut s = BTreeSet::new();
                    let mut t = vec![*n];
                    while let Some(m) = t.pop() {
                        if s.insert(m.clone()) {
                            t.extend(g.get(m).into_iter().flatten());
                        }
                    }
                    s.contains(start)
                })
                .collect();
            cycles.push(format!("{start} <-> {through:?}"));
        }
    }
    assert!(cycles.is_empty(), "module cycles in the cli: {cycles:#?}");
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Unit tests live in the module they test or in its `tests` submodule (a folder module's
/// `tests.rs`), never in a sibling file pulled in with `#[path]`: a test file beside a
/// module's file reads as another module of the crate.
#[test]
fn no_crate_source_pulls_a_module_in_by_path() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for c in std::fs::read_dir(&crates).unwrap().flatten() {
        let src = c.path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(
        files.len() > 100,
        "read {} files under {crates:?}",
        files.len()
    );
    let found: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines().any(|l| l.trim_start().starts_with("#[path"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(found.is_empty(), "#[path] modules in: {found:?}");
}
