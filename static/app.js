// GPU Playground browser side: wires every .cell on the page to the server's /ws websocket
// (protocol: docs/protocol.md). Plain ES modules, no build step, no dependencies.
//
// The server sends only generic events, drawn here by shared code (view.js, table.js): notes, tables
// with their CSV, the chart, text, progress and the run's status. What a kind needs beyond that (its
// animation frames) is drawn by the kind's own module, served at /cells/{kind}.js and loaded once per
// kind on the page. Its default export is an object whose methods are all optional:
//
//   frames(view, frames)  a `frames` message arrived (frames: its array, shape owned by the kind)
//   reset(view)           a new run of the cell starts: stop what the last one started (timers);
//                         the output is emptied and view.state replaced right after
//   task(view, task, signal)  the server asks the page to do part of the run here (a `task`
//                         message; the matmul and wgsl kinds run WebGPU kernels): return the result
//                         (or a Promise of it), which is sent back as the run's `result`; signal aborts
//                         when the run ends. A throw or rejection answers {page_error: message}.
//   done(view)            the run finished; return the status text ("done: …"), or nothing for the
//                         generic one, which counts the rows and failed checks
//
// `view` (view.js, CellView) has section (the cell's <section>), output (its .cell-output), cell,
// lesson, kind, action (the run's action name, "" for Run), area() (the kind's own div.cell-view in
// the output, made on first use), state (an object for the kind, fresh each run), tables (Map of table
// id -> {def, columns, rows: [{values, bad}], badRows}), notes, texts, rowCount(id?), badCount(id?),
// summary() and format(number).

import { formatNumber } from "./format.js";
import { CellView, setHighlighter } from "./view.js";
import { initQuizzes, KEY as quizKey } from "./quiz.js";
import { initGoals, KEY as predictKey } from "./goal.js";
import { initMachineMenu, pageMachine, refreshMachines } from "./machines.js";
import { initMarks, markCellRun, markVisited } from "./progress.js";
import { initSearch } from "./search.js";
import { markScroll } from "./table.js";

// The code editor (CodeMirror 6, bundled by static/editor/build.sh). Until it has loaded, and for
// good if it cannot, each cell keeps its plain textarea, which works the same way (Shift+Enter runs).
const editorModule = import("/static/editor.bundle.js").then((m) => {
  setHighlighter(m.highlight);
  return m;
}, (err) => {
  console.warn("the code editor did not load; cells keep plain text boxes:", err);
  return null;
});

const MAX_MESSAGE = 64 * 1024; // the server answers larger frames with an error that names no run
const MAX_RESULT = 63 * 1024;  // and larger `result` values (server/ask.go, maxResult)

const runs = new Map(); // run id -> Cell
let socket = null;
let socketOpen = false;
let retryMs = 500;
let runCounter = 0;

function showBanner(text) {
  const b = document.getElementById("conn-banner");
  if (!b) return;
  b.textContent = text;
  b.hidden = !text;
}

function connect() {
  const lesson = document.querySelector(".cell")?.dataset.lesson || "";
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws" +
    (lesson ? `?lesson=${encodeURIComponent(lesson)}` : ""); // the instructor's view shows who is on which lesson
  socket = new WebSocket(url);
  socket.addEventListener("open", () => {
    socketOpen = true;
    retryMs = 500;
    showBanner("");
    document.body.dataset.ws = "open";
    restoreCells();
    refreshMachines(); // machines may have come or gone while the page was away
  });
  socket.addEventListener("message", (ev) => {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    const cell = msg.id ? runs.get(msg.id) : null;
    if (cell) cell.deliver(msg);
    else if (msg.type === "error" && !msg.id) console.warn("server:", msg.message);
  });
  socket.addEventListener("close", () => {
    const wasOpen = socketOpen;
    socketOpen = false;
    document.body.dataset.ws = "closed";
    for (const cell of new Set(runs.values())) cell.deliver({ type: "lost" });
    runs.clear();
    showBanner((wasOpen ? "Lost the connection to the server" : "Cannot reach the server") +
      `; reconnecting in ${Math.round(retryMs / 100) / 10} s…`);
    if (!wasOpen) checkSignedIn();
    setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 10000);
  });
}

