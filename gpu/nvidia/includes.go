package nvidia

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// The source rule: a compiler reads only what the playground gives it. A learner's CUDA C++ may
// #include only the headers the playground provides, by name: CUDA's (AllowedHeaders) and the
// stand-ins for the C, C++ and CUDA library headers (StandInHeaders); everything else that makes a
// compiler open a file (or say whether one exists) is refused, with the line, before any compiler
// runs. NVRTC resolves quoted and absolute include paths against the compiling process's file
// system, and clang quotes what it read in its messages, so an `#include "/etc/passwd"` inside a
// macro argument would otherwise put any file the server can read into the PTX or the errors.
//
// CheckIncludes reads the source as the compilers' preprocessors do, in two passes: the physical
// characters (carriage returns, trigraphs and backslash-newline line splices, which could hide a
// directive), then the preprocessing tokens: comments, string and character literals, numbers,
// identifiers and punctuators, and each directive (a line whose first token is # or %:). Words in
// comments and literals are text, and an identifier is a name like any other; what is refused is
// what can reach a file: a directive that reads one (#include of a header not provided, #embed,
// #include_next, #import, #line with a file name, a pragma not on the list), and the operators that
// do so from anywhere in the code (__has_include, __has_embed, _Pragma), with the ways of building
// one that no reader of the source sees (token pasting, universal character names).
//
// What the check and the compilers read must agree on where every comment and literal starts and
// ends, or a directive could hide from the check in what it takes for a comment. Where the
// compilers may read a source differently, the check refuses it: trigraphs, raw string literals, a
// literal without its closing quote on its line, a quote right after a number that is not a digit
// separator, non-ASCII characters and $ outside comments and literals, a block comment that starts
// in a directive and ends on a later line, and /* in #error and #warning (clang reads their text
// raw, without comments).

// AllowedHeaders is the table of CUDA's headers a learner's source may #include, as "name" or
// <name>, by the names a learner writes, and the clang prelude (which the compile command includes
// anyway); the stand-ins (StandInHeaders) may be included too (Provided). Whether one of CUDA's
// headers is available is a separate matter: one the compiler does not have gives the compiler's
// own "cannot open source file" error.
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
		// libcu++'s C++ headers by their standard names, where the headers' folder has them (the C and
		// C++ headers kernels use for types, limits and constants are stand-ins: StandInHeaders).
		"type_traits", "limits",
		// The playground's own prelude (gpu/nvidia/src/clang_prelude.h).
		"clang_prelude.h",
	}
}

// Provided says whether a learner's source may #include header: one of AllowedHeaders or of
// StandInHeaders.
func Provided(header string) bool {
	_, standIn := standIns()[header]
	return standIn || slices.Contains(AllowedHeaders(), header)
}

// IncludeError is a source refused by CheckIncludes: Line (1-based) of the source named Name, and why.
type IncludeError struct {
	Name string
	Line int
	Msg  string
}

// Error reads as the compilers' messages do: "cell.cu(LINE): error: …".
func (e *IncludeError) Error() string { return fmt.Sprintf("%s(%d): error: %s", e.Name, e.Line, e.Msg) }

// refusedOperator reports an identifier that reads a file, or says whether one exists, from
// anywhere in the code, not only in a directive: the builtin macros that test for files
// (__has_include, __has_include_next, __has_embed, GCC's old __has_include__, by their prefix) and
// the pragma operators (_Pragma, and Microsoft's __pragma, which clang knows).
func refusedOperator(w string) bool {
	return w == "_Pragma" || w == "__pragma" || strings.HasPrefix(w, "__has_include") || strings.HasPrefix(w, "__has_embed")
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
	c := &checker{text: text, lines: lines}
	if err := c.tokens(); err != nil {
		err.Name = name
		return err
	}
	return nil
}

