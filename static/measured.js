// Status wording shared by the kinds whose runs go through the timing harness (a `results` table of
// points measured now; on a server without a GPU perhaps a `recorded` table from an earlier GPU run
// and an `emulated` table from the virtual GPU): matmul, cuda and roofline import it, so that none
// depends on another kind's module. view.took is the run's duration ("9.1 s"); view.ranOn the machine
// that measured it when the server names one; view.earlier set when the results are an earlier run's.

import { plural } from "/static/view.js";

export function measuredDone(view) {
  const measured = view.rowCount("results");
  const recorded = view.rowCount("recorded");
  const emulated = view.rowCount("emulated");
  const browser = view.rowCount("browser");
  const failed = view.notes.some((n) => n.level === "error");
  const took = view.took ? ` in ${view.took}` : "";
  const parts = [];
  if (measured) {
    parts.push(`${plural(measured, "result")}${took}, measured on ${view.ranOn || "this server"}${view.earlier ? "" : " just now"}`);
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
  if (!parts.length) return failed ? "nothing ran: see the notes for why" : `nothing ran${took ? ` (finished${took})` : ""}`;
  if (failed) parts.push("some kernels did not run (see the notes)");
  return parts.join("; ");
}
