// GPU Playground's code editor: CodeMirror 6 with line numbers, highlighting (YAML, CUDA C++ after a
// YAML header, WGSL, PTX), error markers on the lines a run's error names, Shift+Enter to run and
// Escape to leave. build.sh bundles this file into static/editor.bundle.js; static/app.js imports
// that bundle and keeps the plain textarea when it cannot.

import { EditorState, StateEffect, StateField, Prec, RangeSetBuilder } from "@codemirror/state";
import {
  EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter, drawSelection,
  highlightSpecialChars, Decoration, gutter, GutterMarker,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { syntaxHighlighting, indentOnInput, bracketMatching } from "@codemirror/language";
import { classHighlighter, highlightTree } from "@lezer/highlight";
import { yaml } from "@codemirror/lang-yaml";
import { cpp } from "@codemirror/lang-cpp";
import { ptx, wgsl, yamlCuda, yamlWgsl } from "./modes.js";

// languageFor maps a cell's data-lang ("yaml", "yaml+cuda", "yaml+wgsl", "cuda", "wgsl", "ptx") to
// CodeMirror's language support; anything else is YAML, every kind's header.
export function languageFor(name) {
  switch (name) {
    case "yaml+cuda": return yamlCuda;
    case "yaml+wgsl": return yamlWgsl;
    case "cuda": case "cpp": return cpp();
    case "wgsl": return wgsl;
    case "ptx": return ptx;
    default: return yaml();
  }
}

// The lines a run's error names: {line, message} with line 1-based within the cell's source.
const setErrors = StateEffect.define();

class ErrorMarker extends GutterMarker {
  constructor(message) { super(); this.message = message; }
  eq(other) { return other.message === this.message; }
  toDOM() {
    const m = document.createElement("span");
    m.className = this.message ? "cm-error-marker" : "cm-error-spacer"; // the spacer only sizes the gutter
    m.textContent = "●";
    m.title = this.message;
    return m;
  }
}

const errorField = StateField.define({
  create: () => [],
  update(errors, tr) {
    for (const e of tr.effects) if (e.is(setErrors)) return e.value;
    return tr.docChanged ? [] : errors; // an edit makes the last run's markers stale
  },
});

function errorLines(state) {
  const byLine = new Map();
  for (const e of state.field(errorField)) {
    if (e.line >= 1 && e.line <= state.doc.lines) {
      byLine.set(e.line, byLine.has(e.line) ? `${byLine.get(e.line)}\n${e.message}` : e.message);
    }
  }
  return [...byLine.entries()].sort((a, b) => a[0] - b[0]);
}

const errorDecorations = EditorView.decorations.compute([errorField], (state) => {
  const b = new RangeSetBuilder();
  for (const [line, message] of errorLines(state)) {
    const l = state.doc.line(line);
    b.add(l.from, l.from, Decoration.line({ class: "cm-error-line", attributes: { "data-error-line": String(line), title: message } }));
  }
  return b.finish();
});

const errorGutter = gutter({
  class: "cm-error-gutter",
  markers(view) {
    const b = new RangeSetBuilder();
    for (const [line, message] of errorLines(view.state)) {
      b.add(view.state.doc.line(line).from, view.state.doc.line(line).from, new ErrorMarker(message));
    }
    return b.finish();
  },
  initialSpacer: () => new ErrorMarker(""),
});

// createEditor replaces textarea (kept hidden, its value kept in step) with an editor.
// opts: {language, label, onRun(), onEscape(), onChange(text)}. It returns the editor's API:
// getSource(), setSource(text), setErrors([{line, message}]), focus(), view, destroy().
export function createEditor(textarea, opts = {}) {
  const run = () => { if (opts.onRun) opts.onRun(); return true; };
  const leave = (view) => {
    view.contentDOM.blur();
    if (opts.onEscape) opts.onEscape();
    return true;
  };
  const state = EditorState.create({
    doc: textarea.value,
    extensions: [
      Prec.highest(keymap.of([
        { key: "Shift-Enter", run },
        { key: "Mod-Enter", run },
        { key: "Escape", run: leave },
      ])),
      lineNumbers(),
      errorGutter,
      highlightActiveLineGutter(),
      highlightSpecialChars(),
      history(),
      drawSelection(),
      indentOnInput(),
      bracketMatching(),
      highlightActiveLine(),
      syntaxHighlighting(classHighlighter),
      keymap.of([...defaultKeymap, ...historyKeymap]),
      languageFor(opts.language),
      errorField,
      errorDecorations,
      EditorView.contentAttributes.of({ "aria-label": opts.label || textarea.getAttribute("aria-label") || "code", spellcheck: "false" }),
      EditorView.updateListener.of((u) => {
        if (!u.docChanged) return;
        textarea.value = u.state.doc.toString();
        if (opts.onChange) opts.onChange(textarea.value);
      }),
    ],
  });
  const view = new EditorView({ state });
  textarea.after(view.dom);
  textarea.hidden = true;
  return {
    view,
    getSource: () => view.state.doc.toString(),
    setSource(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    setErrors(errors) { view.dispatch({ effects: setErrors.of(errors || []) }); },
    focus() { view.focus(); },
    destroy() { view.destroy(); textarea.hidden = false; },
  };
}

// highlight fills el (a <pre>) with text highlighted in language `name`, as spans with CodeMirror's
// tok-* classes (styled in style.css), for read-only text such as the PTX a cell compiled.
export function highlight(el, text, name) {
  const support = languageFor(name);
  const lang = support.language || support;
  const tree = lang.parser.parse(text);
  el.replaceChildren();
  let at = 0;
  const put = (to, cls) => {
    if (to <= at) return;
    const s = text.slice(at, to);
    if (cls) {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = s;
      el.appendChild(span);
    } else el.appendChild(document.createTextNode(s));
    at = to;
  };
  highlightTree(tree, classHighlighter, (from, to, cls) => { put(from, ""); put(to, cls); });
  put(text.length, "");
}
