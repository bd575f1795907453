package nvidia

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Sources a learner may write: CUDA headers by name, the directives that read no file, and text
// that only looks like a directive.
func TestCheckIncludesAllows(t *testing.T) {
	for _, src := range []string{
		"",
		"__global__ void k(float* a) { a[0] = 1; }",
		"#include <cuda_fp16.h>\n#include \"mma.h\"\n  #  include <cooperative_groups/reduce.h> // groups\n",
		"%:include <cuda_bf16.h>\n",
		"#include /* the half type */ <cuda_fp16.h> /* done */\n",
		"#define TILE 16\n#undef TILE\n#if 1\n#elif 0\n#else\n#endif\n#ifdef X\n#endif\n#ifndef X\n#endif\n",
		"#define S(...) #__VA_ARGS__\nconst char s[] = S(a b);\n",
		"#pragma unroll\n#pragma unroll 4\n#pragma once\n#pragma nv_diag_suppress 177\n#pragma clang loop unroll(full)\n#pragma GCC diagnostic ignored \"-Wall\"\n",
		"#line 40\n#\n#error nope\n#warning careful\n#pragma\n",
		"#define LONG_MACRO(a) \\\n  ((a) + 1)\n",
		"int x = 1'000'000; // digit separators\nchar c = '#'; const char* s = \"# not a directive\";\n",
		"float f = 1e+5f, g = 0x1p-3; int y = 0'1;\n",
		"// a comment: what the kernel does\r\n__global__ void k() {}\r\n",
		"#define TWICE(x) \\\r\n  (2 * (x))\r\n// a comment \\\n\r\n#define A 1\n",
		// Form feed and vertical tab end no line (for clang too): the #include is in the comment.
		"// x\f#include \"/etc/passwd\"\n// y\v#include \"/etc/passwd\"\n",
		"/* a block\n   comment */\n#define A 1\n",
		"const char* s = \"what??\"; // two question marks alone\n",
		// Words are text in comments and literals, and names in code (issue 34).
		"// we include the halo cells\n/* and embed the tile; #include \"/etc/passwd\" is only a comment */\n",
		"// #include <cublas_v2.h>\n/*\n#include \"helpers.h\"\n*/\n",
		"__device__ int embed(int include) { int import = include; return import; }\n",
		"#define include 1\nconst char* s = \"#include \\\"/etc/passwd\\\" _Pragma __has_include ## \\u0041\";\n",
		"#pragma message(\"the __has_include test is off\")\n#error don't: this is text, '\" unbalanced\n",
		"char c = '#'; char d = '\\''; char e = '\"'; // it's fine\n",
		"// caf\u00e9 \u2014 comments and strings may hold any character\nconst char* s = \"\u03bb\";\n",
		// The C and C++ headers and CUDA's libraries' headers, as public kernels include them.
		"#include <stdio.h>\n#include <cstdio>\n#include <cstdlib>\n#include <cassert>\n#include <cmath>\n#include <cstdint>\n",
		"#include <cuda_runtime.h>\n#include <cublas_v2.h>\n#include \"helper_cuda.h\"\n#include <iostream>\n#include <vector>\n#include <sys/types.h>\n",
	} {
		if err := CheckIncludes(src, "cell.cu"); err != nil {
			t.Errorf("CheckIncludes(%q) = %v, want nil", src, err)
		}
	}
}

