// GPU Playground browser side: wires every .cell on the page to the server's /ws websocket
// (protocol: docs/protocol.md). No build step, no dependencies.

const cells = new Map();   // cell id -> Cell
const runs = new Map();    // run id -> Cell
let socket = null;
let socketOpen = false;
let retryMs = 500;
let runCounter = 0;

const banner = () => document.getElementById("conn-banner");

function showBanner(text) {
  const b = banner();
  if (!b) return;
  b.textContent = text;
  b.hidden = !text;
}

function connect() {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
  socket = new WebSocket(url);
  socket.addEventListener("open", () => {
    socketOpen = true;
    retryMs = 500;
    showBanner("");
    document.body.dataset.ws = "open";
  });
  socket.addEventListener("message", (ev) => {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    const cell = runs.get(msg.id);
    if (cell) cell.onMessage(msg);
    else if (msg.type === "error" && !msg.id) console.warn("server:", msg.message);
  });
  socket.addEventListener("close", () => {
    const wasOpen = socketOpen;
    socketOpen = false;
    document.body.dataset.ws = "closed";
    for (const cell of new Set(runs.values())) cell.lost();
    runs.clear();
    showBanner((wasOpen ? "Lost the connection to the server" : "Cannot reach the server") +
      `; reconnecting in ${Math.round(retryMs / 1000 * 10) / 10} s…`);
    setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 10000);
  });
}

function fmt(x, digits = 3) {
  if (!isFinite(x)) return String(x);
  if (x !== 0 && (Math.abs(x) < 1e-3 || Math.abs(x) >= 1e6)) return x.toExponential(2);
  return x.toPrecision(digits);
}

const MAX_MESSAGE = 64 * 1024; // the server answers larger frames with an error that names no run
const COLUMNS = ["kernel", "n", "dtype", "seconds", "min_seconds", "max_seconds", "gflops", "rel_error", "ok"];