// Each kind's module is imported once, however many cells of that kind the page has. A module that
// fails to load leaves its cells working, without what only it draws.
const kindModules = new Map();
function loadKind(kind) {
  if (!kindModules.has(kind)) {
    kindModules.set(kind, import(`/cells/${encodeURIComponent(kind)}.js`).then(
      (m) => m.default || {},
      (err) => {
        console.error(`loading /cells/${kind}.js:`, err);
        return { failed: String(err && err.message || err) };
      }));
  }
  return kindModules.get(kind);
}

class Cell {
  constructor(el) {
    this.el = el;
    this.id = el.dataset.cell;
    this.lesson = el.dataset.lesson;
    this.source = el.querySelector(".cell-source");
    this.original = this.source.defaultValue; // the lesson's source, for Reset
    this.editor = null; // the code editor once loaded; until then the textarea
    this.runBtn = el.querySelector(".cell-run");
    this.resetBtn = el.querySelector(".cell-reset");
    this.stopBtn = el.querySelector(".cell-stop");
    this.actionBtns = [...el.querySelectorAll(".cell-action")];
    this.progress = el.querySelector(".cell-progress");
    this.status = el.querySelector(".cell-status");
    this.view = new CellView(el);
    this.runId = null;
    this.module = null;  // the kind's module, once loaded
    this.pending = [];   // messages that arrived before it was
    el.dataset.state = "idle";

    loadKind(el.dataset.kind).then((m) => {
      this.module = m;
      for (const msg of this.pending.splice(0)) this.handle(msg);
    });
    this.runBtn.addEventListener("click", () => this.run(""));
    this.source.addEventListener("input", () => this.saveSoon()); // until the editor has loaded
    this.stopBtn.addEventListener("click", () => this.stop());
    for (const b of this.actionBtns) b.addEventListener("click", () => this.run(b.dataset.action));
    if (this.resetBtn) this.resetBtn.addEventListener("click", () => resetCell(this));
    this.source.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && ev.shiftKey) {
        ev.preventDefault();
        this.run("");
      } else if (ev.key === "Escape") {
        this.runBtn.focus();
      }
    });
    el.playground = this; // for other page code and the browser tests: getSource, setSource, reset
    // settled: the cell has its editor, or keeps its text box for good (body's data-settled)
    this.settled = editorModule.then((m) => {
      if (!m) return;
      try {
        this.editor = m.createEditor(this.source, {
          language: el.dataset.lang || "yaml",
          label: `${el.dataset.kind} experiment source`,
          onRun: () => this.run(""),
          onEscape: () => this.runBtn.focus(),
          onChange: () => this.saveSoon(),
        });
        el.dataset.editor = "ready";
      } catch (err) {
        console.error("the code editor failed on this cell; it keeps its text box:", err);
      }
    });
  }

  // getSource is the cell's source as the learner edited it.
  getSource() {
    return this.editor ? this.editor.getSource() : this.source.value;
  }

  // setSource replaces the cell's source (the edit can be undone in the editor).
  setSource(text) {
    if (this.editor) this.editor.setSource(text);
    else this.source.value = text;
  }

  // markErrors puts a marker on each line of the source that a run's error names ("line 3: …"); no
  // argument clears them.
  markErrors(message) {
    if (!this.editor) return;
    const errors = [];
    for (const m of String(message || "").matchAll(/\blines? (\d+)\b/g)) {
      errors.push({ line: Number(m[1]), message: String(message) });
    }
    this.editor.setErrors(errors);
  }

  setStatus(text, isError = false) {
    this.status.textContent = text;
    this.status.classList.toggle("error", isError);
    this.status.classList.toggle("multiline", isError && text.includes("\n"));
    this.el.dataset.state = isError ? "error" : (this.runId ? "running" : "idle");
  }

  setBusy(busy) {
    this.runBtn.disabled = busy;
    for (const b of this.actionBtns) b.disabled = busy;
    this.stopBtn.disabled = !busy;
  }

  // run sends a run request for the cell's source as edited, or with an action name (a cuda cell's
  // "ptx") that action instead.
  run(action, fresh = false) {
    if (this.runId) return;
    if (!socketOpen) {
      this.setStatus("Not connected to the server yet; try again in a moment.", true);
      return;
    }
    const runId = `${this.id}#${++runCounter}`;
    const req = { type: "run", id: runId, lesson: this.lesson, cell: this.id, source: this.getSource() };
    if (action) req.action = action;
    if (fresh) req.fresh = true;
    const machine = pageMachine(); // the page's machine menu (machines.js)
    if (machine) req.machine = machine;
    const payload = JSON.stringify(req);
    if (new TextEncoder().encode(payload).length > MAX_MESSAGE) {
      this.setStatus("This spec is over the server's 64 KiB message limit: shorten it.", true);
      return;
    }
    this.hook("reset");
    this.markErrors();
    this.view.clear(action);
    this.runId = runId;
    runs.set(runId, this);
    this.progress.max = 1;
    this.progress.value = 0;
    this.t0 = undefined;
    this.setBusy(true);
    this.setStatus("sending…");
    this.el.dispatchEvent(new CustomEvent("cell-start")); // a challenge's verdict waits for this run
    socket.send(payload);
  }

  // --- Saved work: the server keeps edits and runs (docs/protocol.md, "save" and "replay") ---

  // saveSoon sends the edited source a second after typing stops.
  saveSoon() {
    clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => this.save(), 1000);
  }

  save() {
    clearTimeout(this.saveTimer);
    if (socketOpen) socket.send(JSON.stringify({ type: "save", lesson: this.lesson, cell: this.id, source: this.getSource() }));
  }

  // offerRunAnyway adds a "Run anyway" button beside shared results (measured for someone else's
  // run of the unedited cell, as the note above them says): it measures the cell afresh.
  offerRunAnyway() {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "cell-run-anyway";
    b.textContent = "Run anyway";
    b.title = "Measure this cell now instead of showing the shared results";
    b.addEventListener("click", () => {
      b.remove();
      this.run("", true);
    });
    this.view.output.prepend(b);
  }

  // offerFit adds, to a run refused as over the run time limit, a button that runs the largest of
  // the cell's sizes that fit (the error's fit, docs/protocol.md): one click puts the source that
  // asks for them in the editor (undoable there) and runs it, with the same action.
  offerFit(fit) {
    if (!Array.isArray(fit.sizes) || typeof fit.source !== "string") return;
    const action = this.view.action || "";
    const b = document.createElement("button");
    b.type = "button";
    b.className = "cell-fit";
    b.textContent = `Run at n = ${fit.sizes.join(", ")}` + (fit.estimate >= 1 ? ` (about ${formatSeconds(fit.estimate)})` : "");
    b.title = "Run this cell with only those of its sizes that fit the run time limit";
    b.addEventListener("click", () => {
      b.remove();
      this.setSource(fit.source);
      this.run(action);
    });
    this.view.output.prepend(b);
  }

  // replay shows a stored run of this cell: its messages so far, then, if it is still queued or
  // running, the rest live.
  replay(run) {
    if (this.runId || !socketOpen) return;
    const runId = `${this.id}#${++runCounter}`;
    this.hook("reset");
    this.view.clear(run.action || "");
    this.view.earlier = run.ended || null; // a run that ended: its results are not from just now
    this.runId = runId;
    this.replayed = run;
    runs.set(runId, this);
    this.setBusy(true);
    this.setStatus("picking up your last run…");
    this.el.dispatchEvent(new CustomEvent("cell-start"));
    socket.send(JSON.stringify({ type: "replay", id: runId, run: run.id }));
  }

  stop() {
    if (this.runId && socketOpen) {
      socket.send(JSON.stringify({ type: "cancel", id: this.runId }));
      this.setStatus("stopping…");
    }
  }

  // startClock starts the progress bar's clock when the run starts (estimate: the server's guess of
  // its duration, in seconds; elapsed: for a run picked up while it runs, the seconds since its
  // start by the server's clock, so the clock goes on from the run's start, not the pick-up). The bar
  // advances with time against the estimate, but never past the next unit of work the server has not
  // reported done, and never backwards.
  startClock(estimate, elapsed) {
    this.t0 = performance.now() - (elapsed > 0 ? elapsed * 1000 : 0);
    this.estimate = estimate > 0 ? estimate : 0;
    this.work = null;
    this.progress.max = 1000;
    this.progress.value = 0;
    clearInterval(this.clock);
    this.clock = setInterval(() => this.tick(), 200);
    this.tick();
  }

  tick() {
    if (!this.runId || this.t0 === undefined) return;
    const elapsed = (performance.now() - this.t0) / 1000;
    let f = this.estimate > 0 ? Math.min(elapsed / this.estimate, 0.95) : 0;
    const w = this.work;
    if (w) f = Math.max(w.done / w.total, Math.min(f, (w.done + 1) / w.total));
    else if (!this.estimate) f = 0;
    this.progress.value = Math.max(this.progress.value, Math.round(f * 1000));
    this.setStatus(runningText(elapsed, this.estimate));
  }

  // queuedStatus shows the run's place in the queue and, counting down from the server's estimate
  // (wait: seconds), when it should start; the next queue message or the start replaces it.
  queuedStatus(position, wait) {
    clearInterval(this.clock);
    const ahead = position > 1 ? `queued: ${position - 1} run(s) ahead of yours` : "queued: next to run";
    if (!(wait > 1)) { this.setStatus(ahead); return; }
    const until = performance.now() + wait * 1000;
    const show = () => {
      if (!this.runId) { clearInterval(this.clock); return; }
      const left = (until - performance.now()) / 1000;
      this.setStatus(ahead + (left >= 1 ? `, starts in about ${Math.round(left)} s (estimate)` : ", should start any moment (the estimate has passed)"));
    };
    this.clock = setInterval(show, 1000);
    show();
  }

  // elapsedText is the run's time so far, from its start on the server's machine ("9.1 s").
  elapsedText() {
    return this.t0 === undefined ? "" : formatSeconds((performance.now() - this.t0) / 1000);
  }

  // end shows the run's last status; m, the terminal message of a run shown again, carries the
  // run's stored start and end, which the status states ("ran …, took 6.8 s").
  end(text, isError, m) {
    const ran = ranText(m);
    if (ran) text += `; ${ran}`;
    this.replayed = null;
    if (this.abort) this.abort.abort();
    this.abort = null;
    clearInterval(this.clock);
    this.t0 = undefined;
    if (isError) this.markErrors(text);
    runs.delete(this.runId);
    this.runId = null;
    this.setBusy(false);
    refreshMachines(); // a machine may have come or gone meanwhile (the menu is the page's, machines.js)
    this.setStatus(text, isError);
    this.el.dataset.state = isError ? "error" : "ended";
  }

  // deliver hands a message about this cell's run on, in order, once the kind's module has loaded.
  deliver(msg) {
    if (this.module) this.handle(msg);
    else this.pending.push(msg);
  }

  // hook calls one of the kind module's methods; a renderer's bug becomes a note, not a dead page.
  hook(name, ...args) {
    const m = this.module;
    if (!m || typeof m[name] !== "function") return undefined;
    try {
      return m[name](this.view, ...args);
    } catch (err) {
      console.error(`/cells/${this.view.kind}.js ${name}:`, err);
      if (this.runId) this.view.addNote({ level: "warning", message: `This cell's renderer failed (${name}): ${err.message}` });
      return undefined;
    }
  }

  // answer does a task of the running run with the kind's module and sends the result back, unless
  // the run ended meanwhile (docs/protocol.md: a result answers only its own running run).
  answer(m) {
    const id = this.runId;
    if (!this.abort) this.abort = new AbortController();
    const signal = this.abort.signal;
    let p;
    try {
      if (typeof this.module.task !== "function") throw new Error(this.module.failed || "this cell's renderer has no task handler");
      p = Promise.resolve(this.module.task(this.view, m.task, signal));
    } catch (err) {
      p = Promise.reject(err);
    }
    p.catch((err) => ({ page_error: String((err && err.message) || err) })).then((result) => {
      if (this.runId !== id || signal.aborted || !socketOpen) return;
      if (result === undefined || result === null) {
        result = { page_error: "this cell's renderer answered nothing" };
      } else if (new TextEncoder().encode(JSON.stringify(result)).length > MAX_RESULT) {
        result = { page_error: "the result is over the server's 63 KiB limit" };
      }
      socket.send(JSON.stringify({ type: "result", id, result }));
    });
  }

  handle(m) {
    if (m.type === "lost") {
      if (this.runId) this.end("The connection dropped; the run goes on on the server and shows here again once reconnected.", true);
      return;
    }
    if (m.id !== this.runId) return; // a run that already ended
    const v = this.view;
    switch (m.type) {
      case "queued":
        this.queuedStatus(m.position, m.wait_s);
        break;
      case "started":
        this.startClock(m.estimate, m.elapsed_s);
        break;
      case "shared":
        v.earlier = (m.shared && m.shared.measured) || "earlier";
        v.shared = true;
        this.offerRunAnyway();
        break;
      case "progress":
        this.work = { done: m.done, total: Math.max(m.total, 1) };
        this.tick();
        break;
      case "note": {
        if (m.ran_on) v.ranOn = m.ran_on;
        const li = v.addNote(m.note);
        if (m.note && m.note.level === "error") this.markErrors(m.note.message);
        if (m.note && m.note.level === "warning" && /noisy/i.test(m.note.message) && v.notesList) {
          // Noisy timings: offer the rerun the note suggests, once the run is over: one button
          // per run, however many notes say so (a spread over the repeats, a busy machine).
          li.classList.add("noisy");
          if (v.notesList.querySelector(".note-rerun")) break;
          const again = document.createElement("button");
          again.type = "button";
          again.className = "note-rerun";
          again.textContent = "Run again";
          again.addEventListener("click", () => this.run(this.view.action || ""));
          li.append(" ", again);
        }
        break;
      }
      case "table":
        v.addTable(m.table);
        break;
      case "row":
        v.addRow(m.row);
        break;
      case "chart":
        v.setChart(m.svg);
        break;
      case "text":
        v.addText(m.text);
        break;
      case "task":
        this.answer(m);
        break;
      case "frames":
        if (typeof this.module.frames === "function") this.hook("frames", m.frames || []);
        else if (!v.state.framesNoted) {
          v.state.framesNoted = true;
          v.addNote({ level: "warning", message: this.module.failed
            ? `The animation cannot be shown: this cell's renderer did not load (${this.module.failed}).`
            : "The animation cannot be shown: this cell's renderer draws no frames." });
        }
        break;
      case "done": {
        this.progress.value = this.progress.max;
        // A run shown again states its stored duration (end); the clock here timed only the replay.
        v.took = ranText(m) ? "" : this.elapsedText();
        const text = this.hook("done");
        this.end(typeof text === "string" && text ? text : v.summary(), false, m);
        markCellRun(this.lesson, this.id);
        this.el.dispatchEvent(new CustomEvent("cell-done", { detail: { view: v } }));
        break;
      }
      case "cancelled":
        this.end(`cancelled: ${m.message || "stopped"}`, false, m);
        this.el.dispatchEvent(new CustomEvent("cell-failed", { detail: { message: "the run was cancelled" } }));
        break;
      case "error":
        this.end(m.message || "error", true, m);
        this.el.dispatchEvent(new CustomEvent("cell-failed", { detail: { message: "the run ended with an error" } }));
        if (m.fit) this.offerFit(m.fit);
        break;
    }
  }
}

