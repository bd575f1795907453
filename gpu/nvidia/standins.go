package nvidia

import (
	"embed"
	"maps"
	"strings"
	"sync"
)

// Stand-in headers: the headers a CUDA programmer includes that neither compiler has in device code
// (NVRTC and clang's device-only compile have no C or C++ library, and CUDA's host libraries are of
// no use on the device), answered by the playground's own small headers, so that a kernel copied
// with its #include lines compiles. The C and C++ headers that kernels use for types, limits and
// constants get what device code uses of them (src/standins: the fixed-width integers, INT_MAX,
// FLT_MAX, M_PI, uint, assert, …); the headers that only serve host code (<stdio.h>, <iostream>,
// <vector>, <cublas_v2.h>, NVIDIA's samples' <helper_cuda.h>, …) are empty, since host code is
// left out of what the GPU compilers compile (DeviceOnly). printf needs no header: both compilers
// have it in device code.
//
// NVRTC gets them as the program's own headers (by name, before its include path); clang finds them
// in its stubs folder, searched first. They are the only files either compiler reads besides CUDA's
// headers and the prelude.

//go:embed src/standins/*.h
var standinFiles embed.FS

// standinSources maps each header with content to its file in src/standins.
func standinSources() map[string]string {
	return map[string]string{
		"stdint.h": "stdint.h", "cstdint": "stdint.h", "inttypes.h": "stdint.h", "cinttypes": "stdint.h",
		"limits.h": "limits.h", "climits": "limits.h",
		"float.h": "float.h", "cfloat": "float.h",
		"stddef.h": "stddef.h", "cstddef": "stddef.h",
		"math.h": "math.h", "cmath": "math.h",
		"stdlib.h": "stdlib.h", "cstdlib": "stdlib.h", "sys/types.h": "stdlib.h",
		"assert.h": "assert.h", "cassert": "assert.h",
		"cuda.h": "cuda.h",
	}
}

// hostOnlyHeaders are the headers whose stand-in is empty: what they declare serves host code only.
func hostOnlyHeaders() []string {
	return []string{
		// C and POSIX.
		"stdio.h", "cstdio", "string.h", "cstring", "time.h", "ctime", "errno.h", "cerrno", "ctype.h", "cctype",
		"stdbool.h", "stdarg.h", "cstdarg", "signal.h", "csignal", "locale.h", "clocale", "wchar.h", "cwchar",
		"sys/time.h", "unistd.h", "fcntl.h", "malloc.h", "memory.h",
		// C++.
		"iostream", "istream", "ostream", "fstream", "sstream", "iomanip", "ios", "iosfwd", "streambuf",
		"string", "string_view", "vector", "array", "deque", "list", "forward_list", "map", "set",
		"unordered_map", "unordered_set", "queue", "stack", "bitset", "algorithm", "numeric", "functional",
		"iterator", "memory", "utility", "tuple", "optional", "variant", "any", "initializer_list",
		"chrono", "thread", "mutex", "atomic", "condition_variable", "future", "random", "ratio",
		"exception", "stdexcept", "system_error", "typeinfo", "new", "cstdbool", "complex", "valarray",
		"regex", "filesystem", "execution", "numbers", "bit", "span", "format", "charconv", "cfenv", "fenv.h",
		// The CUDA driver API and CUDA's host libraries (cuda.h has content: CUtensorMap).
		"cudaProfiler.h", "cuda_profiler_api.h", "cuda_occupancy.h",
		"cublas_v2.h", "cublas.h", "cublas_api.h", "cublasLt.h", "cublasXt.h",
		"curand.h", "cufft.h", "cufftXt.h", "cusparse.h", "cusparse_v2.h", "cusolverDn.h", "cusolverSp.h",
		"cudnn.h", "nvrtc.h", "nvToolsExt.h", "nvtx3/nvToolsExt.h", "nvml.h", "nccl.h",
		// NVIDIA's CUDA samples' host helpers (Common/).
		"helper_cuda.h", "helper_functions.h", "helper_string.h", "helper_timer.h", "helper_image.h",
		"helper_cuda_drvapi.h", "exception.h",
	}
}

// StandInHeaders maps each stand-in header's name, as a learner writes it in an #include, to its
// content (a new map each call).
func StandInHeaders() map[string]string { return maps.Clone(standIns()) }

// standIns is the stand-ins' table, made once (the embedded files do not change).
var standIns = sync.OnceValue(makeStandIns)

func makeStandIns() map[string]string {
	m := map[string]string{}
	for name, file := range standinSources() {
		b, err := standinFiles.ReadFile("src/standins/" + file)
		if err != nil {
			panic("nvidia: stand-in header " + file + " is not embedded: " + err.Error())
		}
		m[name] = string(b)
	}
	for _, h := range hostOnlyHeaders() {
		m[h] = "// <" + h + ">: the playground's empty stand-in; what it declares serves host code, which the GPU compilers leave out.\n"
		if !strings.Contains(h, ".") {
			m[h] += "namespace std {} // for a source's using namespace std;\n"
		}
	}
	return m
}
