// A table a run declares (protocol: `table`) and fills row by row (`row`), with a CSV download of
// exactly the values the server sent. A column that no row has a value in yet ("" or null: e.g. the
// copy times of a run without GPU kernels) is hidden on the page, never in the CSV. Where the table
// marks some columns primary, the others fold behind a "more columns" toggle (a table without marks
// shows every column; a key column, one that says what a row is, never folds). A header's profiler metric ("sectors [l1tex__…]") is set apart in small type
// that wraps anywhere, and a long text value is cut short with its full text on hover. A table wider
// than its box scrolls sideways inside it, and says so: a shadow on the edge that hides columns and
// a "scroll sideways" hint (the frame's data-overflow: "start", "end" or "both").

import { csvField, formatValue } from "./format.js";

export class DataTable {
  // def is the protocol's table: {id, caption, columns: [{label, unit}]}; fileName names the CSV.
  constructor(def, fileName) {
    this.def = def;
    this.columns = def.columns || [];
    this.rows = []; // {values, bad}, as received
    this.filled = this.columns.map(() => false); // whether some row has a value in the column
    // extra[i]: the column folds behind "more columns" (the table marks others primary)
    const folds = this.columns.some((c) => c.primary);
    this.extra = this.columns.map((c) => folds && !c.primary && !c.key); // a key column never folds
    this.fileName = fileName;
    this.url = "";

    this.box = document.createElement("div");
    this.box.className = "cell-table-box";
    // The caption is shown above the box that scrolls sideways, so that on a narrow screen it wraps
    // instead of scrolling away with a wide table; the table's own <caption> names it for screen
    // readers.
    const title = document.createElement("div");
    title.className = "cell-table-title";
    title.setAttribute("aria-hidden", "true");
    const [titleHead, titleRest] = splitCaption(def.caption || def.id);
    const [lead, notes] = splitNotes(titleRest);
    const strong = document.createElement("strong");
    strong.textContent = titleHead;
    title.append(strong);
    if (lead) {
      const span = document.createElement("span");
      span.className = "rest";
      span.textContent = lead;
      title.append(span);
    }
    const scroll = document.createElement("div");
    scroll.className = "cell-table-scroll";
    this.table = document.createElement("table");
    this.table.className = "cell-table";
    this.table.dataset.table = def.id;
    if (folds) this.table.classList.add("folded");
    const caption = this.table.createCaption();
    caption.className = "sr-only";
    // Its notes, where they fold (below), are read there, not twice.
    caption.textContent = titleHead + lead;
    const head = this.head = this.table.createTHead().insertRow();
    this.columns.forEach((col, i) => {
      const th = document.createElement("th");
      th.scope = "col";
      if (this.extra[i]) th.classList.add("extra");
      // "sectors [l1tex__t_sectors…]": the metric, in brackets, goes in small type below the label
      const m = /^(.*?)\s*(\[[^\]]*\])\s*$/.exec(col.label);
      if (m) {
        th.append(m[1]);
        const metric = document.createElement("span");
        metric.className = "metric";
        metric.textContent = m[2];
        th.append(metric);
      } else {
        th.textContent = col.label;
      }
      if (showUnit(col)) {
        const unit = document.createElement("span");
        unit.className = "unit";
        unit.textContent = ` (${col.unit})`;
        th.insertBefore(unit, th.querySelector(".metric"));
      }
      head.appendChild(th);
    });
    this.body = this.table.createTBody();
    this.csv = document.createElement("a");
    this.csv.className = "cell-csv";
    this.csv.textContent = "Download CSV";
    this.csv.download = fileName;
    this.refreshCSV();
    // The toggle for the folded columns: shown once some row fills one of them.
    this.more = document.createElement("button");
    this.more.type = "button";
    this.more.className = "cell-table-more";
    this.more.hidden = true;
    this.more.setAttribute("aria-expanded", "false");
    this.more.addEventListener("click", () => {
      const open = this.table.classList.toggle("folded") === false;
      this.more.setAttribute("aria-expanded", String(open));
      this.labelMore();
      this.markOverflow();
    });
    // The frame holds the edge shadows over the scrolling table; the actions stay put below it.
    this.frame = document.createElement("div");
    this.frame.className = "cell-table-frame";
    this.hint = document.createElement("div");
    this.hint.className = "cell-table-hint";
    this.hint.textContent = "Scroll sideways for more →";
    this.hint.hidden = true;
    scroll.append(this.table);
    this.frame.append(scroll);
    const actions = document.createElement("div");
    actions.className = "cell-table-actions";
    actions.append(this.more, this.csv);
    this.box.append(title, this.hint, this.frame, actions);
    if (notes) {
      // A long caption's later sentences (how each count is made, the model's terms) fold below
      // the table, so that on a phone the table is not thirty lines below its title.
      const details = document.createElement("details");
      details.className = "cell-table-notes";
      const summary = document.createElement("summary");
      summary.textContent = "How these numbers are made";
      const p = document.createElement("p");
      p.textContent = notes;
      details.append(summary, p);
      this.box.append(details);
    }
    const marked = markScroll(this.frame, scroll, this.table, this.hint);
    this.markOverflow = marked.update;
    this.resized = marked.observer;
  }

  addRow(row) {
    const values = row.values || [];
    this.rows.push({ values, bad: !!row.bad });
    const tr = this.body.insertRow();
    if (row.bad) tr.className = "bad";
    values.forEach((v, i) => {
      const td = tr.insertCell();
      if (this.extra[i]) td.classList.add("extra");
      td.textContent = formatValue(v);
      if (typeof v === "string" && v.length > LONG) {
        td.classList.add("long"); // cut short by style.css; the whole text on hover
        td.title = v;
      } else if (typeof v === "string" && v.length > WORDY) {
        td.classList.add("wordy"); // on a narrow screen, wide enough not to wrap a word a line (style.css)
      }
      if (typeof v === "number") {
        td.classList.add("num");
        if (this.head.cells[i]) this.head.cells[i].classList.add("num");
        const unit = this.columns[i] && this.columns[i].unit;
        td.title = unit ? `${v} ${unit}` : String(v); // the full value, as sent
      }
      if (v !== "" && v !== null && v !== undefined) this.filled[i] = true;
    });
    this.showFilledColumns();
    this.refreshCSV(); // the link always holds every row received so far
  }

  // showFilledColumns hides the columns that no row has a value in (all of them show until the
  // first row arrives).
  showFilledColumns() {
    this.filled.forEach((filled, i) => {
      const th = this.head.cells[i];
      if (!th || th.hidden === !filled) return;
      th.hidden = !filled;
      for (const tr of this.body.rows) if (tr.cells[i]) tr.cells[i].hidden = !filled;
    });
    const last = this.body.rows[this.body.rows.length - 1];
    this.filled.forEach((filled, i) => { if (last.cells[i]) last.cells[i].hidden = !filled; });
    this.more.hidden = this.foldedCount() === 0;
    this.labelMore();
  }

  // foldedCount is how many columns with values fold behind the toggle.
  foldedCount() {
    return this.extra.filter((x, i) => x && this.filled[i]).length;
  }

  labelMore() {
    this.more.textContent = this.table.classList.contains("folded")
      ? `More columns (${this.foldedCount()})` : "Fewer columns";
  }

  get badRows() {
    return this.rows.filter((r) => r.bad).length;
  }

  csvText() {
    const header = this.columns.map((c) => csvField(showUnit(c) ? `${c.label} (${c.unit})` : c.label));
    const lines = [header.join(",")];
    for (const r of this.rows) lines.push(r.values.map(csvField).join(","));
    return lines.join("\r\n") + "\r\n";
  }

  refreshCSV() {
    if (this.url) URL.revokeObjectURL(this.url);
    this.url = URL.createObjectURL(new Blob([this.csvText()], { type: "text/csv" }));
    this.csv.href = this.url;
  }

  dispose() {
    if (this.url) URL.revokeObjectURL(this.url);
    this.url = "";
    this.resized?.disconnect();
  }
}

