// Renderer for serving cells: a simulation whose every time is modelled. Its table (`runs`: one row
// per system and request rate), notes and chart (latency per token against throughput) are drawn by
// the shared page code; this only words the status so that it cannot read as measured.

export default {
  done(view) {
    const runs = view.rowCount("runs");
    if (!runs) return undefined; // the generic wording: nothing ran
    return `${runs} serving run${runs === 1 ? "" : "s"} simulated` +
      `${view.took ? ` in ${view.took}` : ""} (modelled step times: no measurement involved)`;
  },
};
