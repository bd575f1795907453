package nvidia

import (
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NVRTC is the runtime compiler for CUDA C++ (libnvrtc). It compiles kernel source to PTX without a
// GPU, so Show PTX and compile errors work on any machine that has the library.
type NVRTC struct {
	Lib Loaded

	version             func(major, minor *int32) int32
	createProgram       func(prog *uintptr, src, name string, numHeaders int32, headers, includeNames uintptr) int32
	compileProgram      func(prog uintptr, numOptions int32, options uintptr) int32
	getProgramLogSize   func(prog uintptr, size *uint64) int32
	getProgramLog       func(prog uintptr, log *byte) int32
	getPTXSize          func(prog uintptr, size *uint64) int32
	getPTX              func(prog uintptr, ptx *byte) int32
	destroyProgram      func(prog *uintptr) int32
	getSupportedArchs   func(archs *int32) int32
	getNumSupportedArch func(n *int32) int32
}

// nvrtcLoads holds each NVRTC this process opened (or failed to), by the sonames asked for.
var nvrtcLoads = struct {
	sync.Mutex
	m map[string]nvrtcLoad
}{m: map[string]nvrtcLoad{}}

type nvrtcLoad struct {
	n   *NVRTC
	err error
}

// LoadNVRTC opens NVRTC once per process (libnvrtc.so.13, .12, then .11.2: NVRTCNames) with the
// default Loader.
func LoadNVRTC() (*NVRTC, error) { return LoadNVRTCFrom(NVRTCNames) }

// LoadNVRTCFrom opens the first NVRTC of names that loads with the default Loader, once per process
// for each list of names: []string{"libnvrtc.so.11.2"} is CUDA 11.8's even where CUDA 12.4's is
// the default (several NVRTCs live in one process side by side: each is bound by its own handle).
func LoadNVRTCFrom(names []string) (*NVRTC, error) {
	key := strings.Join(names, "\x00")
	nvrtcLoads.Lock()
	defer nvrtcLoads.Unlock()
	l, ok := nvrtcLoads.m[key]
	if !ok {
		l.n, l.err = Loader{}.NVRTCFrom(names)
		nvrtcLoads.m[key] = l
	}
	return l.n, l.err
}

// NVRTC opens and binds NVRTC with this loader.
func (l Loader) NVRTC() (*NVRTC, error) { return l.NVRTCFrom(NVRTCNames) }

// NVRTCFrom opens and binds the first NVRTC of names that loads.
func (l Loader) NVRTCFrom(names []string) (*NVRTC, error) {
	lib, err := l.Load(names)
	if err != nil {
		return nil, err
	}
	n := &NVRTC{Lib: lib}
	if err := bind(lib, n.symbols()...); err != nil {
		return nil, err
	}
	// NVRTC opens its builtins by soname, on the loader path only: one found in a folder of
	// SearchDirs (the unpacked CUDA 12.4) would not find its own builtins beside it otherwise.
	n.PreloadBuiltins()
	return n, nil
}

// symbols pairs each function variable with the libnvrtc symbol it binds.
func (n *NVRTC) symbols() []any {
	return []any{
		&n.version, "nvrtcVersion",
		&n.createProgram, "nvrtcCreateProgram",
		&n.compileProgram, "nvrtcCompileProgram",
		&n.getProgramLogSize, "nvrtcGetProgramLogSize",
		&n.getProgramLog, "nvrtcGetProgramLog",
		&n.getPTXSize, "nvrtcGetPTXSize",
		&n.getPTX, "nvrtcGetPTX",
		&n.destroyProgram, "nvrtcDestroyProgram",
		&n.getNumSupportedArch, "nvrtcGetNumSupportedArchs",
		&n.getSupportedArchs, "nvrtcGetSupportedArchs",
	}
}

// PreloadBuiltins opens NVRTC's builtins library (libnvrtc-builtins.so.MAJOR.MINOR* of its own
// version, else any libnvrtc-builtins.so*, in libnvrtc's folder), which NVRTC would otherwise open by
// soname during its first compile, on the loader path only. NVRTCFrom calls it, so that an NVRTC
// found in a folder of SearchDirs finds its builtins; a compile worker calls it again before it
// confines itself (gpu's sandbox), so that the folder need not stay readable. It returns the files
// it opened; none is not an error (NVRTC then opens the library itself, or says it cannot).
func (n *NVRTC) PreloadBuiltins() []string {
	path, err := filepath.EvalSymlinks(n.Lib.Path)
	if err != nil {
		path = n.Lib.Path
	}
	dir := filepath.Dir(path)
	var files []string
	if v, err := n.Version(); err == nil {
		files, _ = filepath.Glob(filepath.Join(dir, "libnvrtc-builtins.so."+v+"*"))
	}
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(dir, "libnvrtc-builtins.so*"))
	}
	var opened []string
	for _, f := range files {
		if _, err := purego.Dlopen(f, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			opened = append(opened, f)
		}
	}
	return opened
}

