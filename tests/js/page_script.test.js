// The page's script (src/viz/page_script.js) under Node: it compiles, it can sit inside a
// <script> element, and its functions that need no page (decoding the weights, the softmax, the
// colours, the labels) give the right answers. Each function is taken from the script's text as
// the page has it and run alone, with the few names it reads given to it.
//   node page_script.test.js [path/to/page_script.js]
"use strict";
const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

const scriptPath = process.argv[2] || path.join(__dirname, "..", "..", "src", "viz", "page_script.js");
const script = fs.readFileSync(scriptPath, "utf8");
const colorScalePath = path.join(__dirname, "..", "..", "src", "viz", "color_scale.cpp");

// The text of `function NAME(...) {...}` at the script's top level (two spaces in): its one line,
// or the lines down to the first "  }" that closes it.
function functionText(name) {
  const start = script.indexOf("\n  function " + name + "(");
  assert.notStrictEqual(start, -1, "no function " + name + " in " + scriptPath);
  const lines = script.slice(start + 1).split("\n");
  if (lines[0].trimEnd().endsWith("}") && lines[0].split("{").length === lines[0].split("}").length)
    return lines[0];
  const end = lines.indexOf("  }");
  assert.notStrictEqual(end, -1, "function " + name + " has no closing line");
  return lines.slice(0, end + 1).join("\n");
}
// The value of `var NAME = ...;` written on one line at the top level.
function constantText(name) {
  const m = script.match(new RegExp("\\n  var " + name + " = ([^\\n]*);"));
  assert.ok(m, "no var " + name + " in " + scriptPath);
  return "var " + name + " = " + m[1] + ";";
}
// The named functions (and constants) run in a context holding `given`; returns them by name.
function load(functions, constants, given) {
  const source = constants.map(constantText).concat(functions.map(functionText)).join("\n") +
      "\n({" + functions.concat(constants).map(function (n) { return n + ": " + n; }).join(", ") + "});";
  return vm.runInNewContext(source, Object.assign({}, given));
}
const atob = function (text) { return Buffer.from(text, "base64").toString("latin1"); };

test("the script compiles as a browser script", function () {
  assert.doesNotThrow(function () { new vm.Script(script, {filename: scriptPath}); });
});

test("the script never writes </, which would end the page's <script> element", function () {
  const at = script.indexOf("</");
  assert.strictEqual(at, -1, "</ on line " + (script.slice(0, at).split("\n").length));
});

test("floats decodes the page's base64 of little-endian float32s", function () {
  const values = [0, 1, -2.5, 3.4028234663852886e38, 1e-45, 0.1];
  const bytes = Buffer.alloc(4 * values.length);
  values.forEach(function (v, i) { bytes.writeFloatLE(v, 4 * i); });
  const f = load(["floats"], [], {atob: atob, Uint8Array: Uint8Array, Float32Array: Float32Array});
  assert.deepStrictEqual(Array.from(f.floats(bytes.toString("base64"))), values.map(Math.fround));
});

// softmax(scale · q·kᵀ) row by row, written out plainly in float64.
function softmaxRows(q, k, nq, nk, D, scale, causal) {
  const rows = [];
  for (let i = 0; i < nq; ++i) {
    const n = causal ? Math.min(i + 1, nk) : nk, scores = [];
    for (let j = 0; j < n; ++j) {
      let dot = 0;
      for (let d = 0; d < D; ++d) dot += q[i * D + d] * k[j * D + d];
      scores.push(dot * scale);
    }
    const top = Math.max.apply(null, scores), e = scores.map(function (s) { return Math.exp(s - top); });
    const sum = e.reduce(function (a, b) { return a + b; }, 0);
    rows.push(e.map(function (x) { return x / sum; }).concat(new Array(nk - n).fill(0)));
  }
  return rows;
}

