package nvidia

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// The source rule: a compiler reads only what the playground gives it. A learner's CUDA C++ may
// #include only the headers of AllowedHeaders, by name; everything else that makes a compiler open a
// file (or say whether one exists) is refused, with the line, before any compiler runs. NVRTC
// resolves quoted and absolute include paths against the compiling process's file system, and clang
// quotes what it read in its messages, so an `#include "/etc/passwd"` inside a macro argument would
// otherwise put any file the server can read into the PTX or the errors.
//
// CheckIncludes works in three passes over the source: the physical characters (carriage returns,
// trigraphs and backslash-newline line splices, which could hide a directive), the directives (each
// line whose first token is # or %:, comments skipped as the compiler skips them), and then, as a
// net under the second, every identifier of the spliced text, comments and strings included: the
// words that name a file-reading feature (include, embed, import, __has_include, _Pragma, …) may
// appear only as the name of an allowed #include. Token pasting (## and %:%:) and universal
// character names (\u, \U, \N{…}) are refused too: they could build such a word that no pass sees.

// AllowedHeaders is the table of headers a learner's source may #include, as "name" or <name>:
// CUDA's own headers by the names a learner writes, and the clang prelude (which the compile command
// includes anyway). Whether a header is available is a separate matter: one the compiler does not
// have gives the compiler's own "cannot open source file" error.
func AllowedHeaders() []string {
	return []string{
		// The runtime and its device parts.
		"cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "device_launch_parameters.h",
		"device_functions.h", "device_atomic_functions.h", "sm_20_intrinsics.h", "sm_30_intrinsics.h",
		"sm_32_intrinsics.h", "sm_60_atomic_functions.h", "vector_types.h", "vector_functions.h",
		"math_constants.h", "math_functions.h", "cuda_texture_types.h", "texture_fetch_functions.h",
		// …and what those include that a learner may name too (all compile with NVRTC 11.8).
		"sm_32_atomic_functions.h", "sm_35_atomic_functions.h", "sm_35_intrinsics.h", "sm_61_intrinsics.h",
		"device_double_functions.h", "builtin_types.h", "driver_types.h", "device_types.h", "host_defines.h",
		"library_types.h", "cuda_device_runtime_api.h", "cuda_surface_types.h", "surface_functions.h",
		"surface_indirect_functions.h", "texture_indirect_functions.h", "cuComplex.h",
		// Reduced precision and tensor cores.
		"cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp", "cuda_fp8.h", "cuda_fp8.hpp", "mma.h",
		// Cooperative groups, pipelines and barriers.
		"cooperative_groups.h", "cooperative_groups/reduce.h", "cooperative_groups/memcpy_async.h",
		"cooperative_groups/scan.h", "cuda_pipeline.h", "cuda_pipeline_primitives.h", "cuda_awbarrier.h",
		"cuda_awbarrier_primitives.h", "cuda/barrier", "cuda/pipeline", "cuda/atomic", "cuda/std/cstdint",
		"cuda/std/climits", "cuda/std/cfloat", "cuda/std/type_traits", "cuda/std/limits", "cuda/std/cmath",
		// The C and C++ headers kernels use for fixed-width types and limits.
		"stdint.h", "cstdint", "stddef.h", "cstddef", "limits.h", "climits", "float.h", "cfloat",
		"math.h", "cmath", "type_traits", "limits",
		// The playground's own prelude (gpu/nvidia/src/clang_prelude.h).
		"clang_prelude.h",
	}
}

// IncludeError is a source refused by CheckIncludes: Line (1-based) of the source named Name, and why.
type IncludeError struct {
	Name string
	Line int
	Msg  string
}

// Error reads as the compilers' messages do: "cell.cu(LINE): error: …".
func (e *IncludeError) Error() string { return fmt.Sprintf("%s(%d): error: %s", e.Name, e.Line, e.Msg) }

