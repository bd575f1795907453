// Renderer for tpu cells: plays the modelled pipeline's grid steps (frames {step, i, j, k, first, next,
// start, mxu_end, end, out}: times in seconds, copies {what, start, end, bytes, for, i, j, k}, each naming the step it serves) as a timeline with two
// lanes, the DMA queue between HBM and VMEM and the TensorCore's compute (MXU passes, then the VPU's
// epilogue), so the learner sees whether the copies hide behind the compute or the compute waits for
// them. Tables, chart and notes are drawn by the shared page code. Everything here is modelled.

import { html, playerModule, svg as el } from "/static/player.js";

const LANES = ["HBM ↔ VMEM (DMA)", "MXUs", "VPU epilogue"];

export default playerModule({
  className: "cell-tpu",
  label: "TPU pipeline timeline",
  intervalMs: 500,
  stage(view, player) {
    const legend = html("p", "tpu-legend");
    legend.textContent = "Modelled timeline of the kernel's grid steps. Top lane: copies between HBM and VMEM " +
      "(A and B blocks in, finished C blocks out), one at a time. Middle: the MXUs multiplying a step's blocks. " +
      "Bottom: the VPU's epilogue on a finished block. While a step computes, the next step's blocks are copied " +
      "(double-buffering); a gap in the middle lane is the MXUs waiting for a copy.";
    const svg = el("svg", { class: "tpu-timeline", role: "img" });
    svg.style.cssText = "display:block;max-width:100%;height:auto;font:12px system-ui,sans-serif";
    player.stage.append(legend, svg);
    // Laid out for the width it has (layout): a narrower stage redraws the current step.
    let width = 0;
    new ResizeObserver(() => {
      const w = contentWidth(player.stage);
      if (w !== width && player.at >= 0 && player.at < player.frames.length) {
        width = w;
        draw(view, svg, player.frames, player.at);
      }
    }).observe(player.stage);
    view.state.legend = legend;
    return (f, i, frames) => draw(view, svg, frames, i);
  },
  done(view) {
    // The timeline shows only the first steps of a long kernel: say so beside it, where its axis
    // (the time those steps take) is read, rather than among the folded notes.
    const part = view.notes.find((n) => /^The timeline shows the first \d+ of /.test(n.message || ""));
    if (part && view.state.legend) {
      view.removeNote(part.message);
      const b = html("strong", "tpu-part");
      b.textContent = ` ${part.message.replace(/;.*$/, ":")} its axis ends with the last of them, not with the kernel.`;
      view.state.legend.append(b);
    }
    if (!view.rowCount()) return undefined; // the generic wording: nothing ran
    return `modelled${view.took ? ` in ${view.took}` : ""} (a model of a TPU core from published figures: no TPU ran)`;
  },
});

// us formats seconds as microseconds.
function us(view, s) {
  return `${view.format(s * 1e6, 3)} µs`;
}

// COLOURS are the bars' fills: the page's chart palette (static/style.css, chart/style.go's
// Palette), so both themes colour them from the same variables: copies in (blue), copies out
// (vermillion), the MXUs (bluish green), the VPU (reddish purple).
const COLOURS = { in: "var(--c0)", out: "var(--c5)", mxu: "var(--c2)", vpu: "var(--c3)" };

// layout is the timeline's geometry for a stage width px wide, drawn 1 unit a pixel so its 12 px
// text stays 12 px: wide, the lane names stand left of the lanes; under 560 px, above each lane,
// which then takes the whole width.
export function layout(px) {
  const W = Math.max(300, Math.min(760, Math.floor(px) || 760));
  if (W >= 560) return { W, left: 130, right: 16, top: 24, lane: 34, label: 0 };
  return { W, left: 8, right: 8, top: 8, lane: 46, label: 16 };
}

// contentWidth is the width inside box's padding, in CSS pixels (760 without a box).
function contentWidth(box) {
  if (!box) return 760;
  const st = getComputedStyle(box);
  return box.clientWidth - parseFloat(st.paddingLeft || "0") - parseFloat(st.paddingRight || "0");
}

