// Renderer for allreduce cells: a cost model, not a measurement. Its `model` table and chart are
// drawn by the shared page code; this only words the status so that it cannot read as measured.

export default {
  done(view) {
    const rows = view.rowCount();
    return `done: modelled (no measurement involved)${rows ? `, ${rows} configuration${rows === 1 ? "" : "s"}` : ""}`;
  },
};
