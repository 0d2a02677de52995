(function () {
  "use strict";
  var scriptStart = performance.now();
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

  // A chart in a section; `after` records what was drawn once uPlot has drawn it. The
  // section (its title, its box at its final height) is laid out at once; the drawing is
  // queued: the first charts draw before the page is first painted, the rest one per task
  // after it, so the table and the top of the page show without waiting for twenty charts.
  var queue = [];
  var charts = 0;
  var FIRST = 3;
  function chart(title, id, opts, data, after) {
    var sec = el("section", { "class": "chart" });
    sec.appendChild(el("h3", {}, title));
    var box = el("div", { "class": "plot", id: "npt-chart-" + charts, "data-chart": id });
    charts++;
    sec.appendChild(box);
    content.appendChild(sec);
    var w = box.clientWidth || 900;
    box.style.minHeight = height(w) + "px";
    queue.push(function () {
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
    });
  }
  // Draws `n` queued charts now and the rest one per task; `done` when all are drawn. A
  // render that starts meanwhile (a refresh) drops what is left of this one's queue.
  var drawing = 0;
  function drawQueued(n, done) {
    var mine = ++drawing;
    var jobs = queue;
    queue = [];
    var i = 0;
    function step() {
      if (mine !== drawing) { return; }
      if (i < jobs.length) { jobs[i++](); }
      if (i < jobs.length) { setTimeout(step, 0); } else { done(); }
    }
    while (i < Math.min(n, jobs.length)) { jobs[i++](); }
    step();
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

  // The controls stay across refreshes (a search box keeps its focus and what is typed);
  // what they ask for is read again by the server, which sends one page of targets.
  var head = el("div");
  var form = el("form", { id: "npt-find", "class": "find" });
  var content = el("div");
  while (main.firstChild) { main.removeChild(main.firstChild); }
  main.appendChild(head);
  main.appendChild(form);
  main.appendChild(content);
  var state = {};
  var find = {
    q: el("input", { type: "search", name: "q", placeholder: "search name, URL, group", "aria-label": "search" }),
    group: el("select", { name: "group", "aria-label": "group" }),
    sort: el("select", { name: "sort", "aria-label": "order" }),
    prev: el("button", { type: "button", name: "prev" }, "‹ previous"),
    next: el("button", { type: "button", name: "next" }, "next ›"),
    where: el("span", { "class": "sub", id: "npt-where" })
  };
  [find.q, find.group, find.sort, find.prev, find.where, find.next].forEach(function (x) { form.appendChild(x); });
  var SORTS = { worst: "worst first", name: "by name", p50: "slowest p50 first", loss: "most loss first" };

  function query(extra) {
    var p = new URLSearchParams();
    p.set("range", state.range || "1h");
    if (state.q) { p.set("q", state.q); }
    if (state.group) { p.set("group", state.group); }
    if (state.sort && state.sort !== "worst") { p.set("sort", state.sort); }
    if (state.page > 1) { p.set("page", String(state.page)); }
    if (state.per) { p.set("per", String(state.per)); }
    Object.keys(extra || {}).forEach(function (k) { p.set(k, extra[k]); });
    return p;
  }
  function fetchData() {
    var p = query();
    if (token) { p.set("token", token); }
    return fetch("api/data?" + p.toString(), { cache: "no-store" })
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); })
      .then(function (d) {
        render(d);
        var shown = query();
        if (token) { shown.set("token", token); }
        history.replaceState(null, "", "?" + shown.toString());
      });
  }
  function ask() { fetchData().catch(function () { /* keep what is shown */ }); }
  var typing = null;
  find.q.addEventListener("input", function () {
    clearTimeout(typing);
    typing = setTimeout(function () { state.q = find.q.value.trim(); state.page = 1; ask(); }, 250);
  });
  find.group.addEventListener("change", function () { state.group = find.group.value; state.page = 1; ask(); });
  find.sort.addEventListener("change", function () { state.sort = find.sort.value; state.page = 1; ask(); });
  find.prev.addEventListener("click", function () { if (state.page > 1) { state.page--; ask(); } });
  find.next.addEventListener("click", function () { if (state.page < state.pages) { state.page++; ask(); } });
  form.addEventListener("submit", function (e) { e.preventDefault(); });

  function controls(d) {
    state = { range: d.range, q: d.q, group: d.group || "", sort: d.sort, page: d.page, pages: d.pages,
      per: d.per === 20 ? 0 : d.per };
    if (document.activeElement !== find.q) { find.q.value = d.q; }
    while (find.group.firstChild) { find.group.removeChild(find.group.firstChild); }
    find.group.appendChild(el("option", { value: "" }, "every group"));
    d.all_groups.forEach(function (g) {
      var o = el("option", { value: g }, "group " + g);
      if (g === d.group) { o.selected = true; }
      find.group.appendChild(o);
    });
    while (find.sort.firstChild) { find.sort.removeChild(find.sort.firstChild); }
    d.sorts.forEach(function (s) {
      var o = el("option", { value: s }, SORTS[s] || s);
      if (s === d.sort) { o.selected = true; }
      find.sort.appendChild(o);
    });
    var first = d.matched ? (d.page - 1) * d.per + 1 : 0;
    var last = Math.min(d.matched, d.page * d.per);
    find.where.textContent = " " + first + "–" + last + " of " + d.matched +
      (d.matched === d.total ? " targets" : " matching (of " + d.total + ")") +
      " · page " + d.page + " of " + d.pages + " ";
    find.prev.disabled = !live || d.page <= 1;
    find.next.disabled = !live || d.page >= d.pages;
    [find.q, find.group, find.sort].forEach(function (x) { x.disabled = !live; });
    form.setAttribute("data-total", String(d.total));
    form.setAttribute("data-matched", String(d.matched));
    form.setAttribute("data-page", d.page + "/" + d.pages);
  }

  function render(d) {
    plots.forEach(function (p) { p.u.destroy(); });
    plots = [];
    queue = [];
    charts = 0;
    drawing++;
    [head, content].forEach(function (x) { while (x.firstChild) { x.removeChild(x.firstChild); } });
    head.appendChild(el("h1", {}, "npt monitor " + d.vantage));
    var nav = el("p", { "class": "sub" });
    nav.appendChild(document.createTextNode("range: "));
    d.ranges.forEach(function (r) {
      var a = el("a", { href: link(query({ range: r })) }, r);
      if (r === d.range) { a.setAttribute("class", "on"); }
      nav.appendChild(a);
      nav.appendChild(document.createTextNode(" "));
    });
    nav.appendChild(document.createTextNode("· " + d.level + " points · as of " + when(d.now_ms) +
      (live ? " · refreshes by itself" : " · saved page: this page of targets as it was")));
    head.appendChild(nav);
    controls(d);

    var firing = d.alerts.filter(function (a) { return a.firing; });
    content.appendChild(el("h2", {}, (firing.length ? "Alerts firing: " + firing.length : "No alert firing") +
      " · " + d.down + " of " + d.total + " targets down"));
    if (firing.length) {
      content.appendChild(table("firing", ["target", "rule", "since", "value"], firing.slice(0, 50).map(function (a) {
        return [a.target, a.rule, when(a.since_ms), fmt(a.value, 2)];
      })));
      if (firing.length > 50) {
        content.appendChild(el("p", { "class": "sub" }, (firing.length - 50) + " more firing: worst first lists their targets first."));
      }
    }
    var now = table("now", ["target", "kind", "group", "status", "p50 ms", "p99 ms", "usual p50", "loss %", "RPM", "last round", "alerts", "report"],
      d.targets.map(function (t) {
        var a = el("a", { href: "report" + link({ target: t.name, range: d.range }) }, "html");
        return [t.name + (t.active ? "" : " (removed)"), t.kind, t.group || "", (t.status || "–") + (t.detail ? " (" + t.detail + ")" : ""),
          fmt(t.p50_ms, 2), fmt(t.p99_ms, 2), fmt(t.base_p50_ms, 2), fmt(t.loss_pct, 2), fmt(t.rpm, 0), ago(t.last_ms, d.now_ms),
          t.firing.join(", "), a];
      }));
    now.setAttribute("id", "npt-now");
    now.setAttribute("data-rows", String(d.targets.length));
    content.appendChild(now);
    // Marked probes: what became of the marking each way in their last round.
    var marked = d.targets.filter(function (t) { return t.marking_up || t.marking_down; });
    if (marked.length) {
      var marks = table("markings each way, last round (DSCP, ECN: arrived, rewritten or bleached; CE marks)",
        ["target", "up", "down"], marked.map(function (t) {
          return [t.name, t.marking_up || "–", t.marking_down || "–"];
        }));
      marks.setAttribute("id", "npt-markings");
      marks.setAttribute("data-rows", String(marked.length));
      content.appendChild(marks);
    }

    var byName = {};
    d.targets.forEach(function (t) { byName[t.name] = t; });
    d.groups.forEach(function (g) { overlay(g, byName); });
    d.targets.forEach(function (t) {
      if (!t.charted) { return; }
      smoke(t);
      if (t.segments.length) { segments(t); }
    });
    content.appendChild(table("history: alerts, gaps, reloads, store", ["when", "what", "target", "rule", "until", "detail"],
      d.events.map(function (e) { return [when(e.ts_ms), e.kind, e.target || "", e.rule || "", when(e.until_ms), e.detail]; })));
    document.body.removeAttribute("data-charts-drawn");
    drawQueued(FIRST, function () {
      document.body.setAttribute("data-charts-drawn", String(plots.length));
      if (!document.body.hasAttribute("data-all-drawn-ms")) {
        document.body.setAttribute("data-all-drawn-ms", performance.now().toFixed(1));
      }
    });
  }

  var parsed = JSON.parse(document.getElementById("npt-data").textContent);
  var parsedAt = performance.now();
  render(parsed);
  // How long the first page took, from the navigation's start (the request included) to the
  // page ready to paint: its table and its first charts — what a user waits for; the browser's
  // own first contentful paint; and when the last chart of the page was drawn.
  document.body.setAttribute("data-drawn-ms", performance.now().toFixed(1));
  document.body.setAttribute("data-script-ms", scriptStart.toFixed(1) + " " + parsedAt.toFixed(1));
  requestAnimationFrame(function () {
    setTimeout(function () {
      var fcp = performance.getEntriesByType("paint").filter(function (e) { return e.name === "first-contentful-paint"; })[0];
      if (fcp) { document.body.setAttribute("data-first-paint-ms", fcp.startTime.toFixed(1)); }
      var nav = performance.getEntriesByType("navigation")[0];
      if (nav) { document.body.setAttribute("data-response-ms", nav.responseEnd.toFixed(1)); }
    }, 0);
  });

  if (live) {
    setInterval(ask, 10 * 1000);
  }
  window.addEventListener("resize", function () {
    plots.forEach(function (p) {
      var w = p.el.clientWidth || 900;
      if (Math.abs(w - p.u.width) > 1) { p.u.setSize({ width: w, height: height(w) }); }
    });
  });
})();
