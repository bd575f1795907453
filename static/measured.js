// Status wording shared by the kinds whose runs go through the timing harness (a `results` table of
// points measured now; on a server without a GPU perhaps a `recorded` table from an earlier GPU run
// and an `emulated` table from the virtual GPU): matmul, cuda and roofline import it, so that none
// depends on another kind's module. view.took is the run's duration ("9.1 s"); view.ranOn the machine
// that measured it when the server names one; view.earlier set when the results are an earlier run's.

import { earlierWhen, plural } from "/static/view.js";

export function measuredDone(view) {
  const measured = view.rowCount("results");
  const recorded = view.rowCount("recorded");
  const emulated = view.rowCount("emulated");
  const browser = view.rowCount("browser");
  // a kernel that faulted in the virtual GPU (vgpurun.Failure: "KERNEL at n=N faulted in the virtual
  // GPU: …") ran and broke; other errors are kernels that did not run
  const faults = view.notes.filter((n) => n.level === "error" && FAULTED.test(n.message));
  const failed = view.notes.some((n) => n.level === "error" && !FAULTED.test(n.message));
  const took = view.took ? ` in ${view.took}` : "";
  const parts = [];
  if (measured) {
    // shared results say when they were measured; a run of one's own shown again says when it ran (app.js)
    const when = view.shared ? ` ${earlierWhen(view.earlier)}` : view.earlier ? "" : " just now";
    parts.push(`${plural(measured, "result")}${took}, measured on ${view.ranOn || "this server"}${when}`);
    const bad = view.badCount("results");
    if (bad) parts.push(`${bad} failed the check`);
  }
  if (emulated) {
    parts.push(`${plural(emulated, "kernel run")} emulated in the virtual GPU${measured ? "" : took}`);
    const bad = view.badCount("emulated");
    if (bad) parts.push(`${bad} failed the check`);
  }
  if (browser) {
    parts.push(`${plural(browser, "result")} measured in your browser${measured || emulated ? "" : took}`);
    const bad = view.badCount("browser");
    if (bad) parts.push(`${bad} of those failed the check`);
  }
  if (recorded) parts.push(`${measured || emulated || browser ? "" : "nothing ran on this server; "}${plural(recorded, "result")} recorded earlier on a GPU`);
  if (faults.length) parts.push(faultedSummary(faults));
  if (!parts.length) return failed ? "nothing ran: see the notes for why" : `nothing ran${took ? ` (finished${took})` : ""}`;
  if (failed) parts.push("some kernels did not run (see the notes)");
  return parts.join("; ");
}

const FAULTED = / faulted in the virtual GPU: /;

// faultedSummary says which kernel faulted, with its first fault: "faulted: custom at n=64: out of
// bounds: thread (0,15,0) of block (1,0,0), line 7: …" (cut at MAX_FAULT characters: the note has it
// whole), and how many other runs faulted.
function faultedSummary(faults) {
  let first = faults[0].message.replace(FAULTED, ": ");
  if (first.length > MAX_FAULT) first = first.slice(0, MAX_FAULT - 1) + "…";
  const more = faults.length > 1 ? ` (and ${plural(faults.length - 1, "other run")}: see the notes)` : "";
  return `faulted: ${first}${more}`;
}

const MAX_FAULT = 240;
