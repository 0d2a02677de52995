//! The dashboard: one page per monitor, its data read from the store's levels for the range
//! shown (rounds for the last hours, minute rollups for a day, hour rollups for a week or a
//! month) and from the live view (each target's last round, the alert states).
//!
//! The page shows one page of targets at a time, worst first, searched and filtered on the
//! server ([`view`]): ten thousand targets cost the browser what twenty do. Per target on the
//! page a smoke chart, as SmokePing draws one: the median line, coloured by the round's
//! loss, inside the p10–p90 band inside the p1–p99 band; a round or bucket that is missing (the
//! monitor was down, the round was skipped) is a gap, never a line across it. Targets of one
//! `group` are overlaid on a chart of their medians (a direct path against its relays); a trace
//! target gets its segments' medians over time. Around them: the page's targets' state now,
//! the alerts firing, the markings of marked probes each way (their last round: arrived,
//! rewritten or bleached, CE marks), and the history of alerts, gaps and reloads.
//!
//! The page is one self-contained HTML file (uPlot and the data inlined, as the HTML report
//! is): saved to disk it still draws, with the network off. Served live it fetches
//! `/api/data` again every few seconds. After drawing, each chart writes what it drew into its
//! element (`data-drawn-median`, `data-canvas`) and the page counts script errors into
//! `data-errors`: what the headless-Chromium test reads.

use npt_report::trace_marking::way_text;
use serde::Serialize;

use crate::live::Live;
use crate::rollup::{cover, Span};
use crate::round::Status;
use crate::store::{self, Level, Store, StoreError};

pub mod view;
pub use view::View;

/// The time ranges the page offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Range {
    #[default]
    H1,
    H6,
    D1,
    D7,
    D30,
}

impl Range {
    pub const ALL: [Range; 5] = [Range::H1, Range::H6, Range::D1, Range::D7, Range::D30];

