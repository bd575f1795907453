// Check-yourself questions (lessons/quiz.go renders them): each question is checked here, in the
// browser. A right answer is explained at once; a wrong one is only marked wrong, so that the learner
// can try again, with a "Show answer" button that gives the answer and its explanation on request.
// The learner's answers are kept in localStorage with their work, so a reload shows them again.

export const KEY = "playground.quiz."; // + quiz id + "." + question number

function store(key, value) {
  try { localStorage.setItem(key, value); } catch { /* private mode: answers are not kept */ }
}
function load(key) {
  try { return localStorage.getItem(key); } catch { return null; }
}

// parseAnswer reads a typed number: thousands separators and spaces are ignored, "8.4e6" works.
export function parseAnswer(text) {
  const s = String(text).trim().replace(/[,_\s]/g, "").replace(/^−/, "-");
  if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(s)) return NaN;
  return Number(s);
}

// answerText is the question's right answer as the page shows it ("268,435,456", or a choice's text).
function answerText(fs) {
  if (fs.dataset.number !== undefined) return Number(fs.dataset.number).toLocaleString("en-US");
  const label = fs.querySelector(`input[type=radio][value="${CSS.escape(fs.dataset.answer)}"]`)?.parentElement;
  return `“${label ? label.textContent.trim() : fs.dataset.answer}”`;
}

// reveal shows the answer and its explanation (the learner asked, after a wrong try).
function reveal(fs) {
  const verdict = fs.querySelector(".verdict");
  verdict.textContent = `The answer is ${answerText(fs)}.`;
  verdict.className = "verdict revealed";
  fs.dataset.revealed = "true";
  fs.querySelector(".explain").hidden = false;
  const b = fs.querySelector(".quiz-reveal");
  if (b) b.hidden = true;
}

// revealButton is the question's "Show answer" button, made on its first wrong try.
function revealButton(fs) {
  let b = fs.querySelector(".quiz-reveal");
  if (!b) {
    b = document.createElement("button");
    b.type = "button";
    b.className = "quiz-reveal";
    b.textContent = "Show answer";
    b.addEventListener("click", () => reveal(fs));
    fs.querySelector(".quiz-check").after(" ", b);
  }
  return b;
}

// report tells the server whether the learner's answer was right, for the instructor's progress
// grid (POST /api/answers); a server that cannot record it changes nothing here.
function report(key, right) {
  const lesson = location.pathname.startsWith("/lessons/") ? decodeURIComponent(location.pathname.slice("/lessons/".length)) : "";
  if (!lesson) return;
  fetch("/api/answers", { method: "POST", body: new URLSearchParams({ lesson, key, right: String(right) }) }).catch(() => {});
}

function check(fs, quizId, byLearner = false) {
  const verdict = fs.querySelector(".verdict");
  const explain = fs.querySelector(".explain");
  let given, right;
  if (fs.dataset.number !== undefined) {
    const input = fs.querySelector(".quiz-input");
    given = input.value;
    const x = parseAnswer(given);
    if (Number.isNaN(x)) {
      verdict.textContent = given.trim() ? "Type a number (e.g. 2097152, 2,097,152 or 2.1e6)." : "";
      verdict.className = "verdict";
      return;
    }
    const want = Number(fs.dataset.number), tol = Number(fs.dataset.tolerance) || 0;
    right = Math.abs(x - want) <= tol * Math.abs(want) + (want === 0 ? 1e-12 : 0);
  } else {
    const picked = fs.querySelector("input[type=radio]:checked");
    if (!picked) { verdict.textContent = "Pick an answer first."; verdict.className = "verdict"; return; }
    given = picked.value;
    right = given === fs.dataset.answer;
  }
  store(`${KEY}${quizId}.${fs.dataset.q}`, given);
  const shown = fs.dataset.revealed === "true"; // the learner asked for the answer before
  verdict.textContent = right ? "Right." : shown ? `Not quite: the answer is ${answerText(fs)}.` : "Not quite. Try again, or show the answer.";
  verdict.className = `verdict ${right ? "right" : "wrong"}`;
  fs.dataset.answered = right ? "right" : "wrong";
  explain.hidden = !right && !shown;
  if (right || shown) {
    const b = fs.querySelector(".quiz-reveal");
    if (b) b.hidden = true;
  } else revealButton(fs).hidden = false;
  if (byLearner) report(`${quizId}.${fs.dataset.q}`, right);
}

export function initQuizzes(root = document) {
  for (const quiz of root.querySelectorAll(".quiz[data-quiz]")) {
    const id = quiz.dataset.quiz;
    for (const fs of quiz.querySelectorAll(".quiz-q")) {
      fs.querySelector(".quiz-check").addEventListener("click", () => check(fs, id, true));
      const input = fs.querySelector(".quiz-input");
      if (input) input.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); check(fs, id, true); } });
      const kept = load(`${KEY}${id}.${fs.dataset.q}`);
      if (kept === null) continue;
      if (input) input.value = kept;
      else {
        const r = fs.querySelector(`input[type=radio][value="${CSS.escape(kept)}"]`);
        if (r) r.checked = true;
      }
      check(fs, id);
    }
  }
}
