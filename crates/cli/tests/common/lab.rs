//! What every root lab test does around its measurement, written once: skip (visibly) when
//! not root, bring a topology up with `npt lab up` and down again when the test ends (also when
//! an assertion fails: [`Lab`] is a drop guard), run `npt` on a node with `npt lab exec`, and
//! read the links' counters with `npt lab status --json` (a direction's, once settled).

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
        let out = run(
            &["lab", "up", file.to_str().expect("utf-8 path")],
            Duration::from_secs(90),
        );
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
        let mut a = args.to_vec();
        a.extend(["--json", file.to_str().expect("utf-8 path")]);
        let out = self.npt(node, &a, Duration::from_secs(120));
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = json(file);
        assert_valid(&doc, kind);
        doc
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
        let _ = run(&["lab", "down", &self.name], Duration::from_secs(30));
    }
}
