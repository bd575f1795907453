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
//   done(view)            the run finished; return the status text ("done: …"), or nothing for the
//                         generic one, which counts the rows and failed checks
//
// `view` (view.js, CellView) has section (the cell's <section>), output (its .cell-output), cell,
// lesson, kind, action (the run's action name, "" for Run), area() (the kind's own div.cell-view in
// the output, made on first use), state (an object for the kind, fresh each run), tables (Map of table
// id -> {def, columns, rows: [{values, bad}], badRows}), notes, texts, rowCount(id?), badCount(id?),
// summary() and format(number).

import { formatNumber } from "./format.js";
import { CellView } from "./view.js";

const MAX_MESSAGE = 64 * 1024; // the server answers larger frames with an error that names no run

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
    this.runBtn = el.querySelector(".cell-run");
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
    this.addReset();
    this.source.addEventListener("input", () => this.saveSoon());
    this.stopBtn.addEventListener("click", () => this.stop());
    for (const b of this.actionBtns) b.addEventListener("click", () => this.run(b.dataset.action));
    this.source.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && ev.shiftKey) {
        ev.preventDefault();
        this.run("");
      }
    });
  }

  setStatus(text, isError = false) {
    this.status.textContent = text;
    this.status.classList.toggle("error", isError);
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
    const req = { type: "run", id: runId, lesson: this.lesson, cell: this.id, source: this.source.value };
    if (action) req.action = action;
    if (fresh) req.fresh = true;
    const payload = JSON.stringify(req);
    if (new TextEncoder().encode(payload).length > MAX_MESSAGE) {
      this.setStatus("This spec is over the server's 64 KiB message limit: shorten it.", true);
      return;
    }
    this.hook("reset");
    this.view.clear(action);
    this.runId = runId;
    runs.set(runId, this);
    this.progress.max = 1;
    this.progress.value = 0;
    this.setBusy(true);
    this.setStatus("sending…");
    socket.send(payload);
  }

  // --- Saved work: the server keeps edits and runs (docs/protocol.md, "save" and "replay") ---

  // addReset puts a Reset button after the cell's buttons: it restores the lesson's source (the
  // textarea's original text) and the server forgets the edit.
  addReset() {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "cell-reset";
    b.textContent = "Reset";
    b.title = "Restore the lesson's source of this cell";
    b.addEventListener("click", () => {
      this.source.value = this.source.defaultValue;
      this.save();
    });
    this.stopBtn.after(b);
  }

  // saveSoon sends the edited source a second after typing stops.
  saveSoon() {
    clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => this.save(), 1000);
  }

  save() {
    clearTimeout(this.saveTimer);
    if (socketOpen) socket.send(JSON.stringify({ type: "save", lesson: this.lesson, cell: this.id, source: this.source.value }));
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

  // replay shows a stored run of this cell: its messages so far, then, if it is still queued or
  // running, the rest live.
  replay(run) {
    if (this.runId || !socketOpen) return;
    const runId = `${this.id}#${++runCounter}`;
    this.hook("reset");
    this.view.clear(run.action || "");
    this.runId = runId;
    this.replayed = run;
    runs.set(runId, this);
    this.setBusy(true);
    this.setStatus("picking up your last run…");
    socket.send(JSON.stringify({ type: "replay", id: runId, run: run.id }));
  }

  stop() {
    if (this.runId && socketOpen) {
      socket.send(JSON.stringify({ type: "cancel", id: this.runId }));
      this.setStatus("stopping…");
    }
  }

  end(text, isError) {
    if (this.replayed && this.replayed.ended) {
      text += ` (your run of ${new Date(this.replayed.ended).toLocaleString()})`;
    }
    this.replayed = null;
    runs.delete(this.runId);
    this.runId = null;
    this.setBusy(false);
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

  handle(m) {
    if (m.type === "lost") {
      if (this.runId) this.end("The connection dropped; the run goes on on the server and shows here again once reconnected.", true);
      return;
    }
    if (m.id !== this.runId) return; // a run that already ended
    const v = this.view;
    switch (m.type) {
      case "queued":
        this.setStatus((m.position > 1 ? `queued: ${m.position - 1} run(s) ahead of yours` : "queued: next to run") +
          (m.wait_s > 1 ? `, starts in about ${Math.round(m.wait_s)} s (estimate)` : ""));
        break;
      case "started":
        this.setStatus("running…");
        break;
      case "shared":
        this.offerRunAnyway();
        break;
      case "progress":
        this.progress.max = Math.max(m.total, 1);
        this.progress.value = m.done;
        this.setStatus(`running… ${formatNumber(m.done)} of ${formatNumber(m.total)}`);
        break;
      case "note":
        v.addNote(m.note);
        break;
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
        const text = this.hook("done");
        this.end(typeof text === "string" && text ? text : v.summary(), false);
        break;
      }
      case "cancelled":
        this.end(`cancelled: ${m.message || "stopped"}`, false);
        break;
      case "error":
        this.end(m.message || "error", true);
        break;
    }
  }
}

const cells = [...document.querySelectorAll(".cell")].map((el) => new Cell(el));
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
    if (!editsRestored && typeof cs.source === "string") cell.source.value = cs.source;
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
