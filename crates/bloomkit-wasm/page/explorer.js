// The explorer page: draws what bloomkit.wasm answers. Every bit, position, verdict, rate
// and measurement shown comes from the module (crates/bloomkit-wasm/src/api.rs); this file
// lays it out, animates the checks of a query, and times the real filter's build.

import { load } from "./bloomkit.js";

const $ = (id) => document.getElementById(id);
const SVG_NS = "http://www.w3.org/2000/svg";
const SUB = ["₁", "₂", "₃"];
const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
const STEP_MS = reducedMotion ? 120 : 650;

let bk = null;
let teach = null; // the small filter's state, as the module last replied
let focus = null; // the word being shown: { mode: "add" | "query", reply, step }
let run = 0; // bumps to cancel a query's animation

// ---- helpers ----------------------------------------------------------------------------

function svg(name, attrs = {}, text) {
  const e = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function tag(name, attrs = {}, ...children) {
  const e = document.createElement(name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

function strong(text, cls) {
  return tag("strong", cls ? { class: cls } : {}, text);
}

const count = (x) => Number(x).toLocaleString("en-US");

function percent(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  if (x === 0) return "0%";
  const p = x * 100;
  if (p >= 10) return p.toFixed(1) + "%";
  if (p >= 0.1) return p.toFixed(2) + "%";
  return p.toPrecision(2) + "%";
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(2)} MiB`;
}

const words = (list) => list.length === 0 ? "no word" : list.join(", ");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function fail(message) {
  const box = $("load-error");
  box.textContent = message;
  box.hidden = false;
}

// ---- the small filter --------------------------------------------------------------------

function drawFigure() {
  const figure = $("figure");
  const width = Math.max(300, Math.round($("figure-wrap").clientWidth));
  const gap = width < 480 ? 2 : 4;
  const cell = Math.min(40, Math.floor((width - 16 - 15 * gap) / 16));
  const x0 = Math.round((width - (16 * cell + 15 * gap)) / 2);
  const cellX = (p) => x0 + p * (cell + gap);
  const badgeY = 6;
  const badgeH = 28;
  const cellY = 104;
  const height = cellY + cell + 40;
  figure.replaceChildren(...[...figure.children].filter((c) => c.tagName === "title" || c.tagName === "desc"));
  figure.setAttribute("viewBox", `0 0 ${width} ${height}`);
  figure.setAttribute("width", width);
  figure.setAttribute("height", height);

  const reply = focus ? focus.reply : null;
  const positions = reply ? reply.positions : [];
  const shared = focus && focus.mode === "add" ? reply.shared : [false, false, false];
  const step = focus && focus.mode === "query" ? focus.step : 3;
  const stop = focus && focus.mode === "query" ? reply.stopped_at : null;

  // Probe lines and badges first, so the cells draw over the lines' ends.
  if (reply) {
    const badgeW = Math.min(120, Math.floor((width - 24) / 3));
    for (let i = 0; i < 3; i++) {
      const cx = Math.round(width * (2 * i + 1) / 6);
      const p = positions[i];
      let state = "";
      if (focus.mode === "query") {
        if (i < step) state = reply.checks[i].bit ? "ok" : "stop";
        else if (stop !== null && i > stop) state = "skipped";
      }
      const line = svg("line", {
        class: `probe${shared[i] ? " shared" : ""}${state === "skipped" ? " skipped" : ""}`,
        x1: cx, y1: badgeY + badgeH, x2: cellX(p) + cell / 2, y2: cellY,
      });
      const g = svg("g", { class: `badge ${state}`, "data-hash": i + 1, "data-position": p });
      g.append(
        svg("rect", { x: cx - badgeW / 2, y: badgeY, width: badgeW, height: badgeH, rx: 6 }),
        svg("text", { x: cx, y: badgeY + badgeH / 2 }, `h${SUB[i]} → ${p}`),
      );
      figure.append(line, g);
    }
  }

  for (let p = 0; p < 16; p++) {
    const bit = teach.bits[p];
    const classes = ["cell", bit ? "one" : "zero"];
    const probe = positions.indexOf(p);
    if (focus && focus.mode === "add" && probe >= 0 && shared[probe]) classes.push("shared");
    if (focus && focus.mode === "query" && step < 3 && positions[step] === p) classes.push("checking");
    if (stop !== null && step > stop && positions[stop] === p) classes.push("stop");
    const x = cellX(p);
    const rect = svg("rect", {
      class: classes.join(" "), x, y: cellY, width: cell, height: cell, rx: 3,
      "data-index": p, "data-bit": bit,
    });
    const setters = teach.setters[p];
    rect.append(svg("title", {}, `bit ${p} = ${bit}` + (bit ? `, set by ${words(setters)}` : "")));
    figure.append(
      rect,
      svg("text", { class: `bit ${bit ? "one" : "zero"}`, x: x + cell / 2, y: cellY + cell / 2 }, String(bit)),
      svg("text", { class: "index", x: x + cell / 2, y: cellY + cell + 14 }, String(p)),
    );
    if (focus && focus.mode === "add" && probe >= 0 && shared[probe]) {
      figure.append(svg("text", { class: "shared-mark", x: x + cell / 2, y: cellY + cell + 30 }, "▲"));
    }
  }
}

function drawChips() {
  const list = $("chips");
  list.replaceChildren(...teach.words.map((w) => {
    const b = tag("button", { type: "button", class: "chip", "aria-label": `query ${w}` }, w);
    b.addEventListener("click", () => {
      $("word").value = w;
      query(w);
    });
    return tag("li", {}, b);
  }));
}

function setVerdict(parts, attrs = {}) {
  const v = $("verdict");
  v.replaceChildren(...parts);
  for (const name of ["word", "answer", "falsePositive", "stoppedAt", "done", "kind"]) {
    delete v.dataset[name];
  }
  Object.assign(v.dataset, attrs);
}

function hashStep(reply, i) {
  const h = reply.hashes[i];
  return `h${SUB[i]}(${reply.word}) = ${count(h)} → ⌊${count(h)} · 16 / 2²¹⌋ = ${reply.positions[i]}`;
}

function add(word) {
  run++;
  const reply = bk.teachAdd(word);
  if (reply.error) {
    setVerdict([tag("span", { class: "error" }, reply.error)]);
    return;
  }
  teach = reply.state;
  focus = { mode: "add", reply, step: 3 };
  $("steps").replaceChildren(...[0, 1, 2].map((i) => {
    const p = reply.positions[i];
    const before = reply.shared[i]
      ? `bit ${p} was already 1 (set by ${words(teach.setters[p].filter((w) => w !== word))}): shared`
      : `bit ${p} set to 1`;
    return tag("li", {}, `${hashStep(reply, i)}: ${before}.`);
  }));
  const all = reply.shared.every((s) => s);
  const parts = reply.repeated
    ? [strong(word), " was already added: its bits are all 1, nothing changes."]
    : all
      ? [strong(word), " added, but all three of its bits were already 1: the filter cannot tell it from a word it holds, and nothing changed."]
      : [strong(word), ` added: bits ${reply.positions.join(", ")} are now 1.`];
  setVerdict(parts, { word, kind: "add", done: "1" });
  drawFigure();
  drawChips();
}

async function query(word) {
  const me = ++run;
  const reply = bk.teachQuery(word);
  if (reply.error) {
    setVerdict([tag("span", { class: "error" }, reply.error)]);
    return;
  }
  focus = { mode: "query", reply, step: 0 };
  $("steps").replaceChildren();
  setVerdict([`Querying `, strong(word), `: checking its three bits in turn…`], { word, kind: "query" });
  drawFigure();
  const last = reply.stopped_at === null ? 2 : reply.stopped_at;
  for (let i = 0; i <= last; i++) {
    await sleep(STEP_MS);
    if (me !== run) return;
    const c = reply.checks[i];
    focus.step = i + 1;
    const said = c.bit
      ? `bit ${c.position} is 1 (set by ${words(c.setters)}).`
      : `bit ${c.position} is 0: no word added sets it, so the query stops here.`;
    $("steps").append(tag("li", {}, `${hashStep(reply, i)}: ${said}`));
    drawFigure();
  }
  if (me !== run) return;
  const attrs = {
    word, kind: "query", done: "1",
    answer: reply.maybe ? "maybe" : "no",
    falsePositive: String(reply.false_positive),
    stoppedAt: reply.stopped_at === null ? "" : String(reply.stopped_at),
  };
  if (!reply.maybe) {
    const p = reply.checks[reply.stopped_at].position;
    setVerdict([strong("Definitely not", "no"), `: bit ${p} is 0, which proves `, strong(word),
      ` was never added.`], attrs);
  } else if (reply.false_positive) {
    const by = reply.checks.map((c) => `bit ${c.position} by ${words(c.setters)}`).join("; ");
    setVerdict([strong("Maybe", "maybe"), " — and that is a ", strong("false positive", "fp"), ": ",
      strong(word), ` was never added. Its three bits were set by other words (${by}). The filter keeps only bits, not words, so it cannot know.`], attrs);
  } else {
    setVerdict([strong("Maybe", "maybe"), ": all three bits are 1, and ", strong(word),
      " was added, so this one is right. A Bloom filter never says no to a word it holds."], attrs);
  }
}

function reset() {
  run++;
  teach = bk.teachReset();
  focus = null;
  $("steps").replaceChildren();
  setVerdict([`Back to the start: ${words(teach.words)}.`]);
  drawFigure();
  drawChips();
}

// ---- the rate against k --------------------------------------------------------------------

// A chart with a linear x axis and a logarithmic y axis (rates), drawn into `svgEl`.
// series: [{ points: [[x, y]], cls, line, dots, label }]; marks: [{ x, label }].
function logChart(svgEl, wrap, { xMin, xMax, xTicks, xLabel, series, marks = [], current = null }) {
  const width = Math.max(300, Math.round(wrap.clientWidth));
  const height = Math.round(Math.min(340, Math.max(220, width * 0.5)));
  const left = 56, right = 16, top = 14, bottom = 44;
  const ys = series.flatMap((s) => s.points.map((p) => p[1])).filter((y) => y > 0);
  let lo = Math.floor(Math.log10(Math.min(...ys, 0.5)));
  let hi = Math.ceil(Math.log10(Math.max(...ys, 1e-9)));
  if (hi > 0) hi = 0;
  if (hi - lo < 1) lo = hi - 1;
  const X = (x) => left + (x - xMin) / (xMax - xMin || 1) * (width - left - right);
  const Y = (y) => top + (hi - Math.log10(Math.max(y, 10 ** lo))) / (hi - lo) * (height - top - bottom);
  const keep = [...svgEl.children].filter((c) => c.tagName === "title");
  svgEl.replaceChildren(...keep);
  svgEl.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svgEl.setAttribute("width", width);
  svgEl.setAttribute("height", height);
  for (let e = lo; e <= hi; e++) {
    const y = Y(10 ** e);
    svgEl.append(svg("line", { class: "grid", x1: left, x2: width - right, y1: y, y2: y }),
      svg("text", { class: "tick", x: left - 6, y: y + 4, "text-anchor": "end" }, percent(10 ** e)));
  }
  for (const x of xTicks) {
    svgEl.append(svg("line", { class: "grid", x1: X(x), x2: X(x), y1: top, y2: height - bottom }),
      svg("text", { class: "tick", x: X(x), y: height - bottom + 16, "text-anchor": "middle" }, String(x)));
  }
  svgEl.append(
    svg("line", { class: "axis", x1: left, x2: width - right, y1: height - bottom, y2: height - bottom }),
    svg("line", { class: "axis", x1: left, x2: left, y1: top, y2: height - bottom }),
    svg("text", { class: "axis-label", x: (left + width - right) / 2, y: height - 8, "text-anchor": "middle" }, xLabel),
    svg("text", { class: "axis-label", x: 12, y: top + (height - top - bottom) / 2, "text-anchor": "middle",
      transform: `rotate(-90 12 ${top + (height - top - bottom) / 2})` }, "false-positive rate"),
  );
  for (const m of marks) {
    if (m.x < xMin || m.x > xMax) continue;
    svgEl.append(svg("line", { class: "optimum", x1: X(m.x), x2: X(m.x), y1: top, y2: height - bottom }),
      svg("text", { class: "optimum-label", x: Math.min(X(m.x) + 4, width - right - 150), y: top + 12 }, m.label));
  }
  let legendY = height - bottom - 10;
  for (const s of series) {
    const pts = s.points.filter((p) => p[1] > 0);
    if (s.line && pts.length > 1) {
      svgEl.append(svg("polyline", { class: `series-${s.cls}`, points: pts.map((p) => `${X(p[0])},${Y(p[1])}`).join(" ") }));
    }
    if (s.dots) {
      for (const p of pts) svgEl.append(svg("circle", { class: `dot-${s.cls}`, cx: X(p[0]), cy: Y(p[1]), r: 3.5 }));
    }
    if (s.label) {
      svgEl.append(svg("circle", { class: `dot-${s.cls}`, cx: width - right - 150, cy: legendY - 4, r: 4 }),
        svg("text", { class: "key-label", x: width - right - 140, y: legendY }, s.label));
      legendY -= 16;
    }
  }
  if (current) {
    svgEl.append(svg("circle", { class: "dot-current", cx: X(current[0]), cy: Y(current[1]), r: 6 }));
  }
}

function drawCurve() {
  const m = Number($("m").value), n = Number($("n").value), k = Number($("k").value);
  $("m-out").value = m; $("n-out").value = n; $("k-out").value = k;
  const c = bk.curve(m, n, k, 64);
  if (c.error) {
    $("formula").textContent = c.error;
    return;
  }
  const kMax = Math.min(64, Math.max(12, k + 2, Math.ceil(c.optimum_k * 2)));
  const step = kMax <= 16 ? 1 : kMax <= 32 ? 2 : 5;
  const ticks = [];
  for (let t = step === 1 ? 1 : step; t <= kMax; t += step) ticks.push(t);
  if (step !== 1) ticks.unshift(1);
  logChart($("curve"), $("curve-wrap"), {
    xMin: 1, xMax: kMax, xTicks: ticks, xLabel: "k, hash functions",
    series: [{ points: c.points.filter((p) => p[0] <= kMax), cls: "predicted", line: true, dots: true }],
    marks: [{ x: c.optimum_k, label: `k* = (m/n)·ln 2 = ${c.optimum_k.toFixed(2)}` }],
    current: [k, c.rate],
  });
  const f = $("formula");
  f.replaceChildren(
    `(1 − e^(−kn/m))^k = (1 − e^(−${k}·${n}/${m}))^${k} = `, strong(percent(c.rate)),
    tag("br"),
    `optimum k* = (m/n)·ln 2 = ${c.optimum_k.toFixed(2)}, where the rate is 2^(−k*) = ${percent(c.optimum_rate)}; `,
    `the library would choose k = ${c.best_k}.`,
  );
  f.dataset.rate = String(c.rate);
}

// ---- the real filter -----------------------------------------------------------------------

let fillPoints = []; // measurements at each overfill factor, for the chart
let kinds = [];

function showMeasurement(r, ms) {
  const dl = $("real-results");
  const row = (name, value) => [tag("dt", {}, name), tag("dd", {}, value)];
  const kind = kinds.find((k) => k.name === r.kind);
  dl.replaceChildren(
    ...row("kind", r.kind),
    ...row("keys", `${count(r.inserted)} held, ${count(r.planned)} planned`),
    ...row("bytes", `${bytes(r.memory_bytes)} (${count(r.memory_bytes)} B)`),
    ...row("bits per key", r.bits_per_key.toFixed(2)),
    ...row("target rate", percent(r.target)),
    ...row("predicted rate", percent(r.predicted)),
    ...row("measured rate", `${percent(r.measured)} (${count(r.false_positives)} of ${count(r.absent_keys)} absent keys said maybe)`),
    ...row("fill", `${percent(r.fill)} (${r.fill_meaning})`),
    ...row("keys added and found", r.false_negatives === 0 ? `all ${count(r.inserted)}` : `${count(r.false_negatives)} MISSED: a bug, please report it`),
    ...(ms === undefined ? [] : row("time in this tab", `${count(Math.round(ms))} ms to build, fill, probe and check`)),
  );
  dl.hidden = false;
  Object.assign(dl.dataset, {
    kind: r.kind, planned: String(r.planned), inserted: String(r.inserted), measured: String(r.measured), predicted: String(r.predicted),
    falseNegatives: String(r.false_negatives), ...(ms === undefined ? {} : { ms: String(ms) }),
  });
  $("real-parameters").replaceChildren(...r.parameters.map(([name, value]) =>
    tag("tr", {}, tag("td", {}, name), tag("td", {}, value))));
  $("real-parameters-box").hidden = false;
  $("overfill-box").hidden = false;
  const note = $("overfill-note");
  if (kind && kind.static) {
    note.textContent = `A ${r.kind} filter is static: it is built for exactly its keys, so it cannot be overfilled. Build one for more keys instead.`;
    $("overfill").disabled = true;
  } else if (r.full_at !== null) {
    note.textContent = `Full at ${count(r.full_at)} keys (${(r.full_at / r.planned).toFixed(2)}× planned): a cuckoo filter refuses keys it has no room for, so it holds no more.`;
    $("overfill").disabled = false;
  } else {
    note.textContent = r.kind === "scalable" ? "A scalable filter adds a layer when one fills, so its rate stays under the target." : "";
    $("overfill").disabled = false;
  }
}

function drawFill() {
  // Placed by the keys the filter holds: a full cuckoo filter stays where it filled up.
  const held = (r) => r.inserted / r.planned;
  const pts = [...fillPoints].sort((a, b) => held(a) - held(b));
  logChart($("fill-chart"), $("fill-wrap"), {
    xMin: 1, xMax: 4, xTicks: [1, 1.5, 2, 2.5, 3, 3.5, 4], xLabel: "keys held / keys planned",
    series: [
      { points: pts.map((r) => [held(r), r.predicted]), cls: "predicted", line: true, dots: true, label: "predicted" },
      { points: pts.map((r) => [held(r), r.measured]), cls: "measured", line: false, dots: true, label: "measured" },
    ],
  });
}

function absentKeysFor(keys) {
  return Math.min(4000000, Math.max(100000, keys));
}

function build() {
  const kind = $("kind").value;
  const keys = Number($("keys").value);
  const rate = Number($("rate").value);
  const status = $("real-status");
  status.textContent = `Building a ${kind} filter for ${count(keys)} keys at ${percent(rate)}…`;
  delete status.dataset.done;
  $("build").disabled = true;
  // Let the status paint before the module takes the thread.
  setTimeout(() => {
    const t0 = performance.now();
    const r = bk.labBuild(kind, keys, rate, absentKeysFor(keys));
    const ms = performance.now() - t0;
    $("build").disabled = false;
    if (r.error) {
      status.replaceChildren(tag("span", { class: "error" }, r.error));
      status.dataset.done = "error";
      return;
    }
    status.textContent = `Built, filled, probed and checked in ${count(Math.round(ms))} ms.`;
    status.dataset.done = "1";
    $("overfill").value = "1";
    $("overfill-out").value = "1.00×";
    fillPoints = [r];
    showMeasurement(r, ms);
    drawFill();
  }, 30);
}

let pendingFill = null;
const FILL_STEP = 0.25;

// Measures the filter at the slider's factor, and first at every quarter step below it not
// measured yet, so the chart fills in as the slider moves.
function overfill() {
  const factor = Number($("overfill").value);
  $("overfill-out").value = `${factor.toFixed(2)}×`;
  if (pendingFill !== null) return;
  // Coalesce a slider drag into one round of measurements per frame.
  pendingFill = requestAnimationFrame(() => {
    pendingFill = null;
    const target = Number($("overfill").value);
    const absentKeys = absentKeysFor(Number($("real-results").dataset.planned || 0));
    const measured = new Set(fillPoints.map((p) => p.factor));
    const factors = [];
    for (let f = 1 + FILL_STEP; f < target; f += FILL_STEP) {
      if (!measured.has(f)) factors.push(f);
    }
    factors.push(target);
    let last = null;
    for (const f of factors) {
      const r = bk.labFill(f, absentKeys);
      if (r.error) {
        $("overfill-note").textContent = r.error;
        return;
      }
      fillPoints = fillPoints.filter((p) => p.factor !== f).concat([r]);
      last = r;
    }
    showMeasurement(last);
    drawFill();
  });
}

// ---- start -------------------------------------------------------------------------------

async function start() {
  try {
    const response = await fetch("bloomkit.wasm");
    const size = Number(response.headers.get("content-length"));
    bk = await load(response);
    $("wasm-size").textContent = size ? bytes(size) : "loaded";
  } catch (e) {
    $("wasm-size").textContent = "not loaded";
    fail(`The page could not load bloomkit.wasm (${e.message}). Run it from \`bloomkit explore\`.`);
    return;
  }
  teach = bk.teachState();
  const fp = teach.false_positive_word;
  if (fp) {
    $("play").textContent = `Play: ${fp} is a false positive`;
    $("play").disabled = false;
    $("fp-word-2").textContent = fp;
  }
  kinds = bk.kinds();
  $("kind").replaceChildren(...kinds.map((k) => tag("option", { value: k.name }, k.name)));
  const summarise = () => {
    const k = kinds.find((k) => k.name === $("kind").value);
    $("kind-summary").textContent = k ? `${k.name}: ${k.summary}.` : "";
  };
  summarise();

  $("word-form").addEventListener("submit", (e) => {
    e.preventDefault();
    add($("word").value.trim());
  });
  $("query").addEventListener("click", () => query($("word").value.trim()));
  $("reset").addEventListener("click", reset);
  $("play").addEventListener("click", () => {
    reset();
    $("word").value = fp;
    query(fp);
  });
  for (const id of ["m", "n", "k"]) $(id).addEventListener("input", drawCurve);
  $("real-form").addEventListener("submit", (e) => {
    e.preventDefault();
    build();
  });
  $("kind").addEventListener("change", summarise);
  $("overfill").addEventListener("input", overfill);
  let resize = null;
  window.addEventListener("resize", () => {
    cancelAnimationFrame(resize);
    resize = requestAnimationFrame(() => {
      drawFigure();
      drawCurve();
      if (fillPoints.length) drawFill();
    });
  });

  drawFigure();
  drawChips();
  drawCurve();
  document.body.dataset.ready = "1";
}

start();
