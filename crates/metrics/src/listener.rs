//! The `--metrics ADDR` listener: a small HTTP/1.1 server (hyper, already npt's HTTP server
//! library) on a thread and single-threaded runtime of its own, so scrapes never run on a
//! load worker. `GET /metrics` (or `/`) answers the OpenMetrics text of one scrape; anything
//! else is 404. The socket is bound before [`Exporter::start`] returns, so callers (and tests)
//! can scrape at once.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::{encode, MetricsError, Source, CONTENT_TYPE};

/// A running metrics endpoint; dropping it stops the listener.
pub struct Exporter {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Exporter {
    /// Binds `addr` and serves scrapes of `source` until dropped.
    pub fn start(addr: SocketAddr, source: Source) -> Result<Exporter, MetricsError> {
        let listener = TcpListener::bind(addr).map_err(|e| MetricsError::Bind(addr, e))?;
        listener.set_nonblocking(true).map_err(MetricsError::Io)?;
        let bound = listener.local_addr().map_err(MetricsError::Io)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(MetricsError::Io)?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("npt-metrics".into())
            .spawn(move || rt.block_on(serve(listener, source, rx)))
            .map_err(MetricsError::Io)?;
        Ok(Exporter {
            addr: bound,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    /// The bound address (port 0 resolved).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(
    listener: TcpListener,
    source: Source,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let sock = tokio::select! {
            _ = &mut stop => return,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(_) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let source = source.clone();
        let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
            let source = source.clone();
            async move { Ok::<_, Infallible>(answer(&req, &source)) }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(sock), svc)
                .await;
        });
    }
}

fn answer<B>(req: &Request<B>, source: &Source) -> Response<Full<Bytes>> {
    let path = req.uri().path();
    if req.method() != hyper::Method::GET || !(path == "/metrics" || path == "/") {
        let mut r = Response::new(Full::new(Bytes::from_static(
            b"npt metrics: GET /metrics\n",
        )));
        *r.status_mut() = StatusCode::NOT_FOUND;
        return r;
    }
    let mut r = Response::new(Full::new(Bytes::from(encode(source))));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(CONTENT_TYPE),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::sync::Arc;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_the_text_on_a_real_socket() {
        let source: Source = Arc::new(|s: &mut crate::Snapshot| {
            s.counter("npt_packets_sent_total", "Packets sent.", &[], 42);
        });
        let e = Exporter::start("127.0.0.1:0".parse().unwrap(), source).unwrap();
        let r = get(e.local_addr(), "/metrics");
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        assert!(r.contains("application/openmetrics-text"), "{r}");
        assert!(r.contains("npt_packets_sent_total 42"), "{r}");
        assert!(get(e.local_addr(), "/nope").starts_with("HTTP/1.1 404"));
        let busy = e.local_addr();
        let err = Exporter::start(busy, Arc::new(|_: &mut crate::Snapshot| {}))
            .err()
            .expect("a bound port is refused");
        assert!(err.to_string().contains("--metrics"), "{err}");
    }
}
