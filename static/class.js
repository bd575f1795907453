// The instructor's view (/class): polls /api/class and /api/machines every two seconds and draws the
// queue (with Cancel), the machines (what each is, how busy, whose run, its last heartbeat, its runs
// done and errors), the students grouped by the address they joined from (Remove per student, Block
// per address) and the progress grid (/api/class/progress, every five seconds); pauses and resumes
// the queue; shows one cell's results of the whole class, picked from the lesson's cells.
import { formatValue } from "./format.js";

const $ = (id) => document.getElementById(id);
let paused = false;

function cell(tr, text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  tr.append(td);
  return td;
}

function button(label, title, onClick, className) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  if (title) b.title = title;
  if (className) b.className = className;
  b.addEventListener("click", onClick);
  return b;
}

async function post(path, fields) {
  const res = await fetch(path, { method: "POST", body: new URLSearchParams(fields) });
  if (!res.ok) $("class-status").textContent = `${path}: ${res.status} ${await res.text()}`;
  refresh();
}

// drawMachines draws the machines that run runs (GET /api/machines, as the instructor sees it).
async function drawMachines() {
  let ms;
  try {
    const res = await fetch("/api/machines");
    if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
    ms = (await res.json()).machines || [];
  } catch (err) {
    $("machines").replaceChildren();
    cell($("machines").insertRow(), `Cannot load the machines: ${err.message}`).colSpan = 10;
    return;
  }
  const rows = ms.map((m) => {
    const tr = document.createElement("tr");
    cell(tr, m.name); // this server's own says so in its name
    cell(tr, m.class || "");
    cell(tr, m.summary);
    cell(tr, String(m.slots), "num");
    cell(tr, m.busy === 0 ? "idle" : m.measuring ? "busy (measuring: has it alone)" : `busy (${m.busy} of ${m.slots} slots)`);
    cell(tr, (m.runs || []).map((r) => `run ${r.run} of ${r.student}: ${r.lesson} ${r.cell}`).join("; "));
    const beat = m.last_heartbeat ? new Date(m.last_heartbeat) : null;
    cell(tr, beat ? `${beat.toLocaleTimeString()} (${Math.max(0, Math.round((Date.now() - beat) / 1000))} s ago)` : "never leaves");
    cell(tr, String(m.runs_done), "num");
    cell(tr, String(m.errors), "num");
    cell(tr, priceText(m));
    return tr;
  });
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    cell(tr, "No machine is connected: runs wait until one joins.").colSpan = 10;
    rows.push(tr);
  }
  $("machines").replaceChildren(...rows);
}

// priceText is how a worker's runs bear out its prices (server.MachineInfo's price, price_ratio,
// demoted): "on price (1.1×)", "slower than priced (5.1×)", or the demotion with its reason and time.
function priceText(m) {
  if (m.demoted) return `demoted since ${new Date(m.demoted_at).toLocaleTimeString()}: ${m.demoted}`;
  if (!m.price) return "";
  return m.price_ratio ? `${m.price} (${m.price_ratio.toFixed(1)}×)` : m.price;
}

function drawQueue(st) {
  const q = $("queue");
  q.replaceChildren();
  for (const [state, runs] of [["running", st.running], ["waiting", st.waiting]]) {
    runs.forEach((r, i) => {
      const tr = document.createElement("tr");
      cell(tr, String(r.run), "num");
      cell(tr, r.student);
      cell(tr, r.lesson);
      cell(tr, r.cell + (r.action ? ` (${r.action})` : ""));
      // A waiting run no machine connected now can take says so (no_machine), until one joins.
      const td = cell(tr, state === "running" ? "running" : `waiting #${i + 1}`);
      if (r.no_machine) {
        td.append(document.createElement("br"), r.no_machine);
        td.className = "class-no-machine";
      }
      cell(tr, `${r.estimate_s.toFixed(1)} s (estimate)${r.measures ? ", measures" : ""}`);
      cell(tr, "").append(button("Cancel", "Cancel this run", () => post("/api/class/cancel", { run: r.run }), "quiet"));
      q.append(tr);
    });
  }
  if (!q.rows.length) cell(q.insertRow(), "Nothing queued or running.").colSpan = 7;
}

function studentRow(p) {
  const tr = document.createElement("tr");
  cell(tr, p.name + (p.instructor ? " (instructor)" : ""));
  cell(tr, p.connections ? `yes (${p.connections})` : "no");
  cell(tr, p.lessons.join(", "));
  cell(tr, p.last_lesson || "");
  cell(tr, new Date(p.last_seen).toLocaleTimeString());
  const td = cell(tr, "");
  if (!p.instructor) {
    td.append(button("Remove", "Sign them out for good, cancel their runs and free their name", () => {
      if (confirm(`Remove ${p.name} from the class? Their runs are cancelled and their session ends; their results stay.`)) {
        post("/api/class/remove", { student: p.id });
      }
    }, "danger"));
  }
  return tr;
}

