// Package filetricks lists, for tests only, the ways a CUDA C++ source could make a compiler read a
// file of the server's (issue 23): every #include form and the tricks that hide one from a checker.
// Each source also defines the kernel twice_mm, so a cuda cell around it parses as far as the source
// rule.
package filetricks

import "strings"

// Trick is one source that tries to read the file at the path it was made for; Line is the source's
// line (1-based) that the source rule must refuse.
type Trick struct {
	Name   string
	Source string
	Line   int
}

// kernel ends every trick's source: the function a cuda cell names.
const kernel = "extern \"C\" __global__ void twice_mm(const float* A, const float* B, float* C, int M, int N, int K) { C[0] = A[0] * B[0]; }\n"

// Tricks returns the tricks aimed at path (an absolute path; the names stay the same for any path).
func Tricks(path string) []Trick {
	tricks := []Trick{
		{"stringized include", "#define S(...) #__VA_ARGS__\n__device__ const char leak[] = S(\n#include \"PATH\"\n);\n", 3},
		{"include into an initializer", "__device__ int leak[] = {\n#include \"PATH\"\n};\n", 2},
		{"angle include", "#include <PATH>\n", 1},
		{"relative climb", "#include \"../../../../../../../..PATH\"\n", 1},
		{"macro include", "#define F \"PATH\"\n#include F\n", 2},
		{"include_next", "#include_next \"PATH\"\n", 1},
		{"import", "#import \"PATH\"\n", 1},
		{"embed", "__device__ const char leak[] = {\n#embed \"PATH\"\n};\n", 2},
		{"has_include", "#if __has_include(\"PATH\")\n#error the file exists\n#endif\n", 1},
		{"line splice", "#inc\\\nlude \"PATH\"\n", 1},
		{"spaced directive", "  #  /* x */  include \"PATH\"\n", 1},
		{"digraph", "%:include \"PATH\"\n", 1},
		{"trigraph", "??=include \"PATH\"\n", 1},
		{"trigraph splice", "// ??/\n#include \"PATH\"\n", 1},
		{"_Pragma dependency", "_Pragma(\"GCC dependency \\\"PATH\\\"\")\n", 1},
		{"pragma dependency", "#pragma GCC dependency \"PATH\"\n", 1},
		{"pasted _Pragma", "#define P(x) _Pra##gma(x)\nP(\"GCC dependency \\\"PATH\\\"\")\n", 1},
		{"line with the file", "#line 1 \"PATH\"\nint leak = undefined_name;\n", 1},
		{"line marker", "# 1 \"PATH\"\nint leak = undefined_name;\n", 1},
		{"digit separator hides a comment", "int a = 1'2' /*\n#include \"PATH\"\n*/;\n", 1},
		{"$ after a digit separator hides a comment", "int a = 1'$ /*\n#include \"PATH\"\n*/;\n", 1},
		{"open character literal hides a comment", "int a = 'x /*\n#include \"PATH\"\n*/;\n", 1},
		{"#error text hides a comment", "#error /*\n#include \"PATH\"\n*/\n", 1},
		{"#pragma hides a comment", "#pragma unroll /*\n#include \"PATH\"\n*/\n", 1},
		{"has_include through a macro", "#define H __has_include\n#if H(\"PATH\")\n#error the file exists\n#endif\n", 1},
		{"raw string", "const char* s = R\"x(\n)x\";\n#include \"PATH\"\n", 1},
		{"universal character name", "#incl\\u0075de \"PATH\"\n", 1},
		{"lone carriage return splice", "// x\\\r\r\n#include \"PATH\"\n", 1},
		{"lone carriage return line end", "// x\r#include \"PATH\"\n", 1},
		{"line feed, carriage return splice", "// x\\\n\r#include \"PATH\"\n", 2},
		{"blanks before a splice's line end", "// x\\ \t\n#include \"PATH\"\n", 1},
	}
	for i := range tricks {
		tricks[i].Source = strings.ReplaceAll(tricks[i].Source, "PATH", path) + kernel
	}
	return tricks
}
