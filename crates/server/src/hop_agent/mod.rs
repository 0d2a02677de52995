//! The hop agent of `npt serve --hop-agent`: on an authenticated stream, a `HopRequest` frame
//! ([`npt_wire::hop`]) asks the server to measure an RTT from where it runs — to a target the
//! client names, N attempts — and the reply carries one sample per attempt. This is what lets
//! `npt ping --from` measure the segment between two relays that the client cannot see.
//!
//! An agent that sends traffic on request is a reflection and SSRF tool if done wrong, so a
//! request is answered only when all of these hold, in this order (each refusal is counted in
//! [`HopCounters`]):
//! 1. the server is a hop agent, which it can only be with `--token` ([`crate::Server::start`]);
//!    the stream passed the keyed handshake and the frame header's tag verified (the stream
//!    responder checks both before it gets here);
//! 2. the body tag verifies (the target is covered), else the stream is closed;
//! 3. the sequence number is new in this session, else the stream is closed (a replay);
//! 4. the request decodes, is within [`HopLimits`], and is padded to the length of its reply;
//! 5. the session's and the agent's request rates hold, and fewer than `max_in_flight`
//!    measurements run;
//! 6. the target is within `--hop-allow` ([`AllowList`]): a name is resolved only when an
//!    entry could allow it, and the address measured is one that was checked.
//!
//! Measuring is done by a [`Measurer`] the binary supplies (npt ping's engine; for a path-MTU
//! request, `HopProto::Mtu`, npt mtu's search), on a blocking thread: this crate stays the
//! responders, with no client code. An MTU search sends many datagrams, not one: it costs
//! [`HopLimits::mtu_cost`] request tokens, at most [`HopLimits::max_mtu_in_flight`] run at
//! once (within `max_in_flight`), each is bounded by its request's time (at most
//! [`HopLimits::max_mtu_timeout`]), and its datagrams are counted (`mtu_probes`). A marking
//! read (`HopProto::Mark`, `npt trace --dscp`) is a UDP echo's N marked echoes, read by the
//! binary's marking reader: bounded, charged and counted (`attempts`) as a UDP echo.

pub mod allow;
pub mod counters;
pub mod limits;

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use npt_wire::auth::{ReplayWindow, SessionKey};
use npt_wire::frame::{Header, HEADER_LEN};
use npt_wire::hop::{
    self, status, HopProto, HopReply, HopRequest, MarkReply, MarkWay, MtuReply, MtuWay, Sample,
};

pub use allow::{AllowError, AllowList};
pub use counters::HopCounters;
pub use limits::{Bucket, HopLimits};

use crate::Counters;

/// How long the agent waits for a target name to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);

/// What measures: a request against one checked address, blocking; one sample per attempt.
type MeasureFn = dyn Fn(&HopRequest, SocketAddr) -> Vec<Sample> + Send + Sync;

/// What searches the path MTU: a request against one checked address, blocking; both ways.
type MtuFn = dyn Fn(&HopRequest, SocketAddr) -> MtuReply + Send + Sync;

/// What reads a marking: a request against one checked address, blocking; both ways.
type MarkFn = dyn Fn(&HopRequest, SocketAddr) -> MarkReply + Send + Sync;

/// Measures a request against one checked address, blocking: one sample per attempt, in order
/// (and, when given one, searches the path MTU for an MTU request, reads the marking each way
/// for a marking request).
#[derive(Clone)]
pub struct Measurer(Arc<MeasureFn>, Option<Arc<MtuFn>>, Option<Arc<MarkFn>>);

impl Measurer {
    pub fn new(f: impl Fn(&HopRequest, SocketAddr) -> Vec<Sample> + Send + Sync + 'static) -> Self {
        Measurer(Arc::new(f), None, None)
    }

    /// Also answers marking requests with `f` (without it they are refused as bad requests).
    #[must_use]
    pub fn with_mark(
        mut self,
        f: impl Fn(&HopRequest, SocketAddr) -> MarkReply + Send + Sync + 'static,
    ) -> Self {
        self.2 = Some(Arc::new(f));
        self
    }

    /// Also answers MTU requests with `f` (without it they are refused as bad requests).
    #[must_use]
    pub fn with_mtu(
        mut self,
        f: impl Fn(&HopRequest, SocketAddr) -> MtuReply + Send + Sync + 'static,
    ) -> Self {
        self.1 = Some(Arc::new(f));
        self
    }
}

impl fmt::Debug for Measurer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Measurer(..)")
    }
}

