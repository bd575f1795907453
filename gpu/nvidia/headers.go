package nvidia

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// CUDA's headers (cuda_fp16.h, cuda_bf16.h, mma.h, …) are not part of either compiler: NVRTC and
// clang read them from a folder of NVIDIA's CUDA toolkit. The playground looks for that folder in a
// fixed order (HeaderDirs) and gives the first that holds cuda_fp16.h to the compiler (NVRTC:
// -I; clang: -isystem, read through the prelude, which defines __CUDACC_RTC__ as NVRTC does).

// IncludeEnv, when set, names the folder of CUDA's headers, searched before any other.
const IncludeEnv = "PLAYGROUND_CUDA_INCLUDE"

// UnpackedHeaders is where .ci/run unpacks bookworm's nvidia-cuda-dev (non-free; CUDA 11.8) without
// installing it, beside the unpacked libcuda1: the headers of NVRTC 11.8 and of clang (nv nil), which
// is tested with CUDA 11.8's headers. NVRTC 12.4 finds its own beside it (UnpackedCUDA12/usr/include).
const UnpackedHeaders = "/opt/playground-nvidia/usr/include"

// headerProbe is the file whose presence makes a folder the one of CUDA's headers.
const headerProbe = "cuda_fp16.h"

// HeaderDirs lists the folders searched for CUDA's headers, in order: env (IncludeEnv's value,
// when not empty), the include folder beside the loaded NVRTC (nv may be nil; a CUDA toolkit keeps
// lib/libnvrtc.so.* beside include/, e.g. /usr/local/cuda-13.0/targets/x86_64-linux/{lib,include};
// Debian keeps usr/lib/<triplet>/libnvrtc.so.* and usr/include/, as in UnpackedCUDA12), so that an
// NVRTC gets its own version's headers, then UnpackedHeaders, /usr/local/cuda/include and
// /usr/include (where Debian's nvidia-cuda-dev installs them).
func HeaderDirs(env string, nv *NVRTC) []string {
	var dirs []string
	if env != "" {
		dirs = append(dirs, env)
	}
	if nv != nil && filepath.IsAbs(nv.Lib.Path) {
		lib := nv.Lib.Path
		if r, err := filepath.EvalSymlinks(lib); err == nil {
			lib = r
		}
		libDir := filepath.Dir(lib)
		dirs = append(dirs, filepath.Join(libDir, "..", "include"))
		if strings.HasSuffix(filepath.Base(libDir), "-linux-gnu") { // Debian's usr/lib/<triplet>: usr/include
			dirs = append(dirs, filepath.Clean(filepath.Join(libDir, "..", "..", "include")))
		}
	}
	return append(dirs, UnpackedHeaders, "/usr/local/cuda/include", "/usr/include")
}

// FindHeaders returns the first folder of HeaderDirs(os.Getenv(IncludeEnv), nv) that holds
// cuda_fp16.h, cleaned, or "" when none does (MissingHeadersNote then says what to install).
func FindHeaders(nv *NVRTC) string {
	for _, d := range HeaderDirs(os.Getenv(IncludeEnv), nv) {
		if st, err := os.Stat(filepath.Join(d, headerProbe)); err == nil && st.Mode().IsRegular() {
			return filepath.Clean(d)
		}
	}
	return ""
}

// MissingHeadersNote is the note a learner gets, after the header's name, for an #include of a CUDA
// header on a server without CUDA's headers.
const MissingHeadersNote = "CUDA's headers are not on this server: Debian: unpack nvidia-cuda-dev (non-free) under " +
	"/opt/playground-nvidia as .ci/run does, or install it; or set " + IncludeEnv + " to a CUDA toolkit's include folder"

// cannotOpen matches a compiler's error for a header it cannot find, in NVRTC's form (after
// NVRTCStyleLog for clang): NVRTC's `name(LINE): catastrophic error: cannot open source file "h"`
// and clang's `name(LINE): fatal error: 'h' file not found`.
var cannotOpen = regexp.MustCompile(`(?m)^(\S+)\((\d+)\): (?:catastrophic|fatal) error: (?:(?:cannot|could not) open source file "([^"]+)"(?: \([^)\n]*\))?|'([^']+)' file not found)\s*$`)

