//! The client's runtime threads, and the cold-start poller.

use super::*;

/// `n` threads, each running a single-threaded tokio runtime until [`Workers::stop`].
pub(super) struct Workers {
    pub(super) handles: Vec<tokio::runtime::Handle>,
    pub(super) stops: Vec<tokio::sync::oneshot::Sender<()>>,
    pub(super) threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    pub(super) fn start(n: usize) -> Result<Workers, Error> {
        let mut w = Workers {
            handles: Vec::new(),
            stops: Vec::new(),
            threads: Vec::new(),
        };
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::Io("starting a worker runtime".into(), e))?;
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            w.handles.push(rt.handle().clone());
            w.stops.push(tx);
            let t = std::thread::Builder::new()
                .name(format!("npt-http-{i}"))
                .spawn(move || {
                    let _ = rt.block_on(rx);
                    // Dropping `rt` here cancels its tasks on their own thread.
                })
                .map_err(|e| Error::Io("spawning a worker thread".into(), e))?;
            w.threads.push(t);
        }
        Ok(w)
    }

    // NO-PANIC: `start` makes at least one runtime, so the modulus is never 0 and in range.
    #[allow(clippy::indexing_slicing)]
    pub(super) fn handle(&self, i: usize) -> &tokio::runtime::Handle {
        &self.handles[i % self.handles.len()]
    }

    pub(super) fn stop(mut self) {
        self.stop_now();
    }

    pub(super) fn stop_now(&mut self) {
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

/// Polls with fresh connections until the first 2xx, as the gateway benchmark's cold start.
pub(super) async fn cold_start(
    ctx: &Ctx,
    cs: &ColdStartConfig,
    group: &mut ProcessGroup,
    spawned: Instant,
    stop: &AtomicBool,
) -> Result<ColdStart, Error> {
    let deadline = spawned + cs.ready_timeout;
    let mut attempts = 0u64;
    let mut last = String::from("no attempt yet");
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::ColdStart(
                "interrupted before the first answer".into(),
            ));
        }
        if Instant::now() >= deadline {
            return Err(Error::ColdStart(format!(
                "no 2xx answer within --ready-timeout {:?} after {attempts} attempts (last: {last})",
                cs.ready_timeout
            )));
        }
        attempts += 1;
        let sent = Instant::now();
        let r = tokio::time::timeout_at(
            deadline.into(),
            ctx.fresh_request(
                0,
                None,
                &mut Vec::new(),
                &mut Watchdog::new(cs.ready_timeout),
            ),
        )
        .await;
        let done = Instant::now();
        match r {
            Ok(Ok((status, _, _))) if (200..300).contains(&status) => {
                return Ok(ColdStart {
                    command: cs.command.clone(),
                    ready_ms: (done - spawned).as_secs_f64() * 1e3,
                    first_request_ms: (done - sent).as_secs_f64() * 1e3,
                    attempts,
                    first_status: status,
                });
            }
            Ok(Ok((status, _, _))) => last = format!("status {status}"),
            Ok(Err(Failure(kind, msg))) => last = format!("{kind}: {msg}"),
            Err(_) => last = "timeout".into(),
        }
        if let Some(exit) = group.exited() {
            return Err(Error::ColdStart(format!(
                "{exit} before answering (last: {last})"
            )));
        }
        tokio::time::sleep(RECONNECT_BACKOFF).await;
    }
}