// refusedWord reports a word that may appear in a source only as the directive name of an allowed
// #include: each names a directive, operator or pragma that reads a file or tells whether one
// exists, and the builtin macros that test for files (__has_include, __has_include_next,
// __has_embed, GCC's old __has_include__) are refused by their prefix.
func refusedWord(w string) bool {
	switch w {
	case "include", "include_next", "include_alias", "include_instead", "import", "embed",
		"__include_macros", "_Pragma", "__pragma", "dependency":
		return true
	}
	return strings.HasPrefix(w, "__has_include") || strings.HasPrefix(w, "__has_embed")
}

// CheckIncludes checks learner CUDA C++ src (called name in the error, e.g. "cell.cu") against the
// source rule above, before a compiler sees it. It returns nil or an *IncludeError naming the first
// refused line.
func CheckIncludes(src, name string) error {
	text, lines, err := splice(src)
	if err != nil {
		err.Name = name
		return err
	}
	c := &checker{text: text, lines: lines, allowed: map[int]bool{}}
	if err := c.directives(); err != nil {
		err.Name = name
		return err
	}
	if err := c.words(); err != nil {
		err.Name = name
		return err
	}
	return nil
}

// splice does translation phases 1 and 2 as strictly as both compilers: it refuses what they might
// read differently (a carriage return not before a line feed, a trigraph, a NUL, a backslash with
// spaces before the line's end) and joins backslash-newline. lines[i] is the source line of text[i].
func splice(src string) (text []byte, lines []int, err *IncludeError) {
	text, lines = make([]byte, 0, len(src)), make([]int, 0, len(src))
	line := 1
	src = strings.TrimPrefix(src, "\uFEFF") // a byte order mark, which the compilers skip too
	for i := 0; i < len(src); i++ {
		b := src[i]
		switch {
		case b == '\r' && (i+1 == len(src) || src[i+1] != '\n'):
			return nil, nil, &IncludeError{Line: line, Msg: "a carriage return that ends no line; save the source with plain line ends"}
		case b == '\r':
			continue
		case b == 0:
			return nil, nil, &IncludeError{Line: line, Msg: "a NUL character in the source"}
		case b == '?' && i+2 < len(src) && src[i+1] == '?' && strings.IndexByte("=/'()!<>-", src[i+2]) >= 0:
			return nil, nil, &IncludeError{Line: line, Msg: fmt.Sprintf("the trigraph %q is not allowed in playground kernels", src[i:i+3])}
		case b == '\\':
			j := i + 1
			for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\f' || src[j] == '\v' || src[j] == '\r') {
				j++
			}
			if j < len(src) && src[j] == '\n' {
				if j > i+1 && strings.Trim(src[i+1:j], "\r") != "" {
					return nil, nil, &IncludeError{Line: line, Msg: "a backslash followed by spaces at the end of a line; remove the spaces (or the backslash)"}
				}
				i, line = j, line+1 // a line splice: the two lines are one
				continue
			}
		}
		text, lines = append(text, b), append(lines, line)
		if b == '\n' {
			line++
		}
	}
	return text, lines, nil
}

// checker scans the spliced text. allowed holds the offsets of the directive names of the allowed
// #include lines, the only places the word "include" may stand.
type checker struct {
	text    []byte
	lines   []int
	pos     int
	allowed map[int]bool
}

