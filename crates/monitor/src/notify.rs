//! Where alert changes go: a webhook (one JSON POST per change, `http://` or `https://` with
//! the Mozilla roots) and/or a command (the same JSON on its stdin, the main fields in its
//! environment). Deliveries run on the monitor's runtime, each bounded in time and retried a
//! few times; one that still fails is an event in the store and a counted metric, never a stop.
//!
//! The webhook client is hyper's (the HTTP library npt's listeners already use) on a
//! connection of its own per delivery: alerts are rare, and a fresh connection cannot be
//! stale. The JSON carries `text`, a one-line summary, so chat webhooks that read that field
//! (Slack, Mattermost, Rocket.Chat) show it as it is.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};

use crate::alert::Change;

/// Time for one attempt (connect, TLS, request, response head).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Waits before the attempts after the first.
pub const RETRIES: [Duration; 2] = [Duration::from_secs(2), Duration::from_secs(10)];
/// A command gets this long before it is killed.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// A parsed webhook URL.
/// The `[notify]` section of the config file, as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyFile {
    /// http:// or https:// URL each alert change is POSTed to (JSON).
    pub webhook: Option<String>,
    /// A command run on each alert change: argv, the JSON on its stdin.
    #[serde(default)]
    pub command: Vec<String>,
    /// Extra headers of the webhook request (`Authorization` …).
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Webhook {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// Path and query.
    pub path: String,
}

impl Webhook {
    pub fn parse(url: &str) -> Result<Webhook, String> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!(
                "{url:?}: expected http://HOST[:PORT]/PATH or https://…"
            ));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        if authority.contains('@') {
            return Err(format!(
                "{url:?}: credentials in the URL are not sent; use notify.headers"
            ));
        }
        let default = if tls { 443 } else { 80 };
        let (host, port) = if let Some(h) = authority.strip_prefix('[') {
            // [v6]:port
            let (h, p) = h
                .split_once(']')
                .ok_or_else(|| format!("{url:?}: bad IPv6 host"))?;
            let port = match p.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| format!("{url:?}: bad port"))?,
                None => default,
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse().map_err(|_| format!("{url:?}: bad port {p:?}"))?,
                ),
                None => (authority.to_string(), default),
            }
        };
        if host.is_empty() {
            return Err(format!("{url:?}: no host"));
        }
        Ok(Webhook {
            tls,
            host,
            port,
            path: path.to_string(),
        })
    }

    fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match (self.tls, self.port) {
            (true, 443) | (false, 80) => host,
            _ => format!("{host}:{}", self.port),
        }
    }
}

/// What is sent for one change.
#[derive(Clone, Debug, Serialize)]
pub struct Message {
    /// One line for chat webhooks.
    pub text: String,
    /// The monitor's vantage name.
    pub monitor: String,
    /// `firing` or `resolved`.
    pub state: &'static str,
    pub alert: String,
    pub target: String,
    pub metric: &'static str,
    pub value: f64,
    pub threshold: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
    pub rounds: u32,
    /// RFC 3339.
    pub at: String,
    pub since: String,
}

fn rfc3339(ms: i64) -> String {
    crate::round::rfc3339(ms)
}

impl Message {
    pub fn of(vantage: &str, c: &Change) -> Message {
        let state = if c.firing { "firing" } else { "resolved" };
        let base = c
            .baseline
            .map(|b| format!(" (baseline {b:.2})"))
            .unwrap_or_default();
        let cmp = if c.firing { "past" } else { "back within" };
        Message {
            text: format!(
                "npt monitor {vantage}: {} {state} for {}: {} {:.2} {cmp} {:.2}{base}, {} rounds",
                c.rule, c.target, c.metric, c.value, c.threshold, c.rounds
            ),
            monitor: vantage.to_string(),
            state,
            alert: c.rule.clone(),
            target: c.target.clone(),
            metric: c.metric,
            value: c.value,
            threshold: c.threshold,
            baseline: c.baseline,
            rounds: c.rounds,
            at: rfc3339(c.at_ms),
            since: rfc3339(c.since_ms),
        }
    }
}

/// Counts of deliveries, for the metrics.
#[derive(Debug, Default)]
pub struct Counts {
    pub sent: AtomicU64,
    pub failed: AtomicU64,
}

/// The configured channels.
#[derive(Clone, Debug)]
pub struct Notifier {
    pub webhook: Option<Webhook>,
    pub headers: Vec<(String, String)>,
    pub command: Vec<String>,
    pub counts: Arc<Counts>,
}

impl Notifier {
    pub fn new(n: &NotifyFile) -> Result<Notifier, String> {
        Ok(Notifier {
            webhook: n.webhook.as_deref().map(Webhook::parse).transpose()?,
            headers: n
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            command: n.command.clone(),
            counts: Arc::default(),
        })
    }

    /// Sends `m` to every channel, retrying; returns what failed (for the event log).
    pub async fn deliver(&self, m: &Message) -> Vec<String> {
        let body = serde_json::to_vec(m).unwrap_or_default();
        let mut failed = Vec::new();
        if let Some(w) = &self.webhook {
            let mut last = String::new();
            let mut ok = false;
            for wait in std::iter::once(Duration::ZERO).chain(RETRIES) {
                tokio::time::sleep(wait).await;
                match tokio::time::timeout(ATTEMPT_TIMEOUT, post(w, &self.headers, &body)).await {
                    Ok(Ok(())) => {
                        ok = true;
                        break;
                    }
                    Ok(Err(e)) => last = e,
                    Err(_) => last = format!("no answer within {ATTEMPT_TIMEOUT:?}"),
                }
            }
            self.count(ok);
            if !ok {
                failed.push(format!("webhook {}: {last}", w.authority()));
            }
        }
        if !self.command.is_empty() {
            let r = run_command(&self.command, m, &body).await;
            self.count(r.is_ok());
            if let Err(e) = r {
                failed.push(format!("command {:?}: {e}", self.command.first()));
            }
        }
        failed
    }