// groupRow heads one address's students: how many, and Block (or Unblock).
function groupRow(a) {
  const tr = document.createElement("tr");
  tr.className = "class-group";
  const th = document.createElement("th");
  th.colSpan = 6;
  th.textContent = `${a.address}: ${a.students} student${a.students === 1 ? "" : "s"}`;
  if (a.blocked) {
    const b = document.createElement("span");
    b.className = "blocked";
    b.textContent = " (blocked)";
    th.append(b, button("Unblock", "Let students join from this address again", () => post("/api/class/block", { address: a.address, blocked: "false" }), "quiet"));
  } else {
    th.append(button("Block", "Remove every student who joined from this address and refuse new ones from it", () => {
      if (confirm(`Block ${a.address}? Its ${a.students} student(s) are removed (their runs cancelled, their sessions ended; their results stay), and nobody joins from it until you unblock it.`)) {
        post("/api/class/block", { address: a.address, blocked: "true" });
      }
    }, "danger"));
  }
  tr.append(th);
  return tr;
}

function drawStudents(st) {
  const body = $("students");
  const rows = [];
  for (const a of st.addresses || []) {
    rows.push(groupRow(a));
    for (const p of st.students) if (!p.instructor && p.address === a.address) rows.push(studentRow(p));
  }
  const rest = [["address not recorded", (p) => !p.instructor && !p.address], ["instructors", (p) => p.instructor]];
  for (const [label, pick] of rest) {
    const ps = st.students.filter(pick);
    if (!ps.length) continue;
    const tr = document.createElement("tr");
    tr.className = "class-group";
    const th = document.createElement("th");
    th.colSpan = 6;
    th.textContent = label;
    tr.append(th);
    rows.push(tr, ...ps.map(studentRow));
  }
  if (!rows.length) {
    const tr = document.createElement("tr");
    cell(tr, "No student has joined yet.").colSpan = 6;
    rows.push(tr);
  }
  body.replaceChildren(...rows);
}

async function refresh() {
  drawMachines();
  let st;
  try {
    const res = await fetch("/api/class");
    if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
    st = await res.json();
  } catch (err) {
    $("class-status").textContent = `Cannot load the class: ${err.message}`;
    return;
  }
  paused = st.paused;
  $("pause").textContent = paused ? "Resume the queue" : "Pause the queue";
  const students = st.students.filter((s) => !s.instructor);
  const connected = students.filter((s) => s.connections > 0).length;
  $("class-status").textContent = `${students.length} student${students.length === 1 ? "" : "s"} joined, ${connected} connected; ` +
    `${st.running.length} running, ${st.waiting.length} waiting${paused ? " (queue paused)" : ""}.`;
  drawQueue(st);
  drawStudents(st);
}

// drawProgress draws the grid: a row per student, a column per lesson (numbered in the index's
// order, titled on hover), each cell its cells run, challenges met and questions right ("–" for a lesson not begun).
async function drawProgress() {
  let p;
  try {
    const res = await fetch("/api/class/progress");
    if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
    p = await res.json();
  } catch (err) {
    $("progress").replaceChildren();
    cell($("progress").insertRow(), `Cannot load the progress: ${err.message}`);
    return;
  }
  const head = document.createElement("tr");
  const corner = document.createElement("th");
  corner.textContent = "student";
  head.append(corner);
  p.lessons.forEach((l, i) => {
    const th = document.createElement("th");
    th.textContent = String(i + 1);
    th.title = `${i + 1}. ${l.title} (${l.cells} cells, ${l.challenges} challenges, ${l.questions} questions)`;
    head.append(th);
  });
  $("progress-head").replaceChildren(head);
  const rows = p.students.map((s) => {
    const tr = document.createElement("tr");
    cell(tr, s.name);
    for (const l of p.lessons) {
      const got = s.lessons[l.slug] || { cells_run: 0, challenges_met: 0, answers_right: 0 };
      const begun = got.cells_run + got.challenges_met + got.answers_right > 0;
      const td = cell(tr, begun ? `${got.cells_run}/${l.cells}` : "–"); // a lesson not begun stays quiet
      const full = got.cells_run >= l.cells && got.challenges_met >= l.challenges && got.answers_right >= l.questions;
      td.className = full ? "full" : begun ? "" : "none";
      td.title = `${s.name}, ${l.title}: ${got.cells_run} of ${l.cells} cells run, ${got.challenges_met} of ${l.challenges} challenges met, ${got.answers_right} of ${l.questions} questions right`;
      if (!begun) continue;
      for (const [mark, n, of] of [["★", got.challenges_met, l.challenges], ["✓", got.answers_right, l.questions]]) {
        if (!of) continue;
        const sub = document.createElement("span");
        sub.className = "sub";
        sub.textContent = `${mark} ${n}/${of}`;
        td.append(sub);
      }
    }
    return tr;
  });
  if (!rows.length) {
    const tr = document.createElement("tr");
    cell(tr, "No student has joined yet.").colSpan = p.lessons.length + 1;
    rows.push(tr);
  }
  $("progress").replaceChildren(...rows);
}

