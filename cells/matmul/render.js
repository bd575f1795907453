// Renderer for matmul cells. Everything a matmul run sends (notes, the `results` table measured now,
// a `recorded` table from an earlier GPU run, the chart) is drawn by the shared page code; this only
// words the status after the run. The cuda and roofline renderers reuse it.

export default {
  done(view) {
    const measured = view.rowCount("results");
    const recorded = view.rowCount("recorded");
    const failed = view.notes.some((n) => n.level === "error");
    if (!measured && !recorded) return failed ? "done: nothing was measured (see the notes)" : undefined;
    const parts = [];
    if (measured) {
      parts.push(`${measured} result${measured === 1 ? "" : "s"}, measured on this server just now`);
      const bad = view.badCount("results");
      if (bad) parts.push(`${bad} failed the check`);
    } else {
      parts.push("nothing measured on this server");
    }
    if (recorded) parts.push(`${recorded} recorded earlier on a GPU`);
    if (failed) parts.push("some kernels did not run (see the notes)");
    return `done: ${parts.join("; ")}`;
  },
};