for (const causal of [false, true]) {
  test("weights is the softmax of scale·q·kᵀ" + (causal ? " under the causal mask" : ""), function () {
    const nq = 3, nk = 3, D = 2, scale = 1 / Math.sqrt(D);
    const q = Float32Array.from([0.5, -1, 2, 0.25, -0.75, 1.5]);
    const k = Float32Array.from([1, 0, -0.5, 2, 0.3, -1.2]);
    const head = {dim: D, q: q, k: k, v: null, given: null, w: null, top: 1};
    const data = {scale: scale, causal: causal};
    const f = load(["visibleKeys", "weights"], [],
                   {layers: [{heads: [head]}], data: data, nq: nq, nk: nk, Float64Array: Float64Array});
    const w = f.weights(0, 0), want = softmaxRows(q, k, nq, nk, D, scale, causal);
    for (let i = 0; i < nq; ++i) {
      let sum = 0;
      for (let j = 0; j < nk; ++j) {
        // Same double arithmetic in another order: a few ulps at most.
        assert.ok(Math.abs(w[i * nk + j] - want[i][j]) <= 4 * Number.EPSILON, "row " + i + " key " + j);
        if (causal && j > i) assert.strictEqual(w[i * nk + j], 0);
        sum += w[i * nk + j];
      }
      assert.ok(Math.abs(sum - 1) <= 4 * Number.EPSILON, "row " + i + " sums to " + sum);
    }
    assert.strictEqual(head.top, Math.max.apply(null, Array.from(w)));
    assert.strictEqual(f.weights(0, 0), w, "computed once, then kept");
  });
}

test("weights keeps the weights a page gives as they are", function () {
  const given = Float32Array.from([0.25, 0.75, 1, 0]);
  const head = {dim: 0, q: null, k: null, v: null, given: given, w: null, top: 1};
  const f = load(["visibleKeys", "weights"], [], {layers: [{heads: [head]}], data: {scale: 1, causal: false},
                                                 nq: 2, nk: 2, Float64Array: Float64Array});
  assert.deepStrictEqual(Array.from(f.weights(0, 0)), [0.25, 0.75, 1, 0]);
  assert.strictEqual(head.top, 1);
});

test("the heatmap's colours start and end at viz/color_scale.cpp's anchors", function () {
  const cpp = fs.readFileSync(colorScalePath, "utf8");
  const block = cpp.slice(cpp.indexOf("anchors = {{"), cpp.indexOf("}};"));
  const anchors = Array.from(block.matchAll(/\{(\d+), (\d+), (\d+)\}/g), function (m) { return m.slice(1).map(Number); });
  assert.strictEqual(anchors.length, 5, "the anchors in " + colorScalePath);
  const f = load(["colorAt"], ["ANCHORS"], {});
  assert.deepStrictEqual(JSON.parse(JSON.stringify(f.ANCHORS)), anchors);
  // Evenly spaced in t: the anchors themselves at 0, 1/4 … 1; halfway between two, their mean.
  anchors.forEach(function (a, i) { assert.deepStrictEqual(Array.from(f.colorAt(i / 4)), a); });
  assert.deepStrictEqual(Array.from(f.colorAt(0.125)), [239, 245, 252]);
  assert.deepStrictEqual(Array.from(f.colorAt(-1)), anchors[0]);
  assert.deepStrictEqual(Array.from(f.colorAt(2)), anchors[4]);
});

test("labels: [MASK] for <mask>, cut to a number of characters (not UTF-16 units) with …", function () {
  const f = load(["shown", "cut"], [], {});
  assert.strictEqual(f.cut("<mask>", 18), "[MASK]");
  assert.strictEqual(f.cut("river", 5), "river");
  assert.strictEqual(f.cut("riverbank", 5), "rive…");
  assert.strictEqual(f.cut("😀😀😀😀😀😀", 4), "😀😀😀…");
});

test("clampInt: a whole number in [lo, hi], lo for anything not a number", function () {
  const f = load(["clampInt"], [], {});
  assert.deepStrictEqual([f.clampInt("3", 0, 5), f.clampInt(9, 0, 5), f.clampInt(-2, 0, 5), f.clampInt(2.7, 0, 5),
                          f.clampInt("x", 0, 5), f.clampInt(undefined, 1, 5)], [3, 5, 0, 2, 0, 1]);
});

test("the hash's numbers: taken when below the count, refused otherwise", function () {
  const f = load(["wanted"], [], {hash: {layer: "1", head: "2", query: "x", key: "-1", extra: "07"}});
  assert.deepStrictEqual([f.wanted("layer", 2), f.wanted("head", 2), f.wanted("query", 9), f.wanted("key", 9),
                          f.wanted("extra", 9), f.wanted("absent", 9)], [1, null, null, null, 7, null]);
});