    pub fn name(self) -> &'static str {
        match self {
            Range::H1 => "1h",
            Range::H6 => "6h",
            Range::D1 => "24h",
            Range::D7 => "7d",
            Range::D30 => "30d",
        }
    }

    pub fn parse(s: &str) -> Option<Range> {
        Range::ALL.into_iter().find(|r| r.name() == s)
    }

    pub fn span_ms(self) -> i64 {
        const H: i64 = 3_600_000;
        match self {
            Range::H1 => H,
            Range::H6 => 6 * H,
            Range::D1 => 24 * H,
            Range::D7 => 7 * 24 * H,
            Range::D30 => 30 * 24 * H,
        }
    }

    /// The coarsest level drawn: about a thousand points or fewer per target.
    pub fn level(self) -> Level {
        match self {
            Range::H1 | Range::H6 => Level::Round,
            Range::D1 => Level::Minute,
            Range::D7 | Range::D30 => Level::Hour,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Data {
    pub vantage: String,
    pub now_ms: i64,
    pub range: &'static str,
    pub ranges: Vec<&'static str>,
    pub from_ms: i64,
    pub level: &'static str,
    /// The page's targets ([`view`]), each with its chart.
    pub targets: Vec<TargetData>,
    pub groups: Vec<Group>,
    pub alerts: Vec<AlertData>,
    pub events: Vec<EventData>,
    /// Every target the monitor has, those the search and group let through, the page shown
    /// of how many, and targets per page.
    pub total: usize,
    pub matched: usize,
    pub page: usize,
    pub pages: usize,
    pub per: usize,
    /// The query the page answers (`q`, `group`, `sort`) and what the controls offer.
    pub q: String,
    pub group: Option<String>,
    pub sort: &'static str,
    pub sorts: Vec<&'static str>,
    pub all_groups: Vec<String>,
    /// Targets in the down state now (last round unreachable), among all.
    pub down: usize,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct TargetData {
    pub name: String,
    pub kind: &'static str,
    pub url: String,
    pub group: Option<String>,
    pub every_s: f64,
    pub active: bool,
    /// The last round: status, when it started, its figures.
    pub status: Option<&'static str>,
    pub detail: Option<String>,
    pub last_ms: Option<i64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Its usual median (what worst-first ranks the p99 against).
    pub base_p50_ms: Option<f64>,
    pub loss_pct: Option<f64>,
    pub rpm: Option<f64>,
    pub goodput_bps: Option<f64>,
    /// A marked probe's last round, each way in words (`DSCP 46 (EF) bleached to 0, ECN
    /// ECT(0) arrived (CE 0 of 200)`), as the HTML report and a trace's table say it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marking_up: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marking_down: Option<String>,
    pub firing: Vec<String>,
    pub charted: bool,
    /// The chart's points: x in Unix seconds; `None` is a gap.
    pub t: Vec<f64>,
    pub p1: Vec<Option<f64>>,
    pub p10: Vec<Option<f64>>,
    pub p50: Vec<Option<f64>>,
    pub p90: Vec<Option<f64>>,
    pub p99: Vec<Option<f64>>,
    pub loss: Vec<Option<f64>>,
    /// Trace: each segment's p50 at each point.
    pub segments: Vec<Vec<Option<f64>>>,
    /// Points of the median that are drawn (not gaps).
    pub median_points: usize,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Group {
    pub name: String,
    pub targets: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct AlertData {
    pub target: String,
    pub rule: String,
    pub firing: bool,
    pub since_ms: i64,
    pub value: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct EventData {
    pub ts_ms: i64,
    pub until_ms: Option<i64>,
    pub kind: String,
    pub target: Option<String>,
    pub rule: Option<String>,
    pub detail: String,
}

/// One point of a chart before gaps are put in: its time, spacing and figures.
struct Point {
    t_ms: i64,
    step_ms: i64,
    measured: bool,
    f: crate::kinds::Figures,
}

fn points(
    st: &dyn Store,
    target: i64,
    every_ms: i64,
    spans: &[Span],
) -> Result<Vec<Point>, StoreError> {
    let mut out = Vec::new();
    for s in spans {
        match s.level {
            Level::Round => {
                for r in st.rounds(target, s.from, s.to, false)? {
                    if matches!(r.status, Status::Skipped | Status::Budget) {
                        continue;
                    }
                    out.push(Point {
                        t_ms: r.start_ms,
                        step_ms: every_ms,
                        measured: r.status.measured() && r.figures.count > 0,
                        f: if r.status.measured() {
                            r.figures
                        } else {
                            // Could not run or hung: all lost.
                            crate::kinds::Figures {
                                sent: 1,
                                lost: 1,
                                ..Default::default()
                            }
                        },
                    });
                }
            }
            l => {
                for r in st.rollups(target, l, s.from, s.to, false)? {
                    out.push(Point {
                        t_ms: r.start_ms,
                        step_ms: l.ms(),
                        measured: r.figures.count > 0,
                        f: r.figures,
                    });
                }
            }
        }
    }
    Ok(out)
}

fn fill(td: &mut TargetData, pts: &[Point]) {
    let mut prev: Option<&Point> = None;
    for p in pts {
        if let Some(q) = prev {
            let step = q.step_ms.max(p.step_ms).max(1);
            if p.t_ms - q.t_ms > step * 5 / 2 {
                // A gap: one empty point just after the last one breaks every line.
                td.t.push((q.t_ms + step) as f64 / 1e3);
                for v in [
                    &mut td.p1,
                    &mut td.p10,
                    &mut td.p50,
                    &mut td.p90,
                    &mut td.p99,
                    &mut td.loss,
                ] {
                    v.push(None);
                }
                for s in &mut td.segments {
                    s.push(None);
                }
            }
        }
        prev = Some(p);
        td.t.push(p.t_ms as f64 / 1e3);
        let v = |x: f64| p.measured.then_some(x);
        td.p1.push(v(p.f.p1_ms));
        td.p10.push(v(p.f.p10_ms));
        td.p50.push(v(p.f.p50_ms));
        td.p90.push(v(p.f.p90_ms));
        td.p99.push(v(p.f.p99_ms));
        td.loss.push(p.f.loss_pct());
        td.median_points += usize::from(p.measured);
        let n = p.f.segments_ms.len().max(td.segments.len());
        while td.segments.len() < n {
            // A segment seen first now: empty before.
            td.segments.push(vec![None; td.t.len() - 1]);
        }
        for (i, s) in td.segments.iter_mut().enumerate() {
            s.push(p.f.segments_ms.get(i).copied().flatten());
        }
    }
}

/// The page's data for `range` ending at `now_ms`: the page of targets `v` asks for, each
/// with its chart; the other targets cost a filter and a sort of what the live view holds.
pub fn data(
    st: &mut dyn Store,
    live: &Live,
    range: Range,
    v: &View,
    now_ms: i64,
) -> Result<Data, StoreError> {
    let from = now_ms - range.span_ms();
    let top = range.level();
    let marks: Vec<(Level, Option<i64>)> = Level::ROLLUPS
        .iter()
        .map(|l| {
            Ok((
                *l,
                if *l <= top {
                    st.mark(&store::rolled(*l))?
                } else {
                    None
                },
            ))
        })
        .collect::<Result<_, StoreError>>()?;
    let rolled = |l: Level| marks.iter().find(|(x, _)| *x == l).and_then(|(_, m)| *m);
    let spans = cover(from, now_ms, &rolled);
    let alerts = live.alerts();
    let all = live.targets();
    let down = all
        .iter()
        .filter(|t| t.active && t.last.as_ref().is_some_and(|l| l.status.unreachable()))
        .count();
    let sel = view::select(all, &alerts, v);
    let mut out = Vec::with_capacity(sel.rows.len());
    for (t, firing) in &sel.rows {
        let last = t.last.as_ref();
        let f = last.map(|l| &l.figures);
        let mut td = TargetData {
            name: t.name.clone(),
            kind: t.kind.name(),
            url: t.url.clone(),
            group: t.group.clone(),
            every_s: t.every.as_secs_f64(),
            active: t.active,
            status: last.map(|l| l.status.name()),
            detail: last.and_then(|l| l.detail.clone()),
            last_ms: last.map(|l| l.start_ms),
            p50_ms: f.filter(|f| f.count > 0).map(|f| f.p50_ms),
            p99_ms: f.filter(|f| f.count > 0).map(|f| f.p99_ms),
            base_p50_ms: t.base_p50_ms,
            loss_pct: f.and_then(|f| f.loss_pct()),
            rpm: f.and_then(|f| f.rpm),
            goodput_bps: f.and_then(|f| f.goodput_bps),
            marking_up: f
                .and_then(|f| f.marking_up.as_ref())
                .map(|w| way_text(Some(w))),
            marking_down: f
                .and_then(|f| f.marking_down.as_ref())
                .map(|w| way_text(Some(w))),
            firing: firing.clone(),
            ..TargetData::default()
        };
        // The page's targets' ids only (an indexed lookup each). A target the store has no
        // row of yet (its first round not written) has nothing to draw: a reader's connection
        // cannot make one, and says so with an error that means exactly that here.
        if let Ok(id) = st.target_id(&t.name, t.kind) {
            let every = i64::try_from(t.every.as_millis()).unwrap_or(i64::MAX);
            fill(&mut td, &points(st, id, every, &spans)?);
        }
        td.charted = true;
        out.push(td);
    }
    let mut groups: Vec<Group> = Vec::new();
    for t in out.iter().filter(|t| t.charted) {
        if let Some(g) = &t.group {
            match groups.iter_mut().find(|x| &x.name == g) {
                Some(x) => x.targets.push(t.name.clone()),
                None => groups.push(Group {
                    name: g.clone(),
                    targets: vec![t.name.clone()],
                }),
            }
        }
    }
    // An overlay needs two paths, and something drawn (a group of dead paths has no median).
    groups.retain(|g| {
        g.targets.len() > 1
            && out
                .iter()
                .any(|t| t.median_points > 0 && g.targets.contains(&t.name))
    });
    let events = st
        .events(from, i64::MAX, 100)?
        .into_iter()
        .map(|e| EventData {
            ts_ms: e.ts_ms,
            until_ms: e.until_ms,
            kind: e.kind,
            target: e.target,
            rule: e.rule,
            detail: e.detail,
        })
        .collect();
    Ok(Data {
        vantage: live.vantage.clone(),
        now_ms,
        range: range.name(),
        ranges: Range::ALL.iter().map(|r| r.name()).collect(),
        from_ms: from,
        level: top.name(),
        targets: out,
        groups,
        alerts: alerts
            .into_iter()
            .map(|a| AlertData {
                target: a.target,
                rule: a.rule,
                firing: a.firing,
                since_ms: a.since_ms,
                value: a.value,
            })
            .collect(),
        events,
        total: sel.total,
        matched: sel.matched,
        page: sel.page,
        pages: sel.pages,
        per: v.per,
        q: v.q.clone(),
        group: v.group.clone(),
        sort: v.sort.name(),
        sorts: view::Sort::ALL.iter().map(|s| s.name()).collect(),
        all_groups: sel.groups,
        down,
    })
}

const PAGE_JS: &str = include_str!("dashboard.js");
const PAGE_CSS: &str = include_str!("dashboard.css");

/// The data as JSON that is safe inside `<script type="application/json">` (as the HTML
/// report's: `<`, `>` and `&` escaped inside strings, where `\u` escapes mean the same).
fn json_for_script(d: &Data) -> String {
    serde_json::to_string(d)
        .unwrap_or_else(|_| "{}".into())
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The whole page: uPlot, the data and the script inlined.
pub fn page(d: &Data) -> Vec<u8> {
    let esc = npt_report::html::esc;
    let mut h = String::with_capacity(npt_report::html::UPLOT_JS.len() + 64 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str(&format!(
        "<title>npt monitor {}</title>\n<style>\n",
        esc(&d.vantage)
    ));
    h.push_str(npt_report::html::UPLOT_CSS);
    h.push('\n');
    h.push_str(PAGE_CSS);
    h.push_str("</style>\n</head>\n<body>\n<main id=\"npt-main\">\n");
    h.push_str(&format!("<h1>npt monitor {}</h1>\n", esc(&d.vantage)));
    // Without script: the state table, so the page still says something.
    h.push_str(
        "<noscript><table><tr><th>target</th><th>status</th><th>p50 ms</th><th>loss %</th></tr>",
    );
    for t in &d.targets {
        h.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.name),
            t.status.unwrap_or("-"),
            t.p50_ms.map_or("-".into(), |v| format!("{v:.2}")),
            t.loss_pct.map_or("-".into(), |v| format!("{v:.2}")),
        ));
    }
    h.push_str("</table></noscript>\n</main>\n");
    h.push_str("<script type=\"application/json\" id=\"npt-data\">");
    h.push_str(&json_for_script(d));
    h.push_str("</script>\n<script>\n");
    h.push_str(npt_report::html::UPLOT_JS);
    h.push_str("\n</script>\n<script>\n");
    h.push_str(PAGE_JS);
    h.push_str("</script>\n</body>\n</html>\n");
    h.into_bytes()
}

#[cfg(test)]
mod tests;
