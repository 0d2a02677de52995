//! The control socket of a lab kept up by `npt lab up`: how `npt lab set` changes a running
//! link and `npt lab status` reads figures as of now. A Unix socket in the lab's state
//! directory (`/run/npt-lab/LAB/control.sock`), created with mode 0600 and answering only root
//! peers (`SO_PEERCRED`): changing a lab is as privileged as building one. One request per
//! connection, one JSON line each way; the lab process answers them one at a time.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::status::{Change, LabStatus};

/// The socket's file name in the lab's state directory.
pub const SOCKET: &str = "control.sock";
/// The longest request line read (settings are a few words).
const MAX_REQUEST: u64 = 64 * 1024;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// The status with every direction's stats as of now.
    Status,
    /// `npt lab set LAB LINK SETTINGS…`.
    Set { link: String, settings: Vec<String> },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Status {
        status: Box<LabStatus>,
    },
    /// The directions that changed (none when the settings were what they already had).
    Set {
        changes: Vec<Change>,
    },
    /// The request was refused and nothing changed (a bad link or setting): the user's to fix.
    Refused {
        message: String,
    },
    /// The lab could not do it.
    Failed {
        message: String,
    },
}

/// The lab process's end.
pub struct Server {
    listener: UnixListener,
}

impl Server {
    /// Listens at `path` (a stale socket left by a killed lab is replaced), mode 0600.
    pub fn bind(path: &Path) -> io::Result<Server> {
        let _ = std::fs::remove_file(path);
        // SAFETY: umask only changes this process's file-creation mask; restored below. The
        // socket is created 0600 from the start, so no other user ever sees it writable.
        let old = unsafe { libc::umask(0o177) };
        let bound = UnixListener::bind(path);
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        let listener = bound?;
        listener.set_nonblocking(true)?;
        Ok(Server { listener })
    }

    /// The next connection, waiting at most `timeout`; `None` when none came.
    pub fn accept(&self, timeout: Duration) -> io::Result<Option<Conn>> {
        let mut ready = Vec::new();
        npt_netio::wait(
            &[self.listener.as_raw_fd()],
            &[false],
            Some(timeout),
            &mut ready,
        )?;
        match self.listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(Duration::from_secs(2)))?;
                s.set_write_timeout(Some(Duration::from_secs(2)))?;
                Ok(Some(Conn(s)))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// One client's connection.
pub struct Conn(UnixStream);

impl Conn {
    /// The request, or an answer to send back instead (not root, unreadable).
    pub fn request(&mut self) -> Result<Request, Reply> {
        if peer_uid(&self.0) != Some(0) {
            return Err(Reply::Refused {
                message: "only root may control a lab".into(),
            });
        }
        let mut line = String::new();
        BufReader::new((&self.0).take(MAX_REQUEST))
            .read_line(&mut line)
            .map_err(|e| Reply::Failed {
                message: format!("reading the request: {e}"),
            })?;
        serde_json::from_str(&line).map_err(|e| Reply::Failed {
            message: format!("bad request: {e}"),
        })
    }

    pub fn reply(mut self, r: &Reply) -> io::Result<()> {
        let mut bytes = serde_json::to_vec(r).map_err(io::Error::other)?;
        bytes.push(b'\n');
        self.0.write_all(&bytes)
    }
}

/// The uid of the process at the other end (`SO_PEERCRED`).
fn peer_uid(s: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: 0,
    };
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::ucred>()).unwrap_or(0);
    // SAFETY: getsockopt writes at most `len` bytes into the live `cred`.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

/// Sends `req` to the lab listening at `path` and reads its reply (within `timeout` each
/// way). `NotFound` / `ConnectionRefused`: no lab is listening there.
pub fn call(path: &Path, req: &Request, timeout: Duration) -> io::Result<Reply> {
    let mut s = UnixStream::connect(path)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    let mut bytes = serde_json::to_vec(req).map_err(io::Error::other)?;
    bytes.push(b'\n');
    s.write_all(&bytes)?;
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line)?;
    serde_json::from_str(&line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_and_its_reply_cross_the_socket() {
        let dir = std::env::temp_dir().join(format!("npt-control-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(SOCKET);
        let server = Server::bind(&path).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let p = path.clone();
        let client = std::thread::spawn(move || {
            let req = Request::Set {
                link: "a-b".into(),
                settings: vec!["delay=5ms".into()],
            };
            call(&p, &req, Duration::from_secs(5)).unwrap()
        });
        let conn = loop {
            if let Some(c) = server.accept(Duration::from_millis(100)).unwrap() {
                break c;
            }
        };
        let mut conn = conn;
        let got = conn.request();
        let is_root = unsafe { libc::geteuid() } == 0;
        match got {
            Ok(r) => {
                assert!(is_root);
                assert_eq!(
                    r,
                    Request::Set {
                        link: "a-b".into(),
                        settings: vec!["delay=5ms".into()]
                    }
                );
                conn.reply(&Reply::Set { changes: vec![] }).unwrap();
                assert!(
                    matches!(client.join().unwrap(), Reply::Set { changes } if changes.is_empty())
                );
            }
            Err(refusal) => {
                assert!(!is_root, "root is answered");
                conn.reply(&refusal).unwrap();
                assert!(matches!(client.join().unwrap(), Reply::Refused { .. }));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
