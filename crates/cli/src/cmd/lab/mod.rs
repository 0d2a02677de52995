//! `npt lab`: build a topology of network namespaces joined by emulated links, run scenarios
//! across it, tear it down. `up` leaves the lab running in a background process (the links
//! are threads of that process, so the lab lives exactly as long as it does); `down` signals it
//! and removes anything left; `exec` runs a command on a node; `status` reads what the
//! background process last published; `run` does up, the scenarios, the table and down in one
//! process; `check` prints the plan without root.

mod socket;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use npt_lab::{
    control, netns, runtime, show, Lab, LabError, LabOptions, LabStatus, Plan, Topology,
};

use crate::cmd::compare::scenarios::{parse_scenarios, validate, Purpose, ScenarioSet};
use crate::cmd::compare::{run_set, Outputs};
use crate::usage;

#[derive(Args, Debug)]
pub struct LabArgs {
    #[command(subcommand)]
    cmd: LabCmd,
}

#[derive(Subcommand, Debug)]
enum LabCmd {
    /// Checks a topology file and prints the plan (addresses, routes, services); no root needed.
    Check { file: PathBuf },
    /// Builds the lab and leaves it running in the background.
    Up(UpArgs),
    /// Stops a lab started with `up` and removes everything it created.
    Down { name: String },
    /// Nodes, links (what each direction applies now and applied so far), services and the
    /// changes made by `set` of a running lab.
    Status {
        name: String,
        /// The status as JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Only what happened since an earlier `status --json` reading saved in FILE: its
        /// counters and histograms subtracted (one run's drops and delay error).
        #[arg(long, value_name = "FILE")]
        since: Option<PathBuf>,
    },
    /// Changes a running link's impairments: `npt lab set demo client-server delay=80ms
    /// loss=2%`. KEY is a topology file key (delay, jitter, loss, loss.model, loss.p, loss.r,
    /// loss.bad, loss.good, duplicate, reorder, rate, queue) for both directions, or
    /// a_to_b.KEY / b_to_a.KEY for one; KEY=none removes a setting. LINK is its two nodes
    /// (A-B, either order) or its number in the file (from 0).
    Set {
        name: String,
        link: String,
        #[arg(required = true, value_name = "KEY=VALUE")]
        settings: Vec<String>,
        /// The changes made, as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Runs a command on a node of a running lab (`npt` is this npt binary).
    Exec {
        name: String,
        node: String,
        #[arg(last = true, required = true, value_name = "CMD")]
        cmd: Vec<String>,
    },
    /// Builds the lab, runs its scenarios, prints the compare table, tears it down.
    Run(RunArgs),
    /// The background process behind `up` (not for direct use).
    #[command(hide = true)]
    Daemon(UpArgs),
}

#[derive(Args, Debug, Clone)]
struct UpArgs {
    file: PathBuf,
    /// Seed of the links' random loss, jitter, duplication and reordering.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads moving packets (the link directions are spread over them). One thread serves
    /// light traffic on any number of links and spins at most one core; give 2 for more than
    /// ~50,000 packets/s.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    link_threads: u16,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    file: PathBuf,
    /// Seed of the links' random loss, jitter, duplication and reordering.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads moving packets, as for `npt lab up`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    link_threads: u16,
    #[command(flatten)]
    out: Outputs,
}

fn load(file: &Path) -> anyhow::Result<(Topology, Plan)> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| usage!("{}: cannot read: {e}", file.display()))?;
    let stem = file
        .file_stem()
        .map_or("lab".into(), |s| s.to_string_lossy().into_owned());
    let mut topo = Topology::parse(&text, &stem).map_err(|e| usage!("{}: {e}", file.display()))?;
    // `{dir}` in a service's command is the topology file's directory (for config files).
    let dir = std::fs::canonicalize(file)
        .ok()
        .and_then(|p| p.parent().map(|d| d.display().to_string()))
        .unwrap_or_else(|| ".".into());
    for s in &mut topo.services {
        for arg in &mut s.cmd {
            *arg = arg.replace("{dir}", &dir);
        }
    }
    let plan = Plan::new(&topo).map_err(|e| usage!("{}: {e}", file.display()))?;
    check_lab_scenarios(&topo, &plan).map_err(|e| usage!("{}: {e}", file.display()))?;
    Ok((topo, plan))
}

