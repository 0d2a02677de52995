//! A lab that is up: its namespaces, TUN links with their pump threads, and service processes.
//! [`Lab::up`] creates them in order and, on any failure, tears down what it had made;
//! [`Lab::down`] (or `Drop`) removes everything: services (their process groups, then any
//! process left in a lab namespace), pumps (closing the TUN devices, which the kernel then
//! deletes), and the namespaces. Nothing is created outside the lab's namespaces.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::change::{self, SetError};
use crate::netns::{self, NetnsError};
use crate::plan::Plan;
pub use crate::process::{exec_command, terminate, LAB_ENV};
use crate::process::{is_ready, stop_group, tail};
use crate::pump::{Command as PumpCommand, Direction, Ends, NodeTransit, Published, Pump};
use crate::status::{status_of, Change, LabStatus, ServiceStatus, MAX_CHANGES};
use crate::topology::Service;
use crate::tun::Tun;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("npt lab needs root (network namespaces and TUN devices); run it with sudo")]
    NotRoot,
    #[error("no TUN device: /dev/net/tun is missing (modprobe tun, or give the container --device /dev/net/tun)")]
    NoTun,
    #[error("lab {lab} is already up (namespace {netns} exists); `npt lab down {lab}` first")]
    AlreadyUp { lab: String, netns: String },
    #[error(transparent)]
    Netns(#[from] NetnsError),
    #[error("service {name}: {msg}")]
    Service { name: String, msg: String },
}

/// Checks that a lab can be built here at all (before anything is created).
pub fn preflight(plan: &Plan) -> Result<(), LabError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(LabError::NotRoot);
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err(LabError::NoTun);
    }
    let existing = netns::list()?;
    if let Some(n) = plan.nodes.iter().find(|n| existing.contains(&n.netns)) {
        return Err(LabError::AlreadyUp {
            lab: plan.lab.clone(),
            netns: n.netns.clone(),
        });
    }
    Ok(())
}

pub struct LabOptions {
    /// The npt binary services and scenarios run as `npt`.
    pub npt_exe: PathBuf,
    /// Service logs go here, one file per service.
    pub log_dir: PathBuf,
    pub seed: u64,
    /// How long a service may take to become ready.
    pub ready_timeout: Duration,
    /// Threads moving packets; the link directions are spread over them (at least 1).
    pub link_threads: usize,
}

struct Running {
    name: String,
    node: String,
    child: Child,
}

/// One link direction inside the lab process.
struct Wire {
    link: usize,
    /// a → b (else b → a).
    ab: bool,
    /// Its wire thread (position in `pumps`) and its position among that thread's directions.
    pump: usize,
    slot: usize,
    published: Arc<Mutex<Published>>,
}

pub struct Lab {
    /// The plan, with each link's impairments as they are now (`set` changes them).
    plan: Plan,
    created: Vec<String>,
    pumps: Vec<Pump>,
    wires: Vec<Wire>,
    /// Each node's transit matcher, in the plan's node order.
    transits: Vec<Arc<NodeTransit>>,
    services: Vec<Running>,
    up: Instant,
    up_wall: SystemTime,
    changes: Vec<Change>,
}

/// One wire thread's part of a change: its position, the (slot, impairments) it applies, and
/// whether each is the a → b direction.
type PumpSet = (usize, Vec<(usize, npt_link::Impairments)>, Vec<bool>);

/// How long a command to a wire thread may take to be answered.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

impl Lab {
    /// Builds the lab: namespaces, links, routes, pumps, then services (each waited for).
    pub fn up(plan: &Plan, services: &[Service], opts: &LabOptions) -> Result<Lab, LabError> {
        preflight(plan)?;
        let mut lab = Lab {
            plan: plan.clone(),
            created: Vec::new(),
            pumps: Vec::new(),
            wires: Vec::new(),
            transits: Vec::new(),
            services: Vec::new(),
            up: Instant::now(),
            up_wall: SystemTime::now(),
            changes: Vec::new(),
        };
        // On error `lab` is dropped here, which tears down whatever was made.
        lab.build(opts)?;
        for s in services {
            lab.start_service(s, opts)?;
        }
        Ok(lab)
    }

