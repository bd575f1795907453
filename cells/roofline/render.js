// Renderer for roofline cells: a matmul run drawn under this machine's measured roofs. The notes
// (the measured ceilings, the byte model, the predictions), the tables and the chart are drawn by
// the shared page code; the status is worded as for matmul.

import matmul from "/cells/matmul.js";

export default {
  done(view) {
    return matmul.done(view);
  },
};
