// Renderer for systolic cells: plays the simulated array's cycles (frames {tile, k0, n0, cycle, a, p,
// w, out}: per processing element the activation passing through and its partial sum; weights come
// with a tile's first cycle only). Tables, chart and notes are drawn by the shared page code.

import { FramePlayer } from "/static/player.js";

export default {
  frames(view, frames) {
    const s = view.state;
    if (!s.player) {
      const grid = document.createElement("table");
      grid.className = "sys-grid";
      grid.setAttribute("aria-label", "systolic array state: activation (large) and partial sum (small) per processing element");
      const out = document.createElement("div");
      out.className = "sys-out";
      s.player = new FramePlayer(view.area(), {
        className: "cell-systolic",
        label: "systolic array animation",
        intervalMs: 400,
        show: (f) => draw(view, grid, out, f),
      });
      s.player.stage.append(grid, out);
    }
    for (const f of frames) {
      if (f.w) s.w = f.w; // carry a tile's weights to its later cycles
      f.w = s.w;
      s.player.push(f);
    }
  },

  reset(view) {
    if (view.state.player) view.state.player.stop();
  },

  done(view) {
    const bad = view.badCount();
    if (!view.rowCount()) return undefined; // the generic wording: nothing ran
    return `simulated on this server just now${view.took ? ` in ${view.took}` : ""}` + (bad ? `; ${bad} product(s) failed the check` : "");
  },
};

function draw(view, grid, out, f) {
  const fmt = (x) => view.format(x, 2);
  const n = f.a.length;
  if (grid.rows.length !== n) {
    grid.replaceChildren();
    for (let r = 0; r < n; r++) {
      const tr = grid.insertRow();
      for (let c = 0; c < n; c++) tr.insertCell().append(document.createElement("b"), document.createElement("small"));
    }
  }
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      const td = grid.rows[r].cells[c];
      const a = f.a[r][c], p = f.p[r][c];
      td.className = a !== 0 ? "active" : "";
      td.title = `PE(${r},${c})` + (f.w ? ` weight ${fmt(f.w[r][c])}` : "");
      td.firstChild.textContent = a !== 0 ? fmt(a) : "";
      td.lastChild.textContent = p !== 0 ? fmt(p) : "";
    }
  }
  out.textContent = (f.out || []).map((o) => `C[${o.row}][${o.col}] += ${fmt(o.value)}`).join("   ");
  return `tile ${f.tile + 1} (k from ${f.k0}, n from ${f.n0}), cycle ${f.cycle}`;
}
