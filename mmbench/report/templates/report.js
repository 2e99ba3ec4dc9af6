/* mmbench report charts: draws the figures of the inline JSON (#mmb-data) as SVG.
   No network, no libraries.  Every text from the data goes in through textContent. */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var W = 560, H = 300, ML = 66, MR = 14, MT = 12, MB = 40;
  var holder = document.getElementById("mmb-data");
  if (!holder) { return; }
  var data = JSON.parse(holder.textContent);
  var COLORS = data.colors, NAMES = data.runs;

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) { e.setAttribute(k, attrs[k]); } }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function txt(parent, x, y, s, attrs) {
    var a = attrs || {}; a.x = x; a.y = y;
    var t = el("text", a, parent); t.textContent = s; return t;
  }
  function tip(node, s) { var t = el("title", {}, node); t.textContent = s; return node; }
  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) { return "-"; }
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e7 || a < 1e-3)) { return v.toExponential(2); }
    if (a >= 1000) { return v.toFixed(0); }
    return String(+v.toPrecision(3));
  }
  function finite(v) { return v !== null && v !== undefined && isFinite(v); }

  function niceTicks(lo, hi, n) {
    if (!(hi > lo)) { var d = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1; lo -= d; hi += d; }
    var span = hi - lo, step = Math.pow(10, Math.floor(Math.log(span / n) / Math.LN10));
    var err = n / span * step;
    if (err <= 0.15) { step *= 10; } else if (err <= 0.35) { step *= 5; } else if (err <= 0.75) { step *= 2; }
    var t = [], start = Math.floor(lo / step) * step, end = Math.ceil(hi / step) * step;
    for (var v = start; v <= end + step * 1e-6; v += step) { t.push(+v.toPrecision(12)); }
    return t;
  }
  function logTicks(lo, hi) {
    var t = [], a = Math.floor(Math.log(lo) / Math.LN10), b = Math.ceil(Math.log(hi) / Math.LN10);
    if (a === b) { b = a + 1; }
    for (var e = a; e <= b; e++) { t.push(Math.pow(10, e)); }
    return t;
  }

  function scale(d0, d1, r0, r1, log) {
    if (log) {
      var l0 = Math.log(d0), l1 = Math.log(d1);
      return function (v) { return r0 + (Math.log(v) - l0) / (l1 - l0) * (r1 - r0); };
    }
    return function (v) { return r0 + (v - d0) / (d1 - d0) * (r1 - r0); };
  }

  function frame(fig, xt, yt, sx, sy, xfmt) {
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, "class": "chart", role: "img",
                          "data-kind": fig.kind, preserveAspectRatio: "xMidYMid meet" });
    tip(svg, fig.title);
    var g = el("g", { "class": "axes" }, svg);
    yt.forEach(function (v) {
      var y = sy(v);
      el("line", { x1: ML, x2: W - MR, y1: y, y2: y, "class": "grid" }, g);
      txt(g, ML - 6, y + 4, fmt(v), { "text-anchor": "end", "class": "tick" });
    });
    if (xt) {
      xt.forEach(function (v) {
        var x = sx(v);
        el("line", { x1: x, x2: x, y1: MT, y2: H - MB, "class": "grid" }, g);
        txt(g, x, H - MB + 15, (xfmt || fmt)(v), { "text-anchor": "middle", "class": "tick" });
      });
    }
    el("rect", { x: ML, y: MT, width: W - ML - MR, height: H - MT - MB, "class": "plotarea" }, g);
    if (fig.xlabel) { txt(g, (ML + W - MR) / 2, H - 6, fig.xlabel, { "text-anchor": "middle", "class": "label" }); }
    if (fig.ylabel) {
      txt(g, 14, (MT + H - MB) / 2, fig.ylabel,
          { "text-anchor": "middle", "class": "label", transform: "rotate(-90 14 " + (MT + H - MB) / 2 + ")" });
    }
    return svg;
  }

  function legend(container, fig, entries) {
    var ul = document.createElement("ul");
    ul.className = "legend";
    entries.forEach(function (e) {
      var li = document.createElement("li");
      var sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = COLORS[e.run % COLORS.length];
      li.appendChild(sw);
      li.appendChild(document.createTextNode(e.text));
      ul.appendChild(li);
    });
    container.appendChild(ul);
  }

  function pathOf(xs, ys, sx, sy, step) {
    var d = "", pen = false, py = null;
    for (var i = 0; i < xs.length; i++) {
      var x = xs[i], y = ys[i];
      if (!finite(x) || !finite(y)) { pen = false; continue; }
      var X = sx(x).toFixed(1), Y = sy(y).toFixed(1);
      if (!pen) { d += "M" + X + " " + Y; pen = true; }
      else if (step) { d += "H" + X + "V" + Y; }
      else { d += "L" + X + " " + Y; }
      py = Y;
    }
    return d;
  }

  function bisect(xs, x) {
    var lo = 0, hi = xs.length - 1;
    if (hi < 0) { return -1; }
    while (lo < hi) { var m = (lo + hi) >> 1; if (xs[m] < x) { lo = m + 1; } else { hi = m; } }
    return lo;
  }

  function drawLines(fig, host) {
    var xs = [], ys = [], log = !!fig.logx;
    fig.series.forEach(function (s) {
      s.x.forEach(function (v, i) {
        if (finite(v) && finite(s.y[i]) && (!log || v > 0)) { xs.push(v); ys.push(s.y[i]); }
      });
    });
    if (!xs.length) { host.textContent = "no data"; return; }
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    var y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
    if (fig.kind === "cdf") { y0 = 0; y1 = 1; }
    else if (fig.yzero) { y0 = Math.min(0, y0); }
    else { var pad = (y1 - y0) * 0.08 || Math.abs(y1) * 0.05 || 1; var nonneg = y0 >= 0; y0 -= pad; y1 += pad; if (nonneg && y0 < 0) { y0 = 0; } }
    var xt, sx;
    if (log) {
      xt = logTicks(x0, x1); sx = scale(xt[0], xt[xt.length - 1], ML, W - MR, true);
    } else {
      if (!(x1 > x0)) { x1 = x0 + 1; }
      xt = niceTicks(x0, x1, 6).filter(function (v) { return v >= x0 - 1e-9 && v <= x1 + 1e-9; });
      sx = scale(x0, x1, ML, W - MR, false);
    }
    var yt = niceTicks(y0, y1, 5);
    var sy = scale(yt[0], yt[yt.length - 1], H - MB, MT, false);
    var svg = frame(fig, xt, yt, sx, sy, log ? function (v) { return fmt(v); } : null);
    var g = el("g", { "class": "series" }, svg);
    var ordered = fig.series.filter(function (s) { return s.faint; }).concat(
      fig.series.filter(function (s) { return !s.faint; }));
    ordered.forEach(function (s) {
      var p = el("path", { d: pathOf(s.x, s.y, sx, sy, fig.kind === "cdf"), "class": s.faint ? "line faint" : "line",
                           stroke: COLORS[s.run % COLORS.length] }, g);
      tip(p, NAMES[s.run] + ": " + s.label);
    });
    // hover read-out: the value of each solid line at the pointer's x
    var cursor = el("line", { x1: 0, x2: 0, y1: MT, y2: H - MB, "class": "cursor", visibility: "hidden" }, svg);
    var readout = txt(svg, ML + 6, MT + 14, "", { "class": "readout" });
    var solid = fig.series.filter(function (s) { return !s.faint; });
    var overlay = el("rect", { x: ML, y: MT, width: W - ML - MR, height: H - MT - MB, "class": "overlay" }, svg);
    overlay.addEventListener("mousemove", function (ev) {
      var box = svg.getBoundingClientRect();
      if (!box.width) { return; }
      var px = (ev.clientX - box.left) * W / box.width;
      var inv = log ? Math.exp(Math.log(xt[0]) + (px - ML) / (W - MR - ML) * (Math.log(xt[xt.length - 1]) - Math.log(xt[0])))
                    : x0 + (px - ML) / (W - MR - ML) * (x1 - x0);
      cursor.setAttribute("x1", px); cursor.setAttribute("x2", px); cursor.setAttribute("visibility", "visible");
      var parts = [fig.kind === "cdf" ? fmt(inv) + " µs" : "t=" + fmt(inv) + " s"];
      solid.forEach(function (s) {
        var i = bisect(s.x, inv);
        if (i < 0) { return; }
        if (fig.kind === "cdf") {
          if (s.x[i] > inv) { i -= 1; }
          parts.push(NAMES[s.run] + " " + (i < 0 ? "0" : fmt(s.y[i] * 100)) + "%");
        } else {
          if (i > 0 && Math.abs(s.x[i - 1] - inv) < Math.abs(s.x[i] - inv)) { i -= 1; }
          parts.push(NAMES[s.run] + " " + fmt(s.y[i]));
        }
      });
      readout.textContent = parts.join("   ");
    });
    overlay.addEventListener("mouseleave", function () {
      cursor.setAttribute("visibility", "hidden"); readout.textContent = "";
    });
    host.appendChild(svg);
    var seen = {}, entries = [];
    fig.series.forEach(function (s) {
      if (fig.kind === "cdf") { entries.push({ run: s.run, text: s.label }); }
      else if (!seen[s.run]) { seen[s.run] = 1; entries.push({ run: s.run, text: NAMES[s.run] }); }
    });
    legend(host, fig, entries);
  }

  function drawBoxes(fig, host) {
    var vals = [];
    fig.boxes.forEach(function (b) {
      [b.lo, b.hi, b.q1, b.q3, b.med].concat(b.points).forEach(function (v) { if (finite(v)) { vals.push(v); } });
    });
    if (!vals.length) { host.textContent = "no data"; return; }
    var y0 = Math.min.apply(null, vals), y1 = Math.max.apply(null, vals);
    var pad = (y1 - y0) * 0.05 || Math.abs(y1) * 0.05 || 1;
    var yt = niceTicks(y0 >= 0 ? Math.max(0, y0 - pad) : y0 - pad, y1 + pad, 5);
    var sy = scale(yt[0], yt[yt.length - 1], H - MB, MT, false);
    var n = NAMES.length, slot = (W - ML - MR) / n;
    var svg = frame(fig, null, yt, null, sy);
    var g = el("g", { "class": "boxes" }, svg);
    NAMES.forEach(function (name, i) {
      txt(g, ML + slot * (i + 0.5), H - MB + 15, name, { "text-anchor": "middle", "class": "tick" });
    });
    fig.boxes.forEach(function (b) {
      var cx = ML + slot * (b.run + 0.5), bw = Math.min(70, slot * 0.45), color = COLORS[b.run % COLORS.length];
      var bg = el("g", { "class": "box" }, g);
      tip(bg, NAMES[b.run] + ": n=" + b.n + ", median " + fmt(b.med) + ", quartiles " + fmt(b.q1) + " to " +
          fmt(b.q3) + ", whiskers " + fmt(b.lo) + " to " + fmt(b.hi) + ", mean " + fmt(b.mean));
      el("line", { x1: cx, x2: cx, y1: sy(b.lo), y2: sy(b.q1), stroke: color, "class": "whisker" }, bg);
      el("line", { x1: cx, x2: cx, y1: sy(b.q3), y2: sy(b.hi), stroke: color, "class": "whisker" }, bg);
      el("line", { x1: cx - bw / 4, x2: cx + bw / 4, y1: sy(b.lo), y2: sy(b.lo), stroke: color, "class": "whisker" }, bg);
      el("line", { x1: cx - bw / 4, x2: cx + bw / 4, y1: sy(b.hi), y2: sy(b.hi), stroke: color, "class": "whisker" }, bg);
      var top = sy(b.q3), bot = sy(b.q1);
      el("rect", { x: cx - bw / 2, y: top, width: bw, height: Math.max(1, bot - top), stroke: color,
                   fill: color, "class": "iqr" }, bg);
      el("line", { x1: cx - bw / 2, x2: cx + bw / 2, y1: sy(b.med), y2: sy(b.med), stroke: color, "class": "median" }, bg);
      if (finite(b.mean)) {
        var my = sy(b.mean);
        el("path", { d: "M" + cx + " " + (my - 4) + "l4 4l-4 4l-4-4z", fill: color, "class": "mean" }, bg);
      }
      var pg = el("g", { "class": "points" }, g);
      b.points.forEach(function (v, j) {
        if (!finite(v)) { return; }
        var jit = ((j * 0.618034) % 1 - 0.5) * bw * 0.8;
        var c = el("circle", { cx: (cx + bw / 2 + 10 + Math.abs(jit) / 2).toFixed(1), cy: sy(v).toFixed(1), r: 3,
                               fill: color, "class": "point" }, pg);
        tip(c, NAMES[b.run] + " " + (b.labels[j] || "") + ": " + fmt(v));
      });
    });
    host.appendChild(svg);
  }

  var figs = data.figures;
  for (var i = 0; i < figs.length; i++) {
    var host = document.getElementById("chart-" + figs[i].id);
    if (!host) { continue; }
    if (figs[i].kind === "box") { drawBoxes(figs[i], host); } else { drawLines(figs[i], host); }
    host.setAttribute("data-drawn", "1");
  }
  document.body.setAttribute("data-charts", String(figs.length));
})();
