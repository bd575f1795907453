// A cell's output for one run: the generic events of docs/protocol.md (notes, tables, chart, text)
// drawn into the cell's .cell-output, in a fixed order whatever order they arrive in. The same object
// is the `view` a kind's browser module receives (see app.js for that contract).

import { formatNumber, formatValue } from "./format.js";
import { DataTable } from "./table.js";

// highlight(pre, text, language) colours read-only code (the PTX a cell compiled) once the editor
// bundle has loaded (app.js sets it); until then text stays plain.
let highlight = null;
export function setHighlighter(fn) { highlight = fn; }

// languageOf guesses the language of a text event's body: PTX starts with its .version/.target.
function languageOf(text) {
  return /^\s*\.(version|target)\s/m.test(text.body || "") ? "ptx" : "";
}

// Info notes shown before the rest fold behind "n more notes"; errors and warnings are always shown.
const SHOWN_INFO = 1;

// Where each part goes in the output, top to bottom.
const RANK = { notes: 1, text: 2, kind: 3, table: 4, chart: 5 };

export class CellView {
  constructor(section) {
    this.section = section;
    this.output = section.querySelector(".cell-output");
    this.cell = section.dataset.cell;
    this.lesson = section.dataset.lesson;
    this.kind = section.dataset.kind;
    this.format = formatNumber;
    this.formatValue = formatValue;
    this.clear("");
  }

  // clear empties the output for a new run (action: the run's action name, "" for a plain run).
  clear(action) {
    for (const t of this.tables?.values() || []) t.dispose();
    this.output.replaceChildren();
    this.action = action;
    this.tables = new Map(); // table id -> DataTable, in declaration order
    this.notes = [];         // {level, message}
    this.texts = [];         // {title, body}
    this.state = {};         // the kind module's own, fresh each run
    this.took = "";          // the run's duration once done ("9.1 s"), set by app.js
    this.ranOn = "";         // the machine that ran it, when the server names one (a note's ran_on)
    this.earlier = null;     // when the results shown are an earlier run's (shared, or replayed): its end
    this.shared = false;     // the results are another run's, shared for this unedited cell (app.js)
    this.notesList = null;
    this.notesToggle = null;
    this.chartBox = null;
    this.kindBox = null;
  }

  place(el, rank) {
    el.dataset.rank = rank;
    const after = [...this.output.children].find((c) => Number(c.dataset.rank) > rank);
    this.output.insertBefore(el, after || null);
    return el;
  }

  // area is the kind module's own part of the output (a div.cell-view above the tables), made on
  // first use.
  area() {
    if (!this.kindBox) {
      this.kindBox = document.createElement("div");
      this.kindBox.className = "cell-view";
      this.place(this.kindBox, RANK.kind);
    }
    return this.kindBox;
  }

  // addNote adds a note to the notes list and returns its li. Info notes past the first SHOWN_INFO
  // fold behind a "n more notes" button (errors and warnings never do), so that the results come
  // first; the folded notes stay in the page (and its text) for whoever opens them.
  addNote(note) {
    this.notes.push(note);
    if (!this.notesList) {
      this.notesList = this.place(document.createElement("ul"), RANK.notes);
      this.notesList.className = "cell-notes folded";
      this.notesList.id = `${this.cell}-notes`;
    }
    const li = document.createElement("li");
    const level = note.level || "info";
    li.className = level;
    li.textContent = note.message;
    if (level === "info" && this.notesList.querySelectorAll("li.info").length >= SHOWN_INFO) li.classList.add("more");
    this.notesList.appendChild(li);
    this.foldNotes();
    return li;
  }

  // removeNote takes the note with this exact text out of the list (a kind module that shows it
  // elsewhere).
  removeNote(message) {
    for (const li of this.notesList?.querySelectorAll("li") || []) {
      if (li.textContent === message) li.remove();
    }
    this.foldNotes();
  }