// splice does translation phases 1 and 2 as strictly as both compilers: it refuses what they might
// read differently (a carriage return not before a line feed, which clang takes for a line end; a
// trigraph; a NUL; a backslash with blanks before the line's end, which clang and GCC take for a
// line splice) and joins backslash-newline (lineSplice). CR LF becomes LF. lines[i] is the source
// line of text[i].
func splice(src string) (text []byte, lines []int, err *IncludeError) {
	src = strings.TrimPrefix(src, "\uFEFF") // a byte order mark, which the compilers skip too
	if err := loneCR(src); err != nil {
		return nil, nil, err
	}
	text, lines = make([]byte, 0, len(src)), make([]int, 0, len(src))
	line := 1
	for i := 0; i < len(src); i++ {
		b := src[i]
		switch {
		case b == '\r':
			continue // before a line feed (loneCR)
		case b == 0:
			return nil, nil, &IncludeError{Line: line, Msg: "a NUL character in the source"}
		case b == '?' && i+2 < len(src) && src[i+1] == '?' && strings.IndexByte("=/'()!<>-", src[i+2]) >= 0:
			return nil, nil, &IncludeError{Line: line, Msg: fmt.Sprintf("the trigraph %q is not allowed in playground kernels (compilers read it differently); write the character it stands for, or put a space between the question marks", src[i:i+3])}
		case b == '\\':
			if n, blanks := lineSplice(src, i); n > 0 {
				if blanks {
					return nil, nil, &IncludeError{Line: line, Msg: "a backslash followed by spaces at the end of a line; remove the spaces (or the backslash)"}
				}
				i, line = i+n-1, line+1 // a line splice: the two lines are one
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

// loneCR refuses a carriage return that is not part of a CR LF: clang ends a line there (so a
// backslash before it splices only it, and a directive may follow it), where NVRTC may not.
func loneCR(src string) *IncludeError {
	for i := strings.IndexByte(src, '\r'); i >= 0; {
		if lineBreak(src, i) == 1 {
			return &IncludeError{Line: strings.Count(src[:i], "\n") + 1, Msg: "a carriage return that ends no line (compilers read it differently); save the source with plain line ends"}
		}
		next := strings.IndexByte(src[i+1:], '\r')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return nil
}

// checker scans the spliced text.
type checker struct {
	text  []byte
	lines []int
	pos   int
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

// isIdent0 and isIdent are ASCII identifiers' characters: others are refused in code (a compiler
// may or may not take $ and non-ASCII letters into a name, and a number).
func isIdent0(b byte) bool { return b == '_' || (b|0x20 >= 'a' && b|0x20 <= 'z') }
func isIdent(b byte) bool  { return isIdent0(b) || isDigit(b) }

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

// tokens walks the source token by token, checking each token (token) and each directive
// (checkDirective), and that no block comment in a directive's line ends on a later line.
func (c *checker) tokens() *IncludeError {
	atLineStart, directive := true, -1 // directive: the offset of the current line's directive's #, or -1
	for c.pos < len(c.text) {
		commentAt := c.pos
		nl, err := c.skipBlank()
		if err != nil {
			return err
		}
		if nl && directive >= 0 {
			return c.errAt(commentAt, "a block comment in a directive (#%s) that ends on a later line; end it on the directive's line", c.directiveName(directive))
		}
		atLineStart = atLineStart || nl
		if c.pos >= len(c.text) {
			return nil
		}
		b := c.peek(0)
		switch {
		case b == '\n':
			c.pos++
			atLineStart, directive = true, -1
			continue
		case atLineStart && (b == '#' && c.peek(1) != '#' || b == '%' && c.peek(1) == ':' && !(c.peek(2) == '%' && c.peek(3) == ':')):
			directive = c.pos
			c.pos++
			if b == '%' {
				c.pos++ // the digraph %:
			}
			if err := c.checkDirective(directive); err != nil {
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

// directiveName is the name of the directive whose # is at start, for a message.
func (c *checker) directiveName(start int) string {
	saved := c.pos
	defer func() { c.pos = saved }()
	c.pos = start + 1
	if c.text[start] == '%' {
		c.pos++
	}
	_, _ = c.skipBlank()
	return clip(c.ident())
}

// token checks and skips one token that is not a directive's start: an identifier (refusedOperator
// names the refused ones; a string literal it prefixes is read with it), a pp-number with digit
// separators, a string or character literal, or one punctuator (## and %:%: are refused, and so are
// a backslash, $ and non-ASCII characters outside comments and literals).
func (c *checker) token() *IncludeError {
	start := c.pos
	switch b := c.peek(0); {
	case isIdent0(b):
		word := c.ident()
		switch {
		case refusedOperator(word):
			return c.errAt(start, "%s is not allowed in playground kernels: it reads a file or tells whether one exists (a kernel may only #include the headers the playground provides, such as <cuda_fp16.h>)", word)
		case c.peek(0) == '"' && slices.Contains([]string{"R", "LR", "uR", "UR", "u8R"}, word):
			return c.errAt(start, "raw string literals (%s\"…\") are not allowed in playground kernels", word)
		}
	case isDigit(b) || b == '.' && isDigit(c.peek(1)):
		c.ppNumber()
		if c.peek(0) == '\'' {
			return c.errAt(start, "a quote right after a number that is not a digit separator (1'000); put a space before the character literal")
		}
	case b == '"' || b == '\'':
		return c.literal(b)
	case b == '#' && c.peek(1) == '#', b == '%' && c.peek(1) == ':' && c.peek(2) == '%' && c.peek(3) == ':':
		return c.errAt(start, "token pasting (##) is not allowed in playground kernels")
	case b == '\\':
		return c.errAt(start, "a backslash outside a string or a comment (a universal character name such as \\u0041) is not allowed in playground kernels; write the character itself")
	case b == '$' || b >= 0x80:
		return c.errAt(start, "%s is allowed only in comments and strings in playground kernels (names are ASCII letters, digits and _)", describeByte(b))
	default:
		c.pos++
	}
	return nil
}

// describeByte names a byte the check refuses outside comments and literals.
func describeByte(b byte) string {
	if b == '$' {
		return "$"
	}
	return "a non-ASCII character"
}

// ppNumber skips a preprocessing number (C++17): digits, ASCII letters, '.', e+ e- p+ p- and the
// digit separator ' before an ASCII digit, letter or _.
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
// on its line is refused (what the compilers make of it is not the language's).
func (c *checker) literal(quote byte) *IncludeError {
	start := c.pos
	c.pos++
	for c.pos < len(c.text) {
		switch c.text[c.pos] {
		case '\\':
			if c.peek(1) == '\n' {
				c.pos++ // cannot happen after splice; the line end is read below
				continue
			}
			c.pos += 2
		case quote:
			c.pos++
			return nil
		case '\n':
			c.pos = len(c.text)
		default:
			c.pos++
		}
	}
	what := map[byte]string{'"': "string literal", '\'': "character literal"}[quote]
	return c.errAt(start, "a %s without its closing %c on its line (an apostrophe in code? put it in a comment)", what, quote)
}

// ident reads an identifier at pos ("" when none starts there).
func (c *checker) ident() string {
	start := c.pos
	for c.pos < len(c.text) && isIdent(c.text[c.pos]) && (c.pos > start || isIdent0(c.text[c.pos])) {
		c.pos++
	}
	return string(c.text[start:c.pos])
}

// dirBlank skips blanks and comments in a directive, where a block comment must end on the
// directive's line: the compilers read on past it, and one that reads a directive's text raw would
// not see it at all.
func (c *checker) dirBlank() *IncludeError {
	from := c.pos
	nl, err := c.skipBlank()
	if err == nil && nl {
		err = c.errAt(from, "a block comment in a directive that ends on a later line; end it on the directive's line")
	}
	return err
}

// atLineEnd skips blanks and reports whether the directive ends there.
func (c *checker) atLineEnd() (bool, *IncludeError) {
	err := c.dirBlank()
	return c.pos >= len(c.text) || c.text[c.pos] == '\n', err
}

// checkDirective checks the directive whose # (or %:) is at start, with pos just after it: #include
// of a provided header, #line with a number only, the #pragmas of checkPragma, and the directives
// that read no file are allowed; every other directive is refused. The rest of an allowed
// directive's line is read as code (tokens), but #error's and #warning's (rawText).
func (c *checker) checkDirective(start int) *IncludeError {
	if err := c.dirBlank(); err != nil {
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
	switch name := c.ident(); name {
	case "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif":
		return nil
	case "error", "warning":
		return c.rawText(start, name)
	case "include":
		return c.checkInclude(start)
	case "line":
		return c.checkLine(start)
	case "pragma":
		return c.checkPragma(start)
	case "include_next", "import", "embed", "__include_macros":
		return c.errAt(start, "#%s reads a file: playground kernels may only #include the headers the playground provides (such as <cuda_fp16.h> or <cstdio>)", name)
	default:
		return c.errAt(start, "#%s is not a directive playground kernels may use (they may use #include of the playground's headers, #define, #undef, #if, #ifdef, #ifndef, #elif, #else, #endif, #pragma, #line NUMBER, #error and #warning)", clip(name))
	}
}

// rawText skips the text of #error or #warning (named name, at start) to the line's end, as clang
// reads it: as raw characters, where a /* starts no comment. Other compilers read comments there,
// so the text may not hold /*, which the two would end in different places.
func (c *checker) rawText(start int, name string) *IncludeError {
	end := bytes.IndexByte(c.text[c.pos:], '\n')
	if end < 0 {
		end = len(c.text) - c.pos
	}
	if bytes.Contains(c.text[c.pos:c.pos+end], []byte("/*")) {
		return c.errAt(start, "/* in the text of #%s is not allowed in playground kernels (compilers read it differently); use // for a comment", name)
	}
	c.pos += end
	return nil
}

// checkInclude checks the operand of the #include at start: a literal "name" or <name> of a
// provided header (Provided) and nothing after it.
func (c *checker) checkInclude(start int) *IncludeError {
	if err := c.dirBlank(); err != nil {
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
	if !Provided(header) {
		return c.errAt(start, "#include %c%s%c is not allowed: playground kernels may include only the headers the playground provides, by name: CUDA's (such as <cuda_fp16.h>, <mma.h>, <cuda_runtime.h>), the C and C++ standard headers (<cstdio>, <cmath>, <cstdint>, …) and CUDA's libraries' (<cublas_v2.h>, …), see docs/gpu.md", opening, clip(header), closing)
	}
	c.pos += end + 2
	if ok, err := c.atLineEnd(); err != nil || !ok {
		return cmpErr(err, c.errAt(start, "text after #include %c%s%c; put nothing after the header's name", opening, header, closing))
	}
	return nil
}

// checkLine allows #line with a line number only: a file name (or a macro, which could expand to
// one) is refused.
func (c *checker) checkLine(start int) *IncludeError {
	if err := c.dirBlank(); err != nil {
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
	if err := c.dirBlank(); err != nil {
		return err
	}
	first := c.ident()
	second := ""
	if first == "clang" || first == "GCC" {
		if err := c.dirBlank(); err != nil {
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
