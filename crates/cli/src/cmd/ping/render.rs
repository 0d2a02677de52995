//! How a ping is shown: a line per attempt, the summary at the end (measured here or by a hop
//! agent), and when it counts as failed.

use std::io::Write;

use npt_ping::icmp::IcmpPing;
use npt_ping::session::Event;
use npt_ping::workload::Ping;
use npt_result::ping::PingBody;
use npt_result::Document;

use crate::execute::RunCommand;

/// A ping's text summary, measured here or by an agent.
pub fn render(out: &mut dyn Write, doc: &Document<PingBody>) -> std::io::Result<()> {
    npt_report::text::write_ping(out, &doc.body, doc.stopped_by, doc.duration_s)
}

/// Nothing answered: exit 1, and the summary says it (100% loss), no message.
pub fn failed(body: &PingBody) -> Option<&'static str> {
    (body.summary.received == 0).then_some("")
}

/// An attempt's line, answered from `from`.
pub fn line(ev: &Event, from: &str) -> String {
    match ev {
        Event::Reply { seq, rtt_ns, .. } => {
            format!("seq={seq} from {from} time={:.3} ms", *rtt_ns as f64 / 1e6)
        }
        Event::Error {
            seq, kind, detail, ..
        } => format!("seq={seq} {kind} ({detail})"),
        Event::Late { seq } => format!("seq={seq} late or duplicate reply from {from}"),
        Event::Refused { seq, why, .. } => format!(
            "seq={seq} refused by {from}: {}",
            npt_wire::frame::status::notice_text(*why)
        ),
    }
}

impl RunCommand for IcmpPing<'_> {
    fn render(out: &mut dyn Write, doc: &Document<PingBody>) -> std::io::Result<()> {
        render(out, doc)
    }

    fn failed(body: &PingBody) -> Option<&'static str> {
        failed(body)
    }

    fn refused(body: &PingBody) -> u64 {
        body.summary.refused_by_server
    }
}

impl RunCommand for Ping<'_> {
    fn render(out: &mut dyn Write, doc: &Document<PingBody>) -> std::io::Result<()> {
        render(out, doc)
    }

    fn failed(body: &PingBody) -> Option<&'static str> {
        failed(body)
    }

    fn refused(body: &PingBody) -> u64 {
        body.summary.refused_by_server
    }
}