/// `--hop-agent`: where the agent may measure, its bounds, and what measures.
#[derive(Clone, Debug)]
pub struct HopAgentConfig {
    pub allow: AllowList,
    pub limits: HopLimits,
    pub measure: Measurer,
}

/// One authenticated stream's hop state: its replay window and its request bucket.
#[derive(Debug)]
pub struct HopSession {
    replay: ReplayWindow,
    bucket: Bucket,
}

/// What the stream responder does with a hop request.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Write this frame (never longer than the request).
    Reply(Vec<u8>),
    /// Close the stream (a forged or replayed request: the session cannot be trusted).
    Close,
}

/// The server's agent (present on every server; without a config it refuses every request).
pub struct HopAgent {
    cfg: Option<HopAgentConfig>,
    counters: Arc<Counters>,
    global: Mutex<Bucket>,
    in_flight: Arc<AtomicUsize>,
    mtu_in_flight: Arc<AtomicUsize>,
    epoch: Instant,
}

/// Holds one of the agent's `max_in_flight` slots until dropped.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl HopAgent {
    pub fn new(cfg: Option<HopAgentConfig>, counters: Arc<Counters>) -> HopAgent {
        let limits = cfg.as_ref().map(|c| c.limits).unwrap_or_default();
        HopAgent {
            cfg,
            counters,
            global: Mutex::new(Bucket::new(limits.global_rate, limits.global_burst, 0)),
            in_flight: Arc::new(AtomicUsize::new(0)),
            mtu_in_flight: Arc::new(AtomicUsize::new(0)),
            epoch: Instant::now(),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.cfg.is_some()
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A new stream's hop state.
    pub fn session(&self) -> HopSession {
        let l = self.cfg.as_ref().map(|c| c.limits).unwrap_or_default();
        HopSession {
            replay: ReplayWindow::default(),
            bucket: Bucket::new(l.session_rate, l.session_burst, self.now()),
        }
    }

    /// Answers one hop request: `hdr` is its header as received (tag verified by the caller
    /// when `key` is given), `payload` the rest of the frame.
    pub async fn answer(
        &self,
        session: &mut HopSession,
        hdr: &[u8; HEADER_LEN],
        payload: &[u8],
        key: Option<&SessionKey>,
    ) -> Answer {
        let c = &self.counters.hop;
        let bump = |n: &std::sync::atomic::AtomicU64| n.fetch_add(1, Ordering::Relaxed);
        let Ok(h) = Header::decode(hdr) else {
            bump(&c.refused_bad);
            return Answer::Close;
        };
        let refuse = |st: u32| match hop::reply_frame(&h, Err(st), key) {
            Ok(f) => Answer::Reply(f),
            Err(_) => Answer::Close,
        };
        let Some(cfg) = &self.cfg else {
            bump(&c.refused_disabled);
            return refuse(status::DISABLED);
        };
        // Only a session's frames reach a hop agent (it requires --token); a frame without a
        // key here is as good as forged.
        let Some(k) = key else {
            bump(&c.refused_mac);
            return Answer::Close;
        };
        let req = match hop::open_request(hdr, payload, Some(k)) {
            Err(hop::HopError::Auth(_)) => {
                bump(&c.refused_mac);
                return Answer::Close;
            }
            r => r,
        };
        if !session.replay.accept(h.seq) {
            bump(&c.refused_replay);
            return Answer::Close;
        }
        let req = match req {
            Ok(r) if usize::try_from(h.frame_len).unwrap_or(0) >= r.reply_frame_len() => r,
            _ => {
                bump(&c.refused_bad);
                return refuse(status::BAD_REQUEST);
            }
        };
        let is_mtu = req.proto == HopProto::Mtu;
        let is_mark = req.proto == HopProto::Mark;
        if cfg.limits.check(&req).is_err()
            || (is_mtu && cfg.measure.1.is_none())
            || (is_mark && cfg.measure.2.is_none())
        {
            bump(&c.refused_bad);
            return refuse(status::BAD_REQUEST);
        }
        let now = self.now();
        let cost = cfg.limits.cost(&req);
        // Quiet before this request: a session asking at about its rate (module doc of limits).
        let quiet = session.bucket.is_quiet(now);
        if !session.bucket.take_n(now, cost) {
            bump(&c.refused_rate);
            return refuse(status::RATE_LIMITED);
        }
        let reserve = cfg.limits.global_burst;
        let global = self
            .global
            .lock()
            .map(|mut g| {
                g.take_n(now, cost) || (quiet && g.take_n_from_reserve(now, cost, reserve))
            })
            .unwrap_or(false);
        if !global {
            // The session's token stays spent: given back, a flooding session's bucket would
            // fill while the agent is busy and look quiet enough to take the reserve.
            bump(&c.refused_busy);
            return refuse(status::BUSY);
        }
        if self.in_flight.fetch_add(1, Ordering::Relaxed) >= cfg.limits.max_in_flight {
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
            bump(&c.refused_busy);
            return refuse(status::BUSY);
        }
        let slot = InFlight(self.in_flight.clone());
        let mtu_slot = if is_mtu {
            if self.mtu_in_flight.fetch_add(1, Ordering::Relaxed) >= cfg.limits.max_mtu_in_flight {
                self.mtu_in_flight.fetch_sub(1, Ordering::Relaxed);
                bump(&c.refused_busy);
                return refuse(status::BUSY);
            }
            Some(InFlight(self.mtu_in_flight.clone()))
        } else {
            None
        };
        let addr = match target(&cfg.allow, &req).await {
            Ok(a) => a,
            Err(st) => {
                bump(if st == status::UNRESOLVED {
                    &c.refused_unresolved
                } else {
                    &c.refused_target
                });
                return refuse(st);
            }
        };
        let measure = cfg.measure.clone();
        if let (true, Some(search)) = (is_mtu, measure.1) {
            let job = req.clone();
            let m = tokio::task::spawn_blocking(move || {
                let _slots = (slot, mtu_slot);
                search(&job, addr)
            })
            .await
            .unwrap_or_else(|_| MtuReply {
                up: MtuWay::failed("io"),
                down: MtuWay::failed("io"),
            });
            c.answered.fetch_add(1, Ordering::Relaxed);
            c.mtu_searches.fetch_add(1, Ordering::Relaxed);
            let probes = u64::from(m.up.sent) + u64::from(m.down.sent);
            c.mtu_probes.fetch_add(probes, Ordering::Relaxed);
            let reply = HopReply {
                proto: req.proto,
                addr: Some(addr),
                samples: Vec::new(),
                mtu: Some(m),
                mark: None,
            };
            return match hop::reply_frame(&h, Ok(&reply), key) {
                Ok(f) => Answer::Reply(f),
                Err(_) => Answer::Close,
            };
        }
        let n = usize::from(req.attempts);
        if let (true, Some(read)) = (is_mark, measure.2) {
            let job = req.clone();
            let m = tokio::task::spawn_blocking(move || {
                let _slot = slot;
                read(&job, addr)
            })
            .await
            .unwrap_or(MarkReply {
                up: MarkWay::failed("io"),
                down: MarkWay::failed("io"),
            });
            c.answered.fetch_add(1, Ordering::Relaxed);
            c.attempts.fetch_add(n as u64, Ordering::Relaxed);
            let reply = HopReply {
                proto: req.proto,
                addr: Some(addr),
                samples: Vec::new(),
                mtu: None,
                mark: Some(m),
            };
            return match hop::reply_frame(&h, Ok(&reply), key) {
                Ok(f) => Answer::Reply(f),
                Err(_) => Answer::Close,
            };
        }
        let job = req.clone();
        let samples = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            (measure.0)(&job, addr)
        })
        .await
        .unwrap_or_default();
        // Exactly one sample per attempt, whatever the measurer returned.
        let mut samples = samples;
        samples.resize(n, Sample::Failed("io"));
        c.answered.fetch_add(1, Ordering::Relaxed);
        c.attempts.fetch_add(n as u64, Ordering::Relaxed);
        let reply = HopReply {
            proto: req.proto,
            addr: Some(addr),
            samples,
            mtu: None,
            mark: None,
        };
        match hop::reply_frame(&h, Ok(&reply), key) {
            Ok(f) => Answer::Reply(f),
            Err(_) => Answer::Close,
        }
    }
}

/// The address to measure for `req`: its host resolved (a literal as is), the first address
/// the allow-list allows. `Err(status)`: not allowed, or not resolved.
async fn target(allow: &AllowList, req: &HopRequest) -> Result<SocketAddr, u32> {
    if !allow.may_allow(&req.host, req.port) {
        return Err(status::NOT_ALLOWED);
    }
    let addrs: Vec<SocketAddr> = match req.host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, req.port)],
        Err(_) => {
            let lookup = tokio::net::lookup_host((req.host.as_str(), req.port));
            match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
                Ok(Ok(it)) => it.collect(),
                _ => return Err(status::UNRESOLVED),
            }
        }
    };
    if addrs.is_empty() {
        return Err(status::UNRESOLVED);
    }
    addrs
        .into_iter()
        .find(|a| allow.allows(&req.host, req.port, *a))
        .ok_or(status::NOT_ALLOWED)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests;