    fn count(&self, ok: bool) {
        let c = if ok {
            &self.counts.sent
        } else {
            &self.counts.failed
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// One POST; Ok on a 2xx answer.
async fn post(w: &Webhook, headers: &[(String, String)], body: &[u8]) -> Result<(), String> {
    let tcp = tokio::net::TcpStream::connect((w.host.as_str(), w.port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let req = {
        let mut b = hyper::Request::post(w.path.as_str())
            .header(hyper::header::HOST, w.authority())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(
                hyper::header::USER_AGENT,
                concat!("npt-monitor/", env!("CARGO_PKG_VERSION")),
            );
        for (k, v) in headers {
            b = b.header(k.as_str(), v.as_str());
        }
        b.body(Full::new(Bytes::copy_from_slice(body)))
            .map_err(|e| format!("request: {e}"))?
    };
    let status = if w.tls {
        let cfg = npt_tls::client_config(false, &[b"http/1.1"]).map_err(|e| e.to_string())?;
        let name = rustls::pki_types::ServerName::try_from(w.host.clone())
            .map_err(|e| format!("TLS name {:?}: {e}", w.host))?;
        let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg))
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS: {e}"))?;
        send(TokioIo::new(tls), req).await?
    } else {
        send(TokioIo::new(tcp), req).await?
    };
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("answered {status}"))
    }
}

async fn send<IO>(io: IO, req: hyper::Request<Full<Bytes>>) -> Result<hyper::StatusCode, String>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    let driver = tokio::spawn(conn);
    let r = sender
        .send_request(req)
        .await
        .map_err(|e| format!("HTTP: {e}"));
    let out = match r {
        Ok(resp) => {
            let status = resp.status();
            // Read (and drop) a small answer so the server sees it delivered.
            let _ = tokio::time::timeout(Duration::from_secs(2), resp.into_body().collect()).await;
            Ok(status)
        }
        Err(e) => Err(e),
    };
    driver.abort();
    out
}

/// Runs the command with the JSON on stdin and the fields in `NPT_ALERT_*`; Ok when it exits 0.
async fn run_command(argv: &[String], m: &Message, body: &[u8]) -> Result<(), String> {
    use tokio::io::AsyncWriteExt;
    let (prog, args) = argv.split_first().ok_or("empty command")?;
    let mut child = tokio::process::Command::new(prog)
        .args(args)
        .env("NPT_ALERT_STATE", m.state)
        .env("NPT_ALERT_NAME", &m.alert)
        .env("NPT_ALERT_TARGET", &m.target)
        .env("NPT_ALERT_METRIC", m.metric)
        .env("NPT_ALERT_VALUE", m.value.to_string())
        .env("NPT_ALERT_THRESHOLD", m.threshold.to_string())
        .env("NPT_ALERT_TEXT", &m.text)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(body).await;
    }
    match tokio::time::timeout(COMMAND_TIMEOUT, child.wait()).await {
        Ok(Ok(s)) if s.success() => Ok(()),
        Ok(Ok(s)) => Err(format!("exited with {s}")),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("still running after {COMMAND_TIMEOUT:?}: killed")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_urls() {
        let w = Webhook::parse("https://hooks.example.com/services/T/B?x=1").unwrap();
        assert_eq!(
            (w.tls, w.host.as_str(), w.port, w.path.as_str()),
            (true, "hooks.example.com", 443, "/services/T/B?x=1")
        );
        assert_eq!(w.authority(), "hooks.example.com");
        let w = Webhook::parse("http://127.0.0.1:9000").unwrap();
        assert_eq!(
            (w.port, w.path.as_str(), w.authority().as_str()),
            (9000, "/", "127.0.0.1:9000")
        );
        let w = Webhook::parse("http://[::1]:81/h").unwrap();
        assert_eq!(
            (w.host.as_str(), w.authority().as_str()),
            ("::1", "[::1]:81")
        );
        assert!(Webhook::parse("ftp://x/").is_err());
        assert!(Webhook::parse("http://u:p@x/").is_err());
        assert!(Webhook::parse("http://x:port/").is_err());
        assert!(Webhook::parse("http:///").is_err());
    }

    #[test]
    fn a_message_says_what_changed_in_one_line() {
        let c = Change {
            target: "relay-udp".into(),
            rule: "latency-step".into(),
            metric: "p50_ms",
            firing: true,
            at_ms: 1_700_000_000_000,
            since_ms: 1_699_999_998_000,
            value: 52.1,
            threshold: 41.2,
            baseline: Some(21.2),
            rounds: 3,
        };
        let m = Message::of("hk-1", &c);
        assert_eq!(
            m.text,
            "npt monitor hk-1: latency-step firing for relay-udp: p50_ms 52.10 past 41.20 \
             (baseline 21.20), 3 rounds"
        );
        let v: serde_json::Value = serde_json::to_value(&m).unwrap();
        assert_eq!(v["state"], "firing");
        assert_eq!(v["at"], "2023-11-14T22:13:20.000Z");
    }
}