// Each way of making a compiler read a file, and each way of hiding one from the check, is refused
// with the line it stands on.
func TestCheckIncludesRefuses(t *testing.T) {
	for _, tc := range []struct {
		src  string
		line int
		msg  string
	}{
		{"#define S(...) #__VA_ARGS__\n__device__ const char leak[] = S(\n#include \"/etc/passwd\"\n);\n", 3, "is not allowed"},
		{"int x =\n#include \"f\"\n;\n", 2, `#include "f"`},
		{"#include </etc/passwd>\n", 1, "is not allowed"},
		{"#include \"../cuda_fp16.h\"\n", 1, "is not allowed"},
		{"#include \"cuda_fp16.h\" \"/etc/passwd\"\n", 1, "text after"},
		{"#define F \"/etc/passwd\"\n#include F\n", 2, "not a macro"},
		{"#define F <cuda_fp16.h>\n#include F\n", 2, "not a macro"},
		{"#include\n", 1, "not a macro"},
		{"#include \"cuda_fp16.h\n", 1, "no closing"},
		{"\n\n  #  include_next <stdio.h>\n", 3, "#include_next reads a file"},
		{"#import \"x.h\"\n", 1, "#import reads a file"},
		{"#embed \"/etc/passwd\"\n", 1, "#embed reads a file"},
		{"#__include_macros \"/etc/passwd\"\n", 1, "#__include_macros reads a file"},
		{"%:include \"/etc/passwd\"\n", 1, "is not allowed"},
		{"%:   embed \"/etc/passwd\"\n", 1, "#embed reads a file"},
		{"a\n#inc\\\nlude \"/etc/passwd\"\n", 2, "is not allowed"},
		{"#\\\ninclude \"/etc/passwd\"\n", 1, "is not allowed"},
		{"#include \"/etc/pa\\\nsswd\"\n", 1, "is not allowed"},
		{"#/* a */include/* b */\"/etc/passwd\"\n", 1, "is not allowed"},
		{"/* a\n */ #include \"/etc/passwd\"\n", 2, "is not allowed"},
		{"??=include \"/etc/passwd\"\n", 1, "trigraph"},
		{"ok\n// comment ??/\n#include \"/etc/passwd\"\n", 2, "trigraph"},
		{"// comment \\ \n#include \"/etc/passwd\"\n", 1, "backslash followed by spaces"},
		{"x\ry\n", 1, "carriage return"},
		// A lone CR ends a line for clang: after a backslash it is the splice, and the CR LF that
		// follows ends the comment's line, so clang read the #include (a review's repro).
		{"// x\\\r\r\n#include \"/etc/passwd\"\n__global__ void k(float* a){a[0]=1;}\n", 1, "carriage return"},
		{"// x\\\r\r\r\n#include \"/etc/passwd\"\n", 1, "carriage return"},
		{"// x\\\r#include \"/etc/passwd\"\n", 1, "carriage return"},
		{"// x\\\n\r#include \"/etc/passwd\"\n", 2, "carriage return"},
		{"int a;\r\n// x\r#include \"/etc/passwd\"\n", 2, "carriage return"},
		{"int a;\n#define A 1\r", 2, "carriage return"},
		// Blanks between a backslash and the line end: clang and GCC splice, others may not.
		{"// x\\ \n#include \"/etc/passwd\"\n", 1, "backslash followed by spaces"},
		{"// x\\\t\r\n#include \"/etc/passwd\"\n", 1, "backslash followed by spaces"},
		{"int a;\n// x\\\f\n#include \"/etc/passwd\"\n", 2, "backslash followed by spaces"},
		{"// x\\\v\n#include \"/etc/passwd\"\n", 1, "backslash followed by spaces"},
		// A splice by CR LF or LF joins the lines; the line after a comment's spliced line is read.
		{"// x\\\n\r\n#include \"/etc/passwd\"\n", 3, "is not allowed"},
		{"// x\\\r\n\r\n#include \"/etc/passwd\"\n", 3, "is not allowed"},
		{"x\n\x00#include \"/etc/passwd\"\n", 2, "NUL"},
		{"int a = 1'2' /*\n#include \"/etc/passwd\"\n*/;\n", 1, "a quote right after a number"},
		{"int a = 1'$ /*\n#include \"/etc/passwd\"\n*/;\n", 1, "a quote right after a number"},
		{"int a = 1'\u00e9 /*\n#include \"/etc/passwd\"\n*/;\n", 1, "a quote right after a number"},
		{"char c = 'x /*\n#include \"/etc/passwd\"\n*/;\n", 1, "without its closing '"},
		{"#error it's /*\n#include \"/etc/passwd\"\n*/\n", 1, "/* in the text of #error"},
		{"#warning /* x */\n", 1, "/* in the text of #warning"},
		{"#pragma unroll /*\n#include \"/etc/passwd\"\n*/\n", 1, "ends on a later line"},
		{"#define A 1 /*\n#include \"/etc/passwd\"\n*/\n", 1, "ends on a later line"},
		{"#/*\n*/include \"/etc/passwd\"\n", 1, "ends on a later line"},
		{"int a$b;\n", 1, "$ is allowed only in comments and strings"},
		{"int \\u00e9t\\u00e9 = 1;\n", 1, "backslash outside a string"},
		{"int \xc3\xa9t\xc3\xa9 = 1;\n", 1, "non-ASCII character is allowed only in comments and strings"},
		{"#include <helper_math.h>\n", 1, "is not allowed"},
		{"#include <cstdio.h>\n", 1, "is not allowed"},
		{"const char* s = R\"(\n#include \"/etc/passwd\"\n)\";\n", 1, "raw string"},
		{"const char* s = \"\n#include \\\"/etc/passwd\\\"\";\n", 1, "string literal without its closing"},
		{"#if __has_include(\"/etc/passwd\")\n#endif\n", 1, "__has_include is not allowed"},
		{"#if __has_include(<cuda_fp16.h>)\n#endif\n", 1, "__has_include is not allowed"},
		{"#if __has_include_next(<x>)\n#endif\n", 1, "__has_include_next is not allowed"},
		{"#if __has_embed(\"/etc/passwd\")\n#endif\n", 1, "__has_embed is not allowed"},
		{"#define H __has_include\n", 1, "__has_include is not allowed"},
		{"x\n_Pragma(\"GCC dependency \\\"/etc/passwd\\\"\")\n", 2, "_Pragma is not allowed"},
		{"#define P(x) _Pragma(#x)\nP(GCC dependency \"/etc/passwd\")\n", 1, "_Pragma is not allowed"},
		{"__pragma(once)\n", 1, "__pragma is not allowed"},
		{"#pragma GCC dependency \"/etc/passwd\"\n", 1, "#pragma GCC dependency is not allowed"},
		{"#pragma include_alias(\"a\", \"/etc/passwd\")\n", 1, "#pragma include_alias is not allowed"},
		{"#pragma clang __debug dump x\n", 1, "#pragma clang __debug is not allowed"},
		{"#pragma GCC system_header\n", 1, "is not allowed"},
		{"#pragma (\"x\")\n", 1, "#pragma must start with a pragma's name"},
		{"#define P(x) _Pra##gma(x)\n", 1, "token pasting"},
		{"#define H(x) __has_ %:%: include\n", 1, "token pasting"},
		{"#define I incl\\u0075de\n", 1, "universal character name"},
		{"#define I \\U0000005f_has_include\n", 1, "universal character name"},
		{"#define I \\N{LOW LINE}_has_include\n", 1, "universal character name"},
		{"#line 1 \"/etc/passwd\"\n", 1, "#line takes a line number only"},
		{"#define L 1 \"/etc/passwd\"\n#line L\n", 2, "#line takes a line number only"},
		{"#line 10 // fine\n#line 0x10\n", 2, "#line takes a line number only"},
		{"# 1 \"/etc/passwd\"\n", 1, "line marker"},
		{"#ident \"x\"\n", 1, "#ident is not a directive"},
		{"#assert machine(x)\n", 1, "#assert is not a directive"},
		{"/* never ends\n#define A\n", 1, "never ends"},
		{"#include \"cuda_fp16.h\" /* a comment over\n a line end */\n", 1, "ends on a later line"},
		{"\uFEFF#line 1 \"/etc/passwd\"\n", 1, "#line takes a line number only"},
	} {
		err := CheckIncludes(tc.src, "cell.cu")
		var ie *IncludeError
		if !errors.As(err, &ie) {
			t.Errorf("CheckIncludes(%q) = %v, want an *IncludeError", tc.src, err)
			continue
		}
		if got, want := ie.Line, tc.line; got != want {
			t.Errorf("CheckIncludes(%q): line %d, want %d (%v)", tc.src, got, want, err)
		}
		if got, want := err.Error(), tc.msg; !strings.Contains(got, want) {
			t.Errorf("CheckIncludes(%q) = %q, want it to say %q", tc.src, got, want)
		}
		if got, want := err.Error(), "cell.cu("; !strings.HasPrefix(got, want) {
			t.Errorf("CheckIncludes(%q) = %q, want it to start %q", tc.src, got, want)
		}
	}
}