class Cell {
  constructor(el) {
    this.el = el;
    this.id = el.dataset.cell;
    this.lesson = el.dataset.lesson;
    this.source = el.querySelector(".cell-source");
    this.runBtn = el.querySelector(".cell-run");
    this.stopBtn = el.querySelector(".cell-stop");
    this.progress = el.querySelector(".cell-progress");
    this.status = el.querySelector(".cell-status");
    this.table = el.querySelector(".cell-results");
    this.tbody = this.table.querySelector("tbody");
    this.chart = el.querySelector(".cell-chart");
    this.csv = el.querySelector(".cell-csv");
    this.runId = null;
    this.results = [];
    this.extra = []; // elements a run added, removed by the next
    this.ptxBtn = el.querySelector(".cell-show-ptx");
    this.ptxOut = el.querySelector(".cell-ptx");
    if (this.ptxBtn) this.ptxBtn.addEventListener("click", () => this.run("ptx"));
    this.runBtn.addEventListener("click", () => this.run());
    this.stopBtn.addEventListener("click", () => this.stop());
    this.source.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && ev.shiftKey) {
        ev.preventDefault();
        this.run();
      }
    });
  }

  setStatus(text, isError = false) {
    this.status.textContent = text;
    this.status.classList.toggle("error", isError);
    this.el.dataset.state = isError ? "error" : (this.runId ? "running" : "idle");
  }

  // run sends a run request, or with type "ptx" a request for the kernel's PTX.
  run(type = "run") {
    if (this.runId) return;
    if (!socketOpen) {
      this.setStatus("Not connected to the server yet; try again in a moment.", true);
      return;
    }
    const runId = `${this.id}#${++runCounter}`;
    const payload = JSON.stringify({ type, id: runId, lesson: this.lesson, cell: this.id, source: this.source.value });
    if (new TextEncoder().encode(payload).length > MAX_MESSAGE) {
      this.setStatus("This spec is over the server's 64 KiB message limit: shorten it.", true);
      return;
    }
    this.runId = runId;
    runs.set(this.runId, this);
    this.results = [];
    if (this.notes) this.notes.replaceChildren();
    for (const old of this.el.querySelectorAll(".cell-recorded")) old.remove();
    if (this.simtTable) { this.simtTable.remove(); this.simtTable = null; }
    if (this.player) { this.player.remove(); this.player = null; }
    if (this.warpPlayer) { this.warpPlayer.remove(); this.warpPlayer = null; }
    this.modelTable = null;
    for (const el of this.extra) el.remove();
    this.extra = [];
    this.tbody.replaceChildren();
    this.table.hidden = true;
    this.chart.replaceChildren();
    this.csv.hidden = true;
    this.progress.value = 0;
    this.progress.max = 1;
    this.runBtn.disabled = true;
    if (this.ptxBtn) this.ptxBtn.disabled = true;
    if (this.ptxOut) this.ptxOut.hidden = true;
    this.stopBtn.disabled = false;
    this.setStatus(type === "ptx" ? "compiling…" : "sending…");
    socket.send(payload);
  }

  stop() {
    if (this.runId && socketOpen) {
      socket.send(JSON.stringify({ type: "cancel", id: this.runId }));
      this.setStatus("stopping…");
    }
  }

  end(text, isError) {
    runs.delete(this.runId);
    this.runId = null;
    this.runBtn.disabled = false;
    if (this.ptxBtn) this.ptxBtn.disabled = false;
    this.stopBtn.disabled = true;
    this.setStatus(text, isError);
    this.el.dataset.state = isError ? "error" : "ended";
  }

  lost() {
    if (this.runId) this.end("The connection dropped, so the server stopped this run. Run it again once reconnected.", true);
  }

  onMessage(m) {
    switch (m.type) {
      case "queued":
        this.setStatus(m.position > 1 ? `queued: ${m.position - 1} run(s) ahead of yours` : "queued: next to run");
        break;
      case "started":
        this.setStatus("running…");
        break;
      case "progress":
        this.progress.max = m.total;
        this.progress.value = m.done;
        this.setStatus(`running… ${m.done}/${m.total} kernel calls`);
        break;
      case "result":
        this.addRow(m);
        break;
      case "note":
        this.addNote(m.note);
        break;
      case "simt":
        this.addSIMT(m.simt);
        break;
      case "allreduce":
        this.addAllReduce(m.allreduce);
        break;
      case "roofline":
        this.addRoofline(m.roofline);
        break;
      case "warps":
        if (!this.warpPlayer) this.warpPlayer = new WarpPlayer(this.el.querySelector(".cell-output"));
        for (const f of m.warps) this.warpPlayer.push(f);
        break;
      case "frames":
        for (const f of m.frames) this.addFrame(f);
        break;
      case "systolic":
        this.addSystolic(m.systolic);
        break;
      case "recorded":
        this.addRecorded(m.recorded);
        break;
      case "ptx":
        this.ptxOut.textContent = m.ptx;
        this.ptxOut.hidden = false;
        break;
      case "chart":
        this.chart.innerHTML = m.svg; // server-rendered SVG from gonum/plot
        break;
      case "done":
        this.progress.value = this.progress.max;
        this.end(this.ptxOut && !this.ptxOut.hidden ? "compiled: the PTX is below"
          : this.results.length ? `done: ${this.results.length} results, measured on this server just now`
          : this.simtTable ? "done: emulated on this server just now"
          : this.player || this.el.querySelector(".cell-systolic-result") ? "done: simulated on this server just now"
          : this.modelTable ? "done: modelled (no measurement involved)"
          : "done", false);
        break;
      case "cancelled":
        this.end(`cancelled: ${m.message || "stopped"}`, false);
        break;
      case "error":
        this.end(m.message, true);
        break;
    }
  }

  // addSIMT adds one emulated kernel's counts to the cell's emulator table (made on first use).
  addSIMT(r) {
    if (!this.simtTable) {
      this.simtTable = document.createElement("table");
      this.simtTable.className = "cell-simt";
      const cols = ["kernel", "n", "MFLOP", "global requests", "sectors", "MB moved", "coalescing",
        "shared requests", "bank conflicts", "barriers", "check", `modelled time on ${r.gpu} (µs, bound)`, "emulation s"];
      if (r.measured_on) cols.push(`measured on ${r.measured_on} (µs; matmul.cu's launch shape)`);
      this.simtTable.innerHTML = "<caption>SIMT emulator counts (time column: modelled from the datasheet, not measured)</caption><thead><tr>" +
        cols.map((c) => `<th scope=col>${c}</th>`).join("") + "</tr></thead><tbody></tbody>";
      this.el.querySelector(".cell-output").prepend(this.simtTable);
    }
    const tr = document.createElement("tr");
    if (!r.correct) tr.className = "bad";
    const cells = [r.kernel, r.n, fmt(r.flops / 1e6), r.global_requests, r.sectors, fmt(r.bytes_moved / 1e6),
      `${Math.round(r.coalescing * 100)}%`, r.shared_requests, r.bank_conflicts, r.barriers, r.correct ? "ok" : "WRONG",
      `${fmt(r.modelled_seconds * 1e6)} (${r.bound})`, fmt(r.emulation_seconds)];
    if (r.measured_on) cells.push(`${fmt(r.measured_seconds * 1e6)} (${r.measured_kernel})`);
    for (const text of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    this.simtTable.tBodies[0].appendChild(tr);
  }

  // addAllReduce adds one modelled all-reduce to the cell's model table (made on first use).
  addAllReduce(r) {
    if (!this.modelTable) {
      this.modelTable = document.createElement("table");
      this.modelTable.className = "cell-simt";
      this.modelTable.innerHTML = "<caption>Ring all-reduce, modelled (not measured)</caption><thead><tr>" +
        ["link", "GPUs", "time (ms)", "bus bandwidth (GB/s)"].map((c) => `<th scope=col>${c}</th>`).join("") + "</tr></thead><tbody></tbody>";
      this.el.querySelector(".cell-output").prepend(this.modelTable);
      this.extra.push(this.modelTable);
    }
    const tr = this.modelTable.tBodies[0].insertRow();
    for (const v of [r.link, r.gpus, fmt(r.seconds * 1e3), fmt(r.bus_gbs)]) tr.insertCell().textContent = v;
  }

  // addRoofline states this machine's measured roofs, the byte model, and the learner's predictions.
  addRoofline(info) {
    const c = info.ceilings;
    const p = document.createElement("div");
    p.className = "cell-roofline";
    const lines = [
      `This machine's roofline, measured ${c.measured}: peak ${fmt(c.peak_gflops)} GFLOP/s (${c.peak_kernel}, float32, n=${c.peak_n}), ` +
        `memory ${fmt(c.bandwidth_gbs)} GB/s (STREAM triad, ${c.triad_mib} MiB arrays${c.beyond_cache ? "" : `, not 4× the ${c.cache_mib} MiB cache: may include cache bandwidth`}), ` +
        `ridge at ${fmt(c.peak_gflops / c.bandwidth_gbs)} FLOP/byte.`,
      `Byte model: ${info.byte_model}.`,
    ];
    if (info.gpu) lines.push(`${info.gpu.name}: from its datasheet (${info.gpu.source}), not measured.`);
    if (info.predict) lines.push("Your predictions: " + Object.entries(info.predict).map(([k, v]) => `${k} ${v} GFLOP/s`).join(", ") + " (hollow markers).");
    for (const text of lines) {
      const el = document.createElement("p");
      el.textContent = text;
      p.appendChild(el);
    }
    this.el.querySelector(".cell-output").before(p);
    this.extra.push(p);
  }

  // addFrame queues one cycle of the simulated systolic array and starts the player on the first.
  addFrame(f) {
    if (!this.player) this.player = new SystolicPlayer(this.el.querySelector(".cell-output"));
    this.player.push(f);
  }

  addSystolic(r) {
    const table = document.createElement("table");
    table.className = "cell-systolic-result";
    const cols = ["array", "m×n×k", "tiles", "cycles (weight loads)", "MAC utilisation", `TFLOP/s at ${r.clock_mhz} MHz`, "check", "simulation s"];
    table.innerHTML = "<caption>Simulated systolic array (cycle counts from the simulator, not a measured TPU)</caption><thead><tr>" +
      cols.map((c) => `<th scope=col>${c}</th>`).join("") + "</tr></thead><tbody><tr></tr></tbody>";
    const vals = [`${r.array}×${r.array}`, `${r.m}×${r.n}×${r.k}`, r.tiles, `${r.cycles} (${r.weight_cycles})`,
      `${(r.utilisation * 100).toFixed(1)}%`, fmt(r.tflops), r.correct ? "ok" : "WRONG", fmt(r.simulation_seconds)];
    for (const v of vals) {
      const td = document.createElement("td");
      td.textContent = v;
      table.tBodies[0].rows[0].appendChild(td);
    }
    this.el.querySelector(".cell-output").prepend(table);
    this.extra.push(table);
  }

  // addRecorded shows an earlier real GPU run of this cell, apart from this run's measurements.
  addRecorded(rec) {
    const box = document.createElement("div");
    box.className = "cell-recorded";
    const label = document.createElement("p");
    label.textContent = rec.label;
    box.appendChild(label);
    const table = document.createElement("table");
    table.innerHTML = "<caption>Recorded GPU results</caption><thead><tr><th scope=col>kernel</th><th scope=col>n</th>" +
      "<th scope=col>dtype</th><th scope=col>median s</th><th scope=col>GFLOP/s</th><th scope=col>rel. error</th></tr></thead><tbody></tbody>";
    for (const r of rec.results) {
      const tr = document.createElement("tr");
      for (const text of [r.kernel, r.n, r.dtype, fmt(r.seconds), fmt(r.gflops), fmt(r.rel_error, 2)]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.appendChild(td);
      }
      table.tBodies[0].appendChild(tr);
    }
    box.appendChild(table);
    this.el.querySelector(".cell-output").before(box);
  }

  addNote(n) {
    if (!this.notes) {
      this.notes = document.createElement("ul");
      this.notes.className = "cell-notes";
      this.el.querySelector(".cell-output").before(this.notes);
    }
    const li = document.createElement("li");
    li.className = n.level;
    li.textContent = n.message;
    this.notes.appendChild(li);
  }

  addRow(r) {
    this.results.push(r);
    const tr = document.createElement("tr");
    if (!r.ok) tr.className = "bad";
    const cellsText = [r.kernel, r.n, r.dtype, fmt(r.seconds), fmt(r.min_seconds), fmt(r.max_seconds),
      fmt(r.gflops), fmt(r.rel_error, 2), r.ok ? "ok" : "WRONG: over tolerance"];
    for (const text of cellsText) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    this.tbody.appendChild(tr);
    this.table.hidden = false;
    this.updateCSV();
  }

  updateCSV() {
    const lines = [COLUMNS.join(",")];
    for (const r of this.results) lines.push(COLUMNS.map((c) => r[c]).join(","));
    if (this.csv.href) URL.revokeObjectURL(this.csv.href);
    this.csv.href = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "text/csv" }));
    this.csv.hidden = false;
  }
}

