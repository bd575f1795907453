package nvidia

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// .loc lines of other files than the learner's go, or become their call site's, or (after the
// function's opening line) the learner's next line.
func TestLearnerLocs(t *testing.T) {
	in := "\t.file\t1 \"cell.cu\"\n\t.file\t2 \"clang_prelude.h\"\n" +
		"\t.loc\t1 3 5\n\tld.global.f32 %f1, [%rd1];\n" +
		"\t.loc\t2 120 9\n\tatom.global.add.f32 %f2, [%rd1], %f1;\n" +
		"\t.loc\t2 7 1, function_name $L__info_string0, inlined_at 1 4 2\n\tadd.f32 %f3, %f2, %f1;\n" +
		"\t.loc\t2 8 1, function_name $L__info_string1, inlined_at 2 7 1\n\tret;\n"
	want := "\t.file\t1 \"cell.cu\"\n\t.file\t2 \"clang_prelude.h\"\n" +
		"\t.loc\t1 3 5\n\tld.global.f32 %f1, [%rd1];\n" +
		"\tatom.global.add.f32 %f2, [%rd1], %f1;\n" +
		"\t.loc\t1 4 2\n\tadd.f32 %f3, %f2, %f1;\n" +
		"\tret;\n"
	if got := learnerLocs(in, "cell.cu"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// After the function's opening line (column 0), a prelude line becomes the learner's next one.
	opening := "\t.file\t1 \"cell.cu\"\n\t.file\t2 \"clang_prelude.h\"\n{\n\t.loc\t1 1 0\n\tld.param.u64 %rd1, [p];\n" +
		"\t.loc\t2 106 1\n\tmov.u32 %r1, %tid.x;\n\t.loc\t1 2 9\n\tadd.s32 %r2, %r1, 1;\n}\n"
	wantOpening := "\t.file\t1 \"cell.cu\"\n\t.file\t2 \"clang_prelude.h\"\n{\n\t.loc\t1 1 0\n\tld.param.u64 %rd1, [p];\n" +
		"\t.loc\t1 2 9\n\tmov.u32 %r1, %tid.x;\n\t.loc\t1 2 9\n\tadd.s32 %r2, %r1, 1;\n}\n"
	if got := learnerLocs(opening, "cell.cu"); got != wantOpening {
		t.Errorf("after the opening line: got\n%s\nwant\n%s", got, wantOpening)
	}
	if got := learnerLocs(in, "other.cu"); got != in {
		t.Errorf("PTX that names no file other.cu changed:\n%s", got)
	}
}

// clang's notes in the prelude go on the learner's line of their error; a prelude error with no
// learner line goes on none; the include chain to the prelude, the headers' folder and repeats go.
func TestLearnerLog(t *testing.T) {
	in := "cell.cu(2): error: no matching function for call to '__shfl_down_sync'\n" +
		"./clang_prelude.h(199): note: candidate function not viable: requires at least 3 arguments, but 2 were provided\n" +
		"./clang_prelude.h(194): note: candidate function not viable: requires at least 3 arguments, but 2 were provided\n" +
		"./clang_prelude.h(194): note: candidate function not viable: requires at least 3 arguments, but 2 were provided\n" +
		"In file included from <built-in>:1:\n" +
		"./clang_prelude.h(40): error: something the prelude says\n" +
		"In file included from cell.cu:1:\n" +
		"/opt/cuda/include/cuda_fp16.hpp(1958): note: candidate function not viable\n" +
		"1 error generated."
	want := "cell.cu(2): error: no matching function for call to '__shfl_down_sync'\n" +
		"cell.cu(2): note: candidate function not viable: requires at least 3 arguments, but 2 were provided\n" +
		"cell.cu: error: something the prelude says\n" +
		"In file included from cell.cu:1:\n" +
		"cuda_fp16.hpp(1958): note: candidate function not viable\n" +
		"1 error generated."
	if got := learnerLog(in, "cell.cu", "/opt/cuda/include"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// A header that cannot be opened becomes one note on the learner's #include line, whichever header
// included it; other errors, and C headers, stay as the compiler wrote them.
func TestNoteMissingHeaders(t *testing.T) {
	src := "// a kernel\n#include <stdint.h>\n#include <mma.h>\n"
	note := func(line, h string) string {
		return "cell.cu(" + line + "): error: " + h + ": " + MissingHeadersNote + "\n"
	}
	for _, c := range []struct{ log, want string }{
		{"cell.cu(3): catastrophic error: cannot open source file \"mma.h\"\n\n1 catastrophic error detected", note("3", "mma.h")},
		{"cell.cu(3): catastrophic error: could not open source file \"mma.h\" (no directories in search list)\n", note("3", "mma.h")},
		{"cell.cu(3): fatal error: 'mma.h' file not found\n1 error generated.", note("3", "mma.h")},
		{"crt/mma.h(60): fatal error: 'cuda_fp16.h' file not found\n", note("3", "cuda_fp16.h")},
		{"cell.cu(2): fatal error: 'stdint.h' file not found\n", "cell.cu(2): fatal error: 'stdint.h' file not found\n"},
		{"cell.cu(4): error: use of undeclared identifier 'x'\n", "cell.cu(4): error: use of undeclared identifier 'x'\n"},
	} {
		if got := noteMissingHeaders(c.log, "cell.cu", src); got != c.want {
			t.Errorf("%q: got %q, want %q", c.log, got, c.want)
		}
	}
}

// The search order: the environment's folder, the one beside NVRTC, the unpacked package, the
// toolkit's usual place, the system's; FindHeaders takes the first with cuda_fp16.h.
func TestHeaderDirs(t *testing.T) {
	nv := &NVRTC{Lib: Loaded{Path: "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvrtc.so.13"}}
	got := HeaderDirs("/my/include", nv)
	want := []string{"/my/include", "/usr/local/cuda-13.0/targets/x86_64-linux/include", UnpackedHeaders, "/usr/local/cuda/include", "/usr/include"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := HeaderDirs("", nil), want[2:]; !reflect.DeepEqual(got, want) {
		t.Errorf("without a folder or NVRTC: got %q, want %q", got, want)
	}
	// Debian's layout (the unpacked CUDA 12.4): usr/lib/<triplet>/libnvrtc.so.12 and usr/include.
	deb := &NVRTC{Lib: Loaded{Path: UnpackedCUDA12 + "/usr/lib/x86_64-linux-gnu/libnvrtc.so.12"}}
	got = HeaderDirs("", deb)
	if len(got) < 2 || got[1] != UnpackedCUDA12+"/usr/include" {
		t.Errorf("for %s: got %q, want %s/usr/include second", deb.Lib.Path, got, UnpackedCUDA12)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cuda_fp16.h"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(IncludeEnv, dir+"/")
	if got := FindHeaders(nil); got != dir {
		t.Errorf("FindHeaders with %s=%s: got %q, want %q", IncludeEnv, dir, got, dir)
	}
}
