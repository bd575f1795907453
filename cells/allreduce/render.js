// Renderer for allreduce cells: a cost model, not a measurement. Its grids (`model`: time, `busbw`:
// bus bandwidth, link × GPU count) and chart are drawn by the shared page code; this only words the
// status so that it cannot read as measured.

export default {
  done(view) {
    const links = view.rowCount("model");
    if (!links) return undefined; // the generic wording: nothing ran
    const counts = Math.max((view.tables.get("model")?.columns.length || 1) - 1, 0);
    return `${links} link${links === 1 ? "" : "s"} × ${counts} GPU count${counts === 1 ? "" : "s"} modelled` +
      `${view.took ? ` in ${view.took}` : ""} (a cost model: no measurement involved)`;
  },
};