// Version returns NVRTC's CUDA version, e.g. "11.8".
func (n *NVRTC) Version() (string, error) {
	var major, minor int32
	if err := check("nvrtcVersion", n.version(&major, &minor), nvrtcResultNames); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d.%d", major, minor), nil
}

// SupportedArchs lists the compute capabilities this NVRTC can compile for, as numbers like 80
// (sm_80) and 90 (sm_90).
func (n *NVRTC) SupportedArchs() ([]int, error) {
	var count int32
	if err := check("nvrtcGetNumSupportedArchs", n.getNumSupportedArch(&count), nvrtcResultNames); err != nil {
		return nil, err
	}
	archs := make([]int32, count)
	if count > 0 {
		if err := check("nvrtcGetSupportedArchs", n.getSupportedArchs(&archs[0]), nvrtcResultNames); err != nil {
			return nil, err
		}
	}
	out := make([]int, count)
	for i, a := range archs {
		out[i] = int(a)
	}
	return out, nil
}

// CompileError is a compilation that failed; Log is NVRTC's log, whose lines read
// "name(LINE): error: …".
type CompileError struct {
	Log string
	Err error
}

func (e *CompileError) Error() string { return fmt.Sprintf("%v:\n%s", e.Err, strings.TrimSpace(e.Log)) }
func (e *CompileError) Unwrap() error { return e.Err }

// refuse is CheckIncludes's verdict as a *CompileError, as both compilers return it: its log is the
// one refused line, "name(LINE): error: …"; nil when the source passes.
func refuse(src, name string) *CompileError {
	err := CheckIncludes(src, name)
	if err == nil {
		return nil
	}
	return &CompileError{Log: err.Error(), Err: refused{err}}
}

// Refuse is the source rule's verdict on src (CheckIncludes) as both compilers return it, for a
// caller that refuses before it loads or looks for either (a compile worker): a *CompileError whose
// log is the one refused line, "name(LINE): error: …"; nil when the source passes.
func Refuse(src, name string) error {
	if err := refuse(src, name); err != nil {
		return err
	}
	return nil
}

// refused says a source was refused before compiling; it unwraps to the *IncludeError, which the
// CompileError's log already shows.
type refused struct{ err error }

func (r refused) Error() string { return "the source was refused before compiling" }
func (r refused) Unwrap() error { return r.err }

// Compile compiles CUDA C++ source (name appears in the log, e.g. "matmul.cu") for a virtual
// architecture, e.g. "compute_80", and returns the PTX and the compiler log (warnings; may be
// empty). A source that does not compile returns a *CompileError with the log; so does one that
// CheckIncludes refuses, before NVRTC sees it.
// The program's own headers are the stand-ins (StandInHeaders), which NVRTC finds by name before
// its include path.
func (n *NVRTC) Compile(src, name, arch string, extraOptions ...string) (ptx, log string, err error) {
	return n.compile(src, name, arch, StandInHeaders(), extraOptions...)
}

