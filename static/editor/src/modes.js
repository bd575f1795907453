// Small stream modes (CodeMirror's StreamLanguage) for the languages no maintained package covers:
// PTX (NVIDIA's virtual ISA) and WGSL (WebGPU's shading language), and the `header --- body` shape of
// kernel cells: a YAML header, a line of three dashes, then the kernel in another language.

import { StreamLanguage } from "@codemirror/language";
import { yaml as yamlMode } from "@codemirror/legacy-modes/mode/yaml";
import { cpp as cppMode } from "@codemirror/legacy-modes/mode/clike";

// PTX: directives (.reg, .global: types), opcodes with their suffixes (ld.global.f32: keywords), registers (%r1),
// predicates (@%p1), labels, numbers and // comments. The playground's Show PTX adds counts after
// "//", so those read as comments.
export const ptxMode = {
  name: "ptx",
  startState: () => ({ inComment: false }),
  token(stream, state) {
    if (state.inComment) {
      if (stream.skipTo("*/")) { stream.match("*/"); state.inComment = false; } else stream.skipToEnd();
      return "comment";
    }
    if (stream.eatSpace()) return null;
    if (stream.match("//")) { stream.skipToEnd(); return "comment"; }
    if (stream.match("/*")) { state.inComment = true; return "comment"; }
    if (stream.match(/^"(?:[^"\\]|\\.)*"/)) return "string";
    if (stream.match(/^@!?%\w+/)) return "meta";
    if (stream.match(/^%[\w.]+/)) return "variableName.special";
    if (stream.match(/^\.[a-zA-Z_][\w]*/)) return "typeName"; // directives and state spaces: .reg, .global, .f32
    if (stream.match(/^0[fFdD][0-9a-fA-F]+/) || stream.match(/^0[xX][0-9a-fA-F]+U?/) ||
        stream.match(/^-?\d+(\.\d+)?([eE][-+]?\d+)?U?/)) return "number";
    if (stream.match(/^[$A-Za-z_][\w$]*:/)) return "labelName";
    if (stream.sol() || state.opNext) {
      // The first word of an instruction is its opcode; what follows the dots are its modifiers.
      if (stream.match(/^[a-z][\w]*(\.[\w]+)*/)) { state.opNext = false; return "keyword"; }
    }
    if (stream.match(/^[$A-Za-z_][\w$]*/)) return "variableName";
    const ch = stream.next();
    if (ch === ";" || ch === "{" || ch === "}") state.opNext = true;
    return "punctuation";
  },
  blankLine(state) { state.opNext = true; },
  languageData: { commentTokens: { line: "//", block: { open: "/*", close: "*/" } } },
};

const wgslKeywords = new Set(("alias break case const const_assert continue continuing default diagnostic " +
  "discard else enable false fn for if let loop override requires return struct switch true var while").split(" "));
const wgslTypes = new Set(("bool f16 f32 i32 u32 vec2 vec3 vec4 vec2f vec3f vec4f vec2i vec3i vec4i vec2u vec3u " +
  "vec4u vec2h vec3h vec4h mat2x2 mat2x3 mat2x4 mat3x2 mat3x3 mat3x4 mat4x2 mat4x3 mat4x4 mat2x2f mat3x3f " +
  "mat4x4f array atomic ptr sampler texture_2d texture_storage_2d function private workgroup uniform " +
  "storage read write read_write").split(" "));

// WGSL: keywords, types, @attributes, numbers with suffixes, comments (block comments nest).
export const wgslMode = {
  name: "wgsl",
  startState: () => ({ depth: 0 }),
  token(stream, state) {
    if (state.depth > 0) {
      while (!stream.eol()) {
        if (stream.match("/*")) state.depth++;
        else if (stream.match("*/")) { if (--state.depth === 0) break; }
        else stream.next();
      }
      return "comment";
    }
    if (stream.eatSpace()) return null;
    if (stream.match("//")) { stream.skipToEnd(); return "comment"; }
    if (stream.match("/*")) { state.depth = 1; return "comment"; }
    if (stream.match(/^@[A-Za-z_]\w*/)) return "meta";
    if (stream.match(/^0[xX][0-9a-fA-F]+[iuh]?/) || stream.match(/^\d+\.?\d*([eE][-+]?\d+)?[fhiu]?/) ||
        stream.match(/^\.\d+([eE][-+]?\d+)?[fh]?/)) return "number";
    if (stream.match(/^[A-Za-z_]\w*/)) {
      const w = stream.current();
      if (wgslKeywords.has(w)) return "keyword";
      if (wgslTypes.has(w)) return "typeName";
      if (stream.peek() === "(") return "function(variableName)";
      return "variableName";
    }
    if (stream.match(/^(->|[-+*/%&|^!=<>]=?|&&|\|\|)/)) return "operator";
    stream.next();
    return "punctuation";
  },
  languageData: { commentTokens: { line: "//", block: { open: "/*", close: "*/" } } },
};

// headerThen makes a mode for a cell whose YAML header ends at a line "---" and whose body is in
// `body`'s language (a cuda cell: YAML then CUDA C++).
export function headerThen(name, body) {
  return {
    name,
    startState: () => ({ inBody: false, yaml: yamlMode.startState(), body: body.startState(4) }),
    copyState: (s) => ({ inBody: s.inBody, yaml: copy(yamlMode, s.yaml), body: copy(body, s.body) }),
    token(stream, state) {
      if (!state.inBody) {
        if (stream.sol() && stream.match(/^---\s*$/)) { state.inBody = true; return "meta"; }
        return yamlMode.token(stream, state.yaml);
      }
      return body.token(stream, state.body);
    },
    blankLine(state, indent) {
      const m = state.inBody ? body : yamlMode;
      if (m.blankLine) m.blankLine(state.inBody ? state.body : state.yaml, indent);
    },
    indent(state, textAfter, cx) {
      if (!state.inBody || !body.indent) return null;
      return body.indent(state.body, textAfter, cx);
    },
    languageData: body.languageData,
  };
}

function copy(mode, state) {
  if (mode.copyState) return mode.copyState(state);
  if (typeof state !== "object" || state === null) return state;
  const out = {};
  for (const k in state) {
    const v = state[k];
    out[k] = Array.isArray(v) ? v.concat() : v;
  }
  return out;
}

export const ptx = StreamLanguage.define(ptxMode);
export const wgsl = StreamLanguage.define(wgslMode);
export const yamlCuda = StreamLanguage.define(headerThen("yaml+cuda", cppMode));
export const yamlWgsl = StreamLanguage.define(headerThen("yaml+wgsl", wgslMode));