// noteMissingHeaders rewrites, in a compiler's log for the source called name, an error for a
// header the compiler could not open as one line naming the learner's #include line and what to
// install (MissingHeadersNote): the only message that compile gives. A log without such an error,
// or whose missing header is not one of AllowedHeaders, comes back as it is; so does one from a
// compile that had a header folder (the header is then missing from that folder, which the
// compiler's message says).
func noteMissingHeaders(log, name, src string) string {
	m := cannotOpen.FindStringSubmatch(log)
	if m == nil {
		return log
	}
	header := m[3] + m[4]
	if !isToolkitHeader(header) {
		return log
	}
	line, _ := strconv.Atoi(m[2])
	if m[1] != name { // opened from another header: name the learner's first CUDA #include instead
		line = firstCUDAInclude(src)
	}
	return fmt.Sprintf("%s(%d): error: %s: %s\n", name, line, header, MissingHeadersNote)
}

// isToolkitHeader says whether h is one of AllowedHeaders that the CUDA toolkit's include folder
// holds (nvidia-cuda-dev's): not a stand-in (StandInHeaders, never missing), not the C++ headers,
// not libcu++'s cuda/… (Debian's libcu++-dev), not the prelude.
func isToolkitHeader(h string) bool {
	if _, standIn := standIns()[h]; standIn {
		return false
	}
	switch h {
	case "type_traits", "limits", "clang_prelude.h":
		return false
	}
	if strings.HasPrefix(h, "cuda/") {
		return false
	}
	for _, a := range AllowedHeaders() {
		if a == h {
			return true
		}
	}
	return false
}

// includeLine matches an #include directive's header name.
var includeLine = regexp.MustCompile(`^\s*#\s*include\s*[<"]([^>"]+)[>"]`)

// firstCUDAInclude is the 1-based line of src's first #include of a toolkit header (1 when none).
func firstCUDAInclude(src string) int {
	for i, l := range strings.Split(src, "\n") {
		if m := includeLine.FindStringSubmatch(l); m != nil && isToolkitHeader(m[1]) {
			return i + 1
		}
	}
	return 1
}

// libcuxxDir is where libcu++ (CUDA 12's cuda/barrier, cuda/pipeline, cuda/std/…) keeps its
// implementation, below a folder of CUDA's headers.
const libcuxxDir = "cuda/std/detail/libcxx/include"

// hasLibcuxx says whether the folder of CUDA's headers holds libcu++ (UnpackedCUDA12's does, from
// trixie's libcu++-dev; CUDA 11.8's unpacked headers do not).
func hasLibcuxx(headers string) bool {
	st, err := os.Stat(filepath.Join(headers, filepath.FromSlash(libcuxxDir)))
	return err == nil && st.IsDir()
}

// includedOnly is the stand-ins of own that src's own #include lines name. libcu++'s headers include
// "chrono", "new", <cstddef>, <cstdint> … of their own (libcu++ declares int64_t as long long under
// NVRTC, glibc as long), and NVRTC finds a program's own headers by name before any file: given every
// stand-in, NVRTC would read the empty or glibc-typed stand-ins in place of libcu++'s files. A
// learner's source that includes <cstdint> and <cuda/barrier> both still meets that clash.
func includedOnly(own map[string]string, src string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(src, "\n") {
		if m := includeLine.FindStringSubmatch(l); m != nil {
			if body, ok := own[m[1]]; ok {
				out[m[1]] = body
			}
		}
	}
	return out
}

// HeadersVersion is CUDA_VERSION in dir/cuda.h (11080 for CUDA 11.8's headers), or 0 when it cannot
// be read. clang with the prelude is tested with CUDA 11.8's headers; with CUDA 13.0's, clang 16
// failed (seen on a GPU machine, 2026-11-25; docs/gpu.md).
func HeadersVersion(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "cuda.h"))
	if err != nil {
		return 0
	}
	m := cudaVersionLine.FindSubmatch(b)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(string(m[1]))
	return v
}

var cudaVersionLine = regexp.MustCompile(`(?m)^#define CUDA_VERSION (\d+)`)