func (c *checker) errAt(pos int, format string, args ...any) *IncludeError {
	pos = min(pos, len(c.lines)-1)
	line := 1
	if pos >= 0 {
		line = c.lines[pos]
	}
	return &IncludeError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (c *checker) peek(k int) byte {
	if c.pos+k < len(c.text) {
		return c.text[c.pos+k]
	}
	return 0
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\f' || b == '\v' }
func isDigit(b byte) bool { return b >= '0' && b <= '9' }
func isIdent0(b byte) bool {
	return b == '_' || b == '$' || b >= 0x80 || (b|0x20 >= 'a' && b|0x20 <= 'z')
}
func isIdent(b byte) bool { return isIdent0(b) || isDigit(b) }

// skipBlank skips spaces and comments on the current line (a block comment may run over lines, as it
// does in the compilers' directives), and reports whether it passed a line end inside a comment.
func (c *checker) skipBlank() (newline bool, err *IncludeError) {
	for c.pos < len(c.text) {
		switch b := c.peek(0); {
		case isSpace(b):
			c.pos++
		case b == '/' && c.peek(1) == '/':
			for c.pos < len(c.text) && c.text[c.pos] != '\n' {
				c.pos++
			}
			return newline, nil
		case b == '/' && c.peek(1) == '*':
			start := c.pos
			end := bytes.Index(c.text[c.pos+2:], []byte("*/"))
			if end < 0 {
				return newline, c.errAt(start, "a comment /* that never ends")
			}
			newline = newline || bytes.IndexByte(c.text[c.pos:c.pos+2+end], '\n') >= 0
			c.pos += end + 4
		default:
			return newline, nil
		}
	}
	return newline, nil
}

// directives walks the source token by token and checks each directive; see checkDirective.
func (c *checker) directives() *IncludeError {
	atLineStart := true
	for c.pos < len(c.text) {
		nl, err := c.skipBlank()
		if err != nil {
			return err
		}
		atLineStart = atLineStart || nl
		if c.pos >= len(c.text) {
			return nil
		}
		b := c.peek(0)
		switch {
		case b == '\n':
			c.pos++
			atLineStart = true
			continue
		case atLineStart && (b == '#' && c.peek(1) != '#' || b == '%' && c.peek(1) == ':' && !(c.peek(2) == '%' && c.peek(3) == ':')):
			start := c.pos
			c.pos++
			if b == '%' {
				c.pos++ // the digraph %:
			}
			if err := c.checkDirective(start); err != nil {
				return err
			}
		default:
			if err := c.token(); err != nil {
				return err
			}
		}
		atLineStart = false
	}
	return nil
}

// token skips one token that is not a directive's start: an identifier (and a string literal it
// prefixes), a pp-number with digit separators, a string or character literal, or one punctuator.
func (c *checker) token() *IncludeError {
	switch b := c.peek(0); {
	case isIdent0(b):
		start := c.pos
		for c.pos < len(c.text) && isIdent(c.text[c.pos]) {
			c.pos++
		}
		word := string(c.text[start:c.pos])
		if c.peek(0) == '"' && slices.Contains([]string{"R", "LR", "uR", "UR", "u8R"}, word) {
			return c.errAt(start, "raw string literals (%s\"…\") are not allowed in playground kernels", word)
		}
	case isDigit(b) || b == '.' && isDigit(c.peek(1)):
		c.ppNumber()
	case b == '"' || b == '\'':
		c.literal(b)
	default:
		c.pos++
	}
	return nil
}

// ppNumber skips a preprocessing number (C++17): digits, letters, '.', e+ e- p+ p- and the digit
// separator ' before a digit or letter.
func (c *checker) ppNumber() {
	c.pos++
	for c.pos < len(c.text) {
		b := c.peek(0)
		switch {
		case (b|0x20 == 'e' || b|0x20 == 'p') && (c.peek(1) == '+' || c.peek(1) == '-'):
			c.pos += 2
		case b == '\'' && isIdent(c.peek(1)):
			c.pos += 2
		case isIdent(b) || b == '.':
			c.pos++
		default:
			return
		}
	}
}

// literal skips a string or character literal that starts with quote; one without its closing quote
// ends at the line's end, as the compilers end it.
func (c *checker) literal(quote byte) {
	c.pos++
	for c.pos < len(c.text) {
		switch c.text[c.pos] {
		case '\\':
			c.pos += 2 // an escape; the splice pass left no backslash before a line end
		case quote:
			c.pos++
			return
		case '\n':
			return
		default:
			c.pos++
		}
	}
}

// ident reads an identifier at pos ("" when none starts there).
func (c *checker) ident() string {
	start := c.pos
	for c.pos < len(c.text) && isIdent(c.text[c.pos]) && (c.pos > start || isIdent0(c.text[c.pos])) {
		c.pos++
	}
	return string(c.text[start:c.pos])
}

// atLineEnd skips blanks and reports whether the directive ends there (a comment over a line end
// counts as more text, since the compilers read on past it).
func (c *checker) atLineEnd() (bool, *IncludeError) {
	nl, err := c.skipBlank()
	return !nl && (c.pos >= len(c.text) || c.text[c.pos] == '\n'), err
}

// checkDirective checks the directive whose # (or %:) is at start, with pos just after it: #include
// of an allowed header, #line with a number only, the #pragmas of checkPragma, and the directives
// that read no file are allowed; every other directive is refused.
func (c *checker) checkDirective(start int) *IncludeError {
	if _, err := c.skipBlank(); err != nil {
		return err
	}
	switch b := c.peek(0); {
	case c.pos >= len(c.text) || b == '\n':
		return nil // the null directive
	case isDigit(b):
		return c.errAt(start, "a line marker (# NUMBER \"file\") is not allowed in playground kernels")
	case !isIdent0(b):
		return c.errAt(start, "# followed by %q is not a directive playground kernels may use", b)
	}
	nameAt := c.pos
	switch name := c.ident(); name {
	case "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif", "error", "warning":
		return nil
	case "include":
		return c.checkInclude(start, nameAt)
	case "line":
		return c.checkLine(start)
	case "pragma":
		return c.checkPragma(start)
	case "include_next", "import", "embed", "__include_macros":
		return c.errAt(start, "#%s reads a file: playground kernels may only #include the headers the playground provides (such as <cuda_fp16.h>)", name)
	default:
		return c.errAt(start, "#%s is not a directive playground kernels may use (they may use #include of the playground's headers, #define, #undef, #if, #ifdef, #ifndef, #elif, #else, #endif, #pragma, #line NUMBER, #error and #warning)", clip(name))
	}
}

// checkInclude checks the operand of the #include at start (its name at nameAt): a literal "name"
// or <name> of AllowedHeaders and nothing after it.
func (c *checker) checkInclude(start, nameAt int) *IncludeError {
	if _, err := c.skipBlank(); err != nil {
		return err
	}
	opening := c.peek(0)
	closing := map[byte]byte{'"': '"', '<': '>'}[opening]
	if closing == 0 || c.pos >= len(c.text) {
		return c.errAt(start, "#include takes a header's name written out, as <cuda_fp16.h> or \"cuda_fp16.h\", not a macro")
	}
	end := bytes.IndexAny(c.text[c.pos+1:], string(closing)+"\n")
	if end < 0 || c.text[c.pos+1+end] == '\n' {
		return c.errAt(start, "#include's header name has no closing %c", closing)
	}
	header := string(c.text[c.pos+1 : c.pos+1+end])
	if !slices.Contains(AllowedHeaders(), header) {
		return c.errAt(start, "#include %c%s%c is not allowed: playground kernels may include only the headers the playground provides (CUDA's, such as <cuda_fp16.h> and <mma.h>), by name", opening, clip(header), closing)
	}
	c.pos += end + 2
	if ok, err := c.atLineEnd(); err != nil || !ok {
		return cmpErr(err, c.errAt(start, "text after #include %c%s%c; put nothing after the header's name", opening, header, closing))
	}
	c.allowed[nameAt] = true
	return nil
}

// checkLine allows #line with a line number only: a file name (or a macro, which could expand to
// one) is refused.
func (c *checker) checkLine(start int) *IncludeError {
	if _, err := c.skipBlank(); err != nil {
		return err
	}
	digits := c.pos
	for c.pos < len(c.text) && isDigit(c.text[c.pos]) {
		c.pos++
	}
	if c.pos == digits || isIdent(c.peek(0)) || c.peek(0) == '.' || c.peek(0) == '\'' {
		return c.errAt(start, "#line takes a line number only in playground kernels, not a file name or a macro")
	}
	if ok, err := c.atLineEnd(); err != nil || !ok {
		return cmpErr(err, c.errAt(start, "#line takes a line number only in playground kernels, not a file name or a macro"))
	}
	return nil
}

// checkPragma allows the pragmas that read no file: unrolling, packing, once, macros' push and pop,
// messages, diagnostics (NVRTC's and clang's), clang loop and fp hints, and STDC.
func (c *checker) checkPragma(start int) *IncludeError {
	if _, err := c.skipBlank(); err != nil {
		return err
	}
	first := c.ident()
	second := ""
	if first == "clang" || first == "GCC" {
		if _, err := c.skipBlank(); err != nil {
			return err
		}
		second = c.ident()
	}
	if first == "" {
		if ok, err := c.atLineEnd(); err != nil || ok {
			return err // "#pragma" alone
		}
		return c.errAt(start, "#pragma must start with a pragma's name in playground kernels (such as #pragma unroll)")
	}
	switch first {
	case "unroll", "nounroll", "once", "pack", "push_macro", "pop_macro", "message", "STDC",
		"nv_diag_suppress", "nv_diag_warning", "nv_diag_error", "nv_diag_default", "nv_diag_once",
		"diag_suppress", "diag_warning", "diag_error", "diag_default", "diag_once":
		return nil
	case "clang":
		if slices.Contains([]string{"loop", "diagnostic", "fp", "unroll", "nounroll"}, second) {
			return nil
		}
	case "GCC":
		if slices.Contains([]string{"diagnostic", "unroll", "ivdep"}, second) {
			return nil
		}
	}
	return c.errAt(start, "#pragma %s is not allowed in playground kernels (they may use #pragma unroll, nounroll, once, pack, push_macro, pop_macro, message, nv_diag_*, clang loop/diagnostic/fp, GCC diagnostic/unroll/ivdep and STDC)",
		strings.TrimSpace(clip(first+" "+second)))
}

// words is the net under directives: the words refusedWord names stand nowhere but as the name of
// an allowed #include (not in a macro, a comment or a string either), and token pasting and
// universal character names, which could build one, stand nowhere at all.
func (c *checker) words() *IncludeError {
	t := c.text
	for i := 0; i < len(t); {
		switch {
		case isWord(t[i]):
			j := i
			for j < len(t) && isWord(t[j]) {
				j++
			}
			w := string(t[i:j])
			if refusedWord(w) && !c.allowed[i] {
				return c.errAt(i, "%q is not allowed in playground kernels, not even in a comment or a string: it names a way to read files, and a kernel may only #include the headers the playground provides", w)
			}
			i = j
		case t[i] == '#' && i+1 < len(t) && t[i+1] == '#', string(t[i:min(i+4, len(t))]) == "%:%:":
			return c.errAt(i, "token pasting (##) is not allowed in playground kernels")
		case t[i] == '\\' && i+1 < len(t) && (t[i+1] == 'u' || t[i+1] == 'U' || t[i+1] == 'N' && i+2 < len(t) && t[i+2] == '{'):
			return c.errAt(i, "universal character names (\\u, \\U, \\N{…}) are not allowed in playground kernels; write the character itself")
		default:
			i++
		}
	}
	return nil
}

// isWord is an identifier's character in ASCII: the net splits words at '$' and at every non-ASCII
// byte too, which a compiler might not take into an identifier.
func isWord(b byte) bool { return b < 0x80 && b != '$' && isIdent(b) }

// clip shortens a learner's word for a message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// cmpErr is err when set, else alt.
func cmpErr(err, alt *IncludeError) *IncludeError {
	if err != nil {
		return err
	}
	return alt
}
