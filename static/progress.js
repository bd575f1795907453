// The learner's progress, kept in this browser (localStorage, by lesson slug): which of a lesson's
// experiments have run to the end and which of its challenges were met, and whether the lesson was
// opened. The index page marks each lesson with it (lessons whose every experiment ran and every
// challenge was met: "✓ done"). A challenge once met stays met here, whatever later runs give.

export const KEY = "playground.progress."; // + lesson slug

// read is the progress kept for slug: {visited, cells: [cell ids], challenges: [challenge ids]}.
export function read(slug) {
  let p = null;
  try { p = JSON.parse(localStorage.getItem(KEY + slug) || "null"); } catch { /* not kept, or garbled */ }
  return {
    visited: !!(p && p.visited),
    cells: Array.isArray(p && p.cells) ? p.cells.filter((x) => typeof x === "string") : [],
    challenges: Array.isArray(p && p.challenges) ? p.challenges.filter((x) => typeof x === "string") : [],
  };
}

function update(slug, change) {
  if (!slug) return;
  const p = read(slug);
  change(p);
  try { localStorage.setItem(KEY + slug, JSON.stringify(p)); } catch { /* private mode: not kept */ }
}

// markVisited notes that the lesson was opened.
export function markVisited(slug) { update(slug, (p) => { p.visited = true; }); }

// markCellRun notes that an experiment of the lesson ran to the end.
export function markCellRun(slug, cell) {
  update(slug, (p) => { if (!p.cells.includes(cell)) p.cells.push(cell); });
}

// markChallengeMet notes that a challenge of the lesson was met.
export function markChallengeMet(slug, id) {
  update(slug, (p) => { if (!p.challenges.includes(id)) p.challenges.push(id); });
}

// markText is an index entry's mark for progress p of a lesson with cells experiments and
// challenges challenges: "" when nothing was done.
export function markText(p, cells, challenges) {
  const ran = Math.min(p.cells.length, cells), met = Math.min(p.challenges.length, challenges);
  if (ran === cells && met === challenges && (cells > 0 || p.visited)) return cells > 0 ? "✓ done" : "✓ read";
  if (ran === 0 && met === 0) return p.visited ? "opened" : "";
  const parts = [`${ran} of ${cells} experiment${cells === 1 ? "" : "s"} run`];
  if (challenges > 0) parts.push(`${met} of ${challenges} challenge${challenges === 1 ? "" : "s"} met`);
  return parts.join(", ");
}

// initMarks puts the progress marks on the index page's lesson list.
export function initMarks(root = document) {
  for (const li of root.querySelectorAll(".lessons li[data-slug]")) {
    const mark = li.querySelector(".progress-mark");
    if (!mark) continue;
    const text = markText(read(li.dataset.slug), Number(li.dataset.cells) || 0, Number(li.dataset.challenges) || 0);
    mark.textContent = text;
    mark.hidden = !text;
    mark.classList.toggle("done", text.startsWith("✓"));
    li.dataset.progress = text.startsWith("✓") ? "done" : text ? "started" : "";
  }
}
