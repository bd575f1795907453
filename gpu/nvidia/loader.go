// Package nvidia binds the NVIDIA driver API (libcuda), NVRTC and cuBLAS at run time with purego: no cgo,
// no CUDA toolkit, no build tag. It finds and dlopens the libraries, reports which files it loaded,
// and wraps only the calls the playground uses; every call's result is checked and mapped to an error
// that names it (CUDA_ERROR_ILLEGAL_ADDRESS, NVRTC_ERROR_COMPILATION, CUBLAS_STATUS_NOT_SUPPORTED…).
//
// gorgonia.org/cu is deliberately not used: its package initialisation exits the process when no GPU
// is present, it needs the CUDA toolkit and cgo to build, and it links CUDA-11-only symbols.
package nvidia

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// Library names, in order of preference (newest first).
var (
	DriverNames = []string{"libcuda.so.1"}
	NVRTCNames  = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}
	CuBLASNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}
)

// Loaded describes one library that was found and opened.
type Loaded struct {
	// Name is the soname asked for, e.g. "libnvrtc.so.12".
	Name string `json:"name"`
	// Path is the file that was opened.
	Path string `json:"path"`
	// Via says how it was found: "loader path" (the dynamic loader's own search: ld.so.cache and the
	// LD_LIBRARY_PATH the process started with) or the folder searched.
	Via    string `json:"via"`
	handle uintptr
}

// Loader finds and opens shared libraries. The zero value searches the real system; tests replace
// Dirs and Open.
type Loader struct {
	// Dirs lists folders to search after the dynamic loader's own path; nil means SearchDirs().
	Dirs func() []string
	// Open opens a library by soname or path; nil means purego.Dlopen with RTLD_NOW|RTLD_GLOBAL.
	Open func(name string) (uintptr, error)
	// Resolve finds the file behind a soname that Open found on the loader path; nil means asking
	// the dynamic loader for the opened handle's file (dlinfo, on Linux), else reading
	// /proc/self/maps. A soname opened once from a folder (the unpacked libnvrtc.so.12) opens again
	// by name, and must then still name that file, not another version's that is also mapped.
	Resolve func(soname string) string
}

// NotFoundError says a library could not be opened and lists everything tried.
type NotFoundError struct {
	Names []string
	Tried []string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s not found (tried %s)", strings.Join(e.Names, " / "), strings.Join(e.Tried, "; "))
}

// Load opens the first of names (in order) that can be opened: for each name, first through the
// dynamic loader's path, then in each search folder. It returns a *NotFoundError listing every
// attempt (with the loader's reason for files that exist but failed to open) when none can be.
func (l Loader) Load(names []string) (Loaded, error) {
	open := l.Open
	if open == nil {
		open = func(name string) (uintptr, error) { return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL) }
	}
	dirs := SearchDirs()
	if l.Dirs != nil {
		dirs = l.Dirs()
	}
	nf := &NotFoundError{Names: names}
	for _, name := range names {
		if h, err := open(name); err == nil {
			var path string
			if l.Resolve != nil {
				path = l.Resolve(name)
			} else {
				path = libraryFile(h, name)
			}
			if path == "" {
				path = name
			}
			return Loaded{Name: name, Path: path, Via: "loader path", handle: h}, nil
		}
		nf.Tried = append(nf.Tried, name+" on the loader path")
		for _, dir := range dirs {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			h, err := open(p)
			if err == nil {
				return Loaded{Name: name, Path: p, Via: dir, handle: h}, nil
			}
			nf.Tried = append(nf.Tried, fmt.Sprintf("%s (%v)", p, err))
		}
	}
	if len(dirs) > 0 {
		nf.Tried = append(nf.Tried, "folders "+strings.Join(dirs, ", "))
	}
	return Loaded{}, nf
}

// UnpackedCUDA12 is where .ci/run unpacks Debian trixie's CUDA 12.4 packages (non-free: libnvrtc12,
// libnvrtc-builtins12.4, ptxas and cuobjdump of nvidia-cuda-toolkit, nvidia-cuda-dev's headers; main:
// libcu++-dev) without installing them: NVRTC under usr/lib/<triplet>, the headers under usr/include,
// the tools under usr/bin.
const UnpackedCUDA12 = "/opt/playground-nvidia/cuda-12.4"

// SearchDirs lists the folders searched after the loader path, in order: LD_LIBRARY_PATH (as set
// now), /usr/local/cuda/lib64, /usr/lib/x86_64-linux-gnu (or the arm64 equivalent), the
// nvidia/*/lib folders of Python site-packages and dist-packages (where pip's nvidia-* wheels, and so
// PyTorch's CUDA libraries, live), and last the unpacked CUDA 12.4's library folder
// (UnpackedCUDA12/usr/lib/x86_64-linux-gnu): the machine's own copy of a library (which matches its
// driver) comes before the playground's.
func SearchDirs() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	triplet := "x86_64-linux-gnu"
	if runtime.GOARCH == "arm64" {
		triplet = "aarch64-linux-gnu"
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/lib/"+triplet)
	home, _ := os.UserHomeDir()
	var roots []string
	for _, pat := range []string{
		"/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages",
		"/opt/conda/lib/python3*/site-packages", "/opt/*/lib/python3*/site-packages",
		filepath.Join(home, ".local/lib/python3*/site-packages"),
		filepath.Join(home, ".pyenv/versions/*/lib/python3*/site-packages"),
	} {
		m, _ := filepath.Glob(pat)
		roots = append(roots, m...)
	}
	if venv := os.Getenv("VIRTUAL_ENV"); venv != "" {
		m, _ := filepath.Glob(filepath.Join(venv, "lib/python3*/site-packages"))
		roots = append(roots, m...)
	}
	for _, r := range roots {
		m, _ := filepath.Glob(filepath.Join(r, "nvidia/*/lib"))
		dirs = append(dirs, m...)
	}
	dirs = append(dirs, filepath.Join(UnpackedCUDA12, "usr/lib", triplet))
	return dedupe(dirs)
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// mappedPath finds the file of a loaded library in /proc/self/maps ("" if not found).
func mappedPath(soname string) string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return ""
	}
	defer f.Close()
	base := strings.SplitN(soname, ".so", 2)[0] + ".so"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		p := fields[len(fields)-1]
		if strings.HasPrefix(filepath.Base(p), base) {
			return resolvedFile(p)
		}
	}
	return ""
}

// sym looks a function up in a loaded library and registers it into fptr (a pointer to a func
// variable), returning an error naming the symbol when it is missing (an older library).
func sym(lib Loaded, fptr any, name string) error {
	addr, err := purego.Dlsym(lib.handle, name)
	if err != nil || addr == 0 {
		return fmt.Errorf("%s: symbol %s missing (library too old?)", lib.Path, name)
	}
	purego.RegisterFunc(fptr, addr)
	return nil
}

// bind registers every (fptr, name) pair, stopping at the first missing symbol.
func bind(lib Loaded, pairs ...any) error {
	if len(pairs)%2 != 0 {
		return errors.New("cuda: bind needs pairs")
	}
	for i := 0; i < len(pairs); i += 2 {
		if err := sym(lib, pairs[i], pairs[i+1].(string)); err != nil {
			return err
		}
	}
	return nil
}

// resolvedFile is p with its symbolic links resolved, or p where that fails.
func resolvedFile(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}
