// Renderer for cuda cells: a run reports like any timed run (the learner's kernel as `custom`); the
// Show PTX action (action "ptx") comes back as text, drawn by the shared page code.

import { measuredDone } from "/static/measured.js";

export default {
  done(view) {
    if (view.action === "ptx") return view.texts.length ? `compiled${view.took ? ` in ${view.took}` : ""}: the PTX is below` : "compiled";
    return measuredDone(view);
  },
};
