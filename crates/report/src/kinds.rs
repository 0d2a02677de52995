//! Each kind's [`Render`]: what its report shows that the defaults (which read only what every
//! kind answers) do not — its command's own text, and what it adds to the default page and
//! CSV: a probe its one-way split, the phases of `--under-load` and its loss; a bulk its
//! goodput. A trace has a layout of its own in every format ([`crate::trace`]). The one place
//! a renderer names a kind: a new kind adds its `impl Render` here (an empty one to take
//! every default).

use std::io::{self, Write};

use npt_result::any::AnyResult;
use npt_result::bulk::BulkBody;
use npt_result::http::HttpBody;
use npt_result::ping::PingBody;
use npt_result::probe::ProbeBody;
use npt_result::run::RunBody;
use npt_result::trace::TraceBody;
use npt_result::Document;

use crate::html::{Band, Chart, Page};
use crate::page::{Column, Timeline};
use crate::render::{Render, RenderError};
use crate::text::{self, bits};

/// The envelope of `doc` with a kind's body: what the renderers of one kind take.
fn with<B: Clone>(doc: &AnyResult, body: &B) -> Document<B> {
    doc.clone().map_body(|_| body.clone())
}

impl Render for ProbeBody {
    fn text(&self, w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
        text::write_probe(w, &with(doc, self))
    }

    /// With what the server said it saw (or refused): its refusals and each direction's loss.
    fn csv_columns(&self) -> Vec<Column> {
        let s = &self.summary;
        if s.directions.is_none() && s.refused_by_server == 0 {
            return Vec::new();
        }
        let d = s.directions.as_ref();
        let n = |v: Option<u64>| v.map(|x| x.to_string());
        vec![
            Column {
                name: "refused",
                cell: |iv| iv.refused.map(|x| x.to_string()),
                total: Some(s.refused_by_server.to_string()),
            },
            Column {
                name: "lost_up",
                cell: |iv| iv.lost_up.map(|x| x.to_string()),
                total: n(d.and_then(|d| d.up.lost)),
            },
            Column {
                name: "lost_down",
                cell: |iv| iv.lost_down.map(|x| x.to_string()),
                total: n(d.and_then(|d| d.down.lost)),
            },
        ]
    }

    /// Its refusals and directions, its marking each way (when its far end was asked), then
    /// the phases of `--under-load`.
    fn summary_rows(&self) -> Vec<Vec<String>> {
        let mut rows = crate::directions::summary_rows(self);
        if let Some(m) = &self.summary.marking {
            for (name, w) in [("marking up", &m.up), ("marking down", &m.down)] {
                if let Some(w) = w {
                    rows.push(vec![name.into(), crate::trace_marking::way_text(Some(w))]);
                }
            }
        }
        let Some(u) = &self.under_load else {
            return rows;
        };
        for p in &u.phases {
            rows.push(vec![
                format!(
                    "{} {:.1}-{:.1} s: p50 / p99 (ms)",
                    p.name, p.start_s, p.end_s
                ),
                format!("{:.3} / {:.3}", p.rtt_ms.p50, p.rtt_ms.p99),
            ]);
        }
        rows.push(vec![
            "rpm under load / idle".into(),
            format!(
                "{} / {}",
                u.rpm.map_or("-".into(), |r| format!("{r:.0}")),
                u.idle_rpm.map_or("-".into(), |r| format!("{r:.0}"))
            ),
        ]);
        rows.push(vec![
            format!(
                "load {} {} x{}: goodput up / down",
                u.load.target, u.load.direction, u.load.streams
            ),
            format!("{} / {}", bits(u.goodput_bps.up), bits(u.goodput_bps.down)),
        ]);
        rows
    }

    /// The phases of `--under-load`.
    fn bands(&self) -> Vec<Band> {
        self.under_load
            .iter()
            .flat_map(|u| &u.phases)
            .map(|p| Band {
                label: p.name.clone(),
                from: p.start_s,
                to: p.end_s,
            })
            .collect()
    }

    fn rate_unit(&self) -> Option<&'static str> {
        Some("packets/s")
    }

    fn draws_loss(&self) -> bool {
        true
    }

    /// Loss up and down, and one-way delay up against down.
    fn charts(&self, bands: &[Band]) -> Vec<Chart> {
        crate::directions::charts(self, bands)
    }
}

impl Render for RunBody {
    fn text(&self, w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
        text::write_run(&mut &mut *w, &with(doc, self))
    }
}

impl Render for HttpBody {
    fn text(&self, w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
        text::write_http(w, &with(doc, self))
    }
}

impl Render for PingBody {
    fn text(&self, w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
        text::write_ping(w, self, doc.stopped_by, doc.duration_s)
    }
}

/// A lifetime's layout: its text, and a page of its bracket and flows ([`crate::lifetime`]).
impl Render for npt_result::lifetime::LifetimeBody {
    fn text(&self, w: &mut dyn Write, _doc: &AnyResult) -> io::Result<()> {
        crate::text::write_lifetime(w, self)
    }

