//! What every root lab test does around its measurement, written once: skip (visibly) when
//! not root, bring a topology up with `npt lab up` and down again when the test ends (also when
//! an assertion fails: [`Lab`] is a drop guard), run `npt` on a node with `npt lab exec`, and
//! read the links' counters with `npt lab status --json` (a direction's, once settled), and
//! hold a figure read through the lab to the lab's own figure for its path.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use super::{assert_valid, json, run, u};

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `true` (after saying so on stderr) when `test` cannot run here: it needs root for network
/// namespaces and TUN. CI runs as root, so there it always runs.
pub fn skipped(test: &str) -> bool {
    if is_root() {
        return false;
    }
    eprintln!("SKIPPED: {test} needs root (network namespaces, TUN)");
    true
}

/// Two nodes, `client` and `server`, joined by one link with `link` impairments (TOML lines),
/// and `npt serve` on the server at 10.0.1.2:7777.
pub fn pair(lab: &str, link: &str) -> String {
    format!(
        r#"name = "{lab}"
[[node]]
name = "client"
[[node]]
name = "server"
[[link]]
a = "client"
b = "server"
{link}
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.1.2:7777"
"#
    )
}

/// Takes down what an earlier, interrupted run left of lab `name` (a test killed by its
/// harness's time limit leaves namespaces behind, and the next `lab up` would refuse them).
/// Lab names are unique per test, so this never touches another test's lab.
pub fn down_stale(name: &str) {
    let _ = run(&["lab", "down", name], Duration::from_secs(30));
}

/// A lab that is up, brought down when dropped.
pub struct Lab {
    name: String,
}

impl Lab {
    /// Brings up the topology file `file`, whose lab is called `name`; panics with `npt lab
    /// up`'s stderr if it fails.
    pub fn up_file(file: &Path, name: &str) -> Lab {
        down_stale(name);
        let t0 = Instant::now();
        let out = run(
            &["lab", "up", file.to_str().expect("utf-8 path")],
            Duration::from_secs(90),
        );
        eprintln!("lab {name}: up in {:.1} s", t0.elapsed().as_secs_f64());
        assert!(
            out.status.success(),
            "lab up {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Lab {
            name: name.to_string(),
        }
    }

