// Predictions and challenges (lessons/goal.go renders them): each is about the next cell of the
// lesson. A prediction asks for a number before Run and, once the cell's run is done, shows it beside
// the value in the run's table; a challenge judges the run's row against its checks. app.js sends
// a "cell-done" event with the cell's view (view.js) when a run ends.

import { formatNumber } from "./format.js";
import { parseAnswer } from "./quiz.js";
import { markChallengeMet } from "./progress.js";

export const KEY = "playground.predict."; // + prediction id

// rowOf finds the row of table whose columns hold the values of want ({label: value}). A column is
// named by its label, or by its label without the Nsight Compute metric that follows it in brackets
// ("sectors" for "sectors [l1tex__t_sectors_pipe_lsu_mem_global_op_ld + _st]").
function rowOf(table, want) {
  const idx = {};
  table.columns.forEach((c, i) => { idx[c.label] = i; });
  table.columns.forEach((c, i) => { const short = c.label.split(" [")[0]; if (!(short in idx)) idx[short] = i; });
  for (const key of Object.keys(want)) if (!(key in idx)) return { error: `the table has no column “${key}”` };
  const row = table.rows.find((r) => Object.entries(want).every(([k, v]) => String(r.values[idx[k]]) === String(v)));
  return row ? { row, idx } : { error: `the run has no row with ${Object.entries(want).map(([k, v]) => `${k} ${v}`).join(", ")} (did the edit change it?)` };
}

function valueOf(found, column) {
  if (!(column in found.idx)) return { error: `the table has no column “${column}”` };
  return { value: found.row.values[found.idx[column]] };
}

// judgeChallenge judges a challenge (spec: table, row, checks) against table (a DataTable's columns
// and rows, or undefined when the run made none): {met, parts}, a part a check ("✓ time 2 ms ≤ 5
// ms"), or {error} when the row or the table is missing. server/progress.go's judgeChallenge decides
// met the same way for the instructor's grid; the cases of server/testdata/challenges.json run
// through both (e2e TestGoalsAndNumbersInBrowser, server TestChallengeCases).
export function judgeChallenge(spec, table) {
  const found = table ? rowOf(table, spec.row) : { error: `the run made no ${spec.table} table` };
  if (found.error) return { met: false, error: found.error };
  const parts = [];
  let met = true;
  for (const c of spec.checks) {
    const { value, error } = valueOf(found, c.column);
    if (error) { parts.push(error); met = false; continue; }
    let ok;
    let text;
    const unit = c.unit ? ` ${c.unit}` : "";
    if (c.equals !== undefined) {
      ok = String(value) === String(c.equals);
      text = `${c.column} ${value}${ok ? "" : ` (want ${c.equals})`}`;
    } else if (c.at_most !== undefined) {
      ok = typeof value === "number" && value <= c.at_most;
      text = `${c.column} ${formatNumber(value)}${unit} ${ok ? "≤" : ">"} ${formatNumber(c.at_most)}${unit}`;
    } else {
      ok = typeof value === "number" && value >= c.at_least;
      text = `${c.column} ${formatNumber(value)}${unit} ${ok ? "≥" : "<"} ${formatNumber(c.at_least)}${unit}`;
    }
    met = met && ok;
    parts.push(`${ok ? "✓" : "✗"} ${text}`);
  }
  return { met, parts };
}

function judge(aside, spec, view) {
  const verdict = aside.querySelector(".goal-verdict");
  const table = view.tables.get(spec.table);
  if (spec.kind !== "predict") {
    const { met, parts, error } = judgeChallenge(spec, table);
    if (error) {
      verdict.textContent = `Cannot compare: ${error}.`;
      verdict.className = "goal-verdict";
      return;
    }
    verdict.textContent = `${met ? "Challenge met" : "Not yet"}: ${parts.join("; ")}.`;
    verdict.className = `goal-verdict ${met ? "right" : "wrong"}`;
    aside.dataset.result = met ? "met" : "not-met";
    if (met) markChallengeMet(view.lesson, aside.id);
    return;
  }
  const found = table ? rowOf(table, spec.row) : { error: `the run made no ${spec.table} table` };
  if (found.error) {
    verdict.textContent = `Cannot compare: ${found.error}.`;
    verdict.className = "goal-verdict";
    return;
  }
  const { value, error } = valueOf(found, spec.column);
  const guess = parseAnswer(aside.querySelector(".goal-input").value);
  const unit = spec.unit ? ` ${spec.unit}` : "";
  if (error || typeof value !== "number") { verdict.textContent = `Cannot compare: ${error || "no number"}.`; return; }
  if (Number.isNaN(guess)) {
    verdict.textContent = `Result: ${formatNumber(value)}${unit}. Next time, write your guess first.`;
    verdict.className = "goal-verdict";
    return;
  }
  const ratio = value !== 0 && guess !== 0 ? Math.max(guess / value, value / guess) : Infinity;
  const how = ratio <= 1.25 ? "close" : `${formatNumber(ratio, 2)}× too ${guess > value ? "high" : "low"}`;
  verdict.textContent = `You predicted ${formatNumber(guess)}${unit}; the run gave ${formatNumber(value)}${unit}: ${how}.`;
  verdict.className = `goal-verdict ${ratio <= 1.25 ? "right" : "wrong"}`;
  aside.dataset.result = ratio <= 1.25 ? "close" : "off";
}

// A challenge's verdict is about the cell's latest run: it is cleared when a run starts, and a run
// that fails or is stopped meets no challenge.
function clearVerdict(aside, spec, text) {
  if (spec.kind !== "challenge") return;
  const verdict = aside.querySelector(".goal-verdict");
  verdict.textContent = text;
  verdict.className = text ? "goal-verdict wrong" : "goal-verdict";
  aside.dataset.result = text ? "not-met" : "";
}

export function initGoals(root = document) {
  const cells = [...root.querySelectorAll(".cell")];
  for (const aside of root.querySelectorAll("aside.goal[data-goal]")) {
    let spec;
    try { spec = JSON.parse(aside.dataset.goal); } catch { continue; }
    const cell = cells.find((c) => aside.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING);
    if (!cell) continue;
    const input = aside.querySelector(".goal-input");
    if (input) {
      try { input.value = localStorage.getItem(KEY + aside.id) || ""; } catch { /* not kept */ }
      input.addEventListener("input", () => { try { localStorage.setItem(KEY + aside.id, input.value); } catch { /* not kept */ } });
    }
    cell.addEventListener("cell-done", (ev) => judge(aside, spec, ev.detail.view));
    cell.addEventListener("cell-start", () => clearVerdict(aside, spec, ""));
    cell.addEventListener("cell-failed", (ev) => clearVerdict(aside, spec, `Not yet: ${ev.detail.message}.`));
  }
}
