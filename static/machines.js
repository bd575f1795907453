// The page's machine menu: when runs are spread over several machines (docs/several-machines.md),
// the learner may send every cell of the page to one class of machine (a worker's -class). The
// menu lists the classes of the machines connected now (GET /api/machines); the pick goes with each
// run request as `machine` (docs/protocol.md), where a cell's own `machine:` key still wins, and is
// kept in localStorage per lesson, so a reload keeps it. On a server with no class of machine, and
// no pick kept, the menu stays hidden: one machine runs everything.

const KEY = "playground.machine."; // + lesson slug

function load(key) {
  try { return localStorage.getItem(key) || ""; } catch { return ""; }
}
function store(key, value) {
  try {
    if (value) localStorage.setItem(key, value);
    else localStorage.removeItem(key);
  } catch { /* private mode: the pick lasts until the page closes */ }
}

let menu = null; // {box, select, note, key, picked}

// pageMachine is the class of machine picked for this page, "" for any machine.
export function pageMachine() {
  return menu ? menu.picked : "";
}

// initMachineMenu wires the menu of the lesson page (#machine-pick), if it has one.
export function initMachineMenu(lesson) {
  const box = document.getElementById("machine-pick");
  const select = box && box.querySelector("select");
  if (!select || !lesson) return;
  menu = { box, select, note: box.querySelector(".machine-pick-note"), key: KEY + lesson, picked: load(KEY + lesson) };
  select.addEventListener("change", () => {
    menu.picked = select.value;
    store(menu.key, menu.picked);
    describe(menu.lastMachines || []);
  });
  select.addEventListener("focus", () => refreshMachines());
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refreshMachines(); });
  refreshMachines();
}

let asked = 0; // refreshes asked for: only the latest one's answer is used

// refreshMachines asks the server which machines are connected now and rebuilds the menu.
export async function refreshMachines() {
  if (!menu) return;
  const mine = ++asked;
  let machines;
  try {
    const res = await fetch("/api/machines");
    if (!res.ok) return;
    machines = (await res.json()).machines || [];
  } catch {
    return; // the connection banner says the server is unreachable
  }
  if (mine !== asked) return; // a later refresh answers
  menu.lastMachines = machines;
  const byClass = new Map();
  for (const m of machines) {
    if (!m.class) continue;
    if (!byClass.has(m.class)) byClass.set(m.class, []);
    byClass.get(m.class).push(m);
  }
  const { select, picked } = menu;
  const options = [new Option("any machine", "")];
  options[0].title = "each run goes to a free machine able to run it (a GPU cell to a machine with a GPU)";
  for (const [cls, ms] of [...byClass].sort((a, b) => a[0].localeCompare(b[0]))) {
    // A worker's GPU is its own claim (docs/several-machines.md): the menu says whose.
    const gpus = [...new Set(ms.filter((m) => m.gpu).map((m) => (m.here ? "GPU" : `GPU claimed by worker ${m.name}`)))];
    const gpu = gpus.length ? `, ${gpus.join(", ")}` : "";
    const o = new Option(`${cls} (${ms.map((m) => m.name).join(", ")}${gpu})`, cls);
    o.title = ms.map((m) => m.summary).join("\n");
    options.push(o);
  }
  if (picked && !byClass.has(picked)) options.push(new Option(`${picked} (not connected now)`, picked));
  const same = JSON.stringify(options.map((o) => [o.value, o.text, o.title]));
  if (same !== menu.shown) { // rebuilt only when it changed: the list may be open (refreshed on focus)
    select.replaceChildren(...options);
    menu.shown = same;
  }
  select.value = picked;
  menu.box.hidden = byClass.size === 0 && !picked;
  menu.box.dataset.loaded = String(machines.length); // the machines listed last (browser tests wait for it)
  describe(machines);
}

// describe says, beside the menu, where the page's runs go.
function describe(machines) {
  const { note, picked } = menu;
  if (!note) return;
  if (!picked) {
    note.textContent = machines.length > 1 ? `${machines.length} machines connected: each run goes to a free one able to run it.` : "";
    return;
  }
  const n = machines.filter((m) => m.class === picked).length;
  note.textContent = n === 0
    ? `No machine of class ${picked} is connected now: runs end with an error until one joins, or pick another.`
    : `Runs of this page go to ${n === 1 ? "that machine" : `those ${n} machines`}, except a cell whose machine: key names another class.`;
}