    /// Writes `topology` to `DIR/NAME.toml` and brings it up.
    pub fn up(dir: &Path, name: &str, topology: &str) -> Lab {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, topology).expect("topology written");
        Lab::up_file(&file, name)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `cmd` on `node` (an `nft` rule, an `ip` change), which must succeed within 10 s: the
    /// panic shows its stderr.
    pub fn exec_ok(&self, node: &str, cmd: &[&str]) {
        let mut a = vec!["lab", "exec", &self.name, node, "--"];
        a.extend_from_slice(cmd);
        let out = run(&a, Duration::from_secs(10));
        assert!(
            out.status.success(),
            "{cmd:?} on {node}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `npt ARGS` on `node`, within `limit`.
    pub fn npt(&self, node: &str, args: &[&str], limit: Duration) -> Output {
        let mut a = vec!["lab", "exec", &self.name, node, "--", "npt"];
        a.extend_from_slice(args);
        run(&a, limit)
    }

    /// `npt ARGS --json FILE` on `node`: it must succeed (else the panic shows its output),
    /// and its document must be a valid `kind` result, which is returned.
    pub fn npt_json(
        &self,
        node: &str,
        args: &[&str],
        file: &Path,
        kind: &str,
    ) -> serde_json::Value {
        self.npt_json_waited(node, args, file, kind).0
    }

    /// [`Lab::npt_json`], with that npt's own waits for a CPU ([`Lab::npt_waited`]).
    pub fn npt_json_waited(
        &self,
        node: &str,
        args: &[&str],
        file: &Path,
        kind: &str,
    ) -> (serde_json::Value, SchedWait) {
        let mut a = args.to_vec();
        a.extend(["--json", file.to_str().expect("utf-8 path")]);
        let (out, waited) = self.npt_waited(node, &a, Duration::from_secs(120));
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = json(file);
        assert_valid(&doc, kind);
        (doc, waited)
    }

    /// `npt lab status NAME --json`.
    pub fn status(&self) -> serde_json::Value {
        let out = run(
            &["lab", "status", &self.name, "--json"],
            Duration::from_secs(10),
        );
        assert!(
            out.status.success(),
            "lab status: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("lab status --json is JSON")
    }
}

impl Lab {
    /// Link `link`'s direction `from` → `to` (node names) in `npt lab status --json`: its
    /// `applied` counters, `queue_wait` histogram and configuration.
    pub fn direction(&self, link: usize, from: &str, to: &str) -> serde_json::Value {
        let s = self.status();
        s["links"][link]["directions"]
            .as_array()
            .unwrap_or_else(|| panic!("no link {link} in {s}"))
            .iter()
            .find(|d| d["from"] == from && d["to"] == to)
            .unwrap_or_else(|| panic!("no direction {from} > {to} in {s}"))
            .clone()
    }

    /// Link `link`'s counters in the direction `from` → `to` (node names): (packets in,
    /// dropped by its loss).
    pub fn link_counts(&self, link: usize, from: &str, to: &str) -> (u64, u64) {
        let d = self.direction(link, from, to);
        (u(&d, "/applied/packets_in"), u(&d, "/applied/dropped_loss"))
    }

    /// [`Lab::link_counts`] once they stop moving.
    pub fn settled_counts(&self, link: usize, from: &str, to: &str) -> (u64, u64) {
        let d = self.settled(link, from, to);
        (u(&d, "/applied/packets_in"), u(&d, "/applied/dropped_loss"))
    }

    /// [`Lab::direction`] once its `applied` counters stop moving (the status is republished
    /// every few 100 ms), waiting at most 5 s.
    pub fn settled(&self, link: usize, from: &str, to: &str) -> serde_json::Value {
        let until = Instant::now() + Duration::from_secs(5);
        let mut last = self.direction(link, from, to);
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let now = self.direction(link, from, to);
            if now["applied"] == last["applied"] || Instant::now() > until {
                return now;
            }
            last = now;
        }
    }
}

/// The lab's own figure (ms) for link `link`'s direction from node `from` in a status reading
/// (`npt lab status --json`): its configured delay plus the median of its `delay_error`, how
/// late the emulator itself delivered. On a busy box the lab's pump wakes late and every
/// packet through it carries that lateness; a figure measured through the link is held to
/// what the lab did, read from the lab's own counters, not to what it was configured to do.
pub fn direction_ms(status: &serde_json::Value, link: usize, from: &str) -> f64 {
    let d = status["links"][link]["directions"]
        .as_array()
        .unwrap_or_else(|| panic!("no link {link} in {status}"))
        .iter()
        .find(|d| d["from"] == from)
        .unwrap_or_else(|| panic!("no direction from {from} on link {link} in {status}"));
    let delay = humantime::parse_duration(d["config"]["delay"].as_str().unwrap_or("0ms"))
        .expect("a configured delay")
        .as_secs_f64()
        * 1e3;
    let late_us = d["applied"]["delay_error_p50_us"].as_f64().unwrap_or(0.0);
    delay + late_us / 1e3
}

/// How far (ms) a p50 read through the lab may be from the lab's own figure for the same path
/// ([`Lab::path_ms`]): the end hosts' stacks and the responder's turnaround, which no lab
/// counter sees.
pub const PATH_TOL_MS: f64 = 1.0;

impl Lab {
    /// The lab's own figure (ms) for a path crossing the directions `legs` (link, from node),
    /// each as [`direction_ms`] reads it now; the lab's lateness is printed, so a run on a
    /// busy box shows how much of its figure was the lab's.
    pub fn path_ms(&self, legs: &[(usize, &str)]) -> f64 {
        let s = self.status();
        let ms = legs
            .iter()
            .map(|&(l, from)| direction_ms(&s, l, from))
            .sum();
        eprintln!(
            "lab {}: path {legs:?} is {ms:.3} ms by its own figures",
            self.name
        );
        ms
    }

    /// The round trip (ms) over link `link` between nodes `a` and `b`, by [`Lab::path_ms`].
    pub fn rtt_ms(&self, link: usize, a: &str, b: &str) -> f64 {
        self.path_ms(&[(link, a), (link, b)])
    }
}

/// Asserts that `p50` (ms, read through the lab) is the lab's own figure `lab_ms` for its path
/// within [`PATH_TOL_MS`], or over it by at most `late_ms`: what the kernel says its measuring
/// processes waited for a CPU per echo ([`SchedWait`]), never under it; `what` names it in the
/// failure.
pub fn assert_path_late(what: &str, p50: f64, lab_ms: f64, late_ms: f64) {
    assert!(
        p50 >= lab_ms - PATH_TOL_MS && p50 <= lab_ms + PATH_TOL_MS + late_ms,
        "{what}: p50 {p50} ms, the lab's own figure {lab_ms:.3} ms ± {PATH_TOL_MS}, \
         + {late_ms:.3} ms its measuring processes waited for a CPU"
    );
}

/// What the kernel counted of processes waiting for a CPU (`/proc/PID/task/*/schedstat`, all
/// their threads): nanoseconds spent runnable on a run queue, and times they were run. Two
/// readings subtract into a run's own figures. A measurement made in user space (a responder,
/// a hop agent, socat) is late by its wakeups' waits: on a busy box that is the kernel's figure,
/// not the lab's, and a test reads it here instead of guessing a margin.
#[derive(Clone, Copy, Debug, Default)]
pub struct SchedWait {
    pub wait_ns: u64,
    pub runs: u64,
}

/// Wakeups a user-space echo costs: the prober's send timer, the responder's read (and reply),
/// the prober's read.
pub const WAKEUPS_PER_ECHO: f64 = 3.0;

impl SchedWait {
    /// The sum over `pids` and their threads now (a process gone by then counts nothing).
    pub fn read(pids: &[u32]) -> SchedWait {
        let mut w = SchedWait::default();
        for pid in pids {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for t in tasks.flatten() {
                let Ok(text) = std::fs::read_to_string(t.path().join("schedstat")) else {
                    continue;
                };
                let f: Vec<u64> = text
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                if let [_, wait, runs] = f[..] {
                    w.wait_ns += wait;
                    w.runs += runs;
                }
            }
        }
        w
    }

    /// The mean wait (ms) per time run between `before` and this reading.
    pub fn per_run_ms(&self, before: &SchedWait) -> f64 {
        let runs = self.runs.saturating_sub(before.runs).max(1);
        self.wait_ns.saturating_sub(before.wait_ns) as f64 / runs as f64 / 1e6
    }
}

impl Lab {
    /// [`Lab::npt`], with what the kernel counted of that npt's own waits for a CPU: its
    /// threads' [`SchedWait`], read every 20 ms while it runs (the last reading before it
    /// exits: its final moments, writing the result, go uncounted).
    pub fn npt_waited(&self, node: &str, args: &[&str], limit: Duration) -> (Output, SchedWait) {
        use std::process::{Command, Stdio};
        // `ip netns exec` becomes npt itself, so the child's pid is npt's. As `npt lab exec`
        // does, NPT_LAB names the lab: its nodes read one clock (one-way delays).
        let child = Command::new("ip")
            .env("NPT_LAB", &self.name)
            .args(["netns", "exec", &format!("npt-{}-{node}", self.name)])
            .arg(super::npt().get_program())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("npt starts in the lab");
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let until = Instant::now() + limit;
        let mut waited = SchedWait::default();
        loop {
            let now = SchedWait::read(&[pid]);
            if now.runs > 0 {
                waited = now;
            }
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(out) => return (out.expect("npt's output"), waited),
                Err(_) if Instant::now() > until => {
                    // SAFETY: our own child, still running.
                    unsafe { libc::kill(i32::try_from(pid).unwrap_or(i32::MAX), libc::SIGKILL) };
                    panic!("npt {args:?} ran over {limit:?}");
                }
                Err(_) => {}
            }
        }
    }

    /// How late (ms) an echo measured by `client` (an npt's own [`SchedWait`], from
    /// [`Lab::npt_waited`]) and the lab's services (`pids`, read as `before` when it started)
    /// may read, by the kernel's counts: its [`WAKEUPS_PER_ECHO`] wakeups, each late by the
    /// more waited of the two per run.
    pub fn echo_wait_ms(pids: &[u32], before: &SchedWait, client: &SchedWait) -> f64 {
        let services = SchedWait::read(pids).per_run_ms(before);
        let client = client.per_run_ms(&SchedWait::default());
        let ms = WAKEUPS_PER_ECHO * services.max(client);
        eprintln!(
            "per run the services waited {services:.3} ms for a CPU, the client's npt \
             {client:.3}: {ms:.3} ms per echo"
        );
        ms
    }

    /// The pids of the lab's services (`npt lab status`), for [`SchedWait::read`].
    pub fn service_pids(&self) -> Vec<u32> {
        let s = self.status();
        s["services"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x["pid"].as_u64())
                    .filter_map(|p| u32::try_from(p).ok())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Watches lab `name` while something else runs it (`npt lab run`): what the kernel counted
/// of the waits for a CPU of every process in the lab's namespaces (`ip netns pids`: services,
/// and the clients a run starts there), each from its first to its last reading, polled every
/// 100 ms on a thread until [`Watch::finish`], which reads the most-waiting one's.
pub struct Watch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<SchedWait>,
}

/// The pids in the network namespaces of lab `name` now.
fn lab_pids(name: &str) -> Vec<u32> {
    use std::process::Command;
    let prefix = format!("npt-{name}-");
    let Ok(list) = Command::new("ip").args(["netns", "list"]).output() else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for ns in String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
    {
        if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
            pids.extend(
                String::from_utf8_lossy(&out.stdout)
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    pids
}

impl Watch {
    pub fn start(name: &str) -> Watch {
        use std::collections::HashMap;
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (flag, name) = (stop.clone(), name.to_string());
        let thread = std::thread::spawn(move || {
            let mut reads: HashMap<u32, (SchedWait, SchedWait)> = HashMap::new();
            // Bounded: a lab run of these tests ends within minutes.
            let until = Instant::now() + Duration::from_secs(600);
            while !flag.load(Ordering::Relaxed) && Instant::now() < until {
                for pid in lab_pids(&name) {
                    let w = SchedWait::read(&[pid]);
                    if w.runs > 0 {
                        reads.entry(pid).or_insert((w, w)).1 = w;
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            // The most-waiting process (of those run at least 10 times): the wakeups of an
            // echo are its prober's and responder's, not the busy load sender's many short
            // runs, which would dilute a mean over all of them.
            let mut worst = SchedWait::default();
            for (first, last) in reads.values() {
                let w = SchedWait {
                    wait_ns: last.wait_ns.saturating_sub(first.wait_ns),
                    runs: last.runs.saturating_sub(first.runs),
                };
                let mean = |x: &SchedWait| x.per_run_ms(&SchedWait::default());
                if w.runs >= 10 && mean(&w) > mean(&worst) {
                    worst = w;
                }
            }
            worst
        });
        Watch { stop, thread }
    }

    /// How late (ms) an echo between the lab's processes may read by the kernel's counts:
    /// [`WAKEUPS_PER_ECHO`] wakeups, each late by their mean wait per run.
    pub fn finish(self) -> f64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let waited = self.thread.join().expect("the watch thread");
        let per_run = waited.per_run_ms(&SchedWait::default());
        let late = WAKEUPS_PER_ECHO * per_run;
        eprintln!(
            "the lab's most-waiting process ran {} times, waiting {per_run:.3} ms for a CPU \
             per run: {late:.3} ms per echo",
            waited.runs
        );
        late
    }
}

/// A danted (SOCKS5) configuration for a relay node at 10.0.1.2 (clients on 10.0.1.0/24) whose
/// other side is 10.0.2.1 (targets on 10.0.2.0/24): no authentication, UDP ASSOCIATE allowed,
/// written to `path`.
pub fn danted_conf(path: &Path) {
    std::fs::write(
        path,
        "logoutput: stderr\ninternal: 10.0.1.2 port = 1080\nexternal: 10.0.2.1\n\
         clientmethod: none\nsocksmethod: none\nuser.privileged: root\n\
         user.unprivileged: nobody\nclient pass { from: 10.0.1.0/24 to: 0.0.0.0/0 }\n\
         socks pass { from: 10.0.1.0/24 to: 0.0.0.0/0 command: udpassociate }\n\
         socks pass { from: 10.0.2.0/24 to: 10.0.1.0/24 command: udpreply }\n",
    )
    .expect("danted.conf written");
}

impl Drop for Lab {
    fn drop(&mut self) {
        // The lab's measurements are over: its test's turn ends before the lab goes down.
        super::turn::give_back();
        let t0 = Instant::now();
        let _ = run(&["lab", "down", &self.name], Duration::from_secs(30));
        eprintln!(
            "lab {}: down in {:.1} s",
            self.name,
            t0.elapsed().as_secs_f64()
        );
    }
}
