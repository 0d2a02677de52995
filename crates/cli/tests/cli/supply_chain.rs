//! What npt depends on, checked by cargo-deny against `deny.toml`: permissive licences only, no
//! wildcard versions, crates only from crates.io, and no crate with a RustSec advisory.
//! `./test.sh` installs cargo-deny; without it the tests skip with a message. The advisory
//! database is a git clone from GitHub: where GitHub cannot be reached (this project's own
//! machines) and no copy was fetched before, the advisory test says so and skips — it cannot
//! pass or fail on a database it does not have.

#![cfg(test)]

use crate::common;

use std::process::Command;

fn have_cargo_deny() -> bool {
    let have = Command::new("cargo")
        .args(["deny", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        eprintln!("SKIPPED: cargo-deny is not installed (cargo install cargo-deny --locked)");
    }
    have
}

/// `cargo deny <args>` in the repository: (success, stdout + stderr).
fn cargo_deny(args: &[&str]) -> (bool, String) {
    let out = Command::new("cargo")
        .arg("deny")
        .args(args)
        .current_dir(common::repo_root())
        .output()
        .expect("cargo deny runs");
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text.into_owned())
}

#[test]
fn licences_bans_and_sources_pass_cargo_deny() {
    if !have_cargo_deny() {
        return;
    }
    let (ok, text) = cargo_deny(&["--offline", "check", "licenses", "bans", "sources"]);
    assert!(ok, "cargo deny refused:\n{text}");
    assert!(text.contains("bans ok, licenses ok, sources ok"), "{text}");
}

/// A copy of the advisory database fetched earlier: `$CARGO_HOME/advisory-dbs/*/crates`.
fn have_advisory_copy() -> bool {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")));
    let Some(dir) = home.map(|h| h.join("advisory-dbs")) else {
        return false;
    };
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .take(64)
            .any(|e| e.path().join("crates").is_dir())
    })
}

#[test]
fn no_dependency_has_a_rustsec_advisory() {
    if !have_cargo_deny() {
        return;
    }
    // Fetches (or updates) the database first; a copy fetched earlier is used when the fetch
    // fails, and only with no copy at all does the test skip.
    let (ok, text) = cargo_deny(&["check", "advisories"]);
    if !ok && text.contains("failed to fetch advisory database") {
        if !have_advisory_copy() {
            let why = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            eprintln!("SKIPPED: the RustSec advisory database cannot be fetched here ({why})");
            return;
        }
        let (ok, offline) = cargo_deny(&["--offline", "check", "advisories"]);
        assert!(
            ok,
            "cargo deny check advisories (earlier copy) refused:\n{offline}"
        );
        assert!(offline.contains("advisories ok"), "{offline}");
        return;
    }
    assert!(ok, "cargo deny check advisories refused:\n{text}");
    assert!(text.contains("advisories ok"), "{text}");
}