/// Root, TUN and "already up" problems are the user's to fix: exit 2 with the message.
fn lab_error(e: LabError) -> anyhow::Error {
    match e {
        LabError::NotRoot | LabError::NoTun | LabError::AlreadyUp { .. } => usage!("{e}"),
        other => anyhow::Error::new(other),
    }
}

fn npt_exe() -> anyhow::Result<PathBuf> {
    std::env::current_exe().map_err(|e| anyhow::anyhow!("cannot find this npt binary: {e}"))
}

pub fn run(a: LabArgs) -> anyhow::Result<ExitCode> {
    match a.cmd {
        LabCmd::Check { file } => check(&file),
        LabCmd::Up(u) => up(&u),
        LabCmd::Daemon(u) => daemon(&u),
        LabCmd::Down { name } => down(&name),
        LabCmd::Status { name, json, since } => socket::status(&name, json, since.as_deref()),
        LabCmd::Set {
            name,
            link,
            settings,
            json,
        } => socket::set(&name, &link, &settings, json),
        LabCmd::Exec { name, node, cmd } => exec(&name, &node, &cmd),
        LabCmd::Run(r) => run_lab(r),
    }
}

fn check(file: &Path) -> anyhow::Result<ExitCode> {
    let (topo, plan) = load(file)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "lab {}: {} nodes, {} links, {} services, {} scenarios",
        plan.lab,
        plan.nodes.len(),
        plan.links.len(),
        topo.services.len(),
        topo.scenarios
            .get("scenario")
            .and_then(|s| s.as_array())
            .map_or(0, |a| a.len())
    )?;
    for l in &plan.links {
        let (a, b) = (&plan.nodes[l.a].name, &plan.nodes[l.b].name);
        writeln!(
            out,
            "  link {a} {} ({}) — {b} {} ({})  mtu {}",
            l.a_addr, l.a_if, l.b_addr, l.b_if, l.spec.mtu
        )?;
        writeln!(out, "    {a} > {b}: {}", show::describe(&l.spec.a_to_b))?;
        writeln!(out, "    {b} > {a}: {}", show::describe(&l.spec.b_to_a))?;
    }
    for n in &plan.nodes {
        for r in &n.routes {
            writeln!(
                out,
                "  route on {}: {}/{} via {} dev {}",
                n.name, r.network, r.prefix, r.via, r.dev
            )?;
        }
    }
    for s in &topo.services {
        writeln!(
            out,
            "  service {} on {}: {}",
            s.name,
            s.node,
            s.cmd.join(" ")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn up(u: &UpArgs) -> anyhow::Result<ExitCode> {
    let (_topo, plan) = load(&u.file)?;
    runtime::preflight(&plan).map_err(lab_error)?;
    let dir = socket::state_dir(&plan.lab);
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let log = std::fs::File::create(dir.join("lab.log"))?;
    let file = std::fs::canonicalize(&u.file)?;
    let mut child = Command::new(npt_exe()?)
        .args(["lab", "daemon", "--seed", &u.seed.to_string()])
        .args(["--link-threads", &u.link_threads.to_string()])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .process_group(0)
        .spawn()?;
    // The daemon prints one line when the lab is up, or exits.
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    if line.trim() != "ready" {
        let _ = child.wait();
        let log = std::fs::read_to_string(dir.join("lab.log")).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        anyhow::bail!("lab {} did not come up:\n{}", plan.lab, log.trim());
    }
    socket::status(&plan.lab, false, None)?;
    println!("down with: npt lab down {}", plan.lab);
    Ok(ExitCode::SUCCESS)
}

use std::os::unix::process::CommandExt;

/// Counts SIGINT / SIGTERM / SIGHUP.
fn stop_signals() -> anyhow::Result<Arc<AtomicUsize>> {
    let n = Arc::new(AtomicUsize::new(0));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let c = n.clone();
        // SAFETY: the handler only does an atomic add, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                c.fetch_add(1, Ordering::SeqCst);
            })?;
        }
    }
    Ok(n)
}

fn write_status(dir: &Path, s: &LabStatus) {
    if let Ok(bytes) = serde_json::to_vec_pretty(s) {
        let _ = npt_result::write_atomic(&dir.join("status.json"), &bytes);
    }
}