// ranText says when a run shown again ran and how long it took, from the stored times its replayed
// terminal message m carries (docs/protocol.md, "replay"): "ran 11/25/2026, 8:53:09 PM, took 6.8 s"
// ("ran …" alone for a run the server's stop interrupted; "your run of <its end>" for one that never
// started: shared results, or refused while it waited); "" for a message without them (a run seen live).
function ranText(m) {
  if (!m || !(m.started_at || m.ended_at)) return "";
  const start = m.started_at ? Date.parse(m.started_at) : NaN;
  const end = m.ended_at ? Date.parse(m.ended_at) : NaN;
  if (!Number.isFinite(start)) return Number.isFinite(end) ? `your run of ${new Date(end).toLocaleString()}` : "";
  let text = `ran ${new Date(start).toLocaleString()}`;
  if (Number.isFinite(end) && end >= start) text += `, took ${formatSeconds((end - start) / 1000)}`;
  return text;
}

// runningText is a running run's status line: its time so far against the estimate (seconds; shown
// from 2 s), which, once passed, the line says was too short instead of counting past it.
function runningText(elapsed, estimate) {
  let text = `running… ${formatSeconds(elapsed)}`;
  if (estimate >= 2) {
    text += elapsed <= estimate ? ` of about ${formatSeconds(estimate)}` : `; taking longer than the ${formatSeconds(estimate)} estimate`;
  }
  return text;
}