// The cell picker: the chosen lesson's cells (id and kind), or all of them for the CSV.
const lessonCells = JSON.parse($("lesson-cells").textContent || "{}");
function fillCells() {
  const pick = $("cell-pick");
  const all = document.createElement("option");
  all.value = "";
  all.textContent = "all cells";
  pick.replaceChildren(all, ...(lessonCells[$("lesson-pick").value] || []).map((c) => {
    const o = document.createElement("option");
    o.value = c.id;
    o.textContent = `${c.id} (${c.kind})`;
    return o;
  }));
  $("show-board").disabled = true;
}
$("lesson-pick").addEventListener("change", fillCells);
$("cell-pick").addEventListener("change", () => { $("show-board").disabled = !$("cell-pick").value; });
fillCells();

$("pause").addEventListener("click", () => post("/api/class/pause", { paused: String(!paused) }));
$("results-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  const params = new URLSearchParams({ lesson: f.get("lesson") });
  if (f.get("cell")) params.set("cell", f.get("cell"));
  location.href = `/api/class/results.csv?${params}`;
});
// The board: every student's latest finished run of one cell, the rows of one of its tables side by
// side (the first unless another is chosen), best GFLOP/s first when the table has such a column,
// with the class chart above; refreshed with the rest.
let board = null; // {lesson, cell, table?}
$("show-board").addEventListener("click", () => {
  const f = new FormData($("results-form"));
  if (!f.get("cell")) return;
  board = { lesson: f.get("lesson"), cell: f.get("cell") };
  drawBoard();
});

// The board's chart (throughput against n, a series per student and kernel, drawn by the server)
// and its choice of table (a WebGPU cell's `browser` table shows every student's own GPU).
function boardExtras() {
  let box = $("board-extras");
  if (!box) {
    box = document.createElement("div");
    box.id = "board-extras";
    box.innerHTML = '<p class="board-tables class-bar"></p><figure class="cell-chart class-board-chart board-chart"></figure>';
    $("board-caption").after(box);
  }
  return box;
}

async function drawBoard() {
  if (!board) return;
  const res = await fetch(`/api/class/cell?${new URLSearchParams(board)}`);
  if (!res.ok) return;
  const b = await res.json();
  const extras = boardExtras();
  const tables = extras.querySelector(".board-tables");
  tables.replaceChildren();
  if (b.tables.length > 1) {
    tables.append("Table: ");
    for (const id of b.tables) {
      const btn = button(id, `Show the ${id} table`, () => { board.table = id; drawBoard(); }, "quiet");
      btn.disabled = (board.table || b.tables[0]) === id;
      tables.append(btn);
    }
  }
  extras.querySelector(".board-chart").innerHTML = b.svg || ""; // drawn by this server (server/class.go)
  const rate = b.columns.findIndex((c) => c.unit === "GFLOP/s");
  if (rate >= 0) b.rows.sort((x, y) => (Number(y.values[rate]) || 0) - (Number(x.values[rate]) || 0));
  $("board-caption").textContent = `${board.cell}: ${b.rows.length} result row${b.rows.length === 1 ? "" : "s"}. ${b.caption || ""}`;
  const head = document.createElement("tr");
  const labels = ["student", ...b.columns.map((c) => c.label + (c.unit ? ` (${c.unit})` : "")), "when"];
  for (const [i, label] of labels.entries()) {
    const th = document.createElement("th");
    th.textContent = label;
    const col = b.columns[i - 1];
    if (col && b.rows.some((r) => typeof r.values[i - 1] === "number")) th.className = "num";
    head.append(th);
  }
  $("board-head").replaceChildren(head);
  const body = $("board");
  body.replaceChildren();
  for (const r of b.rows) {
    const tr = document.createElement("tr");
    if (r.bad) tr.className = "bad";
    cell(tr, r.student + (r.edited ? " (edited)" : "") + (r.shared ? " (shared result)" : "")).title = r.on || "";
    // Integers as integers (128, not 128.0), others to three significant digits (formatValue).
    for (const v of r.values) cell(tr, formatValue(v), typeof v === "number" ? "num" : "");
    cell(tr, new Date(r.ended).toLocaleTimeString());
    body.append(tr);
  }
}

refresh();
drawProgress();
setInterval(() => { refresh(); drawBoard(); }, 2000);
setInterval(drawProgress, 5000);
