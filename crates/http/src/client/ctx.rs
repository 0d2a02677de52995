//! What every slot of a run shares: address, TLS, requests per host, the schedule and the
//! pacer, the shards; and the request exchanges over HTTP/1.1 and h2.

use super::*;

/// Per host, for h2: the request target (its authority becomes `:authority`).
pub(super) struct HostReq {
    pub(super) uri: Uri,
}

/// One request number handed to a slot.
#[derive(Clone, Copy)]
pub(super) struct Ticket {
    pub(super) host: usize,
    /// Open loop: when the pacer released it (its due time, give or take ~1 µs).
    pub(super) intended: Option<Instant>,
}

/// One set of connections: the hosts it rotates over, its request numbers and, in open loop,
/// its pacer's releases.
pub(super) struct Group {
    pub(super) hosts: Vec<usize>,
    pub(super) tickets: Tickets,
    pub(super) open: Option<async_channel::Receiver<Due>>,
}

impl Group {
    /// The host of request `k` of this group.
    fn host(&self, k: u64) -> usize {
        self.hosts
            .get(host_for(k, self.hosts.len()))
            .copied()
            .unwrap_or(0)
    }
}

/// Shared by every slot of a run.
pub(super) struct Ctx {
    pub(super) addr: SocketAddr,
    /// `--bind`, `--dscp`: applied to every connection before its SYN.
    pub(super) source: npt_client::source::Source,
    pub(super) tls: Option<(TlsConnector, ServerName<'static>)>,
    pub(super) h2: bool,
    pub(super) method: Method,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
    pub(super) hosts: Vec<HostReq>,
    /// The sets of connections (`Config::groups`); in open loop each has its pacer's releases.
    pub(super) groups: Vec<Group>,
    pub(super) t0: Instant,
    pub(super) end: Instant,
    pub(super) timeout: Duration,
    /// HTTP/1.1: the request for each host, encoded once.
    pub(super) h1_reqs: Vec<Vec<u8>>,
    /// HEAD responses have no body whatever their headers say.
    pub(super) is_head: bool,
    pub(super) insecure: bool,
    /// `--new-conn` HTTP/1.1 with every request shorter than one TCP segment.
    pub(super) one_segment: bool,
    /// `--via`, and whether requests go to the proxy in absolute form (no tunnel).
    pub(super) via: Option<npt_proxy::Via>,
    pub(super) absolute_form: bool,
    /// The URL's host and port (what a tunnel is opened to).
    pub(super) target_host: String,
    pub(super) target_port: u16,
    /// Requests running now, for what the end of the run cuts off.
    pub(super) inflight: crate::inflight::InFlight,
}

impl Ctx {
    pub(super) fn ns(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.t0).as_nanos()).unwrap_or(u64::MAX)
    }

    /// The next request for a slot of group `g`; in open loop, waits until the group's pacer
    /// releases it. `None`: the schedule is over.
    pub(super) async fn ticket(&self, g: usize) -> Option<Ticket> {
        let group = self.groups.get(g)?;
        match &group.open {
            None => {
                let k = group.tickets.take();
                (Instant::now() < self.end).then_some(Ticket {
                    host: group.host(k),
                    intended: None,
                })
            }
            Some(rx) => {
                let d = rx.recv().await.ok()?;
                Some(Ticket {
                    host: group.host(d.k),
                    intended: Some(d.intended),
                })
            }
        }
    }

    /// The encoded HTTP/1.1 request for `host`.
    // NO-PANIC: `host` comes from `host_for(k, hosts.len())`; `h1_reqs` has one request per host.
    #[allow(clippy::indexing_slicing)]
    fn h1_req(&self, host: usize) -> &[u8] {
        &self.h1_reqs[host]
    }

    /// The h2 request head for `host` (the body, if any, follows as one DATA frame).
    // NO-PANIC: `host` comes from `host_for(k, hosts.len())`, always below `hosts.len()`.
    #[allow(clippy::indexing_slicing)]
    pub(super) fn build_h2(&self, host: usize) -> Request<()> {
        let mut req = Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.hosts[host].uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    /// One request on an h2 connection: `(status, head time, body bytes)`.
    pub(super) async fn h2_request(
        &self,
        tx: &mut H2Tx,
        host: usize,
    ) -> Result<(u16, Instant, u64), Failure> {
        self.h2_try(tx, host).await.map_err(|(f, _)| f)
    }

    /// [`Ctx::h2_request`], also saying whether a failure is a request the server never
    /// processed ([`unprocessed`]), which may be sent again on a new connection.
    async fn h2_try(
        &self,
        tx: &mut H2Tx,
        host: usize,
    ) -> Result<(u16, Instant, u64), (Failure, bool)> {
        let fail = |e: h2::Error| (Failure::from_err(&e), unprocessed(&e));
        let eos = self.body.is_empty();
        let (resp, mut send) = tx.send_request(self.build_h2(host), eos).map_err(fail)?;
        if !eos {
            send.send_data(self.body.clone(), true).map_err(fail)?;
        }
        let resp = resp.await.map_err(fail)?;
        let head = Instant::now();
        let status = resp.status().as_u16();
        let mut body = resp.into_body();
        let mut n = 0u64;
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|e| (Failure::from_err(&e), false))?;
            n += chunk.len() as u64;
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        Ok((status, head, n))
    }

    /// h2: one request within the timeout kept by the stream's watchdog; the failure says
    /// whether the server never processed the request ([`unprocessed`]).
    pub(super) async fn h2_exchange(
        &self,
        tx: &mut H2Tx,
        host: usize,
        sent: Instant,
        wd: &mut Watchdog,
    ) -> Result<(u16, Instant, u64), (Failure, bool)> {
        wd.guard(sent + self.timeout, self.h2_try(tx, host))
            .await
            .unwrap_or_else(|| {
                Err((
                    Failure(
                        ErrorKind::Timeout,
                        format!("no complete response within {:?}", self.timeout),
                    ),
                    false,
                ))
            })
    }

    /// TCP connect and, for https, the TLS handshake (checking ALPN for h2), within the
    /// request timeout.
    pub(super) async fn connect(&self) -> Result<(Io, ConnEvent), Failure> {
        match tokio::time::timeout(self.timeout, self.connect_untimed()).await {
            Ok(r) => r,
            Err(_) => Err(Failure(
                ErrorKind::Timeout,
                format!("connect/TLS handshake not done within {:?}", self.timeout),
            )),
        }
    }

    /// [`Ctx::connect`] without its own timer: the caller bounds it.
    pub(super) async fn connect_untimed(&self) -> Result<(Io, ConnEvent), Failure> {
        let (io, ce) = self.connect_any().await?;
        if let Io::Tls(tls) = &io {
            if self.h2 && tls.get_ref().1.alpn_protocol() != Some(crate::tls::ALPN_H2) {
                return Err(Failure(
                    ErrorKind::Protocol,
                    "server did not negotiate h2 by ALPN".into(),
                ));
            }
        }
        Ok((io, ce))
    }

    /// TCP connect and TLS handshake, whatever protocol ALPN chose.
    pub(super) async fn connect_any(&self) -> Result<(Io, ConnEvent), Failure> {
        let t = Instant::now();
        let (tcp, proxy_ns) = match &self.via {
            Some(via) if !self.absolute_form => {
                let tunnel =
                    npt_proxy::connect_async::tcp_connect(via, &self.target_host, self.target_port);
                match tunnel.await {
                    Ok((s, p)) => (s, Some(p.auth_ns + p.reply_ns)),
                    Err(e) => return Err(Failure(e.kind(), format!("via {via}: {e}"))),
                }
            }
            _ => match self.source.connect_async(self.addr).await {
                Err(e) => {
                    let f = Failure::from_err(&e);
                    return Err(Failure(f.0, format!("connect: {}", f.1)));
                }
                Ok(s) => (s, None),
            },
        };
        let connect_ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let Some((connector, name)) = &self.tls else {
            // A one-segment request on a fresh connection is one write that Nagle cannot
            // delay; skip the syscall. Keep-alive connections (a small write may still be
            // unacknowledged), h2 and bigger requests need TCP_NODELAY.
            if !self.one_segment {
                let _ = tcp.set_nodelay(true);
            }
            return Ok((
                Io::Plain(tcp),
                ConnEvent {
                    connect_ns,
                    tls_ns: None,
                    proxy_ns,
                    tls_version: None,
                    first_byte_ns: None,
                },
            ));
        };
        // TLS: the Finished message and the request are separate writes.
        let _ = tcp.set_nodelay(true);
        let t = Instant::now();
        let tls = match connector.connect(name.clone(), tcp).await {
            Err(e) => {
                let f = Failure::from_err(&e);
                let kind = if matches!(f.0, ErrorKind::Reset | ErrorKind::Refused) {
                    f.0
                } else {
                    ErrorKind::Tls
                };
                let hint = if f.1.contains("certificate") && !self.insecure {
                    " (--insecure accepts self-signed certificates)"
                } else {
                    ""
                };
                return Err(Failure(kind, format!("TLS handshake: {}{hint}", f.1)));
            }
            Ok(s) => s,
        };
        let tls_ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let tls_version = match tls.get_ref().1.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_2) => Some("1.2"),
            Some(rustls::ProtocolVersion::TLSv1_3) => Some("1.3"),
            _ => None,
        };
        Ok((
            Io::Tls(Box::new(tls)),
            ConnEvent {
                connect_ns,
                tls_ns: Some(tls_ns),
                proxy_ns,
                tls_version,
                first_byte_ns: None,
            },
        ))
    }

    /// `reused`: the request went on a connection that had carried one before.
    pub(super) fn push(
        &self,
        shard: &Shard,
        tk: Ticket,
        sent: Instant,
        result: Result<(u16, Instant, u64), Failure>,
        reused: bool,
    ) {
        let done = Instant::now();
        // Body bytes count for completed exchanges only: a failed one may not have sent any.
        let (outcome, head_ns, bytes_in, bytes_out) = match result {
            Ok((status, head, n)) => (
                Outcome::Response(status),
                self.ns(head),
                n,
                self.body.len() as u64,
            ),
            Err(Failure(kind, msg)) => (Outcome::Error(kind, msg.into()), 0, 0, 0),
        };
        shard.push(Record::Request(Event {
            // `validate` caps the hosts at `u16::MAX`.
            host: u16::try_from(tk.host).unwrap_or(u16::MAX),
            outcome,
            intended_ns: tk.intended.map(|t| self.ns(t)),
            sent_ns: self.ns(sent),
            head_ns,
            done_ns: self.ns(done),
            bytes_out,
            bytes_in,
            reused,
        }));
    }

    /// HTTP/1.1: one request on `conn`, within the request timeout kept by the slot's
    /// watchdog; also returns whether the connection can carry another request.
    pub(super) async fn h1_exchange(
        &self,
        conn: &mut h1::Conn<Io>,
        host: usize,
        sent: Instant,
        wd: &mut Watchdog,
    ) -> (Result<(u16, Instant, u64), Failure>, bool) {
        let work = async {
            let r = conn
                .request(self.h1_req(host), self.is_head)
                .await
                .map_err(|e| Failure(e.kind(), e.to_string()))?;
            Ok((r.status, r.head, r.body, r.keep_alive))
        };
        match wd.guard(sent + self.timeout, work).await {
            Some(Ok((status, head, body, keep))) => (Ok((status, head, body)), keep),
            Some(Err(f)) => (Err(f), false),
            None => (
                Err(Failure(
                    ErrorKind::Timeout,
                    format!("no complete response within {:?}", self.timeout),
                )),
                false,
            ),
        }
    }

    /// One request on a connection of its own (`--new-conn`, cold start): connect, TLS,
    /// request, close — all within one request timeout kept by `wd`. Returns the status, head
    /// time and body bytes. `buf` is the HTTP/1.1 read buffer, handed from connection to
    /// connection.
    pub(super) async fn fresh_request(
        &self,
        host: usize,
        shard: Option<&Shard>,
        buf: &mut Vec<u8>,
        wd: &mut Watchdog,
    ) -> Result<(u16, Instant, u64), Failure> {
        let sent = Instant::now();
        let mut conn_event = None;
        let work = async {
            let (io, ce) = self.connect_untimed().await?;
            if let Some(s) = shard {
                s.push(Record::Conn(ce));
            }
            // The first byte counts from here: the connection is set up.
            conn_event = Some((ce, Instant::now()));
            if self.h2 {
                let (mut tx, conn) = h2_handshake(io).await?;
                let r = async {
                    std::future::poll_fn(|cx| tx.poll_ready(cx))
                        .await
                        .map_err(|e| Failure::from_err(&e))?;
                    self.h2_request(&mut tx, host).await
                }
                .await;
                conn.abort();
                r
            } else {
                let mut conn = h1::Conn::with_buffer(io, std::mem::take(buf));
                let r = conn
                    .request(self.h1_req(host), self.is_head)
                    .await
                    .map(|r| (r.status, r.head, r.body))
                    .map_err(|e| Failure(e.kind(), e.to_string()));
                *buf = conn.into_buffer();
                r
            }
        };
        let r = wd
            .guard(sent + self.timeout, work)
            .await
            .unwrap_or_else(|| {
                Err(Failure(
                    ErrorKind::Timeout,
                    format!("no complete response within {:?}", self.timeout),
                ))
            });
        if let (Some(s), Some((mut ce, ready))) = (shard, conn_event) {
            ce.first_byte_ns = first_byte(ready, &r);
            if ce.first_byte_ns.is_some() {
                s.push(Record::FirstByte(ce));
            }
        }
        r
    }
}