// SystolicPlayer shows the cycles of a simulated systolic array one by one, at a watchable rate, with
// Pause and Step: in each processing element the activation passing through (large) and its partial
// sum (small); PEs holding an activation are highlighted.
class SystolicPlayer {
  constructor(before) {
    this.frames = [];
    this.at = -1;
    this.playing = true;
    this.box = document.createElement("div");
    this.box.className = "cell-systolic";
    this.box.innerHTML = `<div class="sys-controls"><button type="button" class="sys-play">Pause</button>
      <button type="button" class="sys-step">Step</button><span class="sys-pos" aria-live="off"></span></div>
      <table class="sys-grid" aria-label="systolic array state"></table><div class="sys-out"></div>`;
    before.before(this.box);
    this.grid = this.box.querySelector(".sys-grid");
    this.pos = this.box.querySelector(".sys-pos");
    this.out = this.box.querySelector(".sys-out");
    const play = this.box.querySelector(".sys-play");
    play.addEventListener("click", () => {
      this.playing = !this.playing;
      play.textContent = this.playing ? "Pause" : "Play";
    });
    this.box.querySelector(".sys-step").addEventListener("click", () => {
      this.playing = false;
      play.textContent = "Play";
      this.show(this.at + 1);
    });
    this.timer = setInterval(() => { if (this.playing) this.show(this.at + 1); }, 400);
  }

