//! How a probe is shown: its banner, the stage lines, the wait for the last replies, the text
//! report, and when a run counts as failed or refused.

use std::io::Write;

use npt_probe::{OnWaiting, PacingSpec, ProbeConfig, Proto, Waiting};
use npt_result::error::ErrorKind;
use npt_result::probe::ProbeBody;
use npt_result::workload::Progress;
use npt_result::Document;

use crate::execute::{Lines, RunCommand};
use crate::flags::segment::Segment;

impl RunCommand for ProbeConfig {
    const LINES: Lines = Lines::Report;

    fn split(&mut self, seg: &Segment) -> anyhow::Result<()> {
        seg.apply_probe(self)
    }

    fn banner(&self) -> Option<String> {
        Some(banner(self))
    }

    fn live(&self) -> Option<crate::execute::live::Spec> {
        Some(crate::execute::live::Spec {
            title: banner(self),
            rate_unit: "pps",
            duration: self.duration,
        })
    }

    fn line(p: &Progress<'_>) -> String {
        npt_report::text::stage_line(p.interval)
    }

    /// The wait for the last replies, once sending has stopped (the line tester said so too).
    fn say_to(&mut self, say: crate::execute::Say) {
        self.on_waiting = OnWaiting(Some(std::sync::Arc::new(move |w: &Waiting| {
            say(&npt_report::text::waiting_line(
                w.elapsed.as_secs_f64(),
                w.why.map_or("stopped", |r| r.name()),
                w.in_flight,
                w.up_to.as_secs_f64() * 1e3,
                w.held,
            ))
        })));
    }

    fn render(out: &mut dyn Write, doc: &Document<ProbeBody>) -> std::io::Result<()> {
        npt_report::text::write_probe(out, doc)
    }

    fn refused(body: &ProbeBody) -> u64 {
        body.summary.refused_by_server
    }

    fn failed(body: &ProbeBody) -> Option<&'static str> {
        if body.summary.packets.received == 0 {
            let kinds = &body.errors.by_kind;
            return Some(if kinds.get(ErrorKind::Refused.name()) > 0 {
                "no reply was received: the connection was refused (nothing listens there)"
            } else if kinds.get(ErrorKind::ClosedUnanswered.name()) > 0 {
                "no reply was received: the connection was accepted and closed without an \
                 answer (closed_unanswered: a relay or forwarder whose backend is down?)"
            } else {
                "no reply was received"
            });
        }
        // `--under-load` whose load moved nothing (every stream failed): the loaded phase
        // measured an idle path.
        body.under_load
            .as_ref()
            .filter(|u| u.load_errors.total_errors > 0 && u.bytes.up + u.bytes.down == 0.0)
            .map(|_| "the load moved nothing (see under_load.load_errors)")
    }
}

pub fn banner(cfg: &ProbeConfig) -> String {
    let pacing = match cfg.pacing {
        PacingSpec::Rate { pps } => format!("rate {pps} pps (open loop)"),
        PacingSpec::Interval { interval } => format!("interval {interval:?} (closed loop)"),
        PacingSpec::Relay {
            warmup,
            warmup_interval,
        } => format!("relay, warm-up {warmup} packets every {warmup_interval:?} (closed loop)"),
    };
    let stop = match (cfg.count, cfg.duration) {
        (Some(c), Some(d)) => format!("stop after {c} packets or {d:?}"),
        (Some(c), None) => format!("stop after {c} packets"),
        (None, Some(d)) => format!("stop after {d:?}"),
        (None, None) => "run until Ctrl-C".to_string(),
    };
    let load = cfg.under_load.as_ref().map_or(String::new(), |p| {
        let s = p.spec();
        format!(
            "; under load: {} {} x{} from {:?} to {:?}",
            s.target,
            s.direction,
            s.streams,
            p.idle,
            p.idle + p.loaded()
        )
    });
    format!(
        "npt probe {}://{} ({}): {pacing}, {} B {}, {} client(s), {stop}{load}",
        cfg.proto.name(),
        cfg.target,
        cfg.addr,
        cfg.size,
        match (cfg.proto, cfg.raw) {
            (Proto::Stamp, _) if cfg.stamp_key.is_some() => "STAMP authenticated",
            (Proto::Stamp, _) => "STAMP",
            (_, true) => "raw",
            _ => "framed",
        },
        cfg.clients
    )
}
