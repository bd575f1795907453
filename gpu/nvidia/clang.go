package nvidia

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The second CUDA compiler: clang, for machines without NVRTC (NVIDIA's NVRTC is in Debian's
// non-free component; clang is in main). clang compiles CUDA C++ to PTX on its own, with no CUDA
// toolkit and no libdevice, given src/clang_prelude.h: the declarations NVRTC has built in.

// ClangPrelude is the header given to clang (-include) before every source it compiles.
//
//go:embed src/clang_prelude.h
var ClangPrelude string

// ClangNames are the commands looked for on PATH, in order: the default clang, then versioned ones,
// newest first.
var ClangNames = []string{"clang", "clang-21", "clang-20", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"}

// ClangMinMajor is the oldest clang used: clang 14 (Debian 12's) is the one tested.
const ClangMinMajor = 14

// NoCompiler says that neither compiler is here and what to install; it never reads as a verdict on
// the learner's kernel.
const NoCompiler = "no CUDA compiler on this server: install NVIDIA's NVRTC (Debian non-free: libnvrtc11.2) or clang (Debian: apt-get install clang)"

// CompilerEnv, when set to "nvrtc" or "clang", makes this process use only that compiler (the
// probe reports it, and compiles use it); set to one of NVRTCVersions' keys ("nvrtc12", "nvrtc11"),
// only that NVRTC; unset or empty, NVRTC is used when it loads (the newest: NVRTCNames) and clang
// otherwise. Tests set it to check each fallback on machines that have them all.
const CompilerEnv = "PLAYGROUND_CUDA_COMPILER"

// NVRTCVersions maps the values of CompilerEnv that force one NVRTC to its soname: "nvrtc13" (CUDA
// 13.x), "nvrtc12" (CUDA 12.x: the unpacked 12.4, UnpackedCUDA12) and "nvrtc11" (CUDA 11.x: Debian
// bookworm's libnvrtc11.2, which is CUDA 11.8).
func NVRTCVersions() map[string]string {
	return map[string]string{"nvrtc13": "libnvrtc.so.13", "nvrtc12": "libnvrtc.so.12", "nvrtc11": "libnvrtc.so.11.2"}
}

// Clang is a clang found on PATH.
type Clang struct {
	Path    string // the command's file
	Version string // e.g. "14.0.6"
}

// FindClang looks for a clang of at least ClangMinMajor with the NVPTX back end on PATH (ClangNames,
// in order) and says why none fits.
func FindClang() (*Clang, error) {
	var why []string
	for _, name := range ClangNames {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		c, err := inspectClang(path)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		return c, nil
	}
	if len(why) == 0 {
		return nil, fmt.Errorf("clang not found on PATH (tried %s)", strings.Join(ClangNames, ", "))
	}
	return nil, errors.New(strings.Join(why, "; "))
}

var clangVersion = regexp.MustCompile(`clang version (\d+)\.(\d+)\.(\d+)`)

// inspectClang reads the version of the clang at path and checks it can emit PTX, in one run of
// clang: -v prints the version on stderr before -print-targets lists the back ends on stdout (two
// runs, --version then -print-targets, cost every compile worker under clang a second start of
// clang's libraries: about 0.05 CPU s).
func inspectClang(path string) (*Clang, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var targets, version limitedBuffer
	cmd := exec.CommandContext(ctx, path, "-v", "-print-targets")
	cmd.Stdout, cmd.Stderr = &targets, &version
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s -v -print-targets: %v", path, err)
	}
	m := clangVersion.FindStringSubmatch(version.String())
	if m == nil {
		return nil, fmt.Errorf("%s: no version in %q", path, firstLine(version.String()))
	}
	if major, _ := strconv.Atoi(m[1]); major < ClangMinMajor {
		return nil, fmt.Errorf("%s is clang %s.%s.%s, older than %d", path, m[1], m[2], m[3], ClangMinMajor)
	}
	if !strings.Contains(targets.String(), "nvptx64") {
		return nil, fmt.Errorf("%s (clang %s.%s.%s) has no NVPTX back end", path, m[1], m[2], m[3])
	}
	return &Clang{Path: path, Version: m[1] + "." + m[2] + "." + m[3]}, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// ClangArch is the GPU architecture clang compiles for when asked for compute capability arch: the
// newest of PTXArchs not above it (sm_80 for Ampere and newer, sm_70 for Volta and Turing), the same
// targets as the embedded PTX.
func ClangArch(arch int) (int, error) {
	a, ok := BestPTXArch(arch)
	if !ok {
		return 0, fmt.Errorf("clang: no target for compute_%d (the oldest is compute_%d)", arch, PTXArchs[0])
	}
	return a, nil
}

// clangLogLimit bounds the compiler output kept (a template bomb's errors can be huge).
const clangLogLimit = 64 << 10

// ClangArgs are the command-line arguments for compiling file (in the current directory) to out,
// with the prelude in prelude (ditto), for sm_<arch>: device code only, no clang CUDA wrappers or
// libdevice, optimised as NVRTC does (-O3, fused multiply-adds, IEEE division and square root),
// C++17 as the playground's NVRTC compiles, no system headers, PTX ISA 7.0 (sm_70 and sm_80),
// the folder stubs (ClangStubHeaders, -isystem) and CUDA's headers from the folder headers
// (-isystem after it; none when it is "").
func ClangArgs(file, out, prelude, stubs string, arch int, headers string) []string {
	inc := []string{"-isystem", stubs}
	if headers != "" {
		inc = append(inc, "-isystem", headers)
	}
	return append(inc,
		"-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
		fmt.Sprintf("--cuda-gpu-arch=sm_%d", arch), "-S", "-O3", "-std=c++17", "-gline-tables-only",
		"-fno-exceptions", "-ffp-contract=fast", "-nostdinc",
		"-Xclang", "-target-feature", "-Xclang", "+ptx70",
		"-fno-caret-diagnostics", "-fno-color-diagnostics",
		// clang looks for a CUDA installation even with -nocudainc -nocudalib, and warns on a
		// newer one than it knows (CUDA 13 on a GPU machine): nothing of it is used here.
		"-Wno-unknown-cuda-version",
		"-include", prelude, "-o", out, file,
	)
}

// Compile compiles CUDA C++ source with the prelude for compute_<arch> (see ClangArch) and returns
// the PTX and clang's log (warnings) in NVRTC's form. It runs clang in a temporary folder with a
// minimal environment; clang inherits this process's limits (the compile worker's RLIMIT_DATA) and
// is killed when ctx ends or, on Linux, when this process dies. A source that does not compile
// returns a *CompileError whose log lines read "name(LINE): error: …", as NVRTC's do, on the
// source's own line numbers; so does one that CheckIncludes refuses, before clang runs. CUDA's
// headers come from FindHeaders(nil); CompileHeaders names their folder.
func (c *Clang) Compile(ctx context.Context, src, name string, arch int) (ptx, log string, err error) {
	return c.CompileHeaders(ctx, src, name, arch, FindHeaders(nil))
}

// CompileHeaders is Compile with CUDA's headers from the folder headers ("": none; an #include of
// one then fails with MissingHeadersNote). The log names only the source's lines and CUDA's
// headers, never the prelude (learnerLog), and so does the PTX's line information (learnerLocs).
func (c *Clang) CompileHeaders(ctx context.Context, src, name string, arch int, headers string) (ptx, log string, err error) {
	if err := refuse(src, name); err != nil {
		return "", err.Log, err
	}
	target, err := ClangArch(arch)
	if err != nil {
		return "", "", err
	}
	dir, err := os.MkdirTemp("", "playground-clang-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(dir)
	// The source starts with a #line naming it, so clang's messages name it and count its lines.
	input := fmt.Sprintf("#line 1 %s\n%s", strconv.Quote(name), src)
	if err := os.WriteFile(filepath.Join(dir, "input.cu"), []byte(input), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "clang_prelude.h"), []byte(ClangPrelude), 0o600); err != nil {
		return "", "", err
	}
	if err := writeStubs(filepath.Join(dir, "stubs")); err != nil {
		return "", "", err
	}
	cmd := exec.CommandContext(ctx, c.Path, ClangArgs("input.cu", "kernel.ptx", "clang_prelude.h", "stubs", target, headers)...)
	cmd.Dir = dir
	// "." is dir for clang, which starts there; dir may be relative (a confined compile worker's
	// TMPDIR is ".", its own folder, whose full path its user may not be able to walk).
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "HOME=.", "TMPDIR=."}
	cmd.SysProcAttr = clangProcAttr()
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	log = learnerLog(NVRTCStyleLog(out.String()), name, headers)
	if headers == "" {
		log = noteMissingHeaders(log, name, src)
	}
	if ctx.Err() != nil {
		return "", log, context.Cause(ctx)
	}
	if runErr != nil {
		return "", log, &CompileError{Log: log, Err: fmt.Errorf("clang %s: %v", c.Version, runErr)}
	}
	b, err := os.ReadFile(filepath.Join(dir, "kernel.ptx"))
	if err != nil {
		return "", log, fmt.Errorf("clang %s wrote no PTX: %v", c.Version, err)
	}
	return learnerLocs(string(b), name), log, nil
}

// ClangStubHeaders are CUDA's headers that are empty for clang: what they declare, NVRTC has built in
// and the prelude declares for clang (their own declarations would clash with the prelude's). A
// learner's #include of one compiles under clang with or without CUDA's headers, and under NVRTC
// without them too (CompileWithHeaders gives it the same empty headers then).
func ClangStubHeaders() []string {
	return []string{"cuda_runtime.h", "cuda_runtime_api.h", "device_launch_parameters.h", "device_functions.h",
		"device_atomic_functions.h", "sm_20_intrinsics.h", "sm_30_intrinsics.h", "sm_32_intrinsics.h",
		"sm_60_atomic_functions.h", "vector_types.h", "vector_functions.h", "math_functions.h"}
}

// runtimeStubs maps each of ClangStubHeaders to its empty content.
func runtimeStubs() map[string]string {
	m := map[string]string{}
	for _, h := range ClangStubHeaders() {
		m[h] = "// " + h + ": the playground's stand-in; the compiler has (the clang prelude declares) what it does for device code.\n"
	}
	return m
}

// writeStubs writes ClangStubHeaders, empty but for a comment, and the stand-ins (StandInHeaders)
// into the new folder dir.
func writeStubs(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	headers := StandInHeaders()
	maps.Copy(headers, runtimeStubs())
	for h, content := range headers {
		path := filepath.Join(dir, filepath.FromSlash(h))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// clangDiag is the start of a clang diagnostic: "file:LINE:COL: ".
var clangDiag = regexp.MustCompile(`(?m)^([^\s:][^:\n]*):(\d+):\d+: `)

// NVRTCStyleLog rewrites clang's "file:LINE:COL: error: …" lines as NVRTC writes them,
// "file(LINE): error: …", so that a log from either compiler reads the same.
func NVRTCStyleLog(log string) string { return clangDiag.ReplaceAllString(log, "$1($2): ") }

// limitedBuffer keeps the first clangLogLimit bytes written to it and notes that the rest was cut.
type limitedBuffer struct {
	buf bytes.Buffer
	cut bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := clangLogLimit - b.buf.Len(); room < len(p) {
		b.buf.Write(p[:max(room, 0)])
		b.cut = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) String() string {
	if b.cut {
		return b.buf.String() + "\n… (the rest of the compiler's output is cut)"
	}
	return b.buf.String()
}

// ChosenCompiler is the compiler this process uses (NVRTC when it loads, else clang; CompilerEnv
// can force one): exactly one of nv and cl is set, or err says why there is none (NoCompiler first).
func ChosenCompiler() (nv *NVRTC, cl *Clang, err error) {
	return chooseCompiler(os.Getenv(CompilerEnv), LoadNVRTCFrom, FindClang)
}

// chooseCompiler is ChosenCompiler with CompilerEnv's value force; loadNVRTC opens the first NVRTC
// of its sonames that loads.
func chooseCompiler(force string, loadNVRTC func(names []string) (*NVRTC, error), findClang func() (*Clang, error)) (*NVRTC, *Clang, error) {
	var nvErr, clErr error
	names := NVRTCNames
	soname, oneNVRTC := NVRTCVersions()[force]
	if oneNVRTC {
		names = []string{soname}
	}
	if force == "" || force == "nvrtc" || oneNVRTC {
		nv, err := loadNVRTC(names)
		if err == nil {
			return nv, nil, nil
		}
		nvErr = err
	}
	switch force {
	case "", "clang":
		cl, err := findClang()
		if err == nil {
			return nil, cl, nil
		}
		clErr = err
	}
	var why []string
	switch {
	case force == "" || force == "nvrtc" || force == "clang" || oneNVRTC:
	default:
		return nil, nil, fmt.Errorf("%s=%q: want nvrtc, %s, clang or nothing", CompilerEnv, force,
			strings.Join(slices.Sorted(maps.Keys(NVRTCVersions())), ", "))
	}
	if nvErr != nil {
		why = append(why, "NVRTC: "+nvErr.Error())
	}
	if clErr != nil {
		why = append(why, "clang: "+clErr.Error())
	}
	if force != "" {
		why = append(why, fmt.Sprintf("%s=%s allows no other", CompilerEnv, force))
	}
	return nil, nil, fmt.Errorf("%s\n(%s)", NoCompiler, strings.Join(why, "; "))
}

// CompilerName names a chosen compiler for the device report: "NVRTC 11.8", "clang 14.0.6".
func CompilerName(nv *NVRTC, cl *Clang) string {
	switch {
	case nv != nil:
		v, err := nv.Version()
		if err != nil {
			return "NVRTC"
		}
		return "NVRTC " + v
	case cl != nil:
		return "clang " + cl.Version
	}
	return "none"
}

// CompileWith compiles src (called name in the log) for compute_<arch> with the chosen compiler and
// CUDA's headers from FindHeaders(nv) (see CompileWithHeaders).
func CompileWith(ctx context.Context, nv *NVRTC, cl *Clang, src, name string, arch int) (string, error) {
	return CompileWithHeaders(ctx, nv, cl, FindHeaders(nv), src, name, arch)
}

// CompileWithHeaders compiles src (called name in the log) for compute_<arch> with the chosen
// compiler, and CUDA's headers from the folder headers (NVRTC's -I, clang's -isystem; "" for none:
// an #include of one of them then fails with one line, MissingHeadersNote, on the #include's line).
//
// Learners' kernels are compiled with line information (NVRTC's --generate-line-info, clang's
// -gline-tables-only), so that the PTX carries .loc directives: the virtual GPU then names the CUDA
// source line of what it counts and of a fault. Lines of other files (CUDA's headers, the clang
// prelude) are left out of them (learnerLocs), so what runs there counts on the learner's line.
//
// A source the source rule passes (CheckIncludes) is compiled without its host code (DeviceOnly:
// main and the functions and variables only it uses), with the stand-in headers (StandInHeaders);
// a compile that fails then ends its log with a note naming what was left out.
func CompileWithHeaders(ctx context.Context, nv *NVRTC, cl *Clang, headers, src, name string, arch int) (string, error) {
	return CompileFor(ctx, nv, cl, headers, src, name, strconv.Itoa(arch))
}

// compileDevice is CompileFor after the host code is left out, for arch ("80", "90a"), which the
// compiler can target.
func compileDevice(ctx context.Context, nv *NVRTC, cl *Clang, headers, src, name, arch string) (string, error) {
	if nv == nil {
		cc, _, err := ArchNumber(arch)
		if err != nil {
			return "", err
		}
		ptx, _, err := cl.CompileHeaders(ctx, src, name, cc, headers)
		return bareFileNames(ptx), err
	}
	opts := []string{"--generate-line-info"}
	own := StandInHeaders()
	if headers != "" {
		opts = append(opts, "--include-path="+headers)
		if hasLibcuxx(headers) {
			own = includedOnly(own, src)
		}
	} else {
		maps.Copy(own, runtimeStubs()) // what they declare for device code, NVRTC has built in
	}
	ptx, log, err := nv.compile(src, name, "compute_"+arch, own, opts...)
	var ce *CompileError
	if errors.As(err, &ce) && !errors.As(err, new(refused)) {
		ce.Log = learnerLog(log, name, headers)
		if headers == "" {
			ce.Log = noteMissingHeaders(ce.Log, name, src)
		}
	}
	return learnerLocs(bareFileNames(ptx), name), err
}

// fileDirective matches a PTX .file directive's quoted path up to its last slash.
var fileDirective = regexp.MustCompile(`(?m)^(\s*\.file\s+\d+\s+")[^"\n]*/`)

// bareFileNames strips the directories from the PTX's .file directives: NVRTC writes the compiling
// process's working directory there, which is the server's, not the learner's business.
func bareFileNames(ptx string) string { return fileDirective.ReplaceAllString(ptx, "$1") }