// markScroll keeps frame's data-overflow saying which edges of scroller (a box that scrolls
// sideways, holding content) hide part of it: "start", "end", "both" or "" (style.css draws a shadow
// on each), and hint, if given, shown while any does. It returns the update function (call it when
// the content changes in a way no resize shows) and the ResizeObserver (to disconnect; null where
// the browser has none).
export function markScroll(frame, scroller, content, hint) {
  const update = () => {
    const start = scroller.scrollLeft > 1, end = scroller.scrollLeft + scroller.clientWidth < scroller.scrollWidth - 1;
    const over = start && end ? "both" : start ? "start" : end ? "end" : "";
    if (frame.dataset.overflow !== over) frame.dataset.overflow = over;
    if (hint) hint.hidden = !over;
  };
  scroller.addEventListener("scroll", update, { passive: true });
  let observer = null;
  if (typeof ResizeObserver === "function") {
    observer = new ResizeObserver(update);
    observer.observe(scroller);
    if (content && content !== scroller) observer.observe(content);
  }
  update();
  return { update, observer };
}

// LONG is the length over which a text value is cut short in its cell (the whole of it on hover).
const LONG = 32;
// WORDY is the length over which a text value gets a wider cell (style.css: .wordy), so that on a
// narrow screen, where the table scrolls sideways anyway, it wraps in two or three lines, not six.
const WORDY = 16;

// showUnit says whether a column's header needs its unit after the label ("median (s)"), which a
// label such as "GFLOP/s" already is.
function showUnit(col) {
  return !!col.unit && !String(col.label).includes(col.unit);
}

// NOTES_AFTER is how long (characters) the rest of a caption may be before its sentences after the
// first fold away (splitNotes).
const NOTES_AFTER = 240;

// splitNotes splits the rest of a caption (splitCaption's second part) into what stays beside the
// title, up to the end of its first sentence, and the notes that fold below the table: "" unless the
// rest is longer than NOTES_AFTER and has a sentence after the first.
export function splitNotes(rest) {
  if (rest.length <= NOTES_AFTER) return [rest, ""];
  const m = /^(.*?[.!?])\s+(?=[A-Z("“])/s.exec(rest);
  return m ? [m[1], rest.slice(m[0].length)] : [rest, ""];
}

// splitCaption splits a caption at the end of its first clause (a colon, an opening parenthesis or a
// semicolon within its first 120 characters): the title, and the rest (whole, "" where there is no
// such clause).
export function splitCaption(caption) {
  const m = /^(.{8,120}?)(?=:\s|\s\(|;\s)/.exec(caption);
  return m ? [m[1], caption.slice(m[1].length)] : [caption, ""];
}
