// Written for attn; kept in C++ string literals so the library carries them (no asset files to
// install or find at run time).
#include "viz/page_assets.hpp"

namespace attn::viz {

const char* const page_css = R"css(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; color: #222; background: #fff;
       margin: 24px; line-height: 1.4; }
h1 { font-size: 22px; margin: 0 0 6px; }
h2 { font-size: 17px; margin: 28px 0 6px; }
h3 { font-size: 14px; margin: 20px 0 6px; font-weight: normal; }
p.note { margin: 2px 0; color: #444; }
p.hint { margin: 4px 0 10px; color: #666; font-size: 13px; max-width: 420px; }
.pictures { display: flex; flex-wrap: wrap; gap: 32px; align-items: flex-start; }
.controls { margin: 12px 0; font-size: 14px; }
.attn-heatmap .panel.dimmed { opacity: 0.35; }
.attn-heatmap .row-label, .attn-heatmap .cell { cursor: pointer; }
#head-view { font-size: 13px; user-select: none; }
#head-view .token { cursor: pointer; dominant-baseline: central; }
#head-view .token-box { fill: transparent; }
#head-view .token-box.focus { stroke: #d62728; stroke-width: 1.5; }
#head-view .link { stroke: #2a6ab8; fill: none; }
#head-view .score { font-size: 11px; fill: #444; dominant-baseline: central; }
#head-view .column-title { font-size: 12px; fill: #666; font-weight: bold; }
.table-wrap { overflow-x: auto; }
table.matrix { border-collapse: collapse; font-size: 12px; font-variant-numeric: tabular-nums; }
table.matrix th, table.matrix td { padding: 2px 6px; text-align: right; white-space: nowrap; }
table.matrix thead th { border-bottom: 1px solid #999; font-weight: normal; color: #444; }
table.matrix tbody th { text-align: left; font-weight: normal; color: #444;
                        border-right: 1px solid #999; }
table.matrix td.sum, table.matrix th.sum { border-left: 1px solid #999; }
table.matrix .gap { color: #999; text-align: center; }
table.matrix td.dark { color: #fff; }
)css";

const char* const head_view_js = R"js(
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("attn-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var view = document.getElementById("head-view");
  var select = document.getElementById("head-select");
  var panels = document.querySelectorAll(".attn-heatmap .panel");
  var head = 0, pinned = null;
  var ROW = 22, TOP = 30, GAP = 200;

  function make(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function longest(labels) {
    var n = 1;
    labels.forEach(function (s) { n = Math.max(n, Array.from(s).length); });
    return n;
  }

  // Two columns of tokens, queries on the left and keys on the right, and a line for every
  // weight: its opacity is the weight, so a row's lines together carry one unit of ink.
  var links = [], leftBoxes = [], rightBoxes = [], leftScores = [], rightScores = [];
  function draw() {
    while (view.firstChild) view.removeChild(view.firstChild);
    links = []; leftBoxes = []; rightBoxes = []; leftScores = []; rightScores = [];
    var q = data.queries, k = data.keys, w = data.heads[head].weights;
    var leftWidth = longest(q) * 8 + 16, rightWidth = longest(k) * 8 + 16;
    var x1 = 44 + leftWidth, x2 = x1 + GAP;
    view.setAttribute("width", x2 + rightWidth + 44);
    view.setAttribute("height", TOP + Math.max(q.length, k.length) * ROW + 10);
    make("text", {x: x1, y: 16, "text-anchor": "end", "class": "column-title"}, view)
        .textContent = "query";
    make("text", {x: x2, y: 16, "class": "column-title"}, view).textContent = "key";
    var lines = make("g", {}, view);
    function column(labels, x, anchor, side, boxes, scores) {
      labels.forEach(function (label, i) {
        var y = TOP + (i + 0.5) * ROW;
        var width = Array.from(label).length * 8 + 8;
        var bx = anchor === "end" ? x - width + 2 : x - 2;
        var box = make("rect", {x: bx, y: y - ROW / 2 + 2, width: width, height: ROW - 4,
                                rx: 3, "class": "token-box"}, view);
        var text = make("text", {x: anchor === "end" ? x - 2 : x + 2, y: y,
                                 "text-anchor": anchor, "class": "token",
                                 tabindex: 0}, view);
        text.textContent = label;
        var score = make("text", {x: anchor === "end" ? bx - 6 : bx + width + 6, y: y,
                                  "text-anchor": anchor, "class": "score"}, view);
        boxes.push(box); scores.push(score);
        [box, text].forEach(function (e) {
          e.addEventListener("mouseenter", function () { if (pinned === null) focus(side, i); });
          e.addEventListener("mouseleave", function () { if (pinned === null) focus(null, 0); });
          e.addEventListener("click", function () {
            pinned = pinned && pinned[0] === side && pinned[1] === i ? null : [side, i];
            focus(pinned ? side : null, i);
          });
        });
        text.addEventListener("focus", function () { focus(side, i); });
      });
    }
    column(q, x1, "end", "query", leftBoxes, leftScores);
    column(k, x2, "start", "key", rightBoxes, rightScores);
    for (var i = 0; i < q.length; ++i)
      for (var j = 0; j < k.length; ++j)
        links.push({i: i, j: j, w: w[i][j], e: make("line", {
          x1: x1 + 6, y1: TOP + (i + 0.5) * ROW, x2: x2 - 6, y2: TOP + (j + 0.5) * ROW,
          "class": "link"}, lines)});
    panels.forEach(function (p) {
      p.classList.toggle("dimmed", panels.length > 1 && Number(p.dataset.head) !== head);
    });
    focus(null, 0);
  }

  function shade(box, value) {
    box.style.fill = value === null ? "" : "rgba(58, 127, 196, " + Math.min(1, value) + ")";
  }
  // side "query": what token i attends to; side "key": who attends to token i; null: everything.
  // Focused lines are drawn relative to the strongest of them, so that small weights in a long
  // sentence stay visible; the exact weights are printed beside the tokens.
  function focus(side, i) {
    var w = data.heads[head].weights, top = 0;
    links.forEach(function (l) {
      l.on = side === null || (side === "query" ? l.i === i : l.j === i);
      if (l.on) top = Math.max(top, l.w);
    });
    links.forEach(function (l) {
      var t = side === null ? Math.max(l.w, 0) : top > 0 ? Math.max(l.w, 0) / top : 0;
      l.e.style.strokeOpacity = l.on ? t : 0;
      l.e.style.strokeWidth = l.on ? 1 + 3 * t : 0;
    });
    leftBoxes.forEach(function (b, r) {
      b.classList.toggle("focus", side === "query" && r === i);
      shade(b, side === "key" ? w[r][i] : null);
      leftScores[r].textContent = side === "key" ? w[r][i].toFixed(3) : "";
    });
    rightBoxes.forEach(function (b, c) {
      b.classList.toggle("focus", side === "key" && c === i);
      shade(b, side === "query" ? w[i][c] : null);
      rightScores[c].textContent = side === "query" ? w[i][c].toFixed(3) : "";
    });
  }

  function show(h) {
    if (h === head) return;
    head = h; pinned = null;
    if (select) select.value = String(h);
    draw();
  }
  if (select) select.addEventListener("change", function () { show(Number(select.value)); });
  // The heatmap leads too: pointing at a row (or a cell) shows that query in the head view.
  document.querySelectorAll(".attn-heatmap .cell, .attn-heatmap .row-label").forEach(function (e) {
    e.addEventListener("mouseenter", function () {
      var panel = e.closest(".panel");
      show(Number(panel.dataset.head));
      if (pinned === null) focus("query", Number(e.dataset.row));
    });
    e.addEventListener("mouseleave", function () { if (pinned === null) focus(null, 0); });
  });
  draw();
  // A link can open the page on one head and token: page.html#head=1&query=3 (or key=3).
  var wanted = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (part) {
    var kv = part.split("=");
    if (kv.length === 2 && /^[0-9]+$/.test(kv[1])) wanted[kv[0]] = Number(kv[1]);
  });
  if (wanted.head !== undefined && wanted.head < data.heads.length) show(wanted.head);
  ["query", "key"].forEach(function (side) {
    var n = side === "query" ? data.queries.length : data.keys.length;
    if (wanted[side] !== undefined && wanted[side] < n) {
      pinned = [side, wanted[side]];
      focus(side, wanted[side]);
    }
  });
  document.body.setAttribute("data-ready", "1");
})();
)js";

}  // namespace attn::viz
