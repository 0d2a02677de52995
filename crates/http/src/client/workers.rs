//! The cold-start poller (the runtime threads are `npt_client::workers`): from spawning the
//! command, when its port first accepts a connection (listening), when it first answers 2xx
//! on its own port (`--cold-start-port`, behind a gateway) and through the URL (ready) — the
//! gateway benchmark's split of its 201 ms cold start into the gateway's 25 and the
//! service's 176.

use super::*;

/// How often the port is tried until it accepts (a refused connect costs next to nothing).
const LISTEN_POLL: Duration = Duration::from_millis(2);
/// The longest one try to connect to the port may take.
const LISTEN_TRY: Duration = Duration::from_secs(1);

/// The command's own port, asked directly: where, and the context for plain HTTP/1.1 to it.
pub(super) struct Service {
    pub(super) addr: SocketAddr,
    pub(super) ctx: Option<Ctx>,
}

impl Service {
    /// The port watched for listening and, behind a gateway (`--cold-start-port`), a context
    /// that asks the service directly. `None`: nothing to watch (the URL's port is a proxy's).
    pub(super) fn new(cfg: &Config, addr: SocketAddr) -> Result<Option<Service>, Error> {
        let Some(cs) = &cfg.cold_start else {
            return Ok(None);
        };
        let Some((host, port)) = &cs.service else {
            return Ok(cfg.via.is_none().then_some(Service { addr, ctx: None }));
        };
        let authority = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let target = Target::parse(&format!("http://{authority}{}", cfg.target.path_and_query))?;
        let direct = Config {
            target,
            hosts: cfg.host_names().into_iter().take(1).collect(),
            host_loads: Vec::new(),
            http2: false,
            http2_fallback: false,
            streams: 1,
            via: None,
            ..cfg.clone()
        };
        let addr = resolve(&direct.target, &cfg.source)?;
        let ctx = build_ctx(&direct, addr, Instant::now(), Vec::new())?;
        Ok(Some(Service {
            addr,
            ctx: Some(ctx),
        }))
    }
}

/// When each milestone was first seen.
#[derive(Default)]
struct Seen {
    listening: Option<Instant>,
    /// When the last try that found the port closed began: listening started after it.
    closed_at: Option<Instant>,
    service_ready: Option<Instant>,
    /// That direct request's own time.
    service_request: Option<Duration>,
}

/// One request on a connection of its own; `Ok(status)` or why not.
async fn ask(ctx: &Ctx, deadline: Instant, timeout: Duration) -> Result<u16, String> {
    let r = tokio::time::timeout_at(
        deadline.into(),
        ctx.fresh_request(0, None, &mut Vec::new(), &mut Watchdog::new(timeout)),
    )
    .await;
    match r {
        Ok(Ok((status, _, _))) => Ok(status),
        Ok(Err(Failure(kind, msg))) => Err(format!("{kind}: {msg}")),
        Err(_) => Err("timeout".into()),
    }
}

/// Polls until the first 2xx through the URL, as the gateway benchmark's cold start, noting
/// when the watched port started listening and (behind a gateway) when the service itself
/// first answered 2xx.
pub(super) async fn cold_start(
    ctx: &Ctx,
    cs: &ColdStartConfig,
    service: Option<&Service>,
    group: &mut ProcessGroup,
    spawned: Instant,
    stop: &Stop,
) -> Result<ColdStart, Error> {
    let deadline = spawned + cs.ready_timeout;
    let gateway = service.is_some_and(|s| s.ctx.is_some());
    let mut seen = Seen::default();
    let mut attempts = 0u64;
    let mut last = String::from("no attempt yet");
    let ms = |t: Instant| (t - spawned).as_secs_f64() * 1e3;
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
        if let (Some(s), None) = (service, seen.listening) {
            // Bounded per try: a port behind a firewall that drops SYNs is tried again.
            let tried = Instant::now();
            let until = deadline.min(tried + LISTEN_TRY);
            let connect = tokio::time::timeout_at(until.into(), TcpStream::connect(s.addr));
            match connect.await {
                Ok(Ok(_)) => seen.listening = Some(Instant::now()),
                // A refused connection is an attempt too (`cold_start.attempts`).
                _ => {
                    attempts += 1;
                    seen.closed_at = Some(tried);
                }
            }
        }
        let listening = seen.listening.is_some() || service.is_none();
        if let (
            Some(Service {
                ctx: Some(direct), ..
            }),
            true,
            None,
        ) = (service, listening, seen.service_ready)
        {
            let sent = Instant::now();
            if let Ok(200..=299) = ask(direct, deadline, cs.ready_timeout).await {
                seen.service_ready = Some(Instant::now());
                seen.service_request = Some(sent.elapsed());
            }
        }
        // Without a gateway the URL's port is the one watched: nothing to ask before it listens.
        if listening || gateway {
            attempts += 1;
            let sent = Instant::now();
            let r = ask(ctx, deadline, cs.ready_timeout).await;
            let done = Instant::now();
            match r {
                Ok(status @ 200..=299) => {
                    let ready_ms = ms(done);
                    let listening_ms = seen.listening.map(ms);
                    let service_ready_ms = seen.service_ready.map(ms);
                    return Ok(ColdStart {
                        command: cs.command.clone(),
                        ready_ms,
                        first_request_ms: (done - sent).as_secs_f64() * 1e3,
                        attempts,
                        first_status: status,
                        port: service.map(|s| s.addr.to_string()),
                        listening_ms,
                        listening_to_ready_ms: listening_ms.map(|l| ready_ms - l),
                        listening_within_ms: seen
                            .listening
                            .map(|l| (l - seen.closed_at.unwrap_or(spawned)).as_secs_f64() * 1e3),
                        service_first_request_ms: seen
                            .service_request
                            .map(|d| d.as_secs_f64() * 1e3),
                        service_ready_ms,
                        gateway_ms: service_ready_ms.map(|s| ready_ms - s),
                    });
                }
                Ok(status) => last = format!("status {status}"),
                Err(why) => last = why,
            }
        } else {
            last = "the port does not accept connections yet".into();
        }
        if let Some(exit) = group.exited() {
            return Err(Error::ColdStart(format!(
                "{exit} before answering (last: {last})"
            )));
        }
        let pause = if listening {
            RECONNECT_BACKOFF
        } else {
            LISTEN_POLL
        };
        tokio::time::sleep(pause).await;
    }
}
