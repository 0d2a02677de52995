//! Self-contained HTML reports: one file with its tables, its charts' data as JSON, and the
//! vendored uPlot library inlined, so a result can be read offline, on a phone, or attached to
//! a ticket without anything else.
//!
//! Callers (`report`, `compare`) build a [`Page`] of [`Table`]s and [`Chart`]s from result
//! documents; this module only lays them out. After uPlot draws a chart, the page writes the
//! number of points it drew into the chart container's `data-drawn-points` attribute, which is
//! what the headless-Chromium test checks.

use std::io::{self, Write};

use serde::Serialize;

/// The vendored uPlot library and its stylesheet, for every page npt serves or writes (the
/// HTML reports, the monitor's dashboard): inlined, so a page needs no network.
pub const UPLOT_JS: &str = include_str!("vendor/uPlot.iife.min.js");
pub const UPLOT_CSS: &str = include_str!("vendor/uPlot.min.css");

/// One HTML report.
#[derive(Clone, Debug, Default)]
pub struct Page {
    pub title: String,
    pub subtitle: String,
    pub tables: Vec<Table>,
    pub charts: Vec<Chart>,
}

/// A table of already formatted cells. Every cell is HTML-escaped on output.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// One line chart: a shared ascending x axis and one or more series over it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Chart {
    /// A caller's name for the chart (kept in `data-chart`; need not be unique or safe).
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Logarithmic x axis; points with x <= 0 cannot be drawn on it and are left out.
    pub x_log: bool,
    /// Logarithmic y axis; values <= 0 cannot be drawn on it and become gaps.
    pub y_log: bool,
    /// x holds percentiles (0 to below 100), drawn on a 1/(1 − p) axis as HdrHistogram plots
    /// them, so p90, p99, p99.9 and p99.99 are equally far apart instead of squeezed into the
    /// last pixels of a linear 0–100 axis; p100 cannot be placed on it and is left out.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub x_percentile: bool,
    /// Draw each line across its gaps: for charts whose series have their points at different
    /// x (the compare page's scenarios), where a `None` means "no point here", not "missing".
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub span_gaps: bool,
    /// x values, ascending.
    pub x: Vec<f64>,
    pub series: Vec<Series>,
    /// Spans of x shaded behind the lines, each labelled (a loaded probe's idle, loaded and
    /// recovery phases); also listed in the chart container's `data-bands`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bands: Vec<Band>,
}

/// A shaded span of a chart's x axis, from `from` to `to`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Band {
    pub label: String,
    pub from: f64,
    pub to: f64,
}

/// One line on a chart; `values.len() == x.len()`, `None` is a gap.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Series {
    pub label: String,
    pub values: Vec<Option<f64>>,
}

impl Chart {
    /// The number of points a browser draws for this chart: every finite value whose x (and, on
    /// log axes, whose value) can be placed on the axes. The page reports the same count in
    /// `data-drawn-points`.
    pub fn drawable_points(&self) -> usize {
        self.series
            .iter()
            .map(|s| {
                s.values
                    .iter()
                    .zip(&self.x)
                    .filter(|(v, x)| {
                        let x_ok = x.is_finite()
                            && (!self.x_log || **x > 0.0)
                            && (!self.x_percentile || (0.0..100.0).contains(*x));
                        let v_ok =
                            matches!(v, Some(v) if v.is_finite() && (!self.y_log || *v > 0.0));
                        x_ok && v_ok
                    })
                    .count()
            })
            .sum()
    }
}

