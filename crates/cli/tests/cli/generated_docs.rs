//! The manual pages (`docs/man/*.1`) and shell completions (`completions/`) are checked in so
//! that packagers and readers need no build; this test keeps them equal to what the clap
//! definitions generate today. It regenerates every file in memory from the binary (`npt man`,
//! `npt completions`) and fails naming each stale, missing or extra file. The README's
//! `$ npt --help` block is held to the binary's `npt --help` the same way. Run it with
//! `NPT_REGENERATE=1` to rewrite them instead.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{npt, repo_root};

const REGENERATE: &str =
    "NPT_REGENERATE=1 cargo test -p npt --test cli generated_docs::   (then commit the files)";

/// `npt ARGS` to the end; its stdout (the test fails on a non-zero exit).
fn stdout(args: &[&str]) -> Vec<u8> {
    let out = npt().args(args).output().expect("npt runs");
    assert!(
        out.status.success(),
        "npt {}: {}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Every generated file, by its path under the repository root.
fn generated() -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let list = String::from_utf8(stdout(&["man", "--list"])).expect("UTF-8 page list");
    for line in list.lines() {
        let (file, words) = line.split_once('\t').expect("FILE<TAB>WORDS");
        let mut args = vec!["man"];
        args.extend(words.split_whitespace());
        files.insert(format!("docs/man/{file}"), stdout(&args));
    }
    for (shell, file) in [("bash", "npt.bash"), ("zsh", "_npt"), ("fish", "npt.fish")] {
        files.insert(
            format!("completions/{file}"),
            stdout(&["completions", shell]),
        );
    }
    files
}

/// The checked-in files of the kinds this test owns (`docs/man/*.1`, everything in
/// `completions/`), by path.
fn checked_in(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for (dir, want) in [("docs/man", Some("1")), ("completions", None)] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries {
            let p = e.expect("readable directory").path();
            let ours = match want {
                Some(ext) => p.extension().is_some_and(|x| x == ext),
                None => p.is_file(),
            };
            if ours {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                files.insert(format!("{dir}/{name}"), std::fs::read(&p).unwrap());
            }
        }
    }
    files
}

/// The first line where two texts differ, for the failure message.
fn first_difference(want: &[u8], have: &[u8]) -> String {
    let (w, h) = (String::from_utf8_lossy(want), String::from_utf8_lossy(have));
    let mut hl = h.lines();
    for (i, wl) in w.lines().enumerate() {
        match hl.next() {
            Some(l) if l == wl => continue,
            Some(l) => return format!("line {}: generated {wl:?}, checked in {l:?}", i + 1),
            None => return format!("line {}: generated {wl:?}, checked in: end of file", i + 1),
        }
    }
    "the checked-in file has extra lines at its end".into()
}

#[test]
fn man_pages_and_completions_are_current() {
    let root = repo_root();
    let want = generated();
    let have = checked_in(&root);
    if std::env::var_os("NPT_REGENERATE").is_some() {
        for path in have.keys().filter(|p| !want.contains_key(*p)) {
            std::fs::remove_file(root.join(path)).unwrap();
        }
        for (path, bytes) in &want {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, bytes).unwrap();
        }
        eprintln!("rewrote {} generated files", want.len());
        return;
    }
    let mut problems = Vec::new();
    for (path, bytes) in &want {
        match have.get(path) {
            None => problems.push(format!("{path}: missing")),
            Some(h) if h != bytes => {
                problems.push(format!("{path}: stale ({})", first_difference(bytes, h)))
            }
            Some(_) => {}
        }
    }
    for path in have.keys().filter(|p| !want.contains_key(*p)) {
        problems.push(format!(
            "{path}: no longer generated (a removed subcommand?)"
        ));
    }
    assert!(
        problems.is_empty(),
        "the checked-in man pages or completions differ from what the clap definitions \
         generate:\n  {}\nregenerate them with:\n  {REGENERATE}",
        problems.join("\n  ")
    );
    // What is compared must be real pages and scripts, not empty output.
    assert!(want.len() >= 3 + 10, "{} files", want.len());
    assert!(want.values().all(|b| !b.is_empty()));
}

/// The README's `$ npt --help` block: the text between its command line and the closing fence.
const HELP_OPENING: &str = "```\n$ npt --help\n";

/// The byte range of the README's `npt --help` output (after the command line, up to the
/// closing fence).
fn readme_help_range(readme: &str) -> std::ops::Range<usize> {
    let start = readme
        .find(HELP_OPENING)
        .expect("README.md has a ```\n$ npt --help block")
        + HELP_OPENING.len();
    let len = readme[start..]
        .find("```")
        .expect("the npt --help block is closed");
    start..start + len
}

/// The README shows `npt --help` as the binary prints it (every subcommand listed, `trace`
/// included), and keeps doing so: a subcommand added or reworded without the README fails
/// here.
#[test]
fn readme_help_block_is_what_npt_help_prints() {
    let root = repo_root();
    let path = root.join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let help = String::from_utf8(stdout(&["--help"])).expect("UTF-8 help");
    let range = readme_help_range(&readme);
    if std::env::var_os("NPT_REGENERATE").is_some() {
        let mut new = readme.clone();
        new.replace_range(range, &help);
        std::fs::write(&path, new).unwrap();
        eprintln!("rewrote the npt --help block of README.md");
        return;
    }
    let shown = &readme[range];
    assert!(
        shown == help,
        "README.md's `$ npt --help` block differs from `npt --help` ({}); regenerate with:\n  \
         {REGENERATE}",
        first_difference(help.as_bytes(), shown.as_bytes())
    );
    // A real help text, with every subcommand's line.
    for sub in ["serve", "probe", "ping", "trace", "compare", "lab"] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(sub)),
            "{sub} missing from npt --help:\n{help}"
        );
    }
}