// formatSeconds shows a duration for the status line: "12 ms", "0.4 s", "9.1 s", "1 min 5 s".
function formatSeconds(s) {
  if (s < 0.1) return `${Math.max(1, Math.round(s * 1000))} ms`;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

// resetCell puts back the lesson's source of cell (a Cell), clearing its error markers, and the
// server forgets the saved edit; the edit can be undone in the editor (Ctrl+Z).
export function resetCell(cell) {
  cell.setSource(cell.original);
  cell.markErrors();
  cell.save();
}

// Citations: "[2]" in a lesson's text links to item 2 of its Sources list.
function linkCitations() {
  const h = [...document.querySelectorAll("article h2")].find((e) => e.textContent.trim() === "Sources");
  const list = h && h.nextElementSibling && h.nextElementSibling.tagName === "OL" ? h.nextElementSibling : null;
  if (!list) return;
  const n = list.children.length;
  [...list.children].forEach((li, i) => { li.id = li.id || `source-${i + 1}`; });
  const walker = document.createTreeWalker(document.querySelector("article"), NodeFilter.SHOW_TEXT, {
    acceptNode: (t) => (t.parentElement.closest("pre, code, a, .cell") || list.contains(t))
      ? NodeFilter.FILTER_REJECT : (/\[\d+(?:[,–-]\s*\d+)*\]/.test(t.data) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP),
  });
  const texts = [];
  while (walker.nextNode()) texts.push(walker.currentNode);
  for (const t of texts) {
    const frag = document.createDocumentFragment();
    let last = 0;
    for (const m of t.data.matchAll(/\[(\d+(?:[,–-]\s*\d+)*)\]/g)) {
      frag.append(t.data.slice(last, m.index), "[");
      m[1].split(/([,–-]\s*)/).forEach((part) => {
        const k = Number(part);
        if (Number.isInteger(k) && k >= 1 && k <= n && /^\d+$/.test(part)) {
          const a = document.createElement("a");
          a.href = `#source-${k}`;
          a.className = "cite";
          a.textContent = part;
          a.title = list.children[k - 1].textContent;
          frag.append(a);
        } else frag.append(part);
      });
      frag.append("]");
      last = m.index + m[0].length;
    }
    frag.append(t.data.slice(last));
    t.replaceWith(frag);
  }
}
// moveRenamedAnswers moves the answers this browser keeps under a renamed question's or prediction's
// former key (the page's data-renamed-answers, former → current, from lessons/renamed.yaml) to the
// current one, unless an answer is kept there already, so that answers survive a course reorder.
function moveRenamedAnswers() {
  let renamed = {};
  try { renamed = JSON.parse(document.querySelector("main.lesson")?.dataset.renamedAnswers || "{}"); } catch { return; }
  for (const [from, to] of Object.entries(renamed)) {
    for (const key of [quizKey, predictKey]) {
      try {
        const kept = localStorage.getItem(key + from);
        if (kept === null) continue;
        if (localStorage.getItem(key + to) === null) localStorage.setItem(key + to, kept);
        localStorage.removeItem(key + from);
      } catch { /* private mode: nothing is kept */ }
    }
  }
}

linkCitations();
moveRenamedAnswers();
initQuizzes();

// Markdown tables: numbers right-aligned (with their column's header), text left.
for (const table of document.querySelectorAll("article table")) {
  const numeric = /^[-+−~≈]?\s*[\d.,]+\s*(×|%|[a-zA-Zµ/]+(\/s)?)?$/;
  for (const row of table.rows) {
    [...row.cells].forEach((c, i) => {
      if (c.tagName === "TD" && numeric.test(c.textContent.trim())) {
        c.classList.add("num");
        const th = table.tHead && table.tHead.rows[0] && table.tHead.rows[0].cells[i];
        if (th && [...table.tBodies[0].rows].every((r) => !r.cells[i] || numeric.test(r.cells[i].textContent.trim()))) th.classList.add("num");
      }
    });
  }
}

// Wide tables of the text (a lesson's, /devices') scroll sideways in their box, with a shadow on
// the edge that hides columns (markScroll), as the cells' tables do.
for (const scroller of document.querySelectorAll("article > table, main .table-scroll")) {
  const frame = document.createElement("div");
  frame.className = "table-frame";
  scroller.before(frame);
  frame.append(scroller);
  markScroll(frame, scroller, scroller.firstElementChild);
}

const cells = [...document.querySelectorAll(".cell")].map((el) => new Cell(el));
// Once every cell has its editor (or keeps its text box), the page's layout stops moving under the
// reader's pointer; body's data-settled says so (the browser tests wait for it before clicking).
Promise.allSettled(cells.map((c) => c.settled)).then(() => { document.body.dataset.settled = "true"; });
initGoals();
initMarks();
initSearch();
const lessonSlug = document.querySelector("main.lesson")?.dataset.lesson;
if (lessonSlug) markVisited(lessonSlug);
if (cells.length > 0) initMachineMenu(cells[0].lesson);
if (cells.length > 0) connect();

// restoreCells asks the server for this lesson's saved edits (put in once per page load) and the
// latest run of each cell, and replays those runs (after a refresh, a reconnect or a restart).
let editsRestored = false;
async function restoreCells() {
  if (cells.length === 0) return;
  let state;
  try {
    const res = await fetch(`/api/state?lesson=${encodeURIComponent(cells[0].lesson)}`);
    if (!res.ok) return;
    state = await res.json();
  } catch {
    return;
  }
  for (const cell of cells) {
    const cs = state.cells[cell.id];
    if (!cs) continue;
    if (!editsRestored && typeof cs.source === "string") cell.setSource(cs.source);
    if (cs.run) cell.replay(cs.run);
  }
  editsRestored = true;
}

// checkSignedIn tells a student whose session is gone (the websocket is refused) how to join again.
async function checkSignedIn() {
  try {
    const res = await fetch("/api/state?lesson=", { method: "GET" });
    if (res.status === 403) showBanner("You are not signed in to this class (any more): join again from your instructor's link, or at /join.");
  } catch { /* unreachable: the banner says so already */ }
}