// compile is Compile with the program's own headers (name → content).
func (n *NVRTC) compile(src, name, arch string, headers map[string]string, extraOptions ...string) (ptx, log string, err error) {
	if err := refuse(src, name); err != nil {
		return "", err.Log, err
	}
	var prog uintptr
	keys := slices.Sorted(maps.Keys(headers))
	bodies := make([]string, len(keys))
	for i, h := range keys {
		bodies[i] = headers[h]
	}
	names, contents := cStrings(keys), cStrings(bodies)
	namePtrs, contentPtrs := pointers(names), pointers(contents)
	var headerArg, nameArg uintptr
	if len(namePtrs) > 0 {
		headerArg, nameArg = uintptr(unsafe.Pointer(&contentPtrs[0])), uintptr(unsafe.Pointer(&namePtrs[0]))
	}
	res := n.createProgram(&prog, src, name, int32(len(namePtrs)), headerArg, nameArg)
	runtime.KeepAlive(names)
	runtime.KeepAlive(contents)
	runtime.KeepAlive(namePtrs)
	runtime.KeepAlive(contentPtrs)
	if err := check("nvrtcCreateProgram", res, nvrtcResultNames); err != nil {
		return "", "", err
	}
	defer n.destroyProgram(&prog)

	opts := append([]string{"--gpu-architecture=" + arch, "--std=c++17"}, extraOptions...)
	cstrs := cStrings(opts)
	ptrs := pointers(cstrs)
	res = n.compileProgram(prog, int32(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(cstrs)
	runtime.KeepAlive(ptrs)
	log, logErr := n.programLog(prog)
	if logErr != nil {
		return "", "", logErr
	}
	if err := check("nvrtcCompileProgram", res, nvrtcResultNames); err != nil {
		return "", log, &CompileError{Log: log, Err: err}
	}
	var size uint64
	if err := check("nvrtcGetPTXSize", n.getPTXSize(prog, &size), nvrtcResultNames); err != nil {
		return "", log, err
	}
	buf := make([]byte, size)
	if size > 0 {
		if err := check("nvrtcGetPTX", n.getPTX(prog, &buf[0]), nvrtcResultNames); err != nil {
			return "", log, err
		}
	}
	return strings.TrimRight(string(buf), "\x00"), log, nil
}

// cStrings is each of ss NUL-terminated.
func cStrings(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = append([]byte(s), 0)
	}
	return out
}

// pointers is the address of each of bs's first bytes.
func pointers(bs [][]byte) []*byte {
	out := make([]*byte, len(bs))
	for i := range bs {
		out[i] = &bs[i][0]
	}
	return out
}

func (n *NVRTC) programLog(prog uintptr) (string, error) {
	var size uint64
	if err := check("nvrtcGetProgramLogSize", n.getProgramLogSize(prog, &size), nvrtcResultNames); err != nil {
		return "", err
	}
	if size <= 1 {
		return "", nil
	}
	buf := make([]byte, size)
	if err := check("nvrtcGetProgramLog", n.getProgramLog(prog, &buf[0]), nvrtcResultNames); err != nil {
		return "", err
	}
	return strings.TrimRight(string(buf), "\x00"), nil
}

// CompileArch compiles src for compute_<arch> with the options every playground kernel uses
// (fast math off, so results are IEEE-accurate and comparable with the CPU reference).
func CompileArch(n *NVRTC, src, name string, arch int) (string, error) {
	ptx, _, err := n.Compile(src, name, fmt.Sprintf("compute_%d", arch))
	return ptx, err
}

// ArchFor returns the virtual architecture to compile for on a device of compute capability cc: cc
// itself where this NVRTC supports it, else the newest it supports below cc (PTX is forward
// compatible: the driver JIT-compiles it for newer GPUs). It fails when NVRTC supports nothing ≤ cc.
func (n *NVRTC) ArchFor(cc int) (int, error) {
	supported, err := n.SupportedArchs()
	if err != nil {
		return 0, err
	}
	return pickArch(supported, cc, n.Lib.Path)
}

func pickArch(supported []int, cc int, lib string) (int, error) {
	best := 0
	for _, a := range supported {
		if a <= cc && a > best {
			best = a
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("NVRTC %s supports no architecture up to sm_%d (it supports %v)", lib, cc, supported)
	}
	return best, nil
}
