// Renderer for roofline cells: a timed run drawn under this machine's measured roofs. The notes (the
// measured ceilings, the byte model, the predictions), the tables and the chart are drawn by the
// shared page code; the status is worded as for any timed run.

import { measuredDone } from "/static/measured.js";

export default {
  done: measuredDone,
};
