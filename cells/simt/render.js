// Renderer for simt cells: replays a watched kernel's global-memory warp instructions of block (0,0)
// (frames {kernel, n, warp, kind, matrix, lanes: [[lane, row, col, sector], …], sectors}) over the
// matrices A, B and C, the elements the warp's lanes touch coloured by the 32-byte sector each falls
// in. Tables, chart and notes are drawn by the shared page code.

import { html, playerModule } from "/static/player.js";

const SECTOR_COLOURS = ["#2f6fde", "#e4572e", "#29a36a", "#b08800", "#8e44ad", "#d6336c", "#0c8599", "#5c7cfa"];

export default playerModule({
  className: "cell-warp",
  label: "warp instruction replay",
  intervalMs: 300,
  stage(view, player) {
    const mats = html("div", "warp-mats");
    const caption = html("div", "warp-caption");
    player.stage.append(mats, caption);
    return (f) => draw(mats, caption, f);
  },
  done(view) {
    const bad = view.badCount();
    if (!view.rowCount()) return undefined; // the generic wording: nothing ran
    let text = `counts emulated on ${view.ranOn || "this server"}${view.earlier ? "" : " just now"}${view.took ? ` in ${view.took}` : ""}`;
    if (view.rowCount()) text += "; the times are what the table's caption says";
    if (bad) text += `; ${bad} computed a wrong result`;
    return text;
  },
});

// grid is the n×n table of one matrix, made (or remade larger) on first use.
function grid(mats, name, n) {
  let t = mats.querySelector(`table[data-m="${name}"]`);
  if (!t || t.rows.length < n) {
    if (t) t.parentElement.remove();
    const fig = document.createElement("figure");
    const cap = document.createElement("figcaption");
    cap.textContent = name;
    t = document.createElement("table");
    t.className = "warp-grid";
    t.dataset.m = name;
    t.setAttribute("aria-label", `matrix ${name}`);
    for (let r = 0; r < n; r++) { const tr = t.insertRow(); for (let c = 0; c < n; c++) tr.insertCell(); }
    fig.append(cap, t);
    const later = [...mats.querySelectorAll("table[data-m]")].find((o) => o.dataset.m > name);
    mats.insertBefore(fig, later ? later.parentElement : null); // A, B, C in that order
  }
  return t;
}

function draw(mats, caption, f) {
  const n = f.n;
  for (const m of ["A", "B", "C"]) {
    for (const td of grid(mats, m, n).querySelectorAll("td[style]")) {
      td.removeAttribute("style");
      td.removeAttribute("title");
    }
  }
  const t = grid(mats, f.matrix, n);
  for (const [lane, row, col, sector] of f.lanes) {
    const td = t.rows[row] && t.rows[row].cells[col];
    if (!td) continue;
    td.style.background = SECTOR_COLOURS[sector % SECTOR_COLOURS.length];
    td.title = `lane ${lane}: ${f.matrix}[${row}][${col}], sector ${sector}`;
  }
  caption.textContent = `${f.kind} of ${f.matrix}: ${f.lanes.length} lanes, ${f.sectors} sector(s) of 32 bytes` +
    (f.sectors === 1 && f.lanes.length > 1 ? " (every lane read the same word: a broadcast)" : "");
  return `${f.kernel}, block (0,0), warp ${f.warp}`;
}