  push(f) {
    if (f.w) this.w = f.w; // weights come with a tile's first cycle
    f.w = this.w;
    this.frames.push(f);
    if (this.at < 0) this.show(0);
  }

  show(i) {
    if (i >= this.frames.length) return;
    this.at = i;
    const f = this.frames[i];
    const n = f.a.length;
    if (this.grid.rows.length !== n) {
      this.grid.replaceChildren();
      for (let r = 0; r < n; r++) {
        const tr = this.grid.insertRow();
        for (let c = 0; c < n; c++) tr.insertCell().innerHTML = "<b></b><small></small>";
      }
    }
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < n; c++) {
        const td = this.grid.rows[r].cells[c];
        td.className = f.a[r][c] !== 0 ? "active" : "";
        td.title = `PE(${r},${c}) weight ${fmt(f.w[r][c])}`;
        td.firstChild.textContent = f.a[r][c] !== 0 ? fmt(f.a[r][c], 2) : "";
        td.lastChild.textContent = f.p[r][c] !== 0 ? fmt(f.p[r][c], 2) : "";
      }
    }
    this.pos.textContent = `frame ${i + 1} of ${this.frames.length}: tile ${f.tile + 1} (k from ${f.k0}, n from ${f.n0}), cycle ${f.cycle}`;
    this.out.textContent = (f.out || []).map((o) => `C[${o.row}][${o.col}] += ${fmt(o.value, 3)}`).join("   ");
  }

  remove() {
    clearInterval(this.timer);
    this.box.remove();
  }
}

