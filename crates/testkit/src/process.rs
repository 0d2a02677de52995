//! Child processes for tests: killed and reaped when dropped (also when the test panics), and
//! waited for by polling with a bound — never a fixed sleep hoping the child is ready.

use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

/// A child process killed (and reaped) when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free loopback port (bound to 0 and released), for a command that must be given a number.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Retries `f` every 50 ms until it holds or `limit` passes; how long it took.
pub fn until(limit: Duration, f: impl FnMut() -> bool) -> Option<Duration> {
    poll(limit, Duration::from_millis(50), f)
}

/// Waits until something accepts on 127.0.0.1:`port`; panics if `child` exits first or
/// nothing listens within `limit`.
pub fn wait_listening(child: &mut Child, port: u16, limit: Duration) {
    let mut exited = None;
    let up = poll(limit, Duration::from_millis(20), || {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        exited = child.try_wait().ok().flatten();
        exited.is_some()
    });
    if let Some(status) = exited {
        panic!("the process exited before it listened on {port}: {status}");
    }
    assert!(up.is_some(), "nothing listened on {port} within {limit:?}");
}

fn poll(limit: Duration, step: Duration, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let t = Instant::now();
    while t.elapsed() < limit {
        if f() {
            return Some(t.elapsed());
        }
        std::thread::sleep(step);
    }
    None
}
