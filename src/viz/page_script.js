(function () {
  "use strict";
  var started = performance.now();
  var data = JSON.parse(document.getElementById("attn-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var FONT = "DejaVu Sans, Helvetica, Arial, sans-serif";
  var app = document.getElementById("app");
  var Q = data.queries, K = data.keys, nq = Q.length, nk = K.length;
  // The heatmap's colours (viz/color_scale.cpp's anchors), light first so that small weights
  // stay distinguishable from zero.
  var ANCHORS = [[255, 255, 255], [222, 235, 248], [143, 188, 230], [58, 127, 196], [11, 47, 102]];
  var PALETTE = ["#2a6ab8", "#e6550d", "#31a354", "#d62728", "#756bb1", "#8c564b", "#e377c2",
                 "#636363", "#bcbd22", "#17becf", "#393b79", "#ad494a"];
  var MASKED = "#ececec";       // keys a causal query cannot see
  var NEURON_KEYS = 32;         // the neuron view lists at most this many keys (the largest weights)
  var ALL_LINES = 6000;         // the head view draws every line below this many, else one token's

  // Past this many tokens an N × N page would freeze the tab: it says so instead of drawing.
  var MAX_TOKENS = 1000;
  if (Math.max(data.queries.length, data.keys.length) > MAX_TOKENS) {
    el("p", {"class": "note", id: "too-long"}, document.getElementById("app"),
       "This page holds " + Math.max(data.queries.length, data.keys.length) + " tokens; it draws at most " +
       MAX_TOKENS + " (each view has N × N weights). Draw a shorter text.");
    document.body.setAttribute("data-ready", "1");
    return;
  }

  // ---- the data ----
  function floats(text) {
    var raw = atob(text), bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; ++i) bytes[i] = raw.charCodeAt(i);
    return new Float32Array(bytes.buffer);
  }
  var layers = data.layers.map(function (layer) {
    return {name: layer.name, heads: layer.heads.map(function (h) {
      return {name: h.name, dim: h.dim || 0, q: h.q ? floats(h.q) : null, k: h.k ? floats(h.k) : null,
              v: h.v ? floats(h.v) : null, given: h.weights ? floats(h.weights) : null, w: null, top: 1};
    })};
  });
  var headCount = layers[0].heads.length;
  function clampInt(v, lo, hi) { v = Number(v); return isFinite(v) ? Math.max(lo, Math.min(hi, Math.floor(v))) : lo; }
  function visibleKeys(i) { return data.causal ? Math.min(i + 1, nk) : nk; }

  // A head's weights, [nq × nk] row-major: given, or softmax(scale·q·kᵀ) row by row in double
  // precision, under the causal mask (the model's own arithmetic, as attention() gives it).
  function weights(l, h) {
    var head = layers[l].heads[h];
    if (head.w) return head.w;
    var w = new Float64Array(nq * nk), i, j;
    if (head.given) {
      for (i = 0; i < w.length; ++i) w[i] = head.given[i];
    } else {
      var D = head.dim, q = head.q, k = head.k, s = data.scale;
      for (i = 0; i < nq; ++i) {
        var n = visibleKeys(i), row = i * nk, top = -Infinity, sum = 0;
        for (j = 0; j < n; ++j) {
          var dot = 0, qi = i * D, kj = j * D;
          for (var d = 0; d < D; ++d) dot += q[qi + d] * k[kj + d];
          w[row + j] = dot * s;
          if (w[row + j] > top) top = w[row + j];
        }
        for (j = 0; j < n; ++j) { w[row + j] = Math.exp(w[row + j] - top); sum += w[row + j]; }
        for (j = 0; j < n; ++j) w[row + j] /= sum;
      }
    }
    var most = 0;
    for (i = 0; i < w.length; ++i) if (w[i] > most) most = w[i];
    head.w = w;
    head.top = most > 0 ? most : 1;
    return w;
  }
  function masked(i, j) { return data.causal && j > i; }

  // ---- colours ----
  function colorAt(t) {
    t = Math.max(0, Math.min(1, t)) * (ANCHORS.length - 1);
    var i = Math.min(Math.floor(t), ANCHORS.length - 2), f = t - i, a = ANCHORS[i], b = ANCHORS[i + 1];
    return [0, 1, 2].map(function (c) { return Math.round(a[c] + (b[c] - a[c]) * f); });
  }
  var LUT = [];
  for (var c = 0; c <= 1000; ++c) LUT.push("rgb(" + colorAt(c / 1000).join(",") + ")");
  function weightColor(v, top) { return LUT[Math.round(Math.max(0, Math.min(1, v / top)) * 1000)]; }
  // Signed values (vectors, products): blue for positive, red for negative, white at zero.
  function signedColor(v, most) {
    var t = most > 0 ? Math.min(1, Math.abs(v) / most) : 0;
    var to = v >= 0 ? [33, 102, 172] : [178, 24, 43];
    return {fill: "rgb(" + to.map(function (x) { return Math.round(255 + (x - 255) * t); }).join(",") + ")",
            dark: t > 0.6};
  }

  // ---- small helpers ----
  function el(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    for (var a in attrs) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svgEl(tag, attrs, parent, text) {
    var e = document.createElementNS(NS, tag);
    for (var a in attrs) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function shown(token) { return token === "<mask>" ? "[MASK]" : token; }
  function cut(label, most) {
    var chars = Array.from(shown(label));
    return chars.length > most ? chars.slice(0, most - 1).join("") + "…" : chars.join("");
  }
  function fixed(v, n) { return isFinite(v) ? v.toFixed(n) : String(v); }
  function layerName(l) { return layers.length > 1 ? "layer " + l : ""; }
  function where(l, h) {
    var parts = [];
    if (layers.length > 1) parts.push("layer " + l + " of " + layers.length + " (from 0)");
    parts.push((layers[l].heads[h].name || "head " + h) + (headCount > 1 ? " of " + headCount : ""));
    return parts.join(", ");
  }

  // ---- the state, and the hash that can set it: #layer=1&head=2&query=5 (or key=5) ----
  var hash = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (part) {
    var kv = part.split("=");
    if (kv.length === 2) hash[kv[0]] = decodeURIComponent(kv[1]);
  });
  function wanted(name, count) {
    return /^[0-9]+$/.test(hash[name] || "") && Number(hash[name]) < count ? Number(hash[name]) : null;
  }
  var state = {
    layer: clampInt(data.initialLayer, 0, layers.length - 1),
    head: clampInt(data.initialHead, 0, headCount - 1),
    query: data.focus >= 0 && data.focus < nq ? data.focus : null,
    overlay: null,   // heads drawn together in the head view (null: the chosen head)
    cell: 0          // the heatmap's cell size in pixels (0: fit the window)
  };
  if (wanted("layer", layers.length) !== null) state.layer = wanted("layer", layers.length);
  if (wanted("head", headCount) !== null) state.head = wanted("head", headCount);
  if (wanted("query", nq) !== null) state.query = wanted("query", nq);

  // ---- the page's frame ----
  var controls = el("div", {"class": "controls"}, app);
  var showing = el("span", {id: "showing"}, controls);
  var layerSelect = null, headSelect = null;
  if (layers.length > 1) {
    var ll = el("label", {}, controls, "Layer ");
    layerSelect = el("select", {id: "layer-select"}, ll);
    layers.forEach(function (_, l) { el("option", {value: l}, layerSelect, "layer " + l + (l === layers.length - 1 ? " (last)" : "")); });
    layerSelect.addEventListener("change", function () { choose(Number(layerSelect.value), state.head); });
  }
  if (headCount > 1) {
    var hl = el("label", {}, controls, "Head ");
    headSelect = el("select", {id: "head-select"}, hl);
    layers[0].heads.forEach(function (h, i) { el("option", {value: i}, headSelect, h.name || "head " + i); });
    headSelect.addEventListener("change", function () { choose(state.layer, Number(headSelect.value)); });
  }
  var tl = el("label", {}, controls, "Token ");
  var tokenSelect = el("select", {id: "token-select"}, tl);
  Q.forEach(function (t, i) { el("option", {value: i}, tokenSelect, i + ": " + cut(t, 24)); });
  tokenSelect.addEventListener("change", function () { setQuery(Number(tokenSelect.value)); });

  function section(id, title, hint, parent) {
    var s = el("section", {"class": "view", id: id}, parent || app);
    el("h2", {}, s, title);
    var bar = el("span", {"class": "toolbar"}, s);
    el("p", {"class": "hint"}, s, hint);
    return {section: s, toolbar: bar};
  }
  function exportButtons(bar, view) {
    ["SVG", "PNG"].forEach(function (kind) {
      var b = el("button", {type: "button", title: "Save this view as " + kind}, bar, kind);
      b.addEventListener("click", function () { save(view, kind.toLowerCase()); });
    });
  }

  var model = null;
  if (layers.length * headCount > 1) {
    model = section("model-view", "Model view",
        "Every layer (row) and head (column) at once, each map drawn to fit (a pixel shows the " +
        "largest weight it covers). Click one to open it in the views below.");
    exportButtons(model.toolbar, "model-view");
    model.grid = el("div", {"class": "model-grid"}, model.section);
  }
  var pictures = el("div", {"class": "pictures"}, app);
  var hm = section("heatmap-view", "Heatmap",
      "Rows are queries, columns are keys; each row sums to 1" + (data.causal ? " (grey: keys after " +
      "the query, which a causal model cannot see)" : "") + ". Point at a cell for its exact value; " +
      "click to choose that query.", pictures);
  [["−", 0.5, "Smaller cells"], ["+", 2, "Larger cells"], ["fit", 0, "Fit the window"]].forEach(function (z) {
    var b = el("button", {type: "button", title: z[2]}, hm.toolbar, z[0]);
    b.addEventListener("click", function () {
      state.cell = z[1] === 0 ? 0 : Math.max(1, Math.min(48, Math.round((state.cell || geometry().cell) * z[1])));
      drawHeatmap();
    });
  });
  exportButtons(hm.toolbar, "heatmap");
  var scroller = el("div", {"class": "map-scroll"}, hm.section);
  var canvas = el("canvas", {id: "heatmap"}, scroller);
  var readout = el("p", {"class": "readout", id: "readout"}, hm.section, " ");

  var hv = section("head-view-section", "Head view",
      "Point at a token on the left to see what it attends to, on the right to see what attends " +
      "to it; click to keep it." + (headCount > 1 ? " Tick heads to overlay them, each in its colour." : ""),
      pictures);
  exportButtons(hv.toolbar, "head-view");
  var picks = headCount > 1 ? el("div", {"class": "head-picks"}, hv.section) : null;
  var view = svgEl("svg", {id: "head-view"}, el("div", {"class": "head-view-scroll"}, hv.section));

  var nv = null;
  if (layers[0].heads[0].q) {
    nv = section("neuron-view-section", "Neuron view",
        "One query's arithmetic, on the model's own numbers: its query vector q meets each key " +
        "vector k; the products q[d]·k[d] summed are the score q·k; scaled, the softmax over the " +
        "keys makes the row of weights; the output row is the weights' sum of the value vectors.");
    exportButtons(nv.toolbar, "neuron-view");
    nv.box = el("div", {id: "neuron-view"}, nv.section);
  }
  var pv = null;
  if (data.predictions) {
    pv = section("predictions-section", "Predictions layer by layer",
        "The model's output layer read from each layer's output at the chosen token (the last row " +
        "is the model's own prediction): watch the answer form layer by layer.");
    exportButtons(pv.toolbar, "predictions");
    pv.box = el("div", {id: "predictions"}, pv.section);
  }

  var curve = document.getElementById("training-curve-section");
  if (curve) exportButtons(curve.querySelector(".toolbar"), "training-curve");
  var alignment = document.getElementById("alignment-section");
  if (alignment) exportButtons(alignment.querySelector(".toolbar"), "alignment");

  // ---- the heatmap: a canvas, so 512 tokens draw at once; the same painter writes SVG ----
  var measure = document.createElement("canvas").getContext("2d");
  measure.font = "11px " + FONT;
  function labelRoom(labels) {
    var most = 0;
    labels.forEach(function (s) { most = Math.max(most, measure.measureText(cut(s, 18)).width); });
    return Math.ceil(most) + 10;
  }
  var rowRoom = labelRoom(Q), colRoom = labelRoom(K);
  function geometry() {
    var cell = state.cell;
    if (!cell) {
      var room = Math.max(240, Math.min(900, (window.innerWidth || 1200) - 80)) - rowRoom - 12;
      cell = Math.max(1, Math.min(28, Math.floor(room / nk)));
    }
    cell = Math.max(1, Math.min(cell, Math.floor(12000 / Math.max(nq, nk))));
    return {cell: cell, left: rowRoom, top: colRoom, width: rowRoom + nk * cell + 8, height: colRoom + nq * cell + 8};
  }
  // Labels every `step` tokens so that they never overlap (the focused query's always); the rest
  // are in the readout when pointed at.
  // parts: ground (white), cells, labels; the SVG of a long text takes the cells as a bitmap.
  function paintHeatmap(p, g, l, h, parts) {
    var w = weights(l, h), top = layers[l].heads[h].top, c = g.cell;
    if (parts.ground) p.rect(0, 0, g.width, g.height, "#ffffff");
    if (parts.cells && p.cells) p.cells(g, w, top);
    else if (parts.cells) {
      for (var i = 0; i < nq; ++i)
        for (var j = 0; j < nk; ++j)
          p.rect(g.left + j * c, g.top + i * c, c, c, masked(i, j) ? MASKED : weightColor(w[i * nk + j], top));
    }
    if (!parts.labels) return;
    var step = Math.max(1, Math.ceil(13 / c));
    Q.forEach(function (t, i) {
      if (i % step === 0 || i === state.query)
        p.text(g.left - 4, g.top + (i + 0.5) * c, cut(t, 18), "end", false, i === state.query ? "#d62728" : "#333");
    });
    K.forEach(function (t, j) {
      if (j % step === 0) p.text(g.left + (j + 0.5) * c, g.top - 4, cut(t, 18), "start", true, "#333");
    });
    if (state.query !== null) p.frame(g.left - 0.5, g.top + state.query * c - 0.5, nk * c + 1, c + 1, "#d62728");
  }
  var RGB = [];
  for (var r = 0; r <= 1000; ++r) RGB.push(colorAt(r / 1000));
  function canvasPainter(ctx) {
    ctx.font = "11px " + FONT;
    ctx.textBaseline = "middle";
    return {
      // Every cell at once, pixel by pixel: a 512-token map is 262,144 cells.
      cells: function (g, w, top) {
        var c = g.cell, img = ctx.createImageData(nk * c, nq * c), px = img.data, stride = nk * c * 4;
        for (var i = 0; i < nq; ++i)
          for (var j = 0; j < nk; ++j) {
            var rgb = masked(i, j) ? [236, 236, 236] : RGB[Math.round(Math.max(0, Math.min(1, w[i * nk + j] / top)) * 1000)];
            for (var y = 0; y < c; ++y) {
              var o = (i * c + y) * stride + j * c * 4;
              for (var x = 0; x < c; ++x, o += 4) { px[o] = rgb[0]; px[o + 1] = rgb[1]; px[o + 2] = rgb[2]; px[o + 3] = 255; }
            }
          }
        ctx.putImageData(img, g.left, g.top);
      },
      rect: function (x, y, w, h, fill) { ctx.fillStyle = fill; ctx.fillRect(x, y, w, h); },
      frame: function (x, y, w, h, stroke) { ctx.strokeStyle = stroke; ctx.lineWidth = 1.5; ctx.strokeRect(x, y, w, h); },
      text: function (x, y, s, anchor, vertical, fill) {
        ctx.fillStyle = fill;
        ctx.save();
        ctx.translate(x, y);
        if (vertical) ctx.rotate(-Math.PI / 2);
        ctx.textAlign = anchor === "end" ? "right" : "left";
        ctx.fillText(s, 0, 0);
        ctx.restore();
      }
    };
  }
  function svgPainter(root) {
    return {
      rect: function (x, y, w, h, fill) { svgEl("rect", {x: x, y: y, width: w, height: h, fill: fill}, root); },
      frame: function (x, y, w, h, stroke) {
        svgEl("rect", {x: x, y: y, width: w, height: h, fill: "none", stroke: stroke, "stroke-width": 1.5}, root);
      },
      text: function (x, y, s, anchor, vertical, fill) {
        var attrs = {x: 0, y: 0, "text-anchor": anchor, "dominant-baseline": "central", fill: fill,
                     transform: "translate(" + x + "," + y + ")" + (vertical ? " rotate(-90)" : "")};
        svgEl("text", attrs, root, s);
      }
    };
  }
  function drawHeatmap() {
    var g = geometry();
    canvas.width = g.width;
    canvas.height = g.height;
    paintHeatmap(canvasPainter(canvas.getContext("2d")), g, state.layer, state.head, {ground: true, cells: true, labels: true});
    canvas.dataset.cell = g.cell;
  }
  function cellAt(event) {
    var g = geometry(), r = canvas.getBoundingClientRect();
    var x = event.clientX - r.left - g.left, y = event.clientY - r.top - g.top;
    var i = Math.floor(y / g.cell), j = Math.floor(x / g.cell);
    return i >= 0 && j >= 0 && i < nq && j < nk ? [i, j] : null;
  }
  canvas.addEventListener("mousemove", function (event) {
    var at = cellAt(event);
    if (!at) { readout.textContent = " "; return; }
    var i = at[0], j = at[1], w = weights(state.layer, state.head)[i * nk + j];
    readout.textContent = "query “" + shown(Q[i]) + "” (" + i + ") → key “" + shown(K[j]) + "” (" + j + "): " +
        (masked(i, j) ? "not seen (causal)" : String(Math.fround(w)));
  });
  canvas.addEventListener("click", function (event) {
    var at = cellAt(event);
    if (at) setQuery(at[0]);
  });

  // ---- the head view: two columns of tokens and a line per weight, heads overlaid ----
  var ROW = nq > 64 ? 16 : 22, TOP = 30, GAP = 200;
  var pinned = null, boxes = {query: [], key: []}, scores = {query: [], key: []}, lineLayer = null;
  function overlay() { return state.overlay || [state.head]; }
  function drawPicks() {
    if (!picks) return;
    picks.textContent = "";
    layers[state.layer].heads.forEach(function (h, i) {
      var label = el("label", {}, picks);
      var box = el("input", {type: "checkbox"}, label);
      box.checked = overlay().indexOf(i) >= 0;
      box.addEventListener("change", function () {
        var on = overlay().filter(function (x) { return x !== i; });
        if (box.checked) on.push(i);
        on.sort(function (a, b) { return a - b; });
        state.overlay = on.length ? on : [i];
        drawHeadView();
      });
      el("span", {"class": "swatch", style: "background:" + PALETTE[i % PALETTE.length]}, label);
      label.appendChild(document.createTextNode(h.name || "head " + i));
    });
  }
  function drawHeadView() {
    while (view.firstChild) view.removeChild(view.firstChild);
    boxes = {query: [], key: []};
    scores = {query: [], key: []};
    var leftWidth = rowRoom + 8, rightWidth = colRoom + 8;
    var x1 = 50 + leftWidth, x2 = x1 + GAP;
    view.setAttribute("width", x2 + rightWidth + 50);
    view.setAttribute("height", TOP + Math.max(nq, nk) * ROW + 10);
    svgEl("text", {x: x1, y: 16, "text-anchor": "end", "class": "column-title"}, view, "query");
    svgEl("text", {x: x2, y: 16, "class": "column-title"}, view, "key");
    lineLayer = svgEl("g", {}, view);
    lineLayer.x1 = x1; lineLayer.x2 = x2;
    function column(labels, x, anchor, side) {
      labels.forEach(function (label, i) {
        var y = TOP + (i + 0.5) * ROW, text = cut(label, 18);
        var width = measure.measureText(text).width + 10;
        var bx = anchor === "end" ? x - width + 2 : x - 2;
        var box = svgEl("rect", {x: bx, y: y - ROW / 2 + 2, width: width, height: ROW - 4, rx: 3, "class": "token-box"}, view);
        var t = svgEl("text", {x: anchor === "end" ? x - 3 : x + 3, y: y, "text-anchor": anchor, "class": "token", tabindex: 0}, view, text);
        var score = svgEl("text", {x: anchor === "end" ? bx - 6 : bx + width + 6, y: y, "text-anchor": anchor, "class": "score"}, view);
        boxes[side].push(box);
        scores[side].push(score);
        [box, t].forEach(function (e) {
          e.addEventListener("mouseenter", function () { if (pinned === null) focus(side, i); });
          e.addEventListener("mouseleave", function () { if (pinned === null) rest(); });
          e.addEventListener("click", function () {
            pinned = pinned && pinned[0] === side && pinned[1] === i ? null : [side, i];
            if (pinned && side === "query") setQuery(i);
            else if (pinned) focus(side, i);
            else rest();
          });
        });
        t.addEventListener("focus", function () { focus(side, i); });
      });
    }
    column(Q, x1, "end", "query");
    column(K, x2, "start", "key");
    drawPicks();
    if (pinned) focus(pinned[0], pinned[1]);
    else rest();
  }
  // With nothing pointed at: every line of a short text; a long one's chosen token's lines.
  function rest() {
    if (nq * nk * overlay().length <= ALL_LINES) focus(null, 0);
    else focus("query", state.query === null ? 0 : state.query);
  }
  function shade(box, value) {
    box.style.fill = value === null ? "" : "rgba(58, 127, 196, " + Math.min(1, value) + ")";
  }
  // side "query": what token i attends to; side "key": who attends to token i; null: every line
  // (a short text) or none (a long one). The lines of a token are drawn relative to the strongest
  // of them, so small weights in a long sentence stay visible; the exact weights of the first
  // head shown are printed beside the tokens.
  function focus(side, i) {
    while (lineLayer.firstChild) lineLayer.removeChild(lineLayer.firstChild);
    var heads = overlay(), x1 = lineLayer.x1, x2 = lineLayer.x2;
    var all = side === null && nq * nk * heads.length <= ALL_LINES;
    heads.forEach(function (h) {
      var w = weights(state.layer, h), color = PALETTE[h % PALETTE.length], links = [], top = 0;
      if (side === null && !all) return;
      for (var a = 0; a < nq; ++a) {
        if (side === "query" && a !== i) continue;
        for (var b = 0; b < nk; ++b) {
          if ((side === "key" && b !== i) || masked(a, b)) continue;
          links.push([a, b, w[a * nk + b]]);
          top = Math.max(top, w[a * nk + b]);
        }
      }
      links.forEach(function (l) {
        var t = side === null ? Math.max(l[2], 0) : top > 0 ? Math.max(l[2], 0) / top : 0;
        if (t <= 0) return;
        var line = svgEl("line", {x1: x1 + 6, y1: TOP + (l[0] + 0.5) * ROW, x2: x2 - 6, y2: TOP + (l[1] + 0.5) * ROW, "class": "link"}, lineLayer);
        line.style.stroke = color;
        line.style.strokeOpacity = t / (heads.length > 1 ? 1.4 : 1);
        line.style.strokeWidth = 1 + 3 * t;
      });
    });
    var w0 = weights(state.layer, heads[0]);
    boxes.query.forEach(function (b, r) {
      b.classList.toggle("focus", side === "query" && r === i);
      var v = side === "key" && !masked(r, i) ? w0[r * nk + i] : null;
      shade(b, v);
      scores.query[r].textContent = v === null ? "" : v.toFixed(3);
    });
    boxes.key.forEach(function (b, c) {
      b.classList.toggle("focus", side === "key" && c === i);
      var v = side === "query" && !masked(i, c) ? w0[i * nk + c] : null;
      shade(b, v);
      scores.key[c].textContent = v === null ? "" : v.toFixed(3);
    });
  }

  // ---- the model view: every layer × head, each map downsampled to a thumbnail ----
  var thumbs = [];
  function thumbSize() {
    var room = Math.max(320, Math.min(1100, (window.innerWidth || 1200) - 140));
    return Math.max(40, Math.min(150, Math.floor(room / headCount) - 14));
  }
  function drawThumb(canvasEl, l, h) {
    var S = canvasEl.width, ctx = canvasEl.getContext("2d"), img = ctx.createImageData(S, S);
    var w = weights(l, h), top = layers[l].heads[h].top, px = img.data;
    for (var y = 0; y < S; ++y) {
      var i0 = Math.floor(y * nq / S), i1 = Math.max(i0 + 1, Math.floor((y + 1) * nq / S));
      for (var x = 0; x < S; ++x) {
        var j0 = Math.floor(x * nk / S), j1 = Math.max(j0 + 1, Math.floor((x + 1) * nk / S));
        var most = -1;
        for (var i = i0; i < i1; ++i)
          for (var j = j0; j < j1; ++j)
            if (!masked(i, j) && w[i * nk + j] > most) most = w[i * nk + j];
        var rgb = most < 0 ? [236, 236, 236] : RGB[Math.round(Math.min(1, most / top) * 1000)], o = (y * S + x) * 4;
        px[o] = rgb[0]; px[o + 1] = rgb[1]; px[o + 2] = rgb[2]; px[o + 3] = 255;
      }
    }
    ctx.putImageData(img, 0, 0);
  }
  function buildModelView(done) {
    if (!model) { done(); return; }
    var S = thumbSize(), queue = [];
    layers.forEach(function (layer, l) {
      var row = el("div", {"class": "layer-row"}, model.grid);
      el("div", {"class": "layer-name"}, row, "layer " + l);
      layer.heads.forEach(function (head, h) {
        var fig = el("figure", {"data-layer": l, "data-head": h, title: where(l, h)}, row);
        var c = el("canvas", {width: S, height: S}, fig);
        el("figcaption", {}, fig, head.name || "head " + h);
        fig.addEventListener("click", function () { choose(l, h); });
        thumbs.push({fig: fig, canvas: c, l: l, h: h});
        queue.push(thumbs[thumbs.length - 1]);
      });
    });
    markChosen();
    // A few maps per turn, so a long text's page answers at once and fills in.
    (function next() {
      var until = performance.now() + 30;
      while (queue.length && performance.now() < until) {
        var t = queue.shift();
        drawThumb(t.canvas, t.l, t.h);
      }
      if (queue.length) setTimeout(next, 0);
      else done();
    })();
  }
  function markChosen() {
    thumbs.forEach(function (t) { t.fig.classList.toggle("chosen", t.l === state.layer && t.h === state.head); });
  }

  // ---- the neuron view ----
  var neuronMode = "product";
  function cellTd(row, value, most, cls) {
    var c = signedColor(value, most);
    var td = el("td", {"class": (cls || "cell") + (c.dark ? " dark" : ""), title: String(value), style: "background:" + c.fill}, row, fixed(value, 3));
    return td;
  }
  function renderNeuron() {
    if (!nv) return;
    var box = nv.box;
    box.textContent = "";
    var head = layers[state.layer].heads[state.head];
    if (!head.q) { el("p", {"class": "note-small"}, box, "This head has weights only, no query and key vectors."); return; }
    var i = state.query === null ? 0 : state.query, D = head.dim, s = data.scale, w = weights(state.layer, state.head);
    var n = visibleKeys(i), keys = [];
    for (var j = 0; j < n; ++j) keys.push(j);
    var listed = keys;
    if (keys.length > NEURON_KEYS)
      listed = keys.slice().sort(function (a, b) { return w[i * nk + b] - w[i * nk + a] || a - b; })
                   .slice(0, NEURON_KEYS).sort(function (a, b) { return a - b; });
    var q = head.q.subarray(i * D, (i + 1) * D);
    el("p", {"class": "note-small"}, box, where(state.layer, state.head) + "; query “" + shown(Q[i]) + "” (token " + i +
       "), " + D + " numbers a vector; scale " + fixed(s, 6) + (Math.abs(s * Math.sqrt(D) - 1) < 1e-9 ? " = 1/√" + D : "") +
       (listed.length < n ? "; the " + listed.length + " keys with the largest weights of " + n + " (totals are over all " + n + ")" : "") +
       (data.causal ? "; causal: keys up to the query's own" : ""));
    var modes = el("p", {"class": "note-small"}, box, "Show for each key: ");
    [["product", "the products q[d]·k[d]"], ["key", "the key vector k"]].forEach(function (m) {
      var label = el("label", {}, modes);
      var radio = el("input", {type: "radio", name: "neuron-mode", value: m[0]}, label);
      radio.checked = neuronMode === m[0];
      radio.addEventListener("change", function () { neuronMode = m[0]; renderNeuron(); });
      label.appendChild(document.createTextNode(" " + m[1] + "  "));
    });
    // The cells of one colour scale: the largest magnitude among the numbers shown.
    var most = 0, d, k, row;
    for (d = 0; d < D; ++d) most = Math.max(most, Math.abs(q[d]));
    listed.forEach(function (j) {
      for (d = 0; d < D; ++d) most = Math.max(most, Math.abs(neuronMode === "product" ? q[d] * head.k[j * D + d] : head.k[j * D + d]));
    });
    // The sums, the scale and the softmax first, where they are seen without scrolling; then
    // the d numbers they come from.
    var wrap = el("div", {"class": "table-wrap"}, box);
    var table = el("table", {"class": "neuron", id: "neuron-scores"}, wrap);
    var hr = el("tr", {}, el("thead", {}, table));
    el("th", {}, hr, "");
    el("th", {}, hr, "q·k = Σ");
    el("th", {}, hr, "× scale");
    el("th", {}, hr, "softmax");
    for (d = 0; d < D; ++d) el("th", {"class": d === 0 ? "sum" : ""}, hr, "d" + d);
    var body = el("tbody", {}, table);
    row = el("tr", {"class": "query"}, body);
    el("th", {}, row, "q: " + cut(Q[i], 16));
    el("td", {}, row, "");
    el("td", {}, row, "");
    el("td", {}, row, "");
    for (d = 0; d < D; ++d) cellTd(row, q[d], most, d === 0 ? "cell sum" : "cell");
    var total = 0;
    for (j = 0; j < n; ++j) total += w[i * nk + j];
    listed.forEach(function (j) {
      row = el("tr", {"class": "key", "data-key": j}, body);
      el("th", {}, row, (neuronMode === "product" ? "q·k: " : "k: ") + cut(K[j], 16) + " (" + j + ")");
      var dot = 0;
      for (d = 0; d < D; ++d) dot += q[d] * head.k[j * D + d];
      el("td", {"class": "score", title: String(dot), "data-value": String(dot)}, row, fixed(dot, 4));
      el("td", {"class": "scaled", title: String(dot * s), "data-value": String(dot * s)}, row, fixed(dot * s, 4));
      var weight = w[i * nk + j];
      var wt = el("td", {"class": "weight", title: String(weight), "data-value": String(weight)}, row, fixed(weight, 4));
      el("span", {"class": "bar", style: "width:" + Math.round(60 * weight) + "px"}, wt);
      for (d = 0; d < D; ++d) {
        k = head.k[j * D + d];
        cellTd(row, neuronMode === "product" ? q[d] * k : k, most, d === 0 ? "cell sum" : "cell");
      }
    });
    row = el("tr", {"class": "total"}, body);
    el("th", {}, row, "all " + n + " keys");
    el("td", {}, row, "");
    el("td", {}, row, "");
    el("td", {"class": "weight-total", "data-value": String(total)}, row, fixed(total, 4));
    for (d = 0; d < D; ++d) el("td", {"class": d === 0 ? "sum" : ""}, row, "");

    // The output row: Σ_j weight_j · v_j over every key the query sees.
    var out = new Float64Array(D);
    for (j = 0; j < n; ++j)
      for (d = 0; d < D; ++d) out[d] += w[i * nk + j] * head.v[j * D + d];
    var vmost = 0;
    for (d = 0; d < D; ++d) vmost = Math.max(vmost, Math.abs(out[d]));
    listed.forEach(function (j) {
      for (d = 0; d < D; ++d) vmost = Math.max(vmost, Math.abs(w[i * nk + j] * head.v[j * D + d]));
    });
    el("p", {"class": "note-small"}, box, "The output row: each value vector v times its weight, summed (this head's part of the layer's output, before the output projection).");
    var wrap2 = el("div", {"class": "table-wrap"}, box);
    var t2 = el("table", {"class": "neuron", id: "neuron-output"}, wrap2);
    hr = el("tr", {}, el("thead", {}, t2));
    el("th", {}, hr, "");
    el("th", {}, hr, "weight");
    for (d = 0; d < D; ++d) el("th", {"class": d === 0 ? "sum" : ""}, hr, "d" + d);
    body = el("tbody", {}, t2);
    listed.forEach(function (j) {
      row = el("tr", {"class": "value"}, body);
      el("th", {}, row, "weight·v: " + cut(K[j], 16) + " (" + j + ")");
      el("td", {}, row, fixed(w[i * nk + j], 4));
      for (d = 0; d < D; ++d) cellTd(row, w[i * nk + j] * head.v[j * D + d], vmost, d === 0 ? "cell sum" : "cell");
    });
    row = el("tr", {"class": "total output"}, body);
    el("th", {}, row, "output");
    el("td", {}, row, fixed(total, 4));
    for (d = 0; d < D; ++d) cellTd(row, out[d], vmost, d === 0 ? "cell sum" : "cell");
  }

  // ---- the predictions per layer ----
  function renderPredictions() {
    if (!pv) return;
    var box = pv.box, i = state.query === null ? nq - 1 : state.query;
    box.textContent = "";
    el("p", {"class": "note-small"}, box, (data.predictions.about === "next" ? "The words each layer predicts after “" :
        "The words each layer predicts in the place of “") + shown(Q[i]) + "” (token " + i + ").");
    var table = el("table", {"class": "predictions", id: "prediction-table"}, el("div", {"class": "table-wrap"}, box));
    var rows = data.predictions.layers, count = rows[0][i].length;
    var hr = el("tr", {}, el("thead", {}, table));
    el("th", {}, hr, "");
    for (var r = 0; r < count; ++r) el("th", {}, hr, String(r + 1));
    var body = el("tbody", {}, table);
    rows.forEach(function (layer, l) {
      var row = el("tr", {"class": l === rows.length - 1 ? "last" : "", "data-layer": l}, body);
      el("th", {}, row, "layer " + l + (l === rows.length - 1 ? " (the model)" : ""));
      layer[i].forEach(function (p) {
        var td = el("td", {"data-word": p[0], "data-p": String(p[1])}, row, shown(p[0]));
        el("span", {"class": "p"}, td, fixed(p[1], 3));
      });
    });
  }

  // ---- choosing ----
  function describe() {
    showing.textContent = "Showing " + where(state.layer, state.head) +
        (state.query !== null ? "; token " + state.query + " “" + shown(Q[state.query]) + "”" : "");
    if (layerSelect) layerSelect.value = String(state.layer);
    if (headSelect) headSelect.value = String(state.head);
    tokenSelect.value = String(state.query === null ? 0 : state.query);
    document.body.setAttribute("data-layer", state.layer);
    document.body.setAttribute("data-head", state.head);
  }
  function choose(l, h) {
    state.layer = l;
    state.head = h;
    state.overlay = null;
    pinned = null;
    describe();
    markChosen();
    drawHeatmap();
    drawHeadView();
    renderNeuron();
    renderPredictions();
  }
  function setQuery(i) {
    state.query = i;
    describe();
    drawHeatmap();
    pinned = ["query", i];
    focus("query", i);
    renderNeuron();
    renderPredictions();
  }

  // ---- export: SVG built from the same drawing, PNG from that SVG at twice the size ----
  var HEAD_VIEW_STYLE = ".token{font:13px " + FONT + ";dominant-baseline:central}" +
      ".score{font:11px " + FONT + ";fill:#444;dominant-baseline:central}" +
      ".column-title{font:bold 12px " + FONT + ";fill:#666}.token-box{fill:transparent}" +
      ".token-box.focus{stroke:#d62728;stroke-width:1.5}.link{fill:none}";
  function newSvg(width, height) {
    var root = document.createElementNS(NS, "svg");
    root.setAttribute("xmlns", NS);
    root.setAttribute("width", Math.ceil(width));
    root.setAttribute("height", Math.ceil(height));
    root.setAttribute("viewBox", "0 0 " + Math.ceil(width) + " " + Math.ceil(height));
    root.setAttribute("font-family", FONT);
    root.setAttribute("font-size", "11");
    svgEl("rect", {x: 0, y: 0, width: Math.ceil(width), height: Math.ceil(height), fill: "#ffffff"}, root);
    return root;
  }
  function caption(root, text) { svgEl("text", {x: 8, y: 16, "font-size": 13, fill: "#222"}, root, text); }
  function heatmapSvg() {
    var g = geometry(), title = "Attention weights, " + where(state.layer, state.head);
    var legend = {x: g.width + 6, height: Math.max(60, Math.min(200, nq * g.cell))};
    var root = newSvg(Math.max(legend.x + 60, measure.measureText(title).width * 13 / 11 + 24), Math.max(g.height, g.top + legend.height + 10) + 24);
    caption(root, title);
    var body = svgEl("g", {transform: "translate(0,24)"}, root);
    // Up to 256 × 256 cells as rectangles; past that the cells as one embedded bitmap.
    if (nq * nk <= 65536) {
      paintHeatmap(svgPainter(body), g, state.layer, state.head, {ground: true, cells: true, labels: true});
    } else {
      var bitmap = document.createElement("canvas");
      bitmap.width = g.width;
      bitmap.height = g.height;
      paintHeatmap(canvasPainter(bitmap.getContext("2d")), g, state.layer, state.head, {ground: true, cells: true});
      svgEl("image", {x: 0, y: 0, width: g.width, height: g.height, href: bitmap.toDataURL("image/png")}, body);
      paintHeatmap(svgPainter(body), g, state.layer, state.head, {labels: true});
    }
    // The colour legend: 0 at the bottom, the head's largest weight at the top.
    var top = layers[state.layer].heads[state.head].top, steps = 40;
    for (var s = 0; s < steps; ++s)
      svgEl("rect", {"class": "legend", x: legend.x, y: g.top + legend.height * (1 - (s + 1) / steps), width: 12,
                     height: legend.height / steps + 0.5, fill: LUT[Math.round((s + 0.5) / steps * 1000)]}, body);
    svgEl("text", {x: legend.x + 16, y: g.top + 4, fill: "#333", "dominant-baseline": "central"}, body, fixed(top, 3));
    svgEl("text", {x: legend.x + 16, y: g.top + legend.height - 4, fill: "#333", "dominant-baseline": "central"}, body, "0");
    return root;
  }
  function headViewSvg() {
    var width = Number(view.getAttribute("width")), height = Number(view.getAttribute("height"));
    var root = newSvg(width, height + 24);
    caption(root, "Head view, " + (overlay().length > 1 ? (layerName(state.layer) ? layerName(state.layer) + ", " : "") +
        "heads " + overlay().join(", ") : where(state.layer, state.head)));
    svgEl("style", {}, root, HEAD_VIEW_STYLE);
    var body = svgEl("g", {transform: "translate(0,24)"}, root);
    Array.prototype.forEach.call(view.childNodes, function (n) { body.appendChild(n.cloneNode(true)); });
    return root;
  }
  function modelViewSvg() {
    var S = thumbs.length ? thumbs[0].canvas.width : 60, left = 70, gap = 10, label = 16;
    var root = newSvg(left + headCount * (S + gap), 24 + layers.length * (S + label + gap));
    caption(root, "Every layer (row) and head (column)");
    thumbs.forEach(function (t) {
      var x = left + t.h * (S + gap), y = 24 + t.l * (S + label + gap);
      svgEl("image", {x: x, y: y + label, width: S, height: S, href: t.canvas.toDataURL("image/png")}, root);
      svgEl("text", {x: x + S / 2, y: y + label - 4, "text-anchor": "middle", fill: "#555"}, root, t.l === state.layer && t.h === state.head ? "▸ head " + t.h : "head " + t.h);
      if (t.h === 0) svgEl("text", {x: 8, y: y + label + S / 2, "dominant-baseline": "central", fill: "#555"}, root, "layer " + t.l);
    });
    return root;
  }
  // A table as drawn on screen: each cell's box, background and text where the page puts them.
  function tablesSvg(container, title) {
    var base = container.getBoundingClientRect();
    var root = newSvg(container.scrollWidth + 16, base.height + 40);
    caption(root, title);
    var body = svgEl("g", {transform: "translate(8,28)"}, root);
    container.querySelectorAll("table").forEach(function (table) {
      var wrap = table.parentNode, shift = wrap.scrollLeft || 0;
      table.querySelectorAll("th, td").forEach(function (cell) {
        var r = cell.getBoundingClientRect(), st = getComputedStyle(cell);
        var x = r.left - base.left + shift, y = r.top - base.top;
        var bg = st.backgroundColor;
        if (bg && bg !== "rgba(0, 0, 0, 0)" && bg !== "transparent")
          svgEl("rect", {x: x, y: y, width: r.width, height: r.height, fill: bg}, body);
        if (parseFloat(st.borderBottomWidth) > 0)
          svgEl("line", {x1: x, y1: y + r.height, x2: x + r.width, y2: y + r.height, stroke: "#999", "stroke-width": 1}, body);
        var bar = cell.querySelector(".bar");
        // A word and its probability are two pieces of text: keep them apart.
        var text = Array.prototype.filter.call(cell.childNodes, function (n) { return n !== bar; })
            .map(function (n) { return n.textContent; }).join(" ").trim();
        var right = st.textAlign === "right" || st.textAlign === "end";
        if (text)
          svgEl("text", {x: right ? x + r.width - 6 : x + 6, y: y + r.height / 2, "text-anchor": right ? "end" : "start",
                         "dominant-baseline": "central", fill: st.color, "font-size": parseFloat(st.fontSize),
                         "font-weight": st.fontWeight >= 600 ? "bold" : "normal"}, body, text);
        if (bar) {
          var b = bar.getBoundingClientRect();
          svgEl("rect", {x: b.left - base.left + shift, y: b.top - base.top, width: b.width, height: b.height, fill: "#3a7fc4"}, body);
        }
      });
    });
    return root;
  }
  function svgOf(name) {
    if (name === "heatmap") return heatmapSvg();
    if (name === "head-view") return headViewSvg();
    if (name === "model-view" && model) return modelViewSvg();
    var i = state.query === null ? (name === "predictions" ? nq - 1 : 0) : state.query;
    var at = "“" + shown(Q[i]) + "” (token " + i + ")";
    if (name === "neuron-view" && nv) return tablesSvg(nv.box, "Neuron view: " + where(state.layer, state.head) + ", query " + at);
    if (name === "training-curve" && curve) return curve.querySelector("svg").cloneNode(true);
    if (name === "alignment" && alignment) return alignment.querySelector("svg").cloneNode(true);
    if (name === "predictions" && pv)
      return tablesSvg(pv.box, "Predictions layer by layer " + (data.predictions.about === "next" ? "after " : "at ") + at);
    return null;
  }
  function svgText(root) { return new XMLSerializer().serializeToString(root); }
  function pngOf(text, scale, done) {
    var img = new Image();
    img.onload = function () {
      var c = document.createElement("canvas");
      c.width = Math.ceil(img.naturalWidth * scale);
      c.height = Math.ceil(img.naturalHeight * scale);
      var ctx = c.getContext("2d");
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(0, 0, c.width, c.height);
      ctx.drawImage(img, 0, 0, c.width, c.height);
      done(c);
    };
    img.onerror = function () { done(null); };
    img.setAttribute("src", "data:image/svg+xml;base64," + btoa(unescape(encodeURIComponent(text))));
  }
  function fileName(name, ext) {
    return "attn-" + name + (layers.length > 1 ? "-layer" + state.layer : "") + (headCount > 1 ? "-head" + state.head : "") + "." + ext;
  }
  function download(blob, name) {
    var a = el("a", {download: name}, document.body);
    a.setAttribute("href", URL.createObjectURL(blob));
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.getAttribute("href")); a.remove(); }, 1000);
  }
  function save(name, kind) {
    var root = svgOf(name);
    if (!root) return;
    var text = svgText(root);
    if (kind === "svg") { download(new Blob([text], {type: "image/svg+xml"}), fileName(name, "svg")); return; }
    pngOf(text, 2, function (c) { if (c) c.toBlob(function (b) { download(b, fileName(name, "png")); }, "image/png"); });
  }

  // ---- first drawing ----
  describe();
  drawHeatmap();
  drawHeadView();
  var pin = wanted("key", nk) !== null ? ["key", wanted("key", nk)] : wanted("query", nq) !== null ? ["query", state.query] : null;
  if (pin) { pinned = pin; focus(pin[0], pin[1]); }
  renderNeuron();
  renderPredictions();
  document.body.setAttribute("data-render-ms", String(Math.round(performance.now() - started)));
  document.body.setAttribute("data-ready", "1");
  buildModelView(function () {
    document.body.setAttribute("data-model-view-ms", String(Math.round(performance.now() - started)));
    // #export=VIEW puts that view's SVG and PNG (as a data URL) in the page: what the buttons
    // save, for scripts and tests that cannot click.
    var name = hash["export"];
    if (!name) return;
    var root = svgOf(name);
    if (!root) { document.body.setAttribute("data-exported", "none"); return; }
    var text = svgText(root);
    el("pre", {"class": "export", id: "export-svg"}, document.body, text);
    pngOf(text, 2, function (c) {
      el("pre", {"class": "export", id: "export-png"}, document.body, c ? c.toDataURL("image/png") : "");
      document.body.setAttribute("data-exported", c ? "1" : "failed");
    });
  });
  // #view=model|heatmap|head|neuron|predictions|curve|alignment shows that view alone under the controls
  // (a clean picture of it; a button brings the others back).
  var sections = {model: "model-view", heatmap: "heatmap-view", head: "head-view-section",
                  neuron: "neuron-view-section", predictions: "predictions-section", curve: "training-curve-section",
                  alignment: "alignment-section"};
  var alone = sections[hash.view] && document.getElementById(sections[hash.view]);
  if (alone) {
    var hidden = [];
    document.querySelectorAll("section.view, section.steps").forEach(function (s) {
      if (s !== alone) { hidden.push([s, s.style.display]); s.style.display = "none"; }
    });
    var back = el("button", {type: "button", id: "show-all"}, controls, "Show every view");
    back.addEventListener("click", function () {
      hidden.forEach(function (h) { h[0].style.display = h[1]; });
      back.remove();
    });
  }
})();
