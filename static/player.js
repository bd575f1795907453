// FramePlayer plays a run's animation frames while they stream in, for the kinds' renderers
// (cells/systolic, cells/tpu, cells/simt), with controls to study them: play/pause, first, step back,
// step forward, last, a scrubber and a speed. It owns the controls; the kind draws one frame with
// show(frame, index, total) into player.stage and returns the position text. playerModule is the
// whole browser module of such a kind, around one FramePlayer per cell.
//
// Keys, when the player has focus: Space plays or pauses, ←/→ step, Home/End jump.
//
// A learner whose system asks for reduced motion (prefers-reduced-motion: reduce, read when the
// player is made) gets a still player: it shows the run's first frame, paused with its controls
// ready, and plays only when the learner presses Play (or Space). The first frame, not the last:
// each animation is a process told from its start (the systolic array's rows of A waiting at its
// left edge, the first warp instruction, the TPU pipeline's first grid step), the frames stream in
// while the run runs (a still player that followed the newest frame would move by itself), and Play
// at the last frame would start again from the first anyway.

const SPEEDS = [0.25, 0.5, 1, 2, 4, 8, 16];

// playerModule returns the browser module (frames, reset, done) of a kind whose runs stream
// animation frames. On a run's first frame it puts a FramePlayer in the cell's area (kept as
// view.state.player) and lets the kind fill the player's stage; it hands the player every frame,
// stops it when the cell resets and ends it when the run is done. The kind gives:
//
//   className, label, intervalMs: the FramePlayer's (its box's class, accessible name, time a frame)
//   stage(view, player): fills player.stage and returns show(frame, i, frames), which draws frame i
//     of the frames so far (player.frames) and returns its caption
//   take(state, frame): optional, the frame to keep for one that arrives (view.state is state)
//   done(view): the status line when the run is done (undefined: the page's generic wording)
export function playerModule({ className, label, intervalMs, stage, take = (state, frame) => frame, done }) {
  return {
    frames(view, frames) {
      const s = view.state;
      if (!s.player) {
        let show = () => "";
        const player = new FramePlayer(view.area(), { className, label, intervalMs, show: (f, i) => show(f, i, player.frames) });
        s.player = player;
        show = stage(view, player);
      }
      for (const f of frames) s.player.push(take(s, f));
    },

    reset(view) {
      if (view.state.player) view.state.player.stop();
    },

    done(view) {
      if (view.state.player) view.state.player.end();
      return done(view);
    },
  };
}

// html makes the HTML element name of class className, for the players' stages.
export function html(name, className) {
  const e = document.createElement(name);
  e.className = className;
  return e;
}

const SVG = "http://www.w3.org/2000/svg";

