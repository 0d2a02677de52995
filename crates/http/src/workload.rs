//! `npt http` as a [`Workload`]: a [`Config`] runs through [`crate::client::run`], and records
//! itself in the result's `config` (the URL and `-H` lines as given; the client threads the run
//! chose are added by the run, in [`Finished::decided`]).

use std::sync::Arc;
use std::time::Duration;

use npt_result::http::HttpBody;
use npt_result::workload::{Finished, Length, Progress, Stop, Workload};

use crate::{Config, Error};

/// How long an http run takes at most: a cold start's wait for the service to be ready (up
/// to `ready_timeout`), the duration, and the last request's timeout.
pub fn length(ready_timeout: Option<Duration>, duration: Duration, timeout: Duration) -> Length {
    let cold = ready_timeout.unwrap_or(Duration::ZERO);
    Length::planned(cold.saturating_add(duration).saturating_add(timeout))
}

impl Workload for Config {
    type Body = HttpBody;
    type Error = Error;

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "url": self.target.url,
            "connections": self.connections,
            "duration_s": self.duration.as_secs_f64(),
            "rate": self.rate,
            "new_conn": self.new_conn,
            "http2": self.http2,
            "http2_fallback": self.http2_fallback,
            "streams": self.streams,
            "hosts": self.hosts,
            // `--host NAME=N` / `NAME=R/s`, in the order of `hosts` (empty: shared connections).
            "host_loads": self.host_loads.iter().map(|l| match *l {
                crate::client::HostLoad::Connections(c) => serde_json::json!({"connections": c}),
                crate::client::HostLoad::Rate(r) => serde_json::json!({"rate": r}),
            }).collect::<Vec<_>>(),
            "headers": self.header_lines,
            "method": self.method.as_str(),
            "body_bytes": self.body.len(),
            "insecure": self.insecure,
            "timeout_s": self.timeout.as_secs_f64(),
            "cold_start": self.cold_start.as_ref().map(|cs| serde_json::json!({
                "command": cs.command,
                "ready_timeout_s": cs.ready_timeout.as_secs_f64(),
                "port": cs.service.as_ref().map(|(h, p)| format!("{h}:{p}")),
            })),
        })
    }

    fn length(&self) -> Option<Length> {
        let ready = self.cold_start.as_ref().map(|c| c.ready_timeout);
        Some(length(ready, self.duration, self.timeout))
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        on_interval: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<HttpBody>, Error> {
        crate::client::run(self, stop, on_interval)
    }
}
