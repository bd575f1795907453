// Renderer for systolic cells: plays the simulated array's cycles (frames {tile, k0, n0, cycle, a, p,
// w, out}: per processing element (PE) the activation passing through and its partial sum; weights
// come with a tile's first cycle only) as a drawing of the data flow: the weights held in the PEs,
// the rows of A waiting at the left edge and entering it skewed by one cycle per row, each activation
// moving right, each partial sum moving down, and the sums leaving the bottom edge into C. Tables,
// chart and notes are drawn by the shared page code.

import { html, playerModule, svg as el } from "/static/player.js";

const QUEUE = 3; // upcoming activations shown at the left edge, per row

export default playerModule({
  className: "cell-systolic",
  label: "systolic array animation",
  intervalMs: 600,
  stage(view, player) {
    const legend = html("p", "sys-legend");
    legend.innerHTML = "Each cell is a PE: its <b>weight</b> (grey, held for the tile), the <b class=\"a\">activation</b> " +
      "passing through it to the right, and the <b class=\"p\">partial sum</b> it passes down. Rows of A wait at the left " +
      "edge (row i starts i cycles late); finished sums leave the bottom edge into <b class=\"o\">C</b>.";
    const svg = el("svg", { class: "sys-flow", role: "img" });
    const out = html("div", "sys-out");
    player.stage.append(legend, svg, out);
    return (f, i, frames) => draw(view, svg, out, frames, f, i);
  },
  take(s, f) {
    if (f.w) s.w = f.w; // carry a tile's weights to its later cycles
    f.w = s.w;
    return f;
  },
  done(view) {
    const bad = view.badCount();
    if (!view.rowCount()) return undefined; // the generic wording: nothing ran
    return `simulated on ${view.ranOn || "this server"}${view.earlier ? "" : " just now"}${view.took ? ` in ${view.took}` : ""}` + (bad ? `; ${bad} product(s) failed the check` : "");
  },
});

// queue is row i's next activations at the left edge after frame at: what enters PE(i,0) in the
// tile's following cycles (known from the frames that arrived).
function queue(frames, at, i) {
  const f = frames[at];
  const q = [];
  for (let t = at + 1; t < frames.length && q.length < QUEUE; t++) {
    const g = frames[t];
    if (g.tile !== f.tile) break;
    q.push(g.a[i][0]);
  }
  return q;
}

function draw(view, svg, out, frames, f, at) {
  const n = f.a.length;
  const fmt = (x) => view.format(x, 2);
  const cell = 64, gap = 14, qw = 40, left = QUEUE * qw + 30, top = 34, bottom = 56;
  const W = left + n * (cell + gap) + 10, H = top + n * (cell + gap) + bottom;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", String(W));
  svg.setAttribute("aria-label", `Systolic array, ${n}×${n} PEs, tile ${f.tile + 1}, cycle ${f.cycle}`);
  svg.replaceChildren();
  const defs = el("defs");
  const marker = el("marker", { id: "sys-arrow", viewBox: "0 0 6 6", refX: "5", refY: "3", markerWidth: "6", markerHeight: "6", orient: "auto" });
  marker.append(el("path", { d: "M0,0 L6,3 L0,6 z", fill: "currentColor" }));
  defs.append(marker);
  svg.append(defs);
  svg.append(el("text", { x: 4, y: 14, class: "lbl" }, `A enters from the left →`));
  svg.append(el("text", { x: left, y: 14, class: "lbl" }, `weights: B[${f.k0}…][${f.n0}…] held in the PEs; partial sums move down ↓`));
  const small = n > 8; // a big array: fewer labels
  for (let i = 0; i < n; i++) {
    const y = top + i * (cell + gap);
    // Row i's input queue, nearest the array last.
    const q = queue(frames, at, i);
    q.forEach((v, j) => {
      const x = left - 22 - (j + 1) * qw + qw / 2;
      if (v !== 0) svg.append(el("text", { x, y: y + cell / 2 + 4, class: "q", "text-anchor": "middle", opacity: String(1 - j * 0.25) }, fmt(v)));
    });
    svg.append(el("line", { x1: left - 20, y1: y + cell / 2, x2: left - 2, y2: y + cell / 2, class: "arrow" }));
    for (let j = 0; j < n; j++) {
      const x = left + j * (cell + gap);
      const a = f.a[i][j], p = f.p[i][j], w = f.w ? f.w[i][j] : 0;
      const g = el("g");
      const title = el("title", {}, `PE(${i},${j}): weight ${fmt(w)}` + (a !== 0 ? `, activation ${fmt(a)}, partial sum ${fmt(p)}` : ", idle"));
      g.append(title, el("rect", { x, y, width: cell, height: cell, rx: 5, class: a !== 0 ? "pe active" : "pe" }));
      if (!small) g.append(el("text", { x: x + 4, y: y + 12, class: "w" }, `w ${fmt(w)}`));
      if (a !== 0) g.append(el("text", { x: x + cell / 2, y: y + cell / 2 + 4, class: "a", "text-anchor": "middle" }, fmt(a)));
      if (p !== 0) g.append(el("text", { x: x + cell / 2, y: y + cell - 6, class: "p", "text-anchor": "middle" }, fmt(p)));
      svg.append(g);
      if (j < n - 1) svg.append(el("line", { x1: x + cell + 1, y1: y + cell / 2, x2: x + cell + gap - 1, y2: y + cell / 2, class: "arrow" }));
      if (i < n - 1) svg.append(el("line", { x1: x + cell / 2, y1: y + cell + 1, x2: x + cell / 2, y2: y + cell + gap - 1, class: "arrow" }));
    }
  }
  // Sums leaving the bottom edge this cycle, under their column.
  const yb = top + n * (cell + gap);
  for (let j = 0; j < n; j++) {
    const x = left + j * (cell + gap) + cell / 2;
    svg.append(el("line", { x1: x, y1: yb - gap + 1, x2: x, y2: yb + 6, class: "arrow" }));
  }
  for (const o of f.out || []) {
    const j = o.col - f.n0;
    const x = left + j * (cell + gap) + cell / 2;
    svg.append(el("text", { x, y: yb + 22, class: "o", "text-anchor": "middle" }, fmt(o.value)));
    svg.append(el("text", { x, y: yb + 38, class: "lbl", "text-anchor": "middle" }, `C[${o.row}][${o.col}]`));
  }
  out.textContent = (f.out || []).length
    ? "leaving the array: " + f.out.map((o) => `C[${o.row}][${o.col}] += ${fmt(o.value)}`).join(", ")
    : "no sum leaves the array this cycle";
  return `tile ${f.tile + 1} (k from ${f.k0}, n from ${f.n0}), cycle ${f.cycle}`;
}
