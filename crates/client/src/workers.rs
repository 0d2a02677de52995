//! A client's runtime threads: `n` threads, each running a single-threaded tokio runtime until
//! stopped, and tasks spread over them by index.
//!
//! Why not tokio's multi-threaded runtime: its work stealing moves tasks between threads and
//! wakes parked workers (a futex and a context switch per hand-off). A load generator's tasks
//! are independent — an HTTP connection slot, a simulated user — so one event loop per core
//! with a fixed share of the tasks each (as wrk does) does the same work without the
//! hand-offs: `npt run` spent about one futex call and one more context switch per request
//! on them.

use std::io;

/// `n` threads, each running a single-threaded tokio runtime until [`Workers::stop`] (or drop).
pub struct Workers {
    handles: Vec<tokio::runtime::Handle>,
    stops: Vec<tokio::sync::oneshot::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    /// Starts `n` (at least one) runtime threads named `{name}-{i}`.
    pub fn start(n: usize, name: &str) -> io::Result<Workers> {
        let mut w = Workers {
            handles: Vec::new(),
            stops: Vec::new(),
            threads: Vec::new(),
        };
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            w.handles.push(rt.handle().clone());
            w.stops.push(tx);
            let t = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    let _ = rt.block_on(rx);
                    // Dropping `rt` here cancels its tasks on their own thread.
                })?;
            w.threads.push(t);
        }
        Ok(w)
    }

    /// How many runtime threads run.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Never true: `start` makes at least one.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// The runtime task `i` goes to (`i` modulo the thread count).
    // NO-PANIC: `start` makes at least one runtime, so the modulus is never 0 and in range.
    #[allow(clippy::indexing_slicing)]
    pub fn handle(&self, i: usize) -> &tokio::runtime::Handle {
        &self.handles[i % self.handles.len()]
    }

    /// Stops every runtime (their tasks are dropped on their own threads) and joins the threads.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        for s in self.stops.drain(..) {
            let _ = s.send(());
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Whether `addr` belongs to this machine: loopback, or an address one of its interfaces
/// holds (binding a socket to it succeeds only then). A load generator whose target shares
/// the machine leaves CPUs to it.
pub fn is_local(addr: std::net::SocketAddr) -> bool {
    let ip = addr.ip();
    ip.is_loopback()
        || ip.is_unspecified()
        || std::net::UdpSocket::bind(std::net::SocketAddr::new(ip, 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn tasks_spread_over_threads_and_stop_ends_them() {
        let w = Workers::start(2, "t").unwrap();
        assert_eq!(w.len(), 2);
        let names = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..4 {
            let (names, tx) = (names.clone(), tx.clone());
            w.handle(i).spawn(async move {
                let n = std::thread::current().name().unwrap_or("").to_string();
                names.lock().unwrap().push(n);
                tx.send(()).unwrap();
            });
        }
        for _ in 0..4 {
            rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
        }
        let mut n = names.lock().unwrap().clone();
        n.sort();
        assert_eq!(n, ["t-0", "t-0", "t-1", "t-1"]);
        // A task still running when the workers stop is dropped (its guard runs).
        let dropped = Arc::new(AtomicUsize::new(0));
        struct G(Arc<AtomicUsize>);
        impl Drop for G {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let g = G(dropped.clone());
        w.handle(0).spawn(async move {
            let _g = g;
            std::future::pending::<()>().await;
        });
        w.stop();
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn local_addresses() {
        assert!(is_local("127.0.0.1:80".parse().unwrap()));
        // TEST-NET-3 is never assigned to an interface.
        assert!(!is_local("203.0.113.7:80".parse().unwrap()));
    }
}