fn daemon(u: &UpArgs) -> anyhow::Result<ExitCode> {
    let (topo, plan) = load(&u.file)?;
    let signals = stop_signals()?;
    let dir = socket::state_dir(&plan.lab);
    let opts = LabOptions {
        npt_exe: npt_exe()?,
        log_dir: dir.clone(),
        seed: u.seed,
        ready_timeout: Duration::from_secs(20),
        link_threads: usize::from(u.link_threads),
    };
    let mut lab = Lab::up(&plan, &topo.services, &opts).map_err(lab_error)?;
    let server = control::Server::bind(&dir.join(control::SOCKET))?;
    std::fs::write(dir.join("pid"), std::process::id().to_string())?;
    std::fs::copy(&u.file, dir.join("topology.toml"))?;
    write_status(&dir, &lab.status());
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready");
        let _ = out.flush();
    }
    eprintln!("npt lab {}: up", plan.lab);
    let mut saved = Instant::now();
    while signals.load(Ordering::SeqCst) == 0 {
        let changed = socket::serve_one(&server, &mut lab, Duration::from_millis(200));
        if changed || saved.elapsed() >= Duration::from_millis(200) {
            write_status(&dir, &lab.status());
            saved = Instant::now();
        }
    }
    drop(server);
    let _ = std::fs::remove_file(dir.join(control::SOCKET));
    let (last, errors) = lab.down();
    write_status(&dir, &last);
    for e in &errors {
        eprintln!("npt lab {}: cleanup: {e}", plan.lab);
    }
    let _ = std::fs::remove_file(dir.join("pid"));
    eprintln!("npt lab {}: down", plan.lab);
    Ok(ExitCode::SUCCESS)
}

fn down(name: &str) -> anyhow::Result<ExitCode> {
    let dir = socket::state_dir(name);
    let mut found = false;
    if let Some(pid) = std::fs::read_to_string(dir.join("pid"))
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
    {
        found |= runtime::terminate(pid, Duration::from_secs(15));
    }
    // Whatever is left (a daemon killed with SIGKILL leaves its namespaces behind).
    let names: Vec<String> = match std::fs::read_to_string(dir.join("topology.toml"))
        .ok()
        .and_then(|t| Topology::parse(&t, name).ok())
        .and_then(|t| Plan::new(&t).ok())
    {
        Some(p) => p.nodes.into_iter().map(|n| n.netns).collect(),
        None => {
            let prefix = npt_lab::plan::netns_name(name, "");
            netns::list()?
                .into_iter()
                .filter(|n| n.starts_with(&prefix))
                .collect()
        }
    };
    let existing = netns::list()?;
    let names: Vec<String> = names.into_iter().filter(|n| existing.contains(n)).collect();
    found |= !names.is_empty();
    for e in netns::delete_all(&names) {
        eprintln!("npt lab down: {e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    if !found {
        return Err(usage!("lab {name} is not up"));
    }
    println!("lab {name}: down");
    Ok(ExitCode::SUCCESS)
}

fn exec(name: &str, node: &str, cmd: &[String]) -> anyhow::Result<ExitCode> {
    let ns = npt_lab::plan::netns_name(name, node);
    if !netns::list()?.contains(&ns) {
        return Err(usage!(
            "lab {name} has no node {node} up (no namespace {ns})"
        ));
    }
    let status = runtime::exec_command(name, &ns, cmd, &npt_exe()?).status()?;
    let code = u8::try_from(status.code().unwrap_or(1).clamp(0, 255)).unwrap_or(1);
    Ok(ExitCode::from(code))
}

/// The scenario keys of a topology file as compare's scenario set (None: the file has none),
/// checked as `npt lab` needs them: every scenario names a node, and its target, hops and
/// proxy are addresses that node has a route to.
fn lab_scenarios(topo: &Topology, plan: &Plan) -> Result<Option<ScenarioSet>, String> {
    if topo.scenarios.is_empty() {
        return Ok(None);
    }
    let text = toml::to_string(&topo.scenarios).map_err(|e| e.to_string())?;
    let set = parse_scenarios(&text).map_err(|e| e.to_string())?;
    validate(&set, Purpose::Lab).map_err(|e| e.to_string())?;
    for (i, s) in set.scenario.iter().enumerate() {
        let node = s.node.as_deref().unwrap_or_default();
        let n = plan
            .node(node)
            .ok_or_else(|| format!("scenario[{i}].node: unknown node {node:?}"))?;
        let mut urls = vec![("target", s.target.as_str())];
        // A `{ from, to }` hop: the client reaches the agent, the agent's node reaches `to`.
        urls.extend(
            s.hops
                .iter()
                .flatten()
                .map(|h| ("hops", h.from().unwrap_or(h.url()))),
        );
        urls.extend(s.via.iter().map(|v| ("via", v.as_str())));
        for (key, url) in urls {
            let ip = url_ipv4(url).ok_or_else(|| {
                format!("scenario[{i}].{key}: {url:?}: a lab address is an IPv4 address")
            })?;
            if !plan.reaches(n, ip) {
                return Err(format!(
                    "scenario[{i}].{key}: no route from node {node} reaches {ip} \
                     (no node has that address, or the nodes are not connected)"
                ));
            }
        }
        for (j, h) in s.hops.iter().flatten().enumerate() {
            let Some(from) = h.from() else { continue };
            let (Some(agent), Some(to)) = (url_ipv4(from), url_ipv4(h.url())) else {
                return Err(format!(
                    "scenario[{i}].hops[{j}]: a lab address is an IPv4 address"
                ));
            };
            let owner = plan.owner(agent).ok_or_else(|| {
                format!("scenario[{i}].hops[{j}].from: no node has the address {agent}")
            })?;
            if !plan.reaches(owner, to) {
                return Err(format!(
                    "scenario[{i}].hops[{j}].to: no route from the agent at {agent} reaches {to}"
                ));
            }
        }
    }
    Ok(Some(set))
}

/// The IPv4 host of `scheme://[user@]host:port/...`.
fn url_ipv4(url: &str) -> Option<std::net::Ipv4Addr> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host_port.rsplit_once(':').map_or(host_port, |(h, _)| h);
    host.parse().ok()
}

