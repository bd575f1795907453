// FramePlayer plays a run's animation frames at a watchable rate while they stream in, with Pause,
// Back and Step, for the kinds' renderers (cells/systolic, cells/simt). It owns the controls; the
// kind draws one frame with show(frame, index, total) into player.stage.

export class FramePlayer {
  // parent: where the player goes; className: the box's class; intervalMs: time per frame;
  // show(frame, i, total): draws frame i and returns the position text.
  constructor(parent, { className, intervalMs = 400, label = "animation", show }) {
    this.frames = [];
    this.at = -1;
    this.playing = true;
    this.draw = show;
    this.box = document.createElement("div");
    this.box.className = className;
    this.box.setAttribute("role", "group");
    this.box.setAttribute("aria-label", label);
    const controls = document.createElement("div");
    controls.className = "player-controls";
    this.playBtn = button("player-play", "Pause");
    const back = button("player-back", "Back");
    const step = button("player-step", "Step");
    this.pos = document.createElement("span");
    this.pos.className = "player-pos";
    controls.append(this.playBtn, back, step, this.pos);
    this.stage = document.createElement("div");
    this.stage.className = "player-stage";
    this.box.append(controls, this.stage);
    parent.appendChild(this.box);

    this.playBtn.addEventListener("click", () => {
      // Play from the start again once the end was reached.
      if (!this.playing && this.at >= this.frames.length - 1) this.at = -1;
      this.setPlaying(!this.playing);
    });
    back.addEventListener("click", () => { this.setPlaying(false); this.show(this.at - 1); });
    step.addEventListener("click", () => { this.setPlaying(false); this.show(this.at + 1); });
    this.timer = setInterval(() => { if (this.playing) this.show(this.at + 1); }, intervalMs);
  }

  setPlaying(on) {
    this.playing = on;
    this.playBtn.textContent = on ? "Pause" : "Play";
  }

  push(frame) {
    this.frames.push(frame);
    if (this.at < 0) this.show(0);
    else this.label();
  }

  show(i) {
    if (i < 0 || i >= this.frames.length) return;
    this.at = i;
    this.text = this.draw(this.frames[i], i, this.frames.length) || "";
    this.label();
  }

  label() {
    this.pos.textContent = `frame ${this.at + 1} of ${this.frames.length}` + (this.text ? `: ${this.text}` : "");
  }

  stop() {
    clearInterval(this.timer);
  }
}

function button(className, text) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = className;
  b.textContent = text;
  return b;
}
