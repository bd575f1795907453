package gpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/internal/filetricks"
)

// The compile worker applies the source rule itself, whatever the caller checked: each trick of the
// abuse suite aimed at a planted secret comes back as a compile error on its own line, under NVRTC
// and clang, with the secret in neither the error nor the PTX. The worker, started as the server
// starts it (an Exec), leaves nothing in the temporary folder. The worker refuses a source before it
// loads NVRTC or looks for clang (nvidia.Refuse), so both subtests exercise the same refusal; under
// clang `go test` sends only clangTricks, tricks refused on lines 1, 2 and 3 (every one with
// PLAYGROUND_EXHAUSTIVE=1; the server's TestAbuseCompilerReadsNoFile sends every one through both
// compilers, and nvidia's TestCompilersRefuseFileTricksThemselves checks each compiler's own refusal,
// which a worker's caller never reaches).
func TestCompileWorkerRefusesFileTricks(t *testing.T) {
	secretDir := t.TempDir()
	secret := "PLAYGROUND_SECRET_7f3a91"
	path := filepath.Join(secretDir, "secret.h")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, compiler := range []string{"nvrtc", "clang"} {
		t.Run(compiler, func(t *testing.T) {
			if compiler == "nvrtc" {
				needNVRTC(t)
			} else {
				needClang(t)
			}
			t.Setenv(nvidia.CompilerEnv, compiler)
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			c := &Compiler{Transport: Exec{Path: mustExe(t), Args: []string{WorkerCommand}}}
			tricks := filetricks.Tricks(path)
			if compiler == "clang" && os.Getenv("PLAYGROUND_EXHAUSTIVE") != "1" {
				tricks = clangTricks(t, tricks)
			}
			for _, tr := range tricks {
				ptx, err := c.Compile(context.Background(), tr.Source, "cell.cu", "80")
				if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(ptx, secret) {
					t.Errorf("%s: got %q, %v; want a refusal without the secret", tr.Name, ptx, err)
					continue
				}
				if want := "cell.cu(" + strconv.Itoa(tr.Line) + "): error: "; !strings.Contains(err.Error(), want) {
					t.Errorf("%s: got %v, want %s…", tr.Name, err, want)
				}
			}
			if _, err := c.Compile(context.Background(), `extern "C" __global__ void k(float* p) { p[0] = 1; }`, "cell.cu", "80"); err != nil {
				t.Errorf("a plain kernel: %v", err)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("the compiles left %d entries in the temporary folder: %v", len(left), left)
			}
		})
	}
}

// clangTricks is the tricks TestCompileWorkerRefusesFileTricks sends under clang: the first of
// tricks refused on each of lines 1, 2 and 3.
func clangTricks(t *testing.T, tricks []filetricks.Trick) []filetricks.Trick {
	t.Helper()
	var out []filetricks.Trick
	for line := 1; line <= 3; line++ {
		for _, tr := range tricks {
			if tr.Line == line {
				out = append(out, tr)
				break
			}
		}
	}
	if len(out) != 3 {
		t.Fatalf("no trick refused on each of lines 1, 2 and 3: %d found", len(out))
	}
	return out
}