  // foldNotes keeps the "n more notes" button below the list in step with the folded notes.
  foldNotes() {
    const more = this.notesList ? this.notesList.querySelectorAll("li.more").length : 0;
    if (!more) {
      this.notesToggle?.remove();
      this.notesToggle = null;
      return;
    }
    if (!this.notesToggle) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "cell-notes-more";
      b.setAttribute("aria-controls", this.notesList.id);
      b.addEventListener("click", () => {
        this.notesList.classList.toggle("folded");
        this.foldNotes();
      });
      this.notesToggle = this.place(b, RANK.notes);
    }
    const folded = this.notesList.classList.contains("folded");
    this.notesToggle.setAttribute("aria-expanded", String(!folded));
    this.notesToggle.textContent = folded ? `${formatNumber(more)} more note${more === 1 ? "" : "s"}` : "fewer notes";
  }

  addTable(def) {
    if (this.earlier && typeof def.caption === "string") def = { ...def, caption: earlierCaption(def.caption, this.earlier) };
    const old = this.tables.get(def.id);
    if (old) { old.box.remove(); old.dispose(); } // a re-declared table starts again
    const t = new DataTable(def, `${this.cell}-${def.id}.csv`);
    this.tables.set(def.id, t);
    this.place(t.box, RANK.table); // after the tables declared before it, before the chart
    return t;
  }

  addRow(row) {
    const t = this.tables.get(row.table);
    if (t) t.addRow(row);
    else console.warn(`row for undeclared table ${row.table}`);
  }

  // setChart shows the server's latest chart (a complete SVG drawn with gonum/plot, with a <title>
  // and <desc>), replacing the previous one. The tables beside it hold the same numbers: they are
  // its accessible equivalent.
  setChart(svg) {
    if (!this.chartBox) {
      this.chartBox = this.place(document.createElement("figure"), RANK.chart);
      this.chartBox.className = "cell-chart";
    }
    this.chartBox.innerHTML = svg; // drawn by this server, or a worker's re-serialised through cluster/svg.go's allow-lists
    const el = this.chartBox.querySelector("svg");
    if (!el) return;
    // The SVG's ids are the same in every chart: make them unique on the page.
    const ids = [];
    for (const part of ["title", "desc"]) {
      const t = el.querySelector(part);
      if (!t) continue;
      t.id = `${this.cell}-chart-${part}`;
      ids.push(t.id);
    }
    if (ids.length) el.setAttribute("aria-labelledby", ids.join(" "));
  }

  addText(text) {
    this.texts.push(text);
    const fig = this.place(document.createElement("figure"), RANK.text);
    fig.className = "cell-text-box";
    const cap = document.createElement("figcaption");
    cap.textContent = text.title;
    const pre = document.createElement("pre");
    pre.className = "cell-text";
    pre.textContent = text.body;
    const lang = languageOf(text);
    if (lang && highlight) {
      try { highlight(pre, text.body, lang); pre.dataset.lang = lang; } catch (err) { console.warn("highlighting:", err); }
    }
    fig.append(cap, pre);
  }

  // rowCount counts the rows received, of every table or of the one named.
  rowCount(tableId) {
    if (tableId !== undefined) return this.tables.get(tableId)?.rows.length || 0;
    let n = 0;
    for (const t of this.tables.values()) n += t.rows.length;
    return n;
  }

  badCount(tableId) {
    if (tableId !== undefined) return this.tables.get(tableId)?.badRows || 0;
    let n = 0;
    for (const t of this.tables.values()) n += t.badRows;
    return n;
  }

  // summary is the generic status after `done`: what arrived, counted, with failed checks first, and
  // how long it took (this.took, set by app.js: "9.1 s"); a run that produced nothing says so.
  summary() {
    const rows = this.rowCount();
    const took = this.took ? ` in ${this.took}` : "";
    const parts = [];
    if (rows > 0) {
      parts.push(plural(rows, "result") + (this.tables.size > 1 ? ` in ${this.tables.size} tables` : "") + took);
      const bad = this.badCount();
      if (bad > 0) parts.push(`${formatNumber(bad)} failed the check`);
    } else if (this.texts.length > 0) {
      parts.push(`${this.texts[this.texts.length - 1].title} below` + (this.took ? ` (${this.took})` : ""));
    }
    const failed = this.notes.some((n) => n.level === "error");
    if (!parts.length) return failed ? "nothing ran: see the notes for why" : "nothing ran";
    if (failed) parts.push("some parts did not run (see the notes)");
    return parts.join("; ");
  }
}

// earlierCaption is the caption of a table of an earlier run (shared, or shown again: earlier is its
// end, an ISO time, or "earlier" where it is not known): "measured … just now" then says when.
export function earlierCaption(caption, earlier) {
  return caption.replace(/ just now\b/, ` ${earlierWhen(earlier)}`);
}

// earlierWhen says which earlier run results are from: "in the run that ended 11/25/2026, 8:53:09 PM"
// (earlier: its end, an ISO time), or "in an earlier run".
export function earlierWhen(earlier) {
  const at = Date.parse(earlier);
  return Number.isFinite(at) ? `in the run that ended ${new Date(at).toLocaleString()}` : "in an earlier run";
}

export function plural(n, word) {
  return `${formatNumber(n)} ${word}${n === 1 ? "" : "s"}`;
}