// The playground's own kernels, which NVRTC compiles through the same check, pass it.
func TestCheckIncludesOwnSources(t *testing.T) {
	b, err := Sources.ReadFile("src/matmul.cu")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckIncludes(string(b), "matmul.cu"); err != nil {
		t.Error(err)
	}
}

// The allow-list names headers only: no path that climbs or starts at the root.
func TestAllowedHeadersAreNames(t *testing.T) {
	for _, h := range AllowedHeaders() {
		if strings.HasPrefix(h, "/") || strings.Contains(h, "..") || strings.ContainsAny(h, "\"<> \\\n") {
			t.Errorf("allowed header %q is not a plain name", h)
		}
	}
}

// hiddenAt reports, for each line start of an accepted source (after the splices), whether it lies
// inside a block comment: an independent reading of comments and literals, for the fuzz target (an
// accepted source has no raw strings, no trigraphs and no literal left open at a line's end).
func hiddenAt(spliced string) map[int]bool {
	hidden := map[int]bool{}
	inBlock := false
	for i := 0; i < len(spliced); i++ {
		if i == 0 || spliced[i-1] == '\n' {
			hidden[i] = inBlock
		}
		switch {
		case inBlock:
			if strings.HasPrefix(spliced[i:], "*/") {
				inBlock, i = false, i+1
			}
		case strings.HasPrefix(spliced[i:], "//"):
			for i+1 < len(spliced) && spliced[i+1] != '\n' {
				i++
			}
		case strings.HasPrefix(spliced[i:], "/*"):
			inBlock, i = true, i+1
		case isAlnum(spliced[i]): // a name, or a number with its digit separators
			number := spliced[i] >= '0' && spliced[i] <= '9'
			for i+1 < len(spliced) && (isAlnum(spliced[i+1]) || number && (spliced[i+1] == '.' ||
				spliced[i+1] == '\'' && i+2 < len(spliced) && isAlnum(spliced[i+2]) ||
				(spliced[i+1] == '+' || spliced[i+1] == '-') && strings.ContainsRune("eEpP", rune(spliced[i])))) {
				i++
			}
		case spliced[i] == '"' || spliced[i] == '\'':
			q := spliced[i]
			for i++; i < len(spliced) && spliced[i] != q && spliced[i] != '\n'; i++ {
				if spliced[i] == '\\' {
					i++
				}
			}
		}
	}
	return hidden
}

