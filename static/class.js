// The instructor's view (/class): polls /api/class and /api/machines every two seconds and draws the
// queue (with cancel), the machines (what each is, how busy, whose run, its last heartbeat, its
// runs done and errors), the students and who is on which lesson (with Remove per student); pauses and resumes the queue.
const $ = (id) => document.getElementById(id);
let paused = false;

function cell(tr, text) {
  const td = document.createElement("td");
  td.textContent = text;
  tr.append(td);
  return td;
}

async function post(path, fields) {
  const res = await fetch(path, { method: "POST", body: new URLSearchParams(fields) });
  if (!res.ok) alert(`${path}: ${res.status} ${await res.text()}`);
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
    cell($("machines").insertRow(), `Cannot load the machines: ${err.message}`).colSpan = 9;
    return;
  }
  const rows = ms.map((m) => {
    const tr = document.createElement("tr");
    cell(tr, m.name); // this server's own says so in its name
    cell(tr, m.class || "");
    cell(tr, m.summary);
    cell(tr, String(m.slots));
    cell(tr, m.busy === 0 ? "idle" : m.measuring ? "busy (measuring: has it alone)" : `busy (${m.busy} of ${m.slots} slots)`);
    cell(tr, (m.runs || []).map((r) => `run ${r.run} of ${r.student}: ${r.lesson} ${r.cell}`).join("; "));
    const beat = m.last_heartbeat ? new Date(m.last_heartbeat) : null;
    cell(tr, beat ? `${beat.toLocaleTimeString()} (${Math.max(0, Math.round((Date.now() - beat) / 1000))} s ago)` : "never leaves");
    cell(tr, String(m.runs_done));
    cell(tr, String(m.errors));
    return tr;
  });
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    cell(tr, "No machine is connected: runs wait until one joins.").colSpan = 9;
    rows.push(tr);
  }
  $("machines").replaceChildren(...rows);
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
  const connected = st.students.filter((s) => s.connections > 0).length;
  $("class-status").textContent = `${st.students.length} joined, ${connected} connected; ` +
    `${st.running.length} running, ${st.waiting.length} waiting${paused ? " (queue paused)" : ""}.`;
  const q = $("queue");
  q.replaceChildren();
  for (const [state, runs] of [["running", st.running], ["waiting", st.waiting]]) {
    runs.forEach((r, i) => {
      const tr = document.createElement("tr");
      cell(tr, r.run);
      cell(tr, r.student);
      cell(tr, r.lesson);
      cell(tr, r.cell + (r.action ? ` (${r.action})` : ""));
      // A waiting run no machine connected now can take says so (no_machine), until one joins.
      const st = cell(tr, state === "running" ? "running" : `waiting #${i + 1}`);
      if (r.no_machine) {
        st.append(document.createElement("br"), r.no_machine);
        st.className = "class-no-machine";
      }
      cell(tr, `${r.estimate_s.toFixed(1)} s (estimate)${r.measures ? ", measures" : ""}`);
      const b = document.createElement("button");
      b.textContent = "Cancel";
      b.addEventListener("click", () => post("/api/class/cancel", { run: r.run }));
      cell(tr, "").append(b);
      q.append(tr);
    });
  }
  const s = $("students");
  s.replaceChildren();
  for (const p of st.students) {
    const tr = document.createElement("tr");
    cell(tr, p.name + (p.instructor ? " (instructor)" : ""));
    cell(tr, p.connections ? `yes (${p.connections})` : "no");
    cell(tr, p.lessons.join(", "));
    cell(tr, p.last_lesson || "");
    cell(tr, new Date(p.last_seen).toLocaleTimeString());
    const td = cell(tr, "");
    if (!p.instructor) {
      const b = document.createElement("button");
      b.textContent = "Remove";
      b.title = "Sign them out for good, cancel their runs and free their name";
      b.addEventListener("click", () => {
        if (confirm(`Remove ${p.name} from the class? Their runs are cancelled and their session ends; their results stay.`)) {
          post("/api/class/remove", { student: p.id });
        }
      });
      td.append(b);
    }
    s.append(tr);
  }
}

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
let board = null; // {lesson, cell}
$("show-board").addEventListener("click", () => {
  const f = new FormData($("results-form"));
  if (!f.get("cell")) { $("board-caption").textContent = "Type a cell id (the id of the cell's section on the lesson page)."; return; }
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
    box.innerHTML = '<p class="board-tables"></p><div class="cell-chart board-chart"></div>';
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
      const btn = document.createElement("button");
      btn.textContent = id;
      btn.disabled = (board.table || b.tables[0]) === id;
      btn.addEventListener("click", () => { board.table = id; drawBoard(); });
      tables.append(btn, " ");
    }
  }
  extras.querySelector(".board-chart").innerHTML = b.svg || ""; // drawn by this server (server/class.go)
  const rate = b.columns.findIndex((c) => c.unit === "GFLOP/s");
  if (rate >= 0) b.rows.sort((x, y) => (Number(y.values[rate]) || 0) - (Number(x.values[rate]) || 0));
  $("board-caption").textContent = `${board.cell}: ${b.rows.length} result row(s). ${b.caption || ""}`;
  const head = document.createElement("tr");
  for (const label of ["student", ...b.columns.map((c) => c.label + (c.unit ? ` (${c.unit})` : "")), "when"]) cell(head, label);
  $("board-head").replaceChildren(head);
  const body = $("board");
  body.replaceChildren();
  for (const r of b.rows) {
    const tr = document.createElement("tr");
    if (r.bad) tr.className = "bad";
    cell(tr, r.student + (r.edited ? " (edited)" : "") + (r.shared ? " (shared result)" : "")).title = r.on || "";
    for (const v of r.values) cell(tr, typeof v === "number" ? v.toPrecision(4) : String(v));
    cell(tr, new Date(r.ended).toLocaleTimeString());
    body.append(tr);
  }
}

refresh();
setInterval(() => { refresh(); drawBoard(); }, 2000);
