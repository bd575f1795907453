// Renderer for allreduce cells: a cost model, not a measurement. Its `model` table and chart are
// drawn by the shared page code; this only words the status so that it cannot read as measured.

export default {
  done(view) {
    const rows = view.rowCount();
    if (!rows) return undefined; // the generic wording: nothing ran
    return `${view.format(rows)} configuration${rows === 1 ? "" : "s"} modelled${view.took ? ` in ${view.took}` : ""} (a cost model: no measurement involved)`;
  },
};