// draw shows steps 0…at of frames on a time axis as long as the last step received.
function draw(view, svg, frames, at) {
  const { W, left, right, top, lane, label } = layout(contentWidth(svg.parentElement));
  const H = top + LANES.length * lane + 40;
  let tmax = 0;
  for (const f of frames) tmax = Math.max(tmax, f.end, f.out ? f.out.end : 0, f.next ? f.next.end : 0);
  const x = (t) => left + (W - left - right) * (tmax > 0 ? t / tmax : 0);
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", String(W));
  svg.replaceChildren();
  LANES.forEach((name, i) => {
    const y = top + i * lane;
    svg.append(label ? el("text", { x: left, y: y + 12, fill: "currentColor" }, name)
      : el("text", { x: 4, y: y + lane / 2 + 4, fill: "currentColor" }, name));
    svg.append(el("line", { x1: left, y1: y + lane - 2, x2: W - right, y2: y + lane - 2, stroke: "currentColor", "stroke-opacity": "0.2" }));
  });
  const bar = (t0, t1, laneIdx, fill, title, current) => {
    const y = top + laneIdx * lane + 4 + label;
    const r = el("rect", { x: x(t0), y, width: Math.max(1, x(t1) - x(t0)), height: lane - 10 - label, rx: 2, fill,
      "fill-opacity": current ? "1" : "0.45", stroke: current ? "currentColor" : "none" });
    r.append(el("title", {}, title));
    svg.append(r);
  };
  for (let i = 0; i <= at && i < frames.length; i++) {
    const f = frames[i], cur = i === at;
    const where = `step ${f.step + 1}, block (${f.i}, ${f.j}, ${f.k})`;
    for (const c of [f.first, f.next, f.out]) {
      if (!c) continue;
      const colour = c.what === "C" ? COLOURS.out : COLOURS.in;
      // A copy names the step it serves: a step's next copy brings the following step's blocks.
      const served = `step ${c.for + 1}, block (${c.i}, ${c.j}, ${c.k})`;
      const what = c.what === "C" ? `C block out to HBM, from ${served}` : `${c.what} block(s) into VMEM for ${served}`;
      bar(c.start, c.end, 0, colour, `${what}: ${view.format(c.bytes / 1048576, 3)} MiB, ${us(view, c.start)} to ${us(view, c.end)} (issued during step ${f.step + 1})`, cur);
    }
    bar(f.start, f.mxu_end, 1, COLOURS.mxu, `MXUs: ${us(view, f.start)} to ${us(view, f.mxu_end)} (${where})`, cur);
    if (f.end > f.mxu_end) bar(f.mxu_end, f.end, 2, COLOURS.vpu, `VPU epilogue: ${us(view, f.mxu_end)} to ${us(view, f.end)} (${where})`, cur);
  }
  const yAxis = top + LANES.length * lane + 14;
  svg.append(el("text", { x: left, y: yAxis, fill: "currentColor" }, "0"));
  svg.append(el("text", { x: W - right, y: yAxis, "text-anchor": "end", fill: "currentColor" }, us(view, tmax)));
  const f = frames[at];
  const waited = at > 0 ? Math.max(0, f.start - frames[at - 1].end) : f.start;
  svg.setAttribute("aria-label", `Timeline of ${at + 1} grid steps; step ${f.step + 1} computes from ${us(view, f.start)} to ${us(view, f.end)}`);
  return `step ${f.step + 1}: block (i ${f.i}, j ${f.j}, k ${f.k}); MXUs ${us(view, f.mxu_end - f.start)}` +
    (f.end > f.mxu_end ? `, epilogue ${us(view, f.end - f.mxu_end)}` : "") +
    (waited > 0 ? `; waited ${us(view, waited)} for its blocks` : "; its blocks were already in VMEM");
}
