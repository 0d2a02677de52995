//! What npt depends on, checked by cargo-deny against `deny.toml`: permissive licences only, no
//! wildcard versions, crates only from crates.io. Advisories are not checked here: the RustSec
//! database is a git clone from GitHub, which this project's machines cannot reach (`cargo deny
//! check advisories` where it is). `.ci/run` installs cargo-deny; without it the test skips
//! with a message.

mod common;

use std::process::Command;

#[test]
fn licences_bans_and_sources_pass_cargo_deny() {
    let have = Command::new("cargo")
        .args(["deny", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        eprintln!("SKIPPED: cargo-deny is not installed (cargo install cargo-deny --locked)");
        return;
    }
    let out = Command::new("cargo")
        .args(["deny", "--offline", "check", "licenses", "bans", "sources"])
        .current_dir(common::repo_root())
        .output()
        .expect("cargo deny runs");
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo deny refused:\n{text}");
    assert!(text.contains("bans ok, licenses ok, sources ok"), "{text}");
}
