// Renderer for matmul cells. Everything a matmul run sends (notes, the `results` table measured now,
// a `recorded` table from an earlier GPU run, the `browser` table, the chart) is drawn by the shared
// page code; this words the status after the run, and runs the tasks of the cell's webgpu kernels
// here, on the learner's own GPU (static/webgpu/runner.js).

import { measuredDone } from "/static/measured.js";
import { runTask } from "/static/webgpu/runner.js";

export default {
  done: measuredDone,
  task: (view, task, signal) => runTask(task, signal),
};
