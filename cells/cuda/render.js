// Renderer for cuda cells: a run reports like any timed run (the learner's kernel as `custom`); the
// Show PTX action (action "ptx") and Show SASS (action "sass": the listing per line of the kernel,
// and a table of each line's count) come back as text and tables, drawn by the shared page code.

import { measuredDone } from "/static/measured.js";

export default {
  done(view) {
    if (view.action === "sass") return view.texts.length ? `assembled${view.took ? ` in ${view.took}` : ""}: the SASS of each line is below` : "assembled";
    if (view.action === "ptx") return view.texts.length ? `compiled${view.took ? ` in ${view.took}` : ""}: the PTX is below` : "compiled";
    return measuredDone(view);
  },
};
