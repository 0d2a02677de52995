(function () {
  "use strict";
  // Script errors are counted where a test (and a curious user) can read them.
  var errors = 0;
  function countError() { errors++; document.body.setAttribute("data-errors", String(errors)); }
  document.body.setAttribute("data-errors", "0");
  window.addEventListener("error", countError);
  var consoleError = console.error;
  console.error = function () { countError(); if (consoleError) { consoleError.apply(console, arguments); } };

  var LOSS = [
    { max: 0, label: "loss 0 %", color: "#2ca02c" },
    { max: 2, label: "loss ≤ 2 %", color: "#1f77b4" },
    { max: 10, label: "loss ≤ 10 %", color: "#ff7f0e" },
    { max: Infinity, label: "loss > 10 %", color: "#d62728" }
  ];
  var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  var main = document.getElementById("npt-main");
  var plots = [];
  var live = location.protocol === "http:" || location.protocol === "https:";
  var params = new URLSearchParams(location.search);
  var token = params.get("token");

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function fmt(v, d) { return (v === null || v === undefined) ? "–" : Number(v).toFixed(d); }
  function when(ms) { return ms ? new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "–"; }
  function ago(ms, now) {
    if (!ms) { return "–"; }
    var s = Math.max(0, Math.round((now - ms) / 1000));
    return s < 120 ? s + " s ago" : s < 7200 ? Math.round(s / 60) + " min ago" : Math.round(s / 3600) + " h ago";
  }
  function link(q) {
    var p = new URLSearchParams(q);
    if (token) { p.set("token", token); }
    return "?" + p.toString();
  }
  function height(w) { return Math.max(180, Math.min(300, Math.round(w * 0.32))); }
  function table(caption, head, rows) {
    var t = el("table");
    t.appendChild(el("caption", {}, caption));
    var tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", {}, h)); });
    t.appendChild(el("thead")).appendChild(tr);
    var tb = t.appendChild(el("tbody"));
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (c) {
        if (c && c.nodeType) { row.appendChild(el("td")).appendChild(c); } else { row.appendChild(el("td", {}, c)); }
      });
      tb.appendChild(row);
    });
    var d = el("div", { "class": "tbl" });
    d.appendChild(t);
    return d;
  }
  function count(arr) {
    var n = 0;
    for (var k = 0; k < arr.length; k++) { if (arr[k] !== null && arr[k] !== undefined) { n++; } }
    return n;
  }

  // A chart in a section; `after` records what was drawn once uPlot has drawn it.
  function chart(title, id, opts, data, after) {
    var sec = el("section", { "class": "chart" });
    sec.appendChild(el("h3", {}, title));
    var box = el("div", { "class": "plot", id: "npt-chart-" + plots.length, "data-chart": id });
    sec.appendChild(box);
    main.appendChild(sec);
    var w = box.clientWidth || 900;
    opts.width = w;
    opts.height = height(w);
    opts.hooks = opts.hooks || {};
    opts.hooks.draw = [function (u) {
      var cv = u.root.querySelector("canvas");
      if (cv) { box.setAttribute("data-canvas", cv.width + "x" + cv.height); }
      after(u, box);
    }];
    plots.push({ u: new uPlot(opts, data, box), el: box });
  }

  function lossClass(l) {
    for (var k = 0; k < LOSS.length; k++) { if ((l || 0) <= LOSS[k].max) { return k; } }
    return LOSS.length - 1;
  }

  function smoke(t) {
    var n = t.t.length;
    var classes = LOSS.map(function (c, k) {
      var v = new Array(n);
      for (var i = 0; i < n; i++) { v[i] = (t.p50[i] !== null && lossClass(t.loss[i]) === k) ? t.p50[i] : null; }
      return v;
    });
    var data = [t.t, t.p1, t.p10, t.p90, t.p99].concat(classes).concat([t.loss]);
    var series = [{},
      { label: "p1", stroke: "rgba(31,119,180,0.35)", width: 1 },
      { label: "p10", stroke: "rgba(31,119,180,0.55)", width: 1 },
      { label: "p90", stroke: "rgba(31,119,180,0.55)", width: 1 },
      { label: "p99", stroke: "rgba(31,119,180,0.35)", width: 1 }
    ].concat(LOSS.map(function (c) {
      return { label: "p50, " + c.label, stroke: c.color, width: 2, points: { show: true, size: 4, stroke: c.color, fill: c.color } };
    })).concat([{ label: "loss %", scale: "loss", stroke: "rgba(214,39,40,0.7)", width: 1, fill: "rgba(214,39,40,0.10)" }]);
    var opts = {
      series: series,
      bands: [{ series: [4, 1], fill: "rgba(31,119,180,0.10)" }, { series: [3, 2], fill: "rgba(31,119,180,0.22)" }],
      scales: { loss: { range: [0, 100] } },
      axes: [{}, { label: "ms" }, { scale: "loss", side: 1, label: "loss %", grid: { show: false } }],
      legend: { live: true }
    };
    var title = t.name + " — " + t.kind + " " + t.url;
    chart(title, t.name, opts, data, function (u, box) {
      var m = 0, lo = Infinity, hi = -Infinity;
      for (var k = 5; k < 5 + LOSS.length; k++) {
        var col = u.data[k];
        for (var i = 0; i < col.length; i++) {
          var v = col[i];
          if (v !== null && v !== undefined) { m++; if (v < lo) { lo = v; } if (v > hi) { hi = v; } }
        }
      }
      box.setAttribute("data-drawn-median", String(m));
      box.setAttribute("data-expected-median", String(t.median_points));
      if (m > 0) { box.setAttribute("data-median-range", lo.toFixed(3) + "-" + hi.toFixed(3)); }
    });
  }

  function segments(t) {
    var data = [t.t].concat(t.segments).concat([t.p50]);
    var series = [{}].concat(t.segments.map(function (s, i) {
      return { label: "segment " + (i + 1) + " p50", stroke: PALETTE[i % PALETTE.length], width: 1.5 };
    })).concat([{ label: "chain p50", stroke: "#000", width: 2 }]);
    chart(t.name + " — segments over time", t.name + ":segments", { series: series, axes: [{}, { label: "ms" }] }, data,
      function (u, box) {
        var m = 0;
        for (var k = 1; k < u.data.length; k++) { m += count(u.data[k]); }
        box.setAttribute("data-drawn-points", String(m));
      });
  }

  function overlay(g, byName) {
    var tables = g.targets.map(function (n) { var t = byName[n]; return [t.t, t.p50]; });
    // NULL_EXPAND (2): a gap in one path stays a gap where the others have points.
    var data = uPlot.join(tables, tables.map(function () { return [2]; }));
    var series = [{}].concat(g.targets.map(function (n, i) {
      return { label: n, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: false };
    }));
    chart("group " + g.name + ": p50 side by side", "group:" + g.name, { series: series, axes: [{}, { label: "ms" }] }, data,
      function (u, box) {
        var m = 0;
        for (var k = 1; k < u.data.length; k++) { m += count(u.data[k]); }
        box.setAttribute("data-drawn-points", String(m));
      });
  }

  function render(d) {
    plots.forEach(function (p) { p.u.destroy(); });
    plots = [];
    while (main.firstChild) { main.removeChild(main.firstChild); }
    main.appendChild(el("h1", {}, "npt monitor " + d.vantage));
    var nav = el("p", { "class": "sub" });
    nav.appendChild(document.createTextNode("range: "));
    d.ranges.forEach(function (r) {
      var a = el("a", { href: link({ range: r }) }, r);
      if (r === d.range) { a.setAttribute("class", "on"); }
      nav.appendChild(a);
      nav.appendChild(document.createTextNode(" "));
    });
    nav.appendChild(document.createTextNode("· " + d.level + " points · as of " + when(d.now_ms) +
      (live ? " · refreshes by itself" : " · saved page")));
    main.appendChild(nav);

    var firing = d.alerts.filter(function (a) { return a.firing; });
    main.appendChild(el("h2", {}, firing.length ? "Alerts firing: " + firing.length : "No alert firing"));
    if (firing.length) {
      main.appendChild(table("firing", ["target", "rule", "since", "value"], firing.map(function (a) {
        return [a.target, a.rule, when(a.since_ms), fmt(a.value, 2)];
      })));
    }
    main.appendChild(table("now", ["target", "kind", "status", "p50 ms", "p99 ms", "loss %", "RPM", "last round", "alerts", "report"],
      d.targets.map(function (t) {
        var a = el("a", { href: "report" + link({ target: t.name, range: d.range }) }, "html");
        return [t.name + (t.active ? "" : " (removed)"), t.kind, (t.status || "–") + (t.detail ? " (" + t.detail + ")" : ""),
          fmt(t.p50_ms, 2), fmt(t.p99_ms, 2), fmt(t.loss_pct, 2), fmt(t.rpm, 0), ago(t.last_ms, d.now_ms),
          t.firing.join(", "), a];
      })));

    var byName = {};
    d.targets.forEach(function (t) { byName[t.name] = t; });
    d.groups.forEach(function (g) { overlay(g, byName); });
    d.targets.forEach(function (t) {
      if (!t.charted) { return; }
      smoke(t);
      if (t.segments.length) { segments(t); }
    });
    if (d.not_charted) {
      main.appendChild(el("p", { "class": "sub" }, d.not_charted + " more targets have no chart on this page."));
    }
    main.appendChild(table("history: alerts, gaps, reloads, store", ["when", "what", "target", "rule", "until", "detail"],
      d.events.map(function (e) { return [when(e.ts_ms), e.kind, e.target || "", e.rule || "", when(e.until_ms), e.detail]; })));
    document.body.setAttribute("data-charts-drawn", String(plots.length));
  }

  render(JSON.parse(document.getElementById("npt-data").textContent));

  if (live) {
    var every = 10;
    setInterval(function () {
      var q = new URLSearchParams(location.search);
      fetch("api/data?" + q.toString(), { cache: "no-store" })
        .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); })
        .then(render)
        .catch(function () { /* keep what is shown; the next refresh tries again */ });
    }, every * 1000);
  }
  window.addEventListener("resize", function () {
    plots.forEach(function (p) {
      var w = p.el.clientWidth || 900;
      if (Math.abs(w - p.u.width) > 1) { p.u.setSize({ width: w, height: height(w) }); }
    });
  });
})();
