package nvidia

import (
	"errors"
	"regexp"
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
		"/* a block\n   comment */\n#define A 1\n",
		"const char* s = \"what??\"; // two question marks alone\n",
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
		{"x\n\x00#include \"/etc/passwd\"\n", 2, "NUL"},
		{"int a = 1'2' /*\n#include \"/etc/passwd\"\n*/;\n", 2, "is not allowed"},
		{"const char* s = R\"(\n#include \"/etc/passwd\"\n)\";\n", 1, "raw string"},
		{"// #include \"/etc/passwd\" in a comment\n", 1, `"include" is not allowed`},
		{"const char* s = \"\n#include \\\"/etc/passwd\\\"\";\n", 2, "#include takes"},
		{"#if __has_include(\"/etc/passwd\")\n#endif\n", 1, `"__has_include" is not allowed`},
		{"#if __has_include_next(<x>)\n#endif\n", 1, `"__has_include_next" is not allowed`},
		{"#if __has_embed(\"/etc/passwd\")\n#endif\n", 1, `"__has_embed" is not allowed`},
		{"x\n_Pragma(\"GCC dependency \\\"/etc/passwd\\\"\")\n", 2, `"_Pragma" is not allowed`},
		{"__pragma(once)\n", 1, `"__pragma" is not allowed`},
		{"#pragma GCC dependency \"/etc/passwd\"\n", 1, "#pragma GCC dependency is not allowed"},
		{"#pragma include_alias(\"a\", \"/etc/passwd\")\n", 1, "#pragma include_alias is not allowed"},
		{"#pragma clang __debug dump x\n", 1, "#pragma clang __debug is not allowed"},
		{"#pragma GCC system_header\n", 1, "is not allowed"},
		{"#pragma (\"x\")\n", 1, "#pragma must start with a pragma's name"},
		{"#define P(x) _Pra##gma(x)\n", 1, "token pasting"},
		{"#define H(x) __has_ %:%: include\n", 1, "token pasting"},
		{"#define I incl\\u0075de\n", 1, "universal character names"},
		{"#define I \\U0000005f_has_include\n", 1, "universal character names"},
		{"#line 1 \"/etc/passwd\"\n", 1, "#line takes a line number only"},
		{"#define L 1 \"/etc/passwd\"\n#line L\n", 2, "#line takes a line number only"},
		{"#line 10 // fine\n#line 0x10\n", 2, "#line takes a line number only"},
		{"# 1 \"/etc/passwd\"\n", 1, "line marker"},
		{"#ident \"x\"\n", 1, "#ident is not a directive"},
		{"#assert machine(x)\n", 1, "#assert is not a directive"},
		{"#define include 1\n", 1, `"include" is not allowed`},
		{"/* never ends\n#define A\n", 1, "never ends"},
		{"#include \"cuda_fp16.h\" /* a comment over\n a line end */\n", 1, "text after"},
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

// anyInclude finds a file-reading word in spliced text, for the fuzz target's independent check.
var anyInclude = regexp.MustCompile(`(?:^|[^A-Za-z0-9_$])(include|include_next|embed|import|__has_include\w*|_Pragma)(?:[^A-Za-z0-9_$]|$)`)

// allowedInclude is a line that includes an allowed header (the check allows no other include),
// perhaps after the end of a block comment.
var allowedInclude = regexp.MustCompile(`^(?:.*?\*/)?\s*(?:#|%:)\s*(?:/\*.*?\*/\s*)*include\s*(?:/\*.*?\*/\s*)*([<"])([^<>"]*)[>"]`)

func FuzzCheckIncludes(f *testing.F) {
	f.Add("#include <cuda_fp16.h>\n__global__ void k() {}\n")
	f.Add("#define S(...) #__VA_ARGS__\nconst char s[] = S(\n#include \"/etc/passwd\"\n);\n")
	f.Add("int a = 1'2' /*\n#include \"x\"\n*/;\n")
	f.Add("#pragma unroll\n#line 3\n/* x\n*/ # define A \\\n 1\n")
	f.Add("char c = '\\''; const char* s = \"\\\"#include\";\n")
	f.Fuzz(func(t *testing.T, src string) {
		err := CheckIncludes(src, "cell.cu")
		var ie *IncludeError
		if err != nil && (!errors.As(err, &ie) || ie.Line < 1 || ie.Line > strings.Count(src, "\n")+1) {
			t.Fatalf("CheckIncludes(%q) = %v: not an *IncludeError on one of the source's lines", src, err)
		}
		// Whatever comes before it, a line that includes a file of the server's is refused.
		if CheckIncludes(src+"\n#include \"/etc/passwd\"\n", "cell.cu") == nil {
			t.Fatalf("accepted %q followed by an #include of /etc/passwd", src)
		}
		if err != nil {
			return
		}
		// An accepted source names a file-reading feature only on lines that include an allowed
		// header, and pastes no tokens.
		spliced := strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\\\n", "")
		if strings.Contains(spliced, "##") || strings.Contains(spliced, "??=") {
			t.Fatalf("accepted %q, which pastes tokens or has a trigraph", src)
		}
		for _, line := range strings.Split(spliced, "\n") {
			if !anyInclude.MatchString(line) {
				continue
			}
			m := allowedInclude.FindStringSubmatch(line)
			if m == nil || !isAllowedHeader(m[2]) {
				t.Fatalf("accepted %q, whose line %q names a way to read a file", src, line)
			}
		}
	})
}

func isAllowedHeader(name string) bool {
	for _, h := range AllowedHeaders() {
		if h == name {
			return true
		}
	}
	return false
}
