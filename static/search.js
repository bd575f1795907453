// The index page's search across lessons: the server's index of every lesson's title, summary and
// prose by heading (GET /api/search, built at start), fetched on first use and filtered here. A
// result links to the heading whose section holds every word typed, with the text around the first.

const MAX_RESULTS = 20;
const SNIPPET = 160; // characters of text shown around a match

let index = null; // Promise of the entries, once asked for

function load() {
  if (!index) {
    index = fetch("/api/search").then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))));
    index.catch(() => { index = null; }); // a later keystroke tries again
  }
  return index;
}

// search returns the sections of entries that hold every term (lower case), best first: a match in
// a lesson's title counts most, then in a heading, then in the text.
export function search(entries, terms) {
  const hits = [];
  for (const e of entries) {
    const title = e.title.toLowerCase();
    const parts = [{ id: "", heading: "", text: e.summary || "", top: true }, ...(e.sections || [])];
    for (const s of parts) {
      const heading = (s.heading || "").toLowerCase(), text = (s.text || "").toLowerCase();
      let score = 0, own = 0; // own: terms found in the section itself, not only in the lesson's title
      for (const t of terms) {
        const inTitle = title.includes(t), inHeading = heading.includes(t), inText = text.includes(t);
        if (!inTitle && !inHeading && !inText) { score = 0; break; }
        score += inTitle ? 3 : inHeading ? 2 : 1;
        if (inHeading || inText) own++;
      }
      if (score > 0 && (s.top || own > 0)) hits.push({ entry: e, section: s, score });
    }
  }
  return hits.sort((a, b) => b.score - a.score).slice(0, MAX_RESULTS);
}

// snippet appends to el the part of text around the first term it holds, the terms marked.
function snippet(el, text, terms) {
  const lower = text.toLowerCase();
  const at = Math.min(...terms.map((t) => lower.indexOf(t)).filter((i) => i >= 0), text.length);
  let from = Math.max(0, at - SNIPPET / 3);
  if (from > 0) from = text.indexOf(" ", from) + 1 || from;
  const part = text.slice(from, from + SNIPPET);
  if (from > 0) el.append("…");
  const re = new RegExp(terms.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "gi");
  let last = 0;
  for (const m of part.matchAll(re)) {
    el.append(part.slice(last, m.index));
    const mark = document.createElement("mark");
    mark.textContent = m[0];
    el.append(mark);
    last = m.index + m[0].length;
  }
  el.append(part.slice(last));
  if (from + SNIPPET < text.length) el.append("…");
}

function show(box, list, entries, query) {
  const results = box.querySelector(".search-results");
  const status = box.querySelector(".search-status");
  const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
  results.replaceChildren();
  if (terms.length === 0 || query.trim().length < 2) {
    results.hidden = true;
    status.textContent = "";
    list.hidden = false;
    return;
  }
  const hits = search(entries, terms);
  for (const h of hits) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = `/lessons/${encodeURIComponent(h.entry.slug)}${h.section.id ? `#${encodeURIComponent(h.section.id)}` : ""}`;
    a.textContent = h.section.heading ? `${h.entry.title}: ${h.section.heading}` : h.entry.title;
    const p = document.createElement("span");
    p.className = "summary";
    snippet(p, h.section.text || h.entry.summary || "", terms);
    li.append(a, " ", p);
    results.append(li);
  }
  results.hidden = hits.length === 0;
  list.hidden = true;
  status.textContent = hits.length === 0 ? `No lesson mentions “${query.trim()}”.`
    : `${hits.length}${hits.length === MAX_RESULTS ? "+" : ""} section${hits.length === 1 ? "" : "s"} found.`;
}

// initSearch wires the index page's search box (hidden until this script runs).
export function initSearch(root = document) {
  const box = root.querySelector(".lesson-search");
  const list = root.querySelector("ol.lessons");
  if (!box || !list) return;
  const input = box.querySelector("input");
  box.hidden = false;
  let timer = 0;
  const run = () => {
    const query = input.value;
    load().then((entries) => { if (input.value === query) show(box, list, entries, query); },
      () => { box.querySelector(".search-status").textContent = "The search index did not load; try again."; });
  };
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, 120); });
  input.addEventListener("keydown", (ev) => { if (ev.key === "Escape") { input.value = ""; run(); } });
}
