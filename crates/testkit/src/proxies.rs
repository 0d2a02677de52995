//! Real proxies for tests: Debian's `danted`, `microsocks`, `tinyproxy` and a `socat` relay started on a free
//! loopback port with a config of their own, waited for until they accept, and killed when
//! dropped. Used by npt-proxy's tests and by the `--via` and `compare` tests of the binary, so
//! both drive the same proxies the same way.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::process::{wait_listening, Guard};

/// A proxy process killed when dropped; then its temporary directory (config, pid file),
/// which lives as long as the process, is removed.
pub struct Proc {
    _process: Guard,
    dir: Option<tempfile::TempDir>,
}

pub fn have(bin: &str) -> bool {
    if Path::new(bin).exists() {
        return true;
    }
    if std::env::var_os("NPT_SKIP_PROXIES").is_some() {
        eprintln!("SKIPPED: {bin} not installed and NPT_SKIP_PROXIES is set");
        return false;
    }
    panic!(
        "{bin} is not installed (apt-get install dante-server microsocks tinyproxy; ./test.sh does)"
    );
}

fn spawn(cmd: &mut Command, dir: Option<tempfile::TempDir>, port: u16) -> Proc {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("proxy starts");
    // Guarded first: a proxy that never listens is killed when the wait panics.
    let mut process = Guard(child);
    wait_listening(&mut process.0, port, Duration::from_secs(10));
    Proc {
        _process: process,
        dir,
    }
}

pub fn danted(port: u16) -> Proc {
    danted_with(port, "none")
}

/// danted with `socksmethod` set to `method` (`none`, or `username`: system accounts, see
/// [`SystemUser`]).
pub fn danted_with(port: u16, method: &str) -> Proc {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("danted.conf");
    std::fs::write(
        &conf,
        format!(
            "logoutput: stderr\ninternal: 127.0.0.1 port = {port}\nexternal: 127.0.0.1\n\
             clientmethod: none\nsocksmethod: {method}\nuser.privileged: root\n\
             user.unprivileged: nobody\n\
             client pass {{ from: 127.0.0.0/8 to: 0.0.0.0/0 }}\n\
             socks block {{ from: 0.0.0.0/0 to: 127.0.0.99/32 }}\n\
             socks pass {{ from: 127.0.0.0/8 to: 0.0.0.0/0 command: connect udpassociate udpreply }}\n"
        ),
    )
    .unwrap();
    let pid = dir.path().join("danted.pid");
    spawn(
        Command::new("/usr/sbin/danted")
            .arg("-f")
            .arg(&conf)
            .arg("-p")
            .arg(&pid),
        Some(dir),
        port,
    )
}

pub fn tinyproxy(port: u16) -> Proc {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("tinyproxy.conf");
    std::fs::write(
        &conf,
        format!(
            "User nobody\nGroup nogroup\nPort {port}\nListen 127.0.0.1\nTimeout 30\n\
             Allow 127.0.0.1\nMaxClients 50\n"
        ),
    )
    .unwrap();
    spawn(
        Command::new("/usr/bin/tinyproxy")
            .arg("-d")
            .arg("-c")
            .arg(&conf),
        Some(dir),
        port,
    )
}

pub fn microsocks(port: u16, auth: Option<(&str, &str)>) -> Proc {
    let mut c = Command::new("/usr/bin/microsocks");
    c.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
    if let Some((u, p)) = auth {
        c.args(["-u", u, "-P", p]);
    }
    spawn(&mut c, None, port)
}

/// A `socat` TCP relay, the forwarder users put in front of a server: it listens on
/// 127.0.0.1:`port`, accepts every connection by itself and connects each to `to` (a fork per
/// connection); when `to` refuses, it closes the accepted connection without a byte.
pub fn socat(port: u16, to: std::net::SocketAddr) -> Proc {
    spawn(
        Command::new("/usr/bin/socat").args([
            format!("TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr"),
            format!("TCP:{to}"),
        ]),
        None,
        port,
    )
}

impl Proc {
    /// The config file the proxy was started with (danted, tinyproxy).
    pub fn config(&self, name: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.path().join(name))
    }
}

/// Whether any process has `arg` on its command line.
pub fn running_with_arg(arg: &Path) -> bool {
    let want = arg.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| String::from_utf8_lossy(&c).contains(&want))
}

/// A throwaway system account (danted's `username` method checks the system's password
/// database), removed when dropped. Needs root.
pub struct SystemUser {
    pub name: String,
    pub password: String,
}

impl SystemUser {
    pub fn create() -> std::io::Result<SystemUser> {
        let name = format!("npttest{}", std::process::id() % 100_000);
        let password = format!("pw{}", std::process::id());
        let ok = Command::new("useradd")
            .args(["--no-create-home", "--shell", "/usr/sbin/nologin", &name])
            .status()?
            .success();
        if !ok {
            return Err(std::io::Error::other(format!("useradd {name} failed")));
        }
        let user = SystemUser { name, password };
        let mut chpasswd = Command::new("chpasswd").stdin(Stdio::piped()).spawn()?;
        if let Some(mut stdin) = chpasswd.stdin.take() {
            use std::io::Write;
            writeln!(stdin, "{}:{}", user.name, user.password)?;
        }
        if !chpasswd.wait()?.success() {
            return Err(std::io::Error::other("chpasswd failed"));
        }
        Ok(user)
    }
}

impl Drop for SystemUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).status();
    }
}
