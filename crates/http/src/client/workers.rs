//! The cold-start poller (the runtime threads are `npt_client::workers`).

use super::*;

/// Polls with fresh connections until the first 2xx, as the gateway benchmark's cold start.
pub(super) async fn cold_start(
    ctx: &Ctx,
    cs: &ColdStartConfig,
    group: &mut ProcessGroup,
    spawned: Instant,
    stop: &Stop,
) -> Result<ColdStart, Error> {
    let deadline = spawned + cs.ready_timeout;
    let mut attempts = 0u64;
    let mut last = String::from("no attempt yet");
    loop {
        if stop.stopping() {
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