/// From `from` (a request's write on a new connection) to its response head, when it got one.
pub(super) fn first_byte(from: Instant, r: &Result<(u16, Instant, u64), Failure>) -> Option<u64> {
    r.as_ref()
        .ok()
        .map(|(_, head, _)| super::ns_between(from, *head))
}

/// The run's shared context; `open` holds each group's pacer releases (in the order of
/// [`Config::groups`]; a missing one is closed loop).
/// An h2 request the server says it never processed — refused (`REFUSED_STREAM`), or above the
/// last stream of a graceful GOAWAY (`NO_ERROR`: nginx closes a connection so after 1000
/// requests) — which RFC 9113 §8.7 lets a client send again, as browsers do.
pub(super) fn unprocessed(e: &h2::Error) -> bool {
    e.is_remote()
        && ((e.is_go_away() && e.reason() == Some(h2::Reason::NO_ERROR))
            || (e.is_reset() && e.reason() == Some(h2::Reason::REFUSED_STREAM)))
}

pub(super) fn build_ctx(
    cfg: &Config,
    addr: SocketAddr,
    t0: Instant,
    mut open: Vec<Option<async_channel::Receiver<Due>>>,
) -> Result<Ctx, Error> {
    let tls = if cfg.target.https {
        let connector = TlsConnector::from(crate::tls::client_config(cfg.insecure, cfg.http2)?);
        let name = ServerName::try_from(cfg.target.host.clone())
            .map_err(|e| Error::Url(cfg.target.url.clone(), format!("TLS server name: {e}")))?;
        Some((connector, name))
    } else {
        None
    };
    let scheme = if cfg.target.https { "https" } else { "http" };
    let mut hosts = Vec::new();
    for h in cfg.host_names() {
        let uri: Uri = if cfg.http2 {
            format!("{scheme}://{h}{}", cfg.target.path_and_query)
                .parse()
                .map_err(|e| Error::Config(format!("--host {h:?}: {e}")))?
        } else {
            cfg.target
                .path_and_query
                .parse()
                .map_err(|e| Error::Url(cfg.target.url.clone(), format!("{e}")))?
        };
        HeaderValue::from_str(&h)
            .map_err(|_| Error::Config(format!("--host {h:?} is not a valid header value")))?;
        hosts.push(HostReq { uri });
    }
    let mut headers = HeaderMap::new();
    for (k, v) in &cfg.headers {
        headers.append(k.clone(), v.clone());
    }
    let raw_headers: Vec<(String, Vec<u8>)> = cfg
        .headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.as_bytes().to_vec()))
        .collect();
    // Through an HTTP proxy without a tunnel, the request line names the whole URL.
    let absolute_form = matches!(&cfg.via, Some(v) if v.kind == npt_proxy::ViaKind::Http)
        && !cfg.target.https
        && !cfg.http2;
    let request_target = if absolute_form {
        format!(
            "http://{}{}",
            cfg.target.authority, cfg.target.path_and_query
        )
    } else {
        cfg.target.path_and_query.clone()
    };
    let h1_reqs: Vec<Vec<u8>> = cfg
        .host_names()
        .iter()
        .map(|h| {
            h1::encode_request(
                cfg.method.as_str(),
                &request_target,
                h,
                &raw_headers,
                &cfg.body,
                cfg.new_conn,
            )
        })
        .collect();
    let one_segment = cfg.new_conn && !cfg.http2 && h1_reqs.iter().all(|r| r.len() <= 1200);
    Ok(Ctx {
        addr,
        tls,
        h2: cfg.http2,
        method: cfg.method.clone(),
        headers,
        body: cfg.body.clone(),
        hosts,
        groups: cfg
            .groups()
            .into_iter()
            .enumerate()
            .map(|(i, g)| Group {
                hosts: g.hosts,
                tickets: Tickets::new(),
                open: open.get_mut(i).and_then(Option::take),
            })
            .collect(),
        t0,
        end: t0 + cfg.duration,
        timeout: cfg.timeout,
        h1_reqs,
        is_head: cfg.method == Method::HEAD,
        insecure: cfg.insecure,
        source: cfg.source,
        one_segment,
        via: cfg.via.clone(),
        absolute_form,
        target_host: cfg.target.host.clone(),
        target_port: cfg.target.port,
        inflight: Default::default(),
    })
}
