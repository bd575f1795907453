// Renderer for roofline cells: a timed run drawn under this machine's measured roofs. The notes (the
// measured ceilings, the byte model, the predictions), the tables and the chart are drawn by the
// shared page code; the status is worded as for any timed run. A cell that names a transformer
// (`steps` table) times nothing of it: its status says the steps were modelled.

import { measuredDone } from "/static/measured.js";

export default {
  done(view) {
    const steps = view.rowCount("steps");
    if (!steps) return measuredDone(view);
    return `${steps} transformer step${steps === 1 ? "" : "s"} modelled${view.took ? ` in ${view.took}` : ""} ` +
      "on this machine's measured roofline and a datasheet's (counted from the model's shape: nothing of the model ran)";
  },
};
