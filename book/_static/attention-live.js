/* Live attention: the book's trained model, run in the reader's browser.
 *
 * Public, documented test hook (see book/_ext/live_widgets.py):
 *   window.attentionLive.forward(modelName, tokenIds) -> {logits, weights}
 *     modelName: a weights file's name without ".json" ("learned");
 *     logits: T x V numbers; weights[layer][head]: T x T numbers.
 *   window.attentionLive.simpleAttention(inputs, query) -> {scores, weights, context}
 *     section 3.3's attention without trainable weights, for one query row.
 * The widgets draw from these two functions and nothing else. Numbers are
 * float64; the weights come from window.attentionLiveData (one script per
 * weights file), the heatmaps' colours from the widget's data-colors.
 * A widget <div data-attention-live="name ..."> is drawn by the widget of
 * its first file's declared kind ("learned" or "running-example"). Its
 * visible words come from the page (a hidden list, translated like the
 * page's text, with the id "<name>-words"): <li><code>key</code> text</li>.
 */
(function () {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";

  // -- The forward pass, as attention.TinyAttentionModel computes it ----------
  function dot(a, b, from, to) {
    let s = 0;
    for (let k = from; k < to; k++) s += a[k] * b[k];
    return s;
  }
  function linear(weight, bias, x) { // nn.Linear: weight (out, in), bias (out)
    return weight.map((row, o) => dot(row, x, 0, x.length) + (bias ? bias[o] : 0));
  }
  function softmax(row) {
    const max = Math.max(...row);
    const e = row.map((v) => Math.exp(v - max));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / sum);
  }
  function model(name) {
    const m = (window.attentionLiveData || {})[name];
    if (!m) throw new Error(`attentionLive: no weights named "${name}"`);
    return m;
  }
  function forward(name, tokenIds) {
    const { kind, config, state_dict: sd } = model(name);
    if (kind !== "learned") {
      throw new TypeError(`attentionLive: "${name}" is a ${kind} export, not a learned model`);
    }
    const T = tokenIds.length;
    if ((config.num_layers ?? 1) !== 1) {
      throw new RangeError(`one attention layer only, got ${config.num_layers}`);
    }
    if (!Array.isArray(tokenIds) || T < 1 || T > config.context_length) {
      throw new RangeError(`tokenIds: 1 to ${config.context_length} ids, got ${T}`);
    }
    for (const t of tokenIds) {
      if (!Number.isInteger(t) || t < 0 || t >= config.vocab_size) {
        throw new RangeError(`token ids lie in [0, ${config.vocab_size}), got ${t}`);
      }
    }
    const heads = config.num_heads, hd = config.d_model / heads;
    const pos = sd["pos_emb.weight"]; // absent without positions
    const x = tokenIds.map((t, i) => sd["tok_emb.weight"][t].map(
      (v, k) => (config.use_positions ? v + pos[i][k] : v)));
    const proj = (w) => x.map((r) => linear(sd[`layers.0.${w}.weight`], sd[`layers.0.${w}.bias`], r));
    const q = proj("W_query"), k = proj("W_key"), v = proj("W_value");
    const context = x.map(() => new Array(config.d_model).fill(0)); // (T, d)
    const weights = [];
    for (let h = 0; h < heads; h++) {
      const from = h * hd, to = from + hd;
      const w = q.map((qi, i) => softmax(k.map((kj, j) => (sd["layers.0.mask"][i][j]
        ? -Infinity : dot(qi, kj, from, to) / Math.sqrt(hd)))));
      w.forEach((row, i) => row.forEach((a, j) => {
        for (let c = from; c < to; c++) context[i][c] += a * v[j][c];
      }));
      weights.push(w);
    }
    const out = context.map((r) => linear(sd["layers.0.out_proj.weight"], sd["layers.0.out_proj.bias"], r));
    const logits = out.map((r) => linear(sd["out_head.weight"], sd["out_head.bias"], r));
    return { logits, weights: [weights] };
  }
  function simpleAttention(inputs, query) {
    const scores = inputs.map((x) => dot(x, inputs[query], 0, x.length));
    const weights = softmax(scores);
    const context = inputs[0].map((_, d) => weights.reduce((s, a, j) => s + a * inputs[j][d], 0));
    return { scores, weights, context };
  }

  // -- Small helpers for the page ---------------------------------------------------
  function el(tag, attrs = {}, ...children) {
    const node = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4))
      : document.createElement(tag);
    for (const [a, v] of Object.entries(attrs)) node.setAttribute(a, v);
    node.append(...children);
    return node;
  }
  function words(root, name) { // key -> text, from the widget's own translated list
    const found = {};
    const list = document.getElementById(`${name}-words`);
    if (!list) throw new Error(`attentionLive: no word list "${name}-words" on the page`);
    for (const li of list.querySelectorAll("li")) {
      const key = li.querySelector("code").textContent;
      found[key] = li.textContent.replace(key, "").trim();
    }
    const say = (key, fill = {}) => {
      if (!(key in found)) throw new Error(`attentionLive: no text "${key}" in "${name}-words"`);
      return found[key].replace(/\{(\w+)\}/g, (_, n) => fill[n]);
    };
    say.colours = root.dataset.colors.split(",");
    return say;
  }
  let uid = 0;
  const id = (stem) => `attention-live-${stem}-${++uid}`;
  const fixed = (v, n) => (Object.is(Math.round(v * 10 ** n), -0) ? 0 : v).toFixed(n);

  // -- A heatmap like attention.plotting.heatmap: colours over [min, max] ------
  function heatmap(matrix, labels, title, say, readout) {
    const T = matrix.length, cell = 28, left = 60, top = 22, bottom = 60;
    const size = left + T * cell + 4, mid = T * cell / 2;
    const svg = el("svg:svg", { viewBox: `0 0 ${size} ${top + T * cell + bottom}`,
      role: "grid", "aria-label": title, class: "al-heatmap" });
    const flat = matrix.flat(), lo = Math.min(...flat), hi = Math.max(...flat);
    const span = hi - lo || 1;
    const colours = say.colours;
    svg.append(el("svg:text", { x: left + mid, y: 14, class: "al-title", "aria-hidden": "true" }, title),
      el("svg:text", { x: left + mid, y: top + T * cell + bottom - 4, class: "al-axis",
        "aria-hidden": "true" }, say("keys")),
      el("svg:text", { x: 10, y: top + mid, class: "al-axis", "aria-hidden": "true",
        transform: `rotate(-90 10 ${top + mid})` }, say("queries")));
    const cells = [];
    matrix.forEach((row, i) => {
      const g = el("svg:g", { role: "row" });
      row.forEach((w, j) => {
        const shade = Math.min(255, Math.floor(((w - lo) / span) * 256));
        const dark = (Number(w.toFixed(2)) - lo) / span > 0.6;
        const label = say("cell", { query: labels[i], key: labels[j], weight: w.toFixed(6) });
        const c = el("svg:g", { role: "gridcell", tabindex: -1, "aria-label": label,
          transform: `translate(${left + j * cell},${top + i * cell})` },
        el("svg:rect", { width: cell, height: cell, fill: colours[shade] }),
        el("svg:text", { x: cell / 2, y: cell / 2 + 3, class: dark ? "al-on-dark" : "",
          "aria-hidden": "true" }, w.toFixed(2)),
        el("svg:title", {}, label));
        const show = () => { readout.textContent = label; };
        c.addEventListener("mouseenter", show);
        c.addEventListener("focus", () => {
          cells.flat().forEach((o) => o.setAttribute("tabindex", -1));
          c.setAttribute("tabindex", 0);
          show();
        });
        g.append(c);
        (cells[i] ||= []).push(c);
      });
      svg.append(g);
    });
    cells[0][0].setAttribute("tabindex", 0);
    svg.addEventListener("keydown", (e) => { // arrow keys move between cells
      const at = e.target.closest("[role=gridcell]");
      if (!at) return;
      let i = cells.findIndex((r) => r.includes(at)), j = cells[i].indexOf(at);
      const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
      if (e.key === "Home") j = 0;
      else if (e.key === "End") j = T - 1;
      else if (moves[e.key]) { i += moves[e.key][0]; j += moves[e.key][1]; } else return;
      e.preventDefault();
      cells[Math.max(0, Math.min(T - 1, i))][Math.max(0, Math.min(T - 1, j))].focus();
    });
    labels.forEach((l, n) => {
      svg.append(el("svg:text", { x: left - 4, y: top + n * cell + cell / 2 + 3,
        class: "al-label", "text-anchor": "end", "aria-hidden": "true" }, l));
      const x = left + n * cell + cell / 2, y = top + T * cell + 6;
      svg.append(el("svg:text", { x, y, class: "al-label", "text-anchor": "end",
        transform: `rotate(-45 ${x} ${y})`, "aria-hidden": "true" }, l));
    });
    return svg;
  }

  // -- Widget 1: the trained models of "Attention that has learned" -------------
  function learnedWidget(root) {
    const [name, blind] = root.dataset.attentionLive.split(/\s+/);
    const say = words(root, name);
    const config = model(name).config;
    const ask = say("sequence", { max: config.context_length, vmax: config.vocab_size - 1 });
    const input = el("input", { type: "text", id: id("tokens"), inputmode: "numeric",
      autocomplete: "off", spellcheck: "false", value: root.dataset.tokens.split(",").join(" ") });
    const status = el("p", { class: "al-status", role: "status" });
    const random = el("button", { type: "button" }, say("random"));
    const toggle = el("input", { type: "checkbox", id: id("compare") });
    const panels = el("div", { class: "al-models" });
    root.append(el("div", { class: "al-controls" },
      el("label", { for: input.id }, ask), el("div", { class: "al-row" }, input, random),
      status, el("div", { class: "al-row" }, toggle, el("label", { for: toggle.id }, say("compare")))),
    panels);
    const draw = (ids) => {
      panels.replaceChildren();
      const labels = ids.map((t, i) => `${i}:${t}`);
      for (const [m, key] of [[name, "with"], [blind, "without"]]) {
        if (m === blind && !toggle.checked) continue;
        const { logits, weights } = forward(m, ids);
        const readout = el("p", { class: "al-readout", "aria-live": "polite" }, say("hint"));
        const maps = weights[0].map((w, h) => heatmap(w, labels, say("head", { h }), say, readout));
        const table = el("table", { class: "al-predictions" }, el("caption", {}, say("caption")));
        const best = logits.map((r) => r.indexOf(Math.max(...r)));
        const rows = [["position", ids.map((_, i) => i)], ["token", ids],
          ["previous", ids.map((_, i) => (i ? ids[i - 1] : "–"))], ["prediction", best]];
        for (const [rowKey, values] of rows) {
          table.append(el("tr", {}, el("th", { scope: "row" }, say(rowKey)),
            ...values.map((v) => el("td", {}, String(v)))));
        }
        panels.append(el("section", { class: "al-model", "aria-label": say(key) },
          el("p", { class: "al-model-title" }, say(key)), el("div", { class: "al-maps" }, ...maps),
          readout, el("div", { class: "al-scroll", tabindex: 0, role: "region",
            "aria-label": say("caption") }, table)));
      }
      window.attentionLive.timing.firstHeatmap ??= performance.now();
    };
    let current = input.value.split(" ").map(Number);
    const read = () => {
      const parts = input.value.trim().split(/[\s,]+/);
      const ids = parts.map(Number);
      const ok = parts[0] !== "" && ids.length <= config.context_length
        && ids.every((t) => Number.isInteger(t) && t >= 0 && t < config.vocab_size);
      input.setAttribute("aria-invalid", String(!ok));
      status.textContent = ok ? "" : ask;
      if (ok) draw((current = ids));
    };
    input.addEventListener("input", read);
    random.addEventListener("click", () => {
      const T = 2 + Math.floor(Math.random() * (config.context_length - 1));
      input.value = Array.from({ length: T },
        () => Math.floor(Math.random() * config.vocab_size)).join(" ");
      read();
    });
    toggle.addEventListener("change", () => draw(current));
    draw(current);
  }

  // -- Widget 2: section 3.3's running example ------------------------------------
  function runningExampleWidget(root) {
    const name = root.dataset.attentionLive;
    const say = words(root, name);
    const { config, state_dict: sd } = model(name);
    const original = sd.inputs.map((r) => r.slice());
    const inputs = sd.inputs.map((r) => r.slice());
    const names = config.words;
    const group = id("query");
    const queries = el("fieldset", { class: "al-row" }, el("legend", {}, say("query")),
      ...names.map((w, i) => {
        const r = el("input", { type: "radio", name: group, id: `${group}-${i}`, value: i });
        r.checked = i === Number(root.dataset.query);
        return el("span", {}, r, el("label", { for: r.id }, w));
      }));
    const pick = el("select", { id: id("token") }, ...names.map((w, i) => el("option", { value: i }, w)));
    const sliders = original[0].map((_, d) => el("input", { type: "range", min: -1, max: 1,
      step: 0.01, id: id("dim"), "aria-label": say("dimension", { d: d + 1 }) }));
    const shown = sliders.map(() => el("output", {}));
    const reset = el("button", { type: "button" }, say("reset"));
    const editor = el("fieldset", {}, el("legend", {}, say("edit")),
      el("div", { class: "al-row" }, el("label", { for: pick.id }, say("token")), pick, reset),
      ...sliders.map((s, d) => el("div", { class: "al-row al-slider" },
        el("label", { for: s.id }, say("dimension", { d: d + 1 })), s, shown[d])));
    const out = el("div", { class: "al-results", "aria-live": "polite" });
    root.append(el("div", { class: "al-controls" }, queries, editor), out);
    const bars = (key, values, digits) => {
      const w = 320, bar = 24, top = 20, max = Math.max(...values.map(Math.abs), 1e-9);
      const svg = el("svg:svg", { viewBox: `0 0 ${w} ${top + values.length * bar}`,
        class: "al-bars", "data-live": key, role: "img",
        "aria-label": `${say(key)}: ${values.map((v, j) => `${names[j]} ${fixed(v, digits)}`).join(", ")}` });
      svg.append(el("svg:text", { x: 0, y: 12, class: "al-title" }, say(key)));
      values.forEach((v, j) => {
        const y = top + j * bar, length = (Math.abs(v) / max) * (w - 150);
        svg.append(el("svg:text", { x: 66, y: y + 16, "text-anchor": "end", class: "al-label" }, names[j]),
          el("svg:rect", { x: 72, y: y + 3, width: length, height: bar - 6,
            fill: say.colours[Math.min(255, 96 + Math.floor((Math.abs(v) / max) * 159))] }),
          el("svg:text", { x: 76 + length, y: y + 16, class: "al-value" }, fixed(v, digits)));
      });
      return svg;
    };
    const update = () => {
      const query = Number(root.querySelector(`input[name=${group}]:checked`).value);
      const token = Number(pick.value);
      sliders.forEach((s, d) => { s.value = inputs[token][d]; shown[d].textContent = fixed(inputs[token][d], 2); });
      const { scores, weights, context } = simpleAttention(inputs, query);
      out.replaceChildren(bars("scores", scores, 4), bars("weights", weights, 4),
        el("p", { class: "al-context", "data-live": "context" }, `${say("context", { word: names[query] })} `,
          el("code", {}, `[${context.map((v) => fixed(v, 4)).join(", ")}]`)));
      window.attentionLive.timing.firstHeatmap ??= performance.now();
    };
    root.addEventListener("change", update);
    sliders.forEach((s, d) => s.addEventListener("input", () => {
      inputs[Number(pick.value)][d] = Number(s.value);
      update();
    }));
    reset.addEventListener("click", () => {
      original.forEach((r, i) => { inputs[i] = r.slice(); });
      update();
    });
    pick.value = root.dataset.query;
    update();
  }

  // Each export declares its kind (attention.live.export); the kind picks the widget.
  const WIDGETS = { learned: learnedWidget, "running-example": runningExampleWidget };

  window.attentionLive = { forward, simpleAttention, timing: {} };
  const start = () => {
    window.attentionLive.timing.start = performance.now(); // DOM ready
    for (const root of document.querySelectorAll("[data-attention-live]")) {
      const name = root.dataset.attentionLive.split(/\s+/)[0];
      const kind = model(name).kind;
      if (!Object.hasOwn(WIDGETS, kind)) {
        throw new Error(`attentionLive: "${name}" declares no known kind, got ${kind}`);
      }
      WIDGETS[kind](root);
      root.classList.add("al-ready");
    }
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
