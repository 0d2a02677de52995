//! The search's connections (`tcp://`): one TCP connection per flow, all waited on with one
//! `poll(2)`; the answers cut out of each stream ([`IDLE_LEN`] bytes each) and told to the
//! search, and a close told as the path's: end of stream is a FIN, `ECONNRESET` a RST
//! ([`crate::search::Close`]). Connecting (and the `--token` handshake) blocks, at most
//! [`CONNECT_TIMEOUT`] each: a flow's gap counts from its own ack, so a slow connect only
//! starts it later. With `--via` each connection is the proxy's CONNECT (SOCKS5 or HTTP).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use npt_result::workload::Stop;
use npt_wire::auth::{Dir, SessionKey};
use npt_wire::frame::HEADER_LEN;
use npt_wire::idle::IDLE_LEN;

use crate::search::{Action, Close, Search};
use crate::{LifetimeError, Route};

/// The longest a connection (with its handshake) may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest a wait lasts before the stop request is looked at again.
const MAX_WAIT_MS: u64 = 200;

/// A flow's connection, its session key (`--token`) and the bytes of an answer still partial.
struct Conn {
    sock: TcpStream,
    key: Option<SessionKey>,
    buf: Vec<u8>,
}

/// How the connections went: how many opened, and the first connect that failed, if any (a
/// search none of whose connections opened says why instead of "no answer").
#[derive(Default)]
pub struct Outcome {
    pub connected: usize,
    pub connect_error: Option<io::Error>,
}

/// Runs `search` against `to` until it finishes or `stop` says so.
pub fn run(
    search: &mut Search,
    route: Route<'_>,
    token: Option<&str>,
    stop: &Stop,
) -> Result<Outcome, LifetimeError> {
    let epoch = Instant::now();
    let now = || u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut outcome = Outcome::default();
    let mut actions = search.poll(now());
    let mut chunk = [0u8; 4096];
    while !stop.stopping() {
        while !actions.is_empty() {
            for a in std::mem::take(&mut actions) {
                if let Some(more) = act(a, route, token, &mut conns, &mut outcome, search, now()) {
                    actions.extend(more);
                }
            }
        }
        // The first connection failed: the others would too, each after its timeout.
        if search.finished() || (outcome.connected == 0 && outcome.connect_error.is_some()) {
            break;
        }
        let t = now();
        let wait_ms = search
            .next_wake()
            .map_or(MAX_WAIT_MS, |w| w.saturating_sub(t).div_ceil(1_000_000))
            .min(MAX_WAIT_MS);
        let open: Vec<(usize, i32)> = conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().map(|c| (i, c.sock.as_raw_fd())))
            .collect();
        let mut fds: Vec<libc::pollfd> = open
            .iter()
            .map(|&(_, fd)| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let nfds = libc::nfds_t::try_from(fds.len()).unwrap_or(0);
        let ms = i32::try_from(wait_ms).unwrap_or(i32::MAX);
        // SAFETY: `fds` is a live array of `nfds` pollfd records for the duration of the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), nfds, ms) };
        if ready > 0 {
            for (&(flow, _), p) in open.iter().zip(&fds) {
                if p.revents != 0 {
                    actions.extend(read(flow, &mut conns, search, &mut chunk, now()));
                }
            }
        }
        actions.extend(search.poll(now()));
    }
    Ok(outcome)
}

/// Reads what flow `flow`'s connection has: each whole answer to the search (under
/// `--token` only sealed ones), then a close if the stream ended.
fn read(
    flow: usize,
    conns: &mut [Option<Conn>],
    search: &mut Search,
    chunk: &mut [u8],
    now: u64,
) -> Vec<Action> {
    let mut out = Vec::new();
    let Some(Some(c)) = conns.get_mut(flow) else {
        return out;
    };
    let closed = loop {
        match c.sock.read(chunk) {
            Ok(0) => break Some(Close::Fin),
            Ok(n) => c.buf.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break None,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // ECONNRESET, or another error the path caused: the connection is gone.
            Err(_) => break Some(Close::Rst),
        }
    };
    while c.buf.len() >= IDLE_LEN {
        let frame: Vec<u8> = c.buf.drain(..IDLE_LEN).collect();
        let hdr = frame.get(..HEADER_LEN).unwrap_or_default();
        if c.key
            .as_ref()
            .is_some_and(|k| k.open(Dir::ToClient, hdr).is_err())
        {
            continue;
        }
        out.extend(search.on_datagram(flow, now, &frame));
    }
    if let Some(by) = closed {
        if let Some(slot) = conns.get_mut(flow) {
            *slot = None;
        }
        out.extend(search.on_closed(flow, now, by));
    }
    out
}

/// Does one of the search's actions; what the search says next when a connect failed.
fn act(
    a: Action,
    route: Route<'_>,
    token: Option<&str>,
    conns: &mut Vec<Option<Conn>>,
    outcome: &mut Outcome,
    search: &mut Search,
    now: u64,
) -> Option<Vec<Action>> {
    match a {
        Action::Open { flow } => match connect(route, token) {
            Ok(c) => {
                outcome.connected += 1;
                if conns.len() <= flow {
                    conns.resize_with(flow + 1, || None);
                }
                if let Some(slot) = conns.get_mut(flow) {
                    *slot = Some(c);
                }
                None
            }
            Err(e) => {
                outcome.connect_error.get_or_insert(e);
                // Never opened: the flow gets no answer.
                Some(search.on_closed(flow, now, Close::Rst))
            }
        },
        Action::Send { flow, mut frame } => {
            if let Some(Some(c)) = conns.get_mut(flow) {
                if let Some(k) = &c.key {
                    let _ = k.seal(Dir::ToServer, &mut frame);
                }
                // 160 bytes into an idle connection's empty buffer; a failed write is the
                // path's answer, read as a close on the next poll.
                let _ = c.sock.write_all(&frame);
            }
            None
        }
        Action::Close { flow } => {
            if let Some(c) = conns.get_mut(flow) {
                *c = None;
            }
            None
        }
    }
}

fn connect(route: Route<'_>, token: Option<&str>) -> io::Result<Conn> {
    let mut sock = match route.via {
        Some(via) => {
            npt_proxy::tcp_connect(via, route.host, route.to.port(), CONNECT_TIMEOUT)
                .map_err(|e| io::Error::other(format!("--via {via}: {e}")))?
                .0
        }
        None => TcpStream::connect_timeout(&route.to, CONNECT_TIMEOUT)?,
    };
    sock.set_nodelay(true)?;
    let key = match token {
        Some(t) => Some(npt_client::auth::tcp(&mut sock, t)?),
        None => None,
    };
    sock.set_nonblocking(true)?;
    Ok(Conn {
        sock,
        key,
        buf: Vec::new(),
    })
}
