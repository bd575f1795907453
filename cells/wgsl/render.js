// Renderer for wgsl cells: the server asks the page to compile, time and check the learner's WGSL
// (and the WGSL ladder kernels it is compared with) here, on the learner's own GPU, through
// static/webgpu/runner.js; everything else is drawn by the shared page code.

import { measuredDone } from "/static/measured.js";
import { runTask } from "/static/webgpu/runner.js";

export default {
  done: measuredDone,
  task: (view, task, signal) => runTask(task, signal),
};
