// Renderer for matmul cells. Everything a matmul run sends (notes, the `results` table measured now,
// a `recorded` table from an earlier GPU run, the chart) is drawn by the shared page code; this only
// words the status after the run.

import { measuredDone } from "/static/measured.js";

export default {
  done: measuredDone,
};
