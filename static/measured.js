// Status wording shared by the kinds whose runs go through the timing harness (a `results` table of
// points measured now, and on a server without a GPU perhaps a `recorded` table from an earlier GPU
// run): matmul, cuda and roofline import it, so that none depends on another kind's module.

export function measuredDone(view) {
  const measured = view.rowCount("results");
  const recorded = view.rowCount("recorded");
  const browser = view.rowCount("browser");
  const failed = view.notes.some((n) => n.level === "error");
  if (!measured && !recorded && !browser) return failed ? "done: nothing was measured (see the notes)" : undefined;
  const parts = [];
  if (measured) {
    parts.push(`${measured} result${measured === 1 ? "" : "s"}, measured on this server just now`);
    const bad = view.badCount("results");
    if (bad) parts.push(`${bad} failed the check`);
  } else {
    parts.push("nothing measured on this server");
  }
  if (recorded) parts.push(`${recorded} recorded earlier on a GPU`);
  if (browser) {
    parts.push(`${browser} measured in your browser`);
    const bad = view.badCount("browser");
    if (bad) parts.push(`${bad} of those failed the check`);
  }
  if (failed) parts.push("some kernels did not run (see the notes)");
  return `done: ${parts.join("; ")}`;
}
