//! `npt man` and `npt completions`: manual pages (roff) and shell completions generated from the
//! same clap definitions that parse the flags, so they cannot say something `npt --help` does
//! not. The copies checked in under `docs/man/` and `completions/` are this module's output;
//! `tests/cli/generated_docs.rs` fails when they are stale and rewrites them with
//! `NPT_REGENERATE=1`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Command, CommandFactory};
use clap_complete::Shell;

use crate::usage;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for; the script goes to stdout (e.g. `npt completions bash >
    /// ~/.local/share/bash-completion/completions/npt`).
    #[arg(value_enum)]
    shell: Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// The page to print, as the subcommand's words (`probe`, `lab run`); none: the page of
    /// `npt` itself. Read it with `npt man probe | man -l -`.
    #[arg(value_name = "SUBCOMMAND")]
    page: Vec<String>,
    /// Write every page (npt.1, npt-probe.1, npt-lab-run.1 …) into DIR instead.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["page", "list"])]
    out_dir: Option<PathBuf>,
    /// List the pages: file name, a tab, then the subcommand's words.
    #[arg(long, conflicts_with = "page")]
    list: bool,
}

/// One manual page: its file name (`npt-lab-run.1`), the words after `npt` that select it
/// (`["lab", "run"]`) and its roff text.
struct Page {
    file: String,
    words: Vec<String>,
    roff: Vec<u8>,
}

pub fn completions(a: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut crate::Cli::command(), "npt", &mut out);
    std::io::stdout().lock().write_all(&out)?;
    Ok(ExitCode::SUCCESS)
}

pub fn man(a: ManArgs) -> anyhow::Result<ExitCode> {
    let pages = pages(crate::Cli::command())?;
    if let Some(dir) = a.out_dir {
        std::fs::create_dir_all(&dir)?;
        for p in &pages {
            std::fs::write(dir.join(&p.file), &p.roff)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = std::io::stdout().lock();
    if a.list {
        for p in &pages {
            writeln!(stdout, "{}\t{}", p.file, p.words.join(" "))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let page = pages.iter().find(|p| p.words == a.page).ok_or_else(|| {
        usage!(
            "npt man: no page for `npt {}` (npt man --list shows them)",
            a.page.join(" ")
        )
    })?;
    stdout.write_all(&page.roff)?;
    Ok(ExitCode::SUCCESS)
}

/// Every page: `npt` first, then each visible subcommand depth-first, as `clap_mangen`'s own
/// `generate_to` walks them (hidden ones, like `lab daemon`, get none).
fn pages(cmd: Command) -> std::io::Result<Vec<Page>> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    collect(&cmd, Vec::new(), &mut out)?;
    Ok(out)
}

fn collect(cmd: &Command, words: Vec<String>, out: &mut Vec<Page>) -> std::io::Result<()> {
    // Subcommands have no version of their own: every page names the binary's.
    let man = clap_mangen::Man::new(cmd.clone())
        .source(format!("npt {}", env!("CARGO_PKG_VERSION")))
        .manual("npt manual");
    let mut roff = Vec::new();
    man.render(&mut roff)?;
    out.push(Page {
        file: man.get_filename(),
        words: words.clone(),
        roff,
    });
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let mut w = words.clone();
        w.push(sub.get_name().to_owned());
        collect(sub, w, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_visible_subcommand_has_a_page_named_after_its_path() {
        let pages = pages(crate::Cli::command()).unwrap();
        let files: Vec<&str> = pages.iter().map(|p| p.file.as_str()).collect();
        for f in [
            "npt.1",
            "npt-probe.1",
            "npt-lab.1",
            "npt-lab-run.1",
            "npt-completions.1",
        ] {
            assert!(files.contains(&f), "{f} missing from {files:?}");
        }
        assert!(!files.iter().any(|f| f.contains("daemon")), "{files:?}");
        let run = pages.iter().find(|p| p.file == "npt-lab-run.1").unwrap();
        assert_eq!(run.words, ["lab", "run"]);
        let text = String::from_utf8(run.roff.clone()).unwrap();
        let version = env!("CARGO_PKG_VERSION");
        let th = format!(".TH npt-lab-run 1  \"npt {version}\" \"npt manual\"");
        assert!(text.contains(&th), "{text}");
        assert!(
            text.contains("npt\\-lab\\-run \\- Builds the lab"),
            "{text}"
        );
    }

    #[test]
    fn completions_know_the_subcommands_and_their_flags() {
        let mut out = Vec::new();
        clap_complete::generate(Shell::Bash, &mut crate::Cli::command(), "npt", &mut out);
        let text = String::from_utf8(out).unwrap();
        for w in ["probe", "compare", "--pps", "--via", "completions"] {
            assert!(text.contains(w), "{w} missing from the bash completion");
        }
    }
}