    // NO-PANIC: `l.a`, `l.b` and `n` are node positions of the plan (`Plan::new` made them),
    // `lines`, `transits` and `publisher` have one entry per node, and `k % threads` is below
    // `threads`, `groups`' length.
    #[allow(clippy::indexing_slicing)]
    fn build(&mut self, opts: &LabOptions) -> Result<(), LabError> {
        for n in &self.plan.nodes {
            netns::add(&n.netns)?;
            self.created.push(n.netns.clone());
            netns::in_netns(&n.netns, || {
                // Forwarding on, reverse-path filtering off (paths may be asymmetric), IPv6
                // off so no router solicitations or MLD reports cross the emulated links.
                netns::sysctl("net.ipv4.ip_forward", "1")?;
                netns::sysctl("net.ipv4.conf.all.rp_filter", "0")?;
                netns::sysctl("net.ipv4.conf.default.rp_filter", "0")?;
                netns::sysctl("net.ipv6.conf.all.disable_ipv6", "1")?;
                netns::sysctl("net.ipv6.conf.default.disable_ipv6", "1")?;
                Ok(())
            })?;
        }
        let mut lines: Vec<Vec<String>> =
            vec![vec!["link set dev lo up".into()]; self.plan.nodes.len()];
        let mut tuns = Vec::new();
        for l in &self.plan.links {
            let (na, nb) = (&self.plan.nodes[l.a].netns, &self.plan.nodes[l.b].netns);
            let (ia, ib) = (l.a_if.clone(), l.b_if.clone());
            let ta = netns::in_netns(na, move || Tun::create(&ia))?;
            let tb = netns::in_netns(nb, move || Tun::create(&ib))?;
            tuns.push((Arc::new(ta), Arc::new(tb)));
            for (n, dev, addr) in [(l.a, &l.a_if, l.a_addr), (l.b, &l.b_if, l.b_addr)] {
                lines[n].push(format!("link set dev {dev} mtu {} up", l.spec.mtu));
                lines[n].push(format!("addr add {addr}/{} dev {dev}", l.prefix));
            }
        }
        for (n, node) in self.plan.nodes.iter().enumerate() {
            for r in &node.routes {
                lines[n].push(format!(
                    "route add {}/{} via {} dev {}",
                    r.network, r.prefix, r.via, r.dev
                ));
            }
            netns::ip_batch(&node.netns, &lines[n])?;
        }
        let threads = opts.link_threads.max(1);
        let mut groups: Vec<Vec<Direction>> = (0..threads).map(|_| Vec::new()).collect();
        let mut k = 0;
        self.transits = self
            .plan
            .nodes
            .iter()
            .map(|_| Arc::new(NodeTransit::default()))
            .collect();
        // The first direction read from each node copies the node's figures out.
        let mut publisher = vec![false; self.plan.nodes.len()];
        let mut ends = |from: usize, to: usize, link: usize| Ends {
            out_of: self.transits[from].clone(),
            into: self.transits[to].clone(),
            link,
            publishes_node: !std::mem::replace(&mut publisher[from], true),
        };
        for (i, (l, (ta, tb))) in self.plan.links.iter().zip(tuns).enumerate() {
            let seed = opts.seed ^ ((i as u64) << 1);
            let (ab, pab) = Direction::new(
                (ta.clone(), tb.clone()),
                ends(l.a, l.b, i),
                &l.spec.a_to_b,
                l.spec.mtu,
                seed,
            );
            let (ba, pba) = Direction::new(
                (tb, ta),
                ends(l.b, l.a, i),
                &l.spec.b_to_a,
                l.spec.mtu,
                seed ^ 1,
            );
            for (d, is_ab, published) in [(ab, true, pab), (ba, false, pba)] {
                let g = k % threads;
                self.wires.push(Wire {
                    link: i,
                    ab: is_ab,
                    pump: g,
                    slot: groups[g].len(),
                    published,
                });
                groups[g].push(d);
                k += 1;
            }
        }
        // Fewer directions than threads leave groups empty: no thread for those.
        let mut pump_of = vec![0; threads];
        for (t, dirs) in groups.into_iter().enumerate() {
            if dirs.is_empty() {
                continue;
            }
            pump_of[t] = self.pumps.len();
            let pump = Pump::start(format!("lab wire {t}"), dirs).map_err(|e| NetnsError::Io {
                what: "starting a link thread".into(),
                source: e,
            })?;
            self.pumps.push(pump);
        }
        for w in &mut self.wires {
            w.pump = pump_of[w.pump];
        }
        Ok(())
    }