    fn html(&self, doc: &AnyResult, path: &str) -> Page {
        crate::lifetime::html_page(
            self,
            format!("npt lifetime: {path}"),
            format!("{} → {}", doc.started_at, doc.ended_at),
        )
    }
}

impl Render for npt_result::mtu::MtuBody {
    fn text(&self, w: &mut dyn Write, _doc: &AnyResult) -> io::Result<()> {
        crate::text::write_mtu(w, self)
    }

    /// Each direction's largest datagram and verdict (no series: one answer at the end).
    fn csv_columns(&self) -> Vec<Column> {
        let s = &self.summary;
        let n = |v: Option<u32>| v.map(|x| x.to_string());
        vec![
            Column {
                name: "up_largest_datagram",
                cell: |_| None,
                total: n(s.up.largest_datagram),
            },
            Column {
                name: "up_verdict",
                cell: |_| None,
                total: Some(s.up.verdict.clone()),
            },
            Column {
                name: "down_largest_datagram",
                cell: |_| None,
                total: n(s.down.largest_datagram),
            },
            Column {
                name: "down_verdict",
                cell: |_| None,
                total: Some(s.down.verdict.clone()),
            },
        ]
    }

    fn summary_rows(&self) -> Vec<Vec<String>> {
        let s = &self.summary;
        let row = |name: &str, d: &npt_result::mtu::MtuDirection| {
            let size = |v: Option<u32>| v.map_or("-".to_string(), |x| x.to_string());
            vec![
                format!("{name}: largest datagram (IP packet), verdict"),
                format!(
                    "{} ({}), {}",
                    size(d.largest_datagram),
                    size(d.largest_packet),
                    d.verdict
                ),
            ]
        };
        let mut rows = vec![row("up", &s.up), row("down", &s.down)];
        // A monitor range: how many rounds, and how many changed from the round before.
        if let Some(r) = &s.rounds {
            rows.push(vec![
                "rounds (changed from the round before)".to_string(),
                format!("{} ({})", r.rounds, r.changed),
            ]);
        }
        rows
    }

    fn rate_unit(&self) -> Option<&'static str> {
        None
    }
}

impl Render for npt_result::setup::SetupBody {
    fn text(&self, w: &mut dyn Write, _doc: &AnyResult) -> io::Result<()> {
        crate::text::write_setup(w, self)
    }
}

impl Render for BulkBody {
    fn text(&self, w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
        text::write_bulk(w, &with(doc, self))
    }

    /// The goodput each way (bit/s), per interval and over the run.
    fn csv_columns(&self) -> Vec<Column> {
        let g = &self.summary.goodput_bps;
        vec![
            Column {
                name: "goodput_up_bps",
                cell: |iv| iv.bandwidth_bps.map(|d| format!("{:.0}", d.up)),
                total: Some(format!("{:.0}", g.up)),
            },
            Column {
                name: "goodput_down_bps",
                cell: |iv| iv.bandwidth_bps.map(|d| format!("{:.0}", d.down)),
                total: Some(format!("{:.0}", g.down)),
            },
        ]
    }

    fn summary_rows(&self) -> Vec<Vec<String>> {
        let s = &self.summary;
        vec![vec![
            format!(
                "{} {} x{}: goodput up / down",
                s.protocol, s.direction, s.streams
            ),
            format!("{} / {}", bits(s.goodput_bps.up), bits(s.goodput_bps.down)),
        ]]
    }

    /// A UDP bulk's datagrams; a TCP bulk's rate is its goodput, charted on its own.
    fn rate_unit(&self) -> Option<&'static str> {
        self.summary.udp.is_some().then_some("datagrams/s")
    }

    /// Goodput per interval, each way.
    fn series_charts(&self, tl: &Timeline, bands: &[Band]) -> Vec<Chart> {
        let mbps = |v: f64| v / 1e6;
        vec![Chart {
            id: "goodput".into(),
            title: "Goodput per interval (Mbit/s)".into(),
            x_label: "time (s)".into(),
            y_label: "Mbit/s".into(),
            x: tl.x(),
            series: vec![
                tl.series("up", &|p| {
                    p.bandwidth_bps.filter(|_| tl.whole(p)).map(|d| mbps(d.up))
                }),
                tl.series("down", &|p| {
                    p.bandwidth_bps
                        .filter(|_| tl.whole(p))
                        .map(|d| mbps(d.down))
                }),
            ],
            bands: bands.to_vec(),
            ..Chart::default()
        }]
    }
}

/// A trace's layout: its waterfall, in every format.
impl Render for TraceBody {
    fn text(&self, w: &mut dyn Write, doc: &AnyResult) -> io::Result<()> {
        crate::trace::write_text(w, self, doc.stopped_by, doc.duration_s)
    }

    fn markdown(
        &self,
        w: &mut dyn Write,
        _doc: &AnyResult,
        _path: &str,
    ) -> Result<(), RenderError> {
        Ok(crate::trace::write_markdown(w, self)?)
    }

    fn html(&self, doc: &AnyResult, path: &str) -> Page {
        crate::trace::html_page(
            self,
            format!("npt trace: {path}"),
            format!("{} → {}", doc.started_at, doc.ended_at),
        )
    }
}