// WarpPlayer shows a watched kernel's global warp instructions one by one (Pause, Step): the matrices
// A, B and C with the elements the warp's lanes touch, coloured by the 32-byte sector each falls in.
const SECTOR_COLOURS = ["#2f6fde", "#e4572e", "#29a36a", "#b08800", "#8e44ad", "#d6336c", "#0c8599", "#5c7cfa"];
class WarpPlayer {
  constructor(before) {
    this.frames = [];
    this.at = -1;
    this.playing = true;
    this.box = document.createElement("div");
    this.box.className = "cell-warp";
    this.box.innerHTML = `<div class="sys-controls"><button type="button" class="sys-play">Pause</button>
      <button type="button" class="sys-step">Step</button><span class="sys-pos"></span></div>
      <div class="warp-mats"></div><div class="warp-caption"></div>`;
    before.before(this.box);
    this.mats = this.box.querySelector(".warp-mats");
    this.pos = this.box.querySelector(".sys-pos");
    this.caption = this.box.querySelector(".warp-caption");
    const play = this.box.querySelector(".sys-play");
    play.addEventListener("click", () => { this.playing = !this.playing; play.textContent = this.playing ? "Pause" : "Play"; });
    this.box.querySelector(".sys-step").addEventListener("click", () => {
      this.playing = false;
      play.textContent = "Play";
      this.show(this.at + 1);
    });
    this.timer = setInterval(() => { if (this.playing) this.show(this.at + 1); }, 500);
  }

  push(f) {
    this.frames.push(f);
    if (this.at < 0) this.show(0);
  }

  grid(name, n) {
    let t = this.mats.querySelector(`table[data-m="${name}"]`);
    if (!t || t.rows.length < n) {
      if (t) t.parentElement.remove();
      const fig = document.createElement("figure");
      fig.innerHTML = `<figcaption>${name}</figcaption>`;
      t = document.createElement("table");
      t.className = "warp-grid";
      t.dataset.m = name;
      for (let r = 0; r < n; r++) { const tr = t.insertRow(); for (let c = 0; c < n; c++) tr.insertCell(); }
      fig.appendChild(t);
      this.mats.appendChild(fig);
    }
    return t;
  }

  show(i) {
    if (i >= this.frames.length) return;
    this.at = i;
    const f = this.frames[i];
    const n = f.n;
    for (const m of ["A", "B", "C"]) {
      for (const td of this.grid(m, n).querySelectorAll("td[style]")) td.removeAttribute("style");
    }
    const t = this.grid(f.matrix, n);
    for (const [lane, row, col, sector] of f.lanes) {
      const td = t.rows[row].cells[col];
      td.style.background = SECTOR_COLOURS[sector % SECTOR_COLOURS.length];
      td.title = `lane ${lane}: ${f.matrix}[${row}][${col}], sector ${sector}`;
    }
    this.pos.textContent = `instruction ${i + 1} of ${this.frames.length} (${f.kernel}, block 0, warp ${f.warp})`;
    this.caption.textContent = `${f.kind} of ${f.matrix}: ${f.lanes.length} lanes, ${f.sectors} sector(s) of 32 bytes` +
      (f.sectors === 1 && f.lanes.length > 1 ? " (every lane read the same word: a broadcast)" : "");
  }

  remove() {
    clearInterval(this.timer);
    this.box.remove();
  }
}

for (const el of document.querySelectorAll(".cell")) cells.set(el.dataset.cell, new Cell(el));
if (cells.size > 0) connect();
