// Renderer for budget cells: a model whose only measured input is this machine's CPU rate. Its
// `budget` table and chart are drawn by the shared page code; this only words the status so that the
// modelled times cannot read as measured.

export default {
  done(view) {
    const rows = view.rowCount();
    return `done: modelled from the CPU's measured rate and datasheets${rows ? `, ${rows} row${rows === 1 ? "" : "s"}` : ""}`;
  },
};