/// Writes `page` as one HTML document.
pub fn render(page: &Page, out: &mut dyn Write) -> io::Result<()> {
    let mut h = String::with_capacity(UPLOT_JS.len() + 16 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str(&format!("<title>{}</title>\n", esc(&page.title)));
    h.push_str("<style>\n");
    h.push_str(UPLOT_CSS);
    h.push('\n');
    h.push_str(PAGE_CSS);
    h.push_str("</style>\n</head>\n<body>\n<main>\n");
    h.push_str(&format!("<h1>{}</h1>\n", esc(&page.title)));
    if !page.subtitle.is_empty() {
        h.push_str(&format!("<p class=\"sub\">{}</p>\n", esc(&page.subtitle)));
    }
    for (i, t) in page.tables.iter().enumerate() {
        table(&mut h, i, t);
    }
    for (i, c) in page.charts.iter().enumerate() {
        h.push_str(&format!(
            "<section class=\"chart\"><h2>{}</h2><div class=\"plot\" id=\"npt-chart-{i}\" \
             data-chart=\"{}\" data-expected-points=\"{}\"{}></div></section>\n",
            esc(&c.title),
            esc(&c.id),
            c.drawable_points(),
            bands_attr(&c.bands)
        ));
    }
    h.push_str("<noscript><p>The charts need JavaScript; the tables above hold the figures.</p></noscript>\n");
    h.push_str("</main>\n<script type=\"application/json\" id=\"npt-data\">");
    h.push_str(&json_for_script(&page.charts));
    h.push_str("</script>\n<script>\n");
    h.push_str(UPLOT_JS);
    h.push_str("\n</script>\n<script>\n");
    h.push_str(PAGE_JS);
    h.push_str("</script>\n</body>\n</html>\n");
    out.write_all(h.as_bytes())
}

/// Renders `page` into a string (convenience for callers that write atomically).
// NO-PANIC: `render` fails only when its writer does, and a `Vec` write does not fail.
#[allow(clippy::expect_used)]
pub fn render_to_vec(page: &Page) -> Vec<u8> {
    let mut v = Vec::new();
    render(page, &mut v).expect("writing into a Vec cannot fail");
    v
}

fn table(h: &mut String, i: usize, t: &Table) {
    h.push_str(&format!("<div class=\"tbl\"><table id=\"npt-table-{i}\">"));
    if !t.caption.is_empty() {
        h.push_str(&format!("<caption>{}</caption>", esc(&t.caption)));
    }
    if !t.header.is_empty() {
        h.push_str("<thead><tr>");
        for c in &t.header {
            h.push_str(&format!("<th>{}</th>", esc(c)));
        }
        h.push_str("</tr></thead>");
    }
    h.push_str("<tbody>\n");
    for r in &t.rows {
        h.push_str("<tr>");
        for c in r {
            let class = if looks_numeric(c) { " class=\"n\"" } else { "" };
            h.push_str(&format!("<td{class}>{}</td>", esc(c)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div>\n");
}

/// Right-align cells that hold a figure ("12.5", "-3 %", "0.2 ms").
fn looks_numeric(s: &str) -> bool {
    let first = s.trim().split(' ').next().unwrap_or("");
    !first.is_empty() && first.trim_start_matches(['+', '-']).parse::<f64>().is_ok()
}

/// ` data-bands="idle 0-5, loaded 5-15, …"` for a chart with shaded spans, else nothing.
fn bands_attr(bands: &[Band]) -> String {
    if bands.is_empty() {
        return String::new();
    }
    let list: Vec<String> = bands
        .iter()
        .map(|b| format!("{} {}-{}", b.label, b.from, b.to))
        .collect();
    format!(" data-bands=\"{}\"", esc(&list.join(", ")))
}

/// HTML-escapes text for element content and double-quoted attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The charts as JSON that is safe inside `<script type="application/json">`: `<`, `>` and
/// `&` only occur inside JSON strings, where their `\u` escapes mean the same, so no label can
/// close the script element or open a comment. Non-finite numbers become `null` (gaps).
fn json_for_script(charts: &[Chart]) -> String {
    #[derive(Serialize)]
    struct Data<'a> {
        charts: &'a [Chart],
    }
    // NO-PANIC: plain structs of numbers and strings, no map with non-string keys: serde_json
    // cannot fail on them.
    #[allow(clippy::expect_used)]
    let json = serde_json::to_string(&Data { charts }).expect("chart data always serializes");
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

const PAGE_CSS: &str = r##"
:root { color-scheme: light; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24; background: #fff; }
main { max-width: 1100px; margin: 0 auto; padding: 12px 14px 40px; }
h1 { font-size: 1.4em; margin: .4em 0 .2em; }
h2 { font-size: 1.05em; margin: 1.4em 0 .4em; }
.sub { color: #57606a; margin: 0 0 1em; word-break: break-word; }
.tbl { overflow-x: auto; margin: 1em 0; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: .92em; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
th, td { border-bottom: 1px solid #d0d7de; padding: 4px 10px; white-space: nowrap; text-align: left; }
th { background: #f6f8fa; position: sticky; top: 0; }
td.n { text-align: right; }
tbody tr:nth-child(even) { background: #fafbfc; }
.plot { width: 100%; min-height: 120px; overflow: hidden; }
.uplot .u-title { display: none; }
.uplot .u-legend { font-size: .85em; }
"##;

/// Draws every chart from the JSON block, keeps them as wide as their container, and records
/// what was drawn (`data-drawn-points`, and `data-charts-drawn` on `<body>`).
const PAGE_JS: &str = r##"(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("npt-data").textContent);
  var palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  var plots = [];
  function height(w) { return Math.max(180, Math.min(340, Math.round(w * 0.55))); }
  data.charts.forEach(function (c, i) {
    var el = document.getElementById("npt-chart-" + i);
    if (!el) { return; }
    // A percentile axis is drawn as 1/(1 - p) on a log scale (p0 at 1, p90 at 10, p99 at
    // 100 ...) and labelled back in percentiles.
    var pct = !!c.x_percentile;
    var toAxis = function (p) { return 1 / (1 - p / 100); };
    var fromAxis = function (v) { return +(100 * (1 - 1 / v)).toFixed(4); };
    var keep = [];
    for (var k = 0; k < c.x.length; k++) {
      var x = c.x[k];
      if (x !== null && isFinite(x) && (!c.x_log || x > 0) && (!pct || (x >= 0 && x < 100))) { keep.push(k); }
    }
    var cols = [keep.map(function (k) { return pct ? toAxis(c.x[k]) : c.x[k]; })];
    c.series.forEach(function (s) {
      cols.push(keep.map(function (k) {
        var v = s.values[k];
        return (v === null || v === undefined || !isFinite(v) || (c.y_log && v <= 0)) ? null : v;
      }));
    });
    var w = el.clientWidth || 600;
    var opts = {
      title: c.title,
      width: w,
      height: height(w),
      scales: { x: { time: false, distr: (c.x_log || pct) ? 3 : 1 }, y: { distr: c.y_log ? 3 : 1 } },
      axes: [pct ? {
        label: c.x_label,
        splits: function (u, i, lo, hi) {
          return [1, 10, 100, 1000, 10000, 100000].filter(function (v) { return v >= lo && v <= hi; });
        },
        values: function (u, splits) { return splits.map(function (v) { return v >= 1 ? fromAxis(v) + "%" : ""; }); }
      } : { label: c.x_label }, { label: c.y_label }],
      legend: { show: true, live: true },
      series: [pct ? {
        label: c.x_label,
        value: function (u, v) { return v === null ? "" : "p" + fromAxis(v); }
      } : { label: c.x_label }].concat(c.series.map(function (s, j) {
        return { label: s.label, stroke: palette[j % palette.length], width: 1.5, spanGaps: !!c.span_gaps,
                 points: { show: cols[0].length <= 40 } };
      })),
      hooks: {
        drawClear: [function (u) {
          // Shaded phases behind the lines: alternating greys with their label at the top.
          (c.bands || []).forEach(function (b, j) {
            var left = u.bbox.left, right = u.bbox.left + u.bbox.width;
            var x0 = Math.max(left, u.valToPos(b.from, "x", true));
            var x1 = Math.min(right, u.valToPos(b.to, "x", true));
            var top = u.bbox.top, h = u.bbox.height;
            if (!(x1 > x0)) { return; }
            u.ctx.save();
            u.ctx.fillStyle = j % 2 ? "rgba(214,39,40,0.10)" : "rgba(127,127,127,0.08)";
            u.ctx.fillRect(x0, top, Math.max(1, x1 - x0), h);
            u.ctx.fillStyle = "#57606a";
            u.ctx.font = Math.round(11 * (window.devicePixelRatio || 1)) + "px system-ui, sans-serif";
            u.ctx.fillText(b.label, x0 + 4, top + 14 * (window.devicePixelRatio || 1));
            u.ctx.restore();
          });
        }],
        draw: [function (u) {
          var n = 0;
          for (var j = 1; j < u.data.length; j++) {
            for (var k = 0; k < u.data[j].length; k++) { if (u.data[j][k] !== null) { n++; } }
          }
          var cv = u.root.querySelector("canvas");
          el.setAttribute("data-drawn-points", String(n));
          if (cv) { el.setAttribute("data-canvas", cv.width + "x" + cv.height); }
        }]
      }
    };
    plots.push({ u: new uPlot(opts, cols, el), el: el });
  });
  document.body.setAttribute("data-charts-drawn", String(plots.length));
  function fit() {
    plots.forEach(function (p) {
      var w = p.el.clientWidth || 600;
      if (Math.abs(w - p.u.width) > 1) { p.u.setSize({ width: w, height: height(w) }); }
    });
  }
  if (window.ResizeObserver) {
    var ro = new ResizeObserver(fit);
    plots.forEach(function (p) { ro.observe(p.el); });
  } else {
    window.addEventListener("resize", fit);
  }
})();
"##;

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Page {
        Page {
            title: "ping <b>&</b>".into(),
            subtitle: "tcp://127.0.0.1:7777 \"q\"".into(),
            tables: vec![Table {
                caption: "summary".into(),
                header: vec!["scenario".into(), "p50 ms".into()],
                rows: vec![
                    vec!["direct".into(), "0.213".into()],
                    vec!["<script>alert(1)</script>".into(), "1.5".into()],
                ],
            }],
            charts: vec![
                Chart {
                    id: "lat".into(),
                    title: "latency".into(),
                    x_label: "s".into(),
                    y_label: "ms".into(),
                    x: vec![1.0, 2.0, 3.0],
                    series: vec![Series {
                        label: "p50 </script><!--".into(),
                        values: vec![Some(1.0), None, Some(f64::NAN)],
                    }],
                    bands: vec![Band {
                        label: "loaded".into(),
                        from: 1.0,
                        to: 2.5,
                    }],
                    ..Chart::default()
                },
                Chart {
                    id: "spec".into(),
                    title: "spectrum".into(),
                    x_log: true,
                    y_log: true,
                    x: vec![0.0, 10.0, 100.0],
                    series: vec![
                        Series {
                            label: "a".into(),
                            values: vec![Some(1.0), Some(2.0), Some(0.0)],
                        },
                        Series {
                            label: "b".into(),
                            values: vec![Some(1.0), Some(2.0), Some(3.0)],
                        },
                    ],
                    ..Chart::default()
                },
            ],
        }
    }

    fn html() -> String {
        String::from_utf8(render_to_vec(&page())).unwrap()
    }

    #[test]
    fn text_is_escaped() {
        let h = html();
        assert!(h.contains("<title>ping &lt;b&gt;&amp;&lt;/b&gt;</title>"));
        assert!(h.contains("&quot;q&quot;"));
        assert!(h.contains("<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"));
        assert!(!h.contains("<script>alert(1)"));
    }

    #[test]
    fn json_block_cannot_be_closed_by_a_label() {
        let h = html();
        let start = h
            .find("<script type=\"application/json\" id=\"npt-data\">")
            .unwrap();
        let body = &h[start..];
        let body = &body[body.find('>').unwrap() + 1..];
        let end = body.find("</script>").unwrap();
        let json = &body[..end];
        assert!(!json.contains('<'), "{json}");
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["charts"][0]["series"][0]["label"], "p50 </script><!--");
        assert_eq!(
            v["charts"][0]["series"][0]["values"][1],
            serde_json::Value::Null
        );
        assert_eq!(
            v["charts"][0]["series"][0]["values"][2],
            serde_json::Value::Null
        );
        assert_eq!(v["charts"][1]["x_log"], true);
        assert_eq!(v["charts"][1]["x"][2], 100.0);
    }

    #[test]
    fn every_chart_and_table_is_present() {
        let h = html();
        assert!(h.contains("id=\"npt-table-0\""));
        assert!(h.contains("<caption>summary</caption>"));
        assert!(h.contains("<th>p50 ms</th>"));
        assert!(h.contains("<td class=\"n\">0.213</td>"));
        assert!(h.contains(
            "id=\"npt-chart-0\" data-chart=\"lat\" data-expected-points=\"1\" data-bands=\"loaded 1-2.5\""
        ));
        assert!(h.contains("id=\"npt-chart-1\" data-chart=\"spec\" data-expected-points=\"3\""));
        assert!(!h.contains("npt-chart-2"));
    }

    #[test]
    fn self_contained() {
        let h = html();
        assert!(h.contains("var uPlot"), "library inlined");
        assert!(!h.contains("src=\"http"));
        assert!(!h.contains("href=\"http"));
        assert!(!h.contains("<link"));
    }

    #[test]
    fn drawable_points_skip_gaps_and_non_positive_log_values() {
        let p = page();
        assert_eq!(p.charts[0].drawable_points(), 1);
        // x = 0 is dropped on a log x axis, y = 0 is a gap on a log y axis.
        assert_eq!(p.charts[1].drawable_points(), 3);
    }

    #[test]
    fn empty_page_renders() {
        let h = String::from_utf8(render_to_vec(&Page::default())).unwrap();
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(h.ends_with("</html>\n"));
    }
}