// svg makes the SVG element name with attrs and, if text is given, that text, for the players'
// drawings.
export function svg(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

export class FramePlayer {
  // parent: where the player goes; className: the box's class; intervalMs: time per frame at 1×;
  // label: the group's accessible name; show(frame, i, total): draws frame i, returns its caption.
  constructor(parent, { className, intervalMs = 400, label = "animation", show }) {
    this.frames = [];
    this.at = -1;
    this.playing = false;
    this.speed = 1;
    this.intervalMs = intervalMs;
    this.draw = show;
    this.text = "";
    this.box = document.createElement("div");
    this.box.className = `player ${className}`;
    this.box.setAttribute("role", "group");
    this.box.setAttribute("aria-label", label);
    this.box.tabIndex = -1;
    const controls = document.createElement("div");
    controls.className = "player-controls";
    const first = button("player-first", "|◀", "first frame");
    const back = button("player-back", "◀", "step back");
    this.playBtn = button("player-play", "Pause", "play or pause");
    const step = button("player-step", "▶", "step forward");
    const last = button("player-last", "▶|", "last frame");
    this.scrub = document.createElement("input");
    this.scrub.type = "range";
    this.scrub.className = "player-scrub";
    this.scrub.min = "1";
    this.scrub.max = "1";
    this.scrub.value = "1";
    this.scrub.setAttribute("aria-label", "frame");
    const speedLabel = document.createElement("label");
    speedLabel.className = "player-speed";
    speedLabel.textContent = "speed";
    this.speedSel = document.createElement("select");
    this.speedSel.className = "player-speed-select";
    for (const s of SPEEDS) {
      const o = document.createElement("option");
      o.value = String(s);
      o.textContent = `${s}×`;
      o.selected = s === 1;
      this.speedSel.appendChild(o);
    }
    speedLabel.appendChild(this.speedSel);
    this.pos = document.createElement("span");
    this.pos.className = "player-pos";
    this.pos.setAttribute("aria-live", "off");
    controls.append(first, back, this.playBtn, step, last, this.scrub, speedLabel, this.pos);
    this.stage = document.createElement("div");
    this.stage.className = "player-stage";
    this.box.append(controls, this.stage);
    parent.appendChild(this.box);

    this.playBtn.addEventListener("click", () => this.toggle());
    first.addEventListener("click", () => this.jump(0));
    back.addEventListener("click", () => this.jump(this.at - 1));
    step.addEventListener("click", () => this.jump(this.at + 1));
    last.addEventListener("click", () => this.jump(this.frames.length - 1));
    this.scrub.addEventListener("input", () => this.jump(Number(this.scrub.value) - 1));
    this.speedSel.addEventListener("change", () => { this.speed = Number(this.speedSel.value) || 1; this.schedule(); });
    this.box.addEventListener("keydown", (ev) => {
      if (ev.target instanceof HTMLSelectElement || ev.target instanceof HTMLInputElement) return;
      const keys = { " ": () => this.toggle(), ArrowLeft: () => this.jump(this.at - 1), ArrowRight: () => this.jump(this.at + 1),
        Home: () => this.jump(0), End: () => this.jump(this.frames.length - 1) };
      const f = keys[ev.key];
      if (f && !(ev.target instanceof HTMLButtonElement && ev.key === " ")) { ev.preventDefault(); f(); }
    });
    this.setPlaying(!prefersReducedMotion());
  }

  // toggle plays or pauses; playing again at the last frame starts from the first.
  toggle() {
    if (!this.playing && this.at >= this.frames.length - 1) this.show(0);
    this.setPlaying(!this.playing);
  }

  // jump pauses and shows frame i.
  jump(i) {
    this.setPlaying(false);
    this.show(Math.max(0, Math.min(i, this.frames.length - 1)));
  }

  setPlaying(on) {
    this.playing = on;
    this.playBtn.textContent = on ? "Pause" : "Play";
    this.box.dataset.playing = on ? "true" : "false";
    this.schedule();
  }

  schedule() {
    clearTimeout(this.timer);
    if (!this.playing || this.stopped) return;
    this.timer = setTimeout(() => {
      if (this.at < this.frames.length - 1) this.show(this.at + 1);
      else if (this.ended) { this.setPlaying(false); return; } // the last frame: stop there
      this.schedule();
    }, this.intervalMs / this.speed);
  }

  push(frame) {
    this.frames.push(frame);
    this.scrub.max = String(this.frames.length);
    if (this.at < 0) this.show(0);
    else this.label();
  }

  // end says no more frames will come (the run finished), so playing stops at the last one.
  end() {
    this.ended = true;
  }

  show(i) {
    if (i < 0 || i >= this.frames.length) return;
    this.at = i;
    this.scrub.value = String(i + 1);
    this.text = this.draw(this.frames[i], i, this.frames.length) || "";
    this.label();
  }

  label() {
    this.pos.textContent = `frame ${(this.at + 1).toLocaleString("en-US")} of ${this.frames.length.toLocaleString("en-US")}` + (this.text ? `: ${this.text}` : "");
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

// prefersReducedMotion says whether the learner's system asks for reduced motion.
function prefersReducedMotion() {
  return typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;
}

function button(className, text, label) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = className;
  b.textContent = text;
  b.title = label;
  b.setAttribute("aria-label", label);
  return b;
}
