//! `npt lab set` and `npt lab status` against a lab kept up by `npt lab up`, through the lab
//! process's control socket ([`npt_lab::control`]), and that process's side of it: a change
//! applied at a known instant, figures as of now, and the difference from an earlier reading
//! (`status --since FILE`), so a test or monitor reads one run's own drops and delay error;
//! and, for `npt lab run`, the scenario launcher that reads the links around every run.

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use npt_lab::control::{self, Reply, Request};
use npt_lab::{show, Lab, LabStatus};

use crate::cmd::compare::runner::Launcher;
use crate::usage;

/// How long `set` and `status` wait for the lab process.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a running lab keeps its pid, status, control socket and logs.
pub fn state_dir(lab: &str) -> PathBuf {
    Path::new("/run/npt-lab").join(lab)
}

fn socket(name: &str) -> PathBuf {
    state_dir(name).join(control::SOCKET)
}

/// Asks the lab `name`; `None` when no lab process listens (not up, or killed).
fn call(name: &str, req: &Request) -> anyhow::Result<Option<Reply>> {
    match control::call(&socket(name), req, CALL_TIMEOUT) {
        Ok(r) => Ok(Some(r)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(anyhow::anyhow!("lab {name}: control socket: {e}")),
    }
}

pub fn set(name: &str, link: &str, settings: &[String], json: bool) -> anyhow::Result<ExitCode> {
    // The form of each argument is checked here, before the lab is asked: a typo exits 2
    // whether or not the lab is up. Values are checked by the lab against what it has now.
    npt_lab::change::parse_settings(settings).map_err(|e| usage!("{e}"))?;
    let req = Request::Set {
        link: link.to_string(),
        settings: settings.to_vec(),
    };
    let reply = call(name, &req)?.ok_or_else(|| {
        usage!(
            "lab {name} is not up (no control socket {}): `npt lab up FILE` first",
            socket(name).display()
        )
    })?;
    let changes = match reply {
        Reply::Set { changes } => changes,
        Reply::Refused { message } => return Err(usage!("lab {name}: {message}; nothing changed")),
        Reply::Failed { message } => anyhow::bail!("lab {name}: {message}"),
        Reply::Status { .. } => anyhow::bail!("lab {name}: unexpected reply"),
    };
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &changes)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if changes.is_empty() {
        writeln!(
            out,
            "lab {name}: link {link}: nothing changed (it already has these settings)"
        )?;
    } else {
        writeln!(
            out,
            "lab {name}: link {link} changed (lab time, wall clock, monotonic clock):"
        )?;
        show::write_changes(&mut out, &changes, "  ")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The lab's status: as of now from the lab process, else its last saved one.
fn read_status(name: &str) -> anyhow::Result<LabStatus> {
    match call(name, &Request::Status)? {
        Some(Reply::Status { status }) => return Ok(*status),
        Some(Reply::Refused { message } | Reply::Failed { message }) => {
            anyhow::bail!("lab {name}: {message}")
        }
        Some(Reply::Set { .. }) => anyhow::bail!("lab {name}: unexpected reply"),
        None => {}
    }
    let path = state_dir(name).join("status.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|_| usage!("lab {name} is not up (no {})", path.display()))?;
    serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

pub fn status(name: &str, json: bool, since: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut s = read_status(name)?;
    if let Some(file) = since {
        let text = std::fs::read_to_string(file)
            .map_err(|e| usage!("--since {}: cannot read: {e}", file.display()))?;
        let earlier: LabStatus = serde_json::from_str(&text).map_err(|e| {
            usage!(
                "--since {}: not a `npt lab status --json` reading: {e}",
                file.display()
            )
        })?;
        s = s
            .since(&earlier)
            .map_err(|e| usage!("--since {}: {e}", file.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &s)?;
        writeln!(out)?;
    } else {
        show::write_status(&mut out, &s)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The lab process's side: answers one connection, if one comes within `wait`. True when
/// something changed (the saved status is then rewritten at once).
pub fn serve_one(server: &control::Server, lab: &mut Lab, wait: Duration) -> bool {
    let conn = match server.accept(wait) {
        Ok(Some(c)) => c,
        Ok(None) => return false,
        Err(e) => {
            eprintln!("npt lab: control socket: {e}");
            std::thread::sleep(wait);
            return false;
        }
    };
    let mut conn = conn;
    let mut changed = false;
    let reply = match conn.request() {
        Err(r) => r,
        Ok(Request::Status) => Reply::Status {
            status: Box::new(lab.fresh_status()),
        },
        Ok(Request::Set { link, settings }) => match lab.set(&link, &settings) {
            Ok(changes) => {
                let mut text = Vec::new();
                let _ = show::write_changes(&mut text, &changes, "  ");
                eprint!("npt lab: set\n{}", String::from_utf8_lossy(&text));
                changed = !changes.is_empty();
                Reply::Set { changes }
            }
            Err(e) => Reply::Refused {
                message: e.to_string(),
            },
        },
    };
    let _ = conn.reply(&reply);
    changed
}

/// Starts scenario children inside the scenario's node, and reads the lab's links before and
/// after each run: their figures of that run alone go to `STEM.lab.json` beside the run's
/// result, each run's drops per link direction are said under the table (a TCP run's
/// retransmits read beside the drops that caused them), and a run through a late link (a
/// packet held over 1 ms past its due time) says so on its progress line and after the table.
pub struct LabLauncher {
    lab: RefCell<Lab>,
    name: String,
    exe: PathBuf,
    before: RefCell<Option<LabStatus>>,
    /// (run, what was late), in run order.
    late: RefCell<RunNotes>,
    /// (run, its drops per link direction), in run order.
    drops: RefCell<RunNotes>,
}

/// (run stem, a note on it), in run order.
type RunNotes = Vec<(String, String)>;

/// What the lab dropped during one run, per direction that carried packets: `lost` (the
/// link's loss) and `q-drop` (its queue full), as `npt lab status` counts them.
fn run_drops(run: &LabStatus) -> String {
    let dirs: Vec<String> = run
        .links
        .iter()
        .flat_map(|l| &l.directions)
        .filter(|d| d.applied.packets_in > 0)
        .map(|d| {
            format!(
                "{} > {} lost {} q-drop {} of {}",
                d.from, d.to, d.applied.dropped_loss, d.applied.dropped_queue, d.applied.packets_in
            )
        })
        .collect();
    if dirs.is_empty() {
        "no packets on any link".to_string()
    } else {
        dirs.join(", ")
    }
}

impl LabLauncher {
    pub fn new(lab: Lab, exe: PathBuf) -> LabLauncher {
        LabLauncher {
            name: lab.name().to_string(),
            lab: RefCell::new(lab),
            exe,
            before: RefCell::new(None),
            late: RefCell::new(Vec::new()),
            drops: RefCell::new(Vec::new()),
        }
    }

    /// The lab back, the runs its links were late in, and each run's drops.
    pub fn into_parts(self) -> (Lab, RunNotes, RunNotes) {
        (
            self.lab.into_inner(),
            self.late.into_inner(),
            self.drops.into_inner(),
        )
    }
}

impl Launcher for LabLauncher {
    fn npt(&self, node: Option<&str>) -> Command {
        let ns = npt_lab::plan::netns_name(&self.name, node.unwrap_or_default());
        let mut c = Command::new("ip");
        c.env(npt_lab::runtime::LAB_ENV, &self.name);
        c.args(["netns", "exec", &ns]).arg(&self.exe);
        c
    }

    fn before_run(&self) {
        *self.before.borrow_mut() = Some(self.lab.borrow_mut().fresh_status());
    }

    fn after_run(&self, out_dir: &Path, stem: &str) -> Option<String> {
        let before = self.before.borrow_mut().take()?;
        let run = self.lab.borrow_mut().fresh_status().since(&before).ok()?;
        if let Ok(bytes) = serde_json::to_vec_pretty(&run) {
            let _ = npt_result::write_atomic(&out_dir.join(format!("{stem}.lab.json")), &bytes);
        }
        self.drops
            .borrow_mut()
            .push((stem.to_string(), run_drops(&run)));
        let late: Vec<String> = run
            .links
            .iter()
            .flat_map(|l| &l.directions)
            .filter(|d| d.late())
            .map(|d| {
                format!(
                    "{} > {} {} packets over {} ms late (max {:.1} ms)",
                    d.from,
                    d.to,
                    d.applied.released_late,
                    npt_link::LATE_RELEASE.as_millis(),
                    d.applied.delay_error_max_us / 1e3
                )
            })
            .collect();
        if late.is_empty() {
            return None;
        }
        let note = format!("LAB LATE: {}", late.join(", "));
        self.late
            .borrow_mut()
            .push((stem.to_string(), note.clone()));
        Some(note)
    }
}

/// Under `npt lab run`'s table: what the lab's links dropped during each run. A TCP run's
/// `retrans` counts only this host's sends to its first hop; relays behind it resend on their
/// own connections, and a rate-limited link's overflow is `q-drop`, not `lost`.
pub fn write_run_drops(w: &mut impl Write, drops: &[(String, String)]) -> std::io::Result<()> {
    if drops.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "link drops during each run (the lab's own counts, as `npt lab status` has them: lost = \
         the link's loss, q-drop = its queue full; a TCP run's retransmits are this host's sends \
         to its first hop only):"
    )?;
    for (stem, d) in drops {
        writeln!(w, "  {stem}: {d}")?;
    }
    Ok(())
}

/// After `npt lab run`'s table: the runs during which a link was late.
pub fn write_late_runs(w: &mut impl Write, late: &[(String, String)]) -> std::io::Result<()> {
    if late.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "runs through a late link (the box held packets up; their figures carry that delay; \
         each run's link figures are in its STEM.lab.json):"
    )?;
    for (stem, note) in late {
        writeln!(w, "  {stem}: {note}")?;
    }
    Ok(())
}