    /// A command in `node`'s namespace (`ip netns exec`), with a leading `npt` replaced by
    /// this npt binary and [`LAB_ENV`] set.
    pub fn command(&self, node: &str, argv: &[String], npt_exe: &Path) -> Option<Command> {
        let n = self.plan.nodes.get(self.plan.node(node)?)?;
        Some(exec_command(&self.plan.lab, &n.netns, argv, npt_exe))
    }

    fn start_service(&mut self, s: &Service, opts: &LabOptions) -> Result<(), LabError> {
        let fail = |msg: String| LabError::Service {
            name: s.name.clone(),
            msg,
        };
        let log_path = opts.log_dir.join(format!("{}.log", s.name));
        let log = File::create(&log_path)
            .map_err(|e| fail(format!("cannot create {}: {e}", log_path.display())))?;
        let err_log = log.try_clone().map_err(|e| fail(e.to_string()))?;
        let mut cmd = self
            .command(&s.node, &s.cmd, &opts.npt_exe)
            .ok_or_else(|| fail(format!("unknown node {}", s.node)))?;
        cmd.stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .process_group(0);
        let child = cmd
            .spawn()
            .map_err(|e| fail(format!("cannot start {:?}: {e}", s.cmd)))?;
        self.services.push(Running {
            name: s.name.clone(),
            node: s.node.clone(),
            child,
        });
        let Some(ready) = &s.ready else {
            return Ok(());
        };
        let netns = self
            .plan
            .node(&s.node)
            .and_then(|n| self.plan.nodes.get(n))
            .map(|n| n.netns.clone())
            .ok_or_else(|| fail(format!("unknown node {}", s.node)))?;
        let deadline = Instant::now() + opts.ready_timeout;
        loop {
            if let Some(run) = self.services.last_mut() {
                if let Ok(Some(status)) = run.child.try_wait() {
                    return Err(fail(format!(
                        "exited ({status}) before it was ready; its log {}:\n{}",
                        log_path.display(),
                        tail(&log_path)
                    )));
                }
            }
            if is_ready(&netns, ready) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(fail(format!(
                    "not ready after {:?} ({ready:?}); its log {}:\n{}",
                    opts.ready_timeout,
                    log_path.display(),
                    tail(&log_path)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The lab's name.
    pub fn name(&self) -> &str {
        &self.plan.lab
    }

    /// Nodes, links with what each direction applied as of its last snapshot (at most
    /// 200 ms old), services and changes. [`Lab::fresh_status`] asks for new snapshots first.
    pub fn status(&mut self) -> LabStatus {
        let snaps: Vec<(usize, bool, Published)> = self
            .wires
            .iter()
            .map(|w| {
                let p = w.published.lock().map(|p| p.clone()).unwrap_or_default();
                (w.link, w.ab, p)
            })
            .collect();
        let services = self
            .services
            .iter_mut()
            .map(|r| ServiceStatus {
                name: r.name.clone(),
                node: r.node.clone(),
                pid: r.child.id(),
                running: matches!(r.child.try_wait(), Ok(None)),
            })
            .collect();
        let transits: Vec<_> = self.transits.iter().map(|t| t.snapshot()).collect();
        let mut st = status_of(&self.plan, &snaps, &transits, services);
        let now = Instant::now();
        let (at, mono, _) = self.clocks(now);
        st.up_at = Some(rfc3339(self.up_wall));
        st.up_monotonic_s = Some(mono - now.duration_since(self.up).as_secs_f64());
        st.read_at = Some(at);
        st.read_monotonic_s = Some(mono);
        st.changes = self.changes.clone();
        st
    }

    /// [`Lab::status`] with every direction's stats as of now: each wire thread publishes
    /// them on request first (waited for at most [`COMMAND_TIMEOUT`]).
    pub fn fresh_status(&mut self) -> LabStatus {
        let waits: Vec<mpsc::Receiver<()>> = self
            .pumps
            .iter()
            .filter_map(|p| {
                let (done, rx) = mpsc::channel();
                p.send(PumpCommand::Publish { done }).then_some(rx)
            })
            .collect();
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        for rx in waits {
            let _ = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        }
        self.status()
    }

    /// Changes the link `link` names with `KEY=VALUE` settings (see [`crate::change`]): all
    /// checked first (an error changes nothing), then handed to the wire threads, which
    /// apply them at one instant each. Returns the directions that changed, with when.
    pub fn set(&mut self, link: &str, settings: &[String]) -> Result<Vec<Change>, SetError> {
        let i = change::resolve_link(&self.plan, link)?;
        let parsed = change::parse_settings(settings)?;
        let (ab, ba, na, nb) = {
            let l = self
                .plan
                .links
                .get(i)
                .ok_or_else(|| SetError(format!("link {i}")))?;
            let (ab, ba) = change::apply(&l.spec.a_to_b, &l.spec.b_to_a, &parsed)?;
            let name = |n: usize| self.plan.nodes.get(n).map(|x| x.name.clone());
            (
                ab,
                ba,
                name(l.a).unwrap_or_default(),
                name(l.b).unwrap_or_default(),
            )
        };
        let mut made = Vec::new();
        // Per wire thread, every direction of this link it serves, in one command.
        let mut by_pump: Vec<PumpSet> = Vec::new();
        for w in self.wires.iter().filter(|w| w.link == i) {
            let (new, old) = match (w.ab, self.plan.links.get(i)) {
                (true, Some(l)) => (&ab, &l.spec.a_to_b),
                (false, Some(l)) => (&ba, &l.spec.b_to_a),
                (_, None) => continue,
            };
            if new == old {
                continue;
            }
            match by_pump.iter_mut().find(|(p, _, _)| *p == w.pump) {
                Some((_, dirs, abs)) => {
                    dirs.push((w.slot, new.clone()));
                    abs.push(w.ab);
                }
                None => by_pump.push((w.pump, vec![(w.slot, new.clone())], vec![w.ab])),
            }
        }
        for (pump, dirs, abs) in by_pump {
            let (done, rx) = mpsc::channel();
            let sent = self
                .pumps
                .get(pump)
                .is_some_and(|p| p.send(PumpCommand::Set { dirs, done }));
            let Some(at) = sent
                .then(|| rx.recv_timeout(COMMAND_TIMEOUT).ok())
                .flatten()
            else {
                // What other threads applied stays recorded; this thread's part is unknown.
                self.changes.extend(made);
                return Err(SetError(format!(
                    "link {i}: its wire thread did not answer; see `npt lab status` for what \
                     applies now"
                )));
            };
            let (wall, mono, lab_s) = self.clocks(at);
            for is_ab in abs {
                let Some(l) = self.plan.links.get_mut(i) else {
                    continue;
                };
                let (slot, new, from, to) = if is_ab {
                    (&mut l.spec.a_to_b, &ab, &na, &nb)
                } else {
                    (&mut l.spec.b_to_a, &ba, &nb, &na)
                };
                made.push(Change {
                    link: i,
                    from: from.clone(),
                    to: to.clone(),
                    at: wall.clone(),
                    at_monotonic_s: mono,
                    at_lab_s: lab_s,
                    before: std::mem::replace(slot, new.clone()),
                    after: new.clone(),
                });
            }
        }
        self.changes.extend(made.iter().cloned());
        let excess = self.changes.len().saturating_sub(MAX_CHANGES);
        self.changes.drain(..excess);
        Ok(made)
    }

    /// `at` on the wall clock (RFC 3339), on `CLOCK_MONOTONIC` and since the lab came up (s).
    fn clocks(&self, at: Instant) -> (String, f64, f64) {
        let ago = Instant::now().saturating_duration_since(at);
        let wall = SystemTime::now()
            .checked_sub(ago)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mono = monotonic_s() - ago.as_secs_f64();
        (
            rfc3339(wall),
            mono,
            at.saturating_duration_since(self.up).as_secs_f64(),
        )
    }

    /// Tears everything down; returns the final status and any errors met on the way.
    pub fn down(mut self) -> (LabStatus, Vec<String>) {
        let status = self.status();
        let errors = self.teardown();
        (status, errors)
    }

    fn teardown(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for r in &mut self.services {
            stop_group(&mut r.child);
        }
        self.services.clear();
        for mut p in self.pumps.drain(..) {
            p.stop();
        }
        let created: Vec<String> = self.created.drain(..).rev().collect();
        errors.extend(netns::delete_all(&created).iter().map(ToString::to_string));
        errors
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for e in self.teardown() {
            eprintln!("npt lab: cleanup: {e}");
        }
    }
}

/// RFC 3339 UTC with microseconds.
fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// `CLOCK_MONOTONIC` now, in seconds (the clock behind `Instant` on Linux).
fn monotonic_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec we pass.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}