fn check_lab_scenarios(topo: &Topology, plan: &Plan) -> Result<(), String> {
    lab_scenarios(topo, plan).map(|_| ())
}

fn run_lab(r: RunArgs) -> anyhow::Result<ExitCode> {
    let (topo, plan) = load(&r.file)?;
    let set = lab_scenarios(&topo, &plan)
        .map_err(|e| usage!("{}: {e}", r.file.display()))?
        .ok_or_else(|| usage!("{}: no [[scenario]] to run", r.file.display()))?;
    // Registered before anything is created, so Ctrl-C during setup still tears down.
    let signals = stop_signals()?;
    let log_dir = std::env::temp_dir().join(format!("npt-lab-{}-{}", plan.lab, std::process::id()));
    std::fs::create_dir_all(&log_dir)?;
    let opts = LabOptions {
        npt_exe: npt_exe()?,
        log_dir: log_dir.clone(),
        seed: r.seed,
        ready_timeout: Duration::from_secs(20),
        link_threads: usize::from(r.link_threads),
    };
    eprintln!(
        "npt lab {}: building ({} nodes, {} links, {} services; logs in {})",
        plan.lab,
        plan.nodes.len(),
        plan.links.len(),
        topo.services.len(),
        log_dir.display()
    );
    let lab = Lab::up(&plan, &topo.services, &opts).map_err(lab_error)?;
    if signals.load(Ordering::SeqCst) > 0 {
        drop(lab);
        anyhow::bail!("interrupted while building lab {}", plan.lab);
    }
    let launcher = socket::LabLauncher::new(lab, opts.npt_exe.clone());
    let title = r.file.display().to_string();
    let code = run_set(&set, &title, &r.out, &launcher);
    let (lab, late, drops) = launcher.into_parts();
    let (status, errors) = lab.down();
    let mut out = std::io::stdout().lock();
    writeln!(out)?;
    socket::write_run_drops(&mut out, &drops)?;
    writeln!(out)?;
    show::write_status(&mut out, &status)?;
    socket::write_late_runs(&mut out, &late)?;
    for e in &errors {
        eprintln!("npt lab {}: cleanup: {e}", plan.lab);
    }
    code
}
