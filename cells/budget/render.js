// Renderer for budget cells: a model whose measured inputs are this machine's CPU rate and, where the
// browser has WebGPU, the learner's own GPU's (the task runs static/webgpu/runner.js here). The
// `budget` table and the chart are drawn by the shared page code; this words the status so that the
// modelled times cannot read as measured, and moves the run's last note, the sentence saying what
// dominates, from the notes to under the chart.

import { runTask } from "/static/webgpu/runner.js";

export default {
  task: (view, task, signal) => runTask(task, signal),
  done(view) {
    const verdict = [...view.notes].reverse().find((n) => n.message.includes(" dominates on "));
    if (verdict) {
      view.removeNote(verdict.message);
      const p = document.createElement("p");
      p.className = "cell-verdict";
      p.dataset.rank = 6; // after the chart (view.js ranks notes 1 … chart 5)
      p.textContent = verdict.message;
      view.output.append(p);
    }
    const rows = view.rowCount();
    return `modelled from measured rates and datasheets${rows ? `, ${rows} row${rows === 1 ? "" : "s"}` : ""}`;
  },
};