// What only looks like a file trick passes the source rule, and the compilers read no file for it
// either: an #include in a comment (block, line, or line continued by a splice, by LF or CR LF;
// after a form feed or a vertical tab, which end no line), in a string, after
// a digit separator or a character literal, in a macro's argument after //. They compile, under
// NVRTC and clang, and neither the PTX nor the log holds the planted secret (each would, had the
// compiler read the file: the stringizing macro puts what it reads into the PTX): all in one source
// (lookalikesTogether), one compile a compiler, and each alone where that fails, to say which.
func TestCompileLookalikesReadNoFile(t *testing.T) {
	secretDir := t.TempDir()
	secret := "PLAYGROUND_SECRET_c41d07"
	path := filepath.Join(secretDir, "secret.h")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lookalikes := []string{
		"#define S(...) #__VA_ARGS__\n__device__ const char leak[] = S(\n// #include \"PATH\"\n);\n",
		"#define S(...) #__VA_ARGS__\n__device__ const char leak[] = S(\n/*\n#include \"PATH\"\n*/ x);\n",
		"#define S(...) #__VA_ARGS__\n__device__ const char leak[] = S(\n// a comment continued \\\n#include \"PATH\"\n);\n",
		"#define S(...) #__VA_ARGS__\r\n__device__ const char leak[] = S(\r\n// a comment continued \\\r\n#include \"PATH\"\r\n);\r\n",
		"#define S(...) #__VA_ARGS__\n__device__ const char leak[] = S(\n// a form feed is a blank \f#include \"PATH\"\n);\n",
		"#define S(...) #__VA_ARGS__\n__device__ const char leak[] = S(\n// so is a vertical tab \v#include \"PATH\"\n);\n",
		"__device__ const char leak[] = \"#include \\\"PATH\\\"\";\n",
		"__device__ int a = 1'000; /*\n#include \"PATH\"\n*/\n",
		"__device__ char c = '\\''; /* it's\n#include \"PATH\"\n*/\n",
		"__device__ int embed = 1; // we include the halo cells\n",
		"#include <cstdio>\n#include <sys/types.h>\n#include <nvtx3/nvToolsExt.h>\n// #include \"PATH\"\n__device__ uint u = 1;\n",
	}
	pieces := make([]string, len(lookalikes))
	for i, l := range lookalikes {
		pieces[i] = strings.ReplaceAll(l, "PATH", path)
		if err := nvidia.CheckIncludes(lookalikeAlone(pieces[i]), "cell.cu"); err != nil {
			t.Errorf("the source rule refused %q: %v", pieces[i], err)
		}
	}
	src, entries := lookalikesTogether(pieces)
	for _, compiler := range []string{"nvrtc", "clang"} {
		t.Run(compiler, func(t *testing.T) {
			if compiler == "nvrtc" {
				needNVRTC(t)
			} else {
				needClang(t)
			}
			t.Setenv(nvidia.CompilerEnv, compiler)
			c := &Compiler{Transport: Exec{Path: mustExe(t), Args: []string{WorkerCommand}}}
			ptx, err := c.Compile(context.Background(), src, "cell.cu", "80")
			missing := slices.DeleteFunc(slices.Clone(entries), func(e string) bool { return strings.Contains(ptx, ".entry "+e+"(") })
			if err != nil || inPTX(ptx, secret) || len(missing) > 0 {
				t.Errorf("the lookalikes together: got %v (secret in the PTX: %v, entries missing: %v), want PTX of them all without the secret", err, inPTX(ptx, secret), missing)
				for _, p := range pieces { // which one: each alone
					ptx, err := c.Compile(context.Background(), lookalikeAlone(p), "cell.cu", "80")
					if err != nil || inPTX(ptx, secret) {
						t.Errorf("%q: got %v (secret in the PTX: %v), want PTX without the secret", p, err, inPTX(ptx, secret))
					}
				}
			}
			// The control: the secret in the source's own string is found in the PTX.
			src := "__device__ const char leak[] = \"" + secret + "\";\nextern \"C\" __global__ void read(char* p, int i) { p[0] = leak[i]; }\n"
			if ptx, err := c.Compile(context.Background(), src, "cell.cu", "80"); err != nil || !inPTX(ptx, secret) {
				t.Errorf("the control: %v, secret found %v; want it found", err, inPTX(ptx, secret))
			}
		})
	}
}

// lookalikeAlone is the source of one lookalike of TestCompileLookalikesReadNoFile: p and a kernel,
// and one that reads its leak[] at an index known only at run time, where it has one (which keeps
// leak[] in the PTX).
func lookalikeAlone(p string) string {
	src := p + "extern \"C\" __global__ void k(float* p) { p[0] = 1; }\n"
	if strings.Contains(p, "leak[]") {
		src += "extern \"C\" __global__ void read(char* p, int i) { p[0] = leak[i]; }\n"
	}
	return src
}

// lookalikesTogether is one source of all of pieces, each compiled once per compiler rather than
// once per lookalike (a compile worker under clang costs about 0.4 CPU s): piece i's leak[] is
// leak<i>, read by the kernel read<i>, and a __device__ int sep<i> follows it, which the kernel k
// adds up, so that a piece that swallowed the next (an open comment) fails the compile. entries are
// the kernels the PTX must have: a piece whose leak[] and kernel were dropped (as host code, say)
// would otherwise pass unseen.
func lookalikesTogether(pieces []string) (src string, entries []string) {
	var b, sum strings.Builder
	for i, p := range pieces {
		leak := fmt.Sprintf("leak%d", i)
		b.WriteString(strings.ReplaceAll(p, "leak[]", leak+"[]"))
		fmt.Fprintf(&b, "__device__ int sep%d = %d;\n", i, i)
		fmt.Fprintf(&sum, " + sep%d", i)
		if strings.Contains(p, "leak[]") {
			fmt.Fprintf(&b, "extern \"C\" __global__ void read%d(char* p, int i) { p[0] = %s[i]; }\n", i, leak)
			entries = append(entries, fmt.Sprintf("read%d", i))
		}
	}
	fmt.Fprintf(&b, "extern \"C\" __global__ void k(int* p) { p[0] = 0%s; }\n", sum.String())
	return b.String(), append(entries, "k")
}

// inPTX reports whether ptx holds s, as text or as PTX writes a string's bytes (decimal, separated
// by commas).
func inPTX(ptx, s string) bool {
	var bytes []string
	for _, c := range []byte(s) {
		bytes = append(bytes, strconv.Itoa(int(c)))
	}
	squeezed := strings.NewReplacer(" ", "", "\t", "", "\n", "").Replace(ptx)
	return strings.Contains(ptx, s) || strings.Contains(squeezed, strings.Join(bytes, ","))
}
