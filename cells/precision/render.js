// Renderer for precision cells: rounding emulated on the server's CPU, computed when the cell runs.
// The notes, the two tables (`gradients`, `updates`) and the chart are drawn by the shared page code;
// this only words the status so that it cannot read as measured on a GPU.

export default {
  done(view) {
    const rows = view.rowCount("gradients");
    if (!rows) return undefined; // the generic wording: nothing ran
    return `${rows} format × loss-scale pair${rows === 1 ? "" : "s"} emulated on the server's CPU` +
      `${view.took ? ` in ${view.took}` : ""} (rounding computed now, no GPU involved)`;
  },
};