// spliceRE is a line splice as clang reads it (Lexer::getEscapedNewLineSize): a backslash, blanks,
// and a line end, where CR LF and LF CR are one; lineEndRE is a line end: CR LF, LF or a lone CR.
var (
	spliceRE  = regexp.MustCompile("\\\\[ \t\f\v]*(\r\n|\n\r|\r|\n)")
	lineEndRE = regexp.MustCompile("\r\n|\r|\n")
)

// compilersLines is src with its line splices joined and every line end made LF, as clang reads
// them (a model for the fuzz target, apart from the check's own reading).
func compilersLines(src string) string {
	return lineEndRE.ReplaceAllString(spliceRE.ReplaceAllString(src, ""), "\n")
}

func isAlnum(b byte) bool { return b == '_' || b >= '0' && b <= '9' || b|0x20 >= 'a' && b|0x20 <= 'z' }

func FuzzCheckIncludes(f *testing.F) {
	f.Add("#include <cuda_fp16.h>\n__global__ void k() {}\n")
	f.Add("#define S(...) #__VA_ARGS__\nconst char s[] = S(\n#include \"/etc/passwd\"\n);\n")
	f.Add("int a = 1'2' /*\n#include \"x\"\n*/;\n")
	f.Add("#pragma unroll\n#line 3\n/* x\n*/ # define A \\\n 1\n")
	f.Add("char c = '\\''; const char* s = \"\\\"#include\";\n")
	f.Add("// we include the halo\n#include <cstdio>\n/* #include <x>\n*/ int embed = 1'000;\n")
	f.Fuzz(func(t *testing.T, src string) {
		err := CheckIncludes(src, "cell.cu")
		var ie *IncludeError
		if err != nil && (!errors.As(err, &ie) || ie.Line < 1 || ie.Line > strings.Count(src, "\n")+1) {
			t.Fatalf("CheckIncludes(%q) = %v: not an *IncludeError on one of the source's lines", src, err)
		}
		// Whatever comes before it, a line that includes a file of the server's is refused (after an
		// empty line: a source that ends with a backslash splices the next line to its last).
		if CheckIncludes(src+"\n\n#include \"/etc/passwd\"\n", "cell.cu") == nil {
			t.Fatalf("accepted %q followed by an #include of /etc/passwd", src)
		}
		if err != nil {
			return
		}
		// In an accepted source, such a line is refused at every line start but those inside a block
		// comment (as an independent reading finds them): the check sees every line the compilers
		// may take for a directive.
		spliced := compilersLines(src)
		if spliced != strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\\\n", "") {
			t.Fatalf("accepted %q, which has a line end or a line splice that compilers read differently", src)
		}
		if strings.Contains(spliced, "??=") || strings.Contains(spliced, "??/") {
			t.Fatalf("accepted %q, which has a trigraph", src)
		}
		hidden := hiddenAt(spliced)
		for _, at := range slices.Sorted(maps.Keys(hidden))[:min(len(hidden), 64)] { // bounded per input
			if at >= 2 && spliced[at-2] == '\\' {
				continue // checked again, the probe's backslash-newline would splice
			}
			probe := spliced[:at] + "#include \"/etc/passwd\"\n" + spliced[at:]
			if got := CheckIncludes(probe, "cell.cu"); got == nil && !hidden[at] {
				t.Fatalf("accepted %q: an #include of /etc/passwd at offset %d, outside any comment", probe, at)
			}
		}
	})
}
