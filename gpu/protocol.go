package gpu

import (
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// The worker protocol (docs/worker.md): the supervisor writes one Request as a JSON line to the
// worker's stdin; the worker answers with Response lines on stdout carrying the same ID, ending with
// exactly one whose Done is true (Error set if the request failed). Nothing else may go to stdout;
// the tail of the worker's stderr explains a crash. Requests carry everything they need, so the
// transport can be a pipe to a child process today and a connection to a remote GPU machine later.

// Request asks the worker to do one thing.
type Request struct {
	ID int64 `json:"id"`
	// Op is "probe" (answer with the device report), "compile" (CUDA C++ Source, named Name in the
	// compiler's log, to PTX for compute_<Arch> with NVRTC, or clang where NVRTC is missing) or
	// "run" (time Kernel on n×n×n).
	Op     string `json:"op"`
	Source string `json:"source,omitempty"`
	Name   string `json:"name,omitempty"`
	Arch   int    `json:"arch,omitempty"`
	// MemoryLimit (compile), when set, makes the worker limit its own data (RLIMIT_DATA) to that
	// many bytes before it loads NVRTC or starts clang (which inherits the limit), confine itself
	// (compileHere), and exit after answering: the Compiler's one-compile workers.
	MemoryLimit int64 `json:"memory_limit,omitempty"`

	// run: the kernel (a name of the GPU kernel table, nvidia.Kernels: docs/gpu-kernels.md; or custom
	// with PTX, Entry, Block and Grid: the PTX of a learner's kernel, compiled beforehand by the
	// sandboxed Compiler, for the device's architecture or an older one; the worker compiles no
	// learner source), the size, precision, timed repeats after one warm-up, and whether to time the
	// copies too. A custom kernel computes Problem (a name of the problems table; "" is matmul),
	// launched with SharedBytes of dynamic shared memory per block and checked at Precision
	// (fp32, tf32, bf16, fp16; "" is the dtype's own).
	Kernel      string `json:"kernel,omitempty"`
	N           int    `json:"n,omitempty"`
	DType       string `json:"dtype,omitempty"`
	Repeats     int    `json:"repeats,omitempty"`
	Transfers   bool   `json:"transfers,omitempty"`
	PTX         string `json:"ptx,omitempty"`
	Entry       string `json:"entry,omitempty"`
	Block       [3]int `json:"block,omitempty"`
	Grid        [3]int `json:"grid,omitempty"`
	Problem     string `json:"problem,omitempty"`
	SharedBytes int    `json:"shared_bytes,omitempty"`
	Precision   string `json:"precision,omitempty"`
}

// Response is one line from the worker.
type Response struct {
	ID int64 `json:"id"`
	// Progress is [done, total] units of work; each progress line restarts the launch time limit.
	Progress *[2]int         `json:"progress,omitempty"`
	Report   *nvidia.Report  `json:"report,omitempty"`
	PTX      string          `json:"ptx,omitempty"`
	Result   *harness.Result `json:"result,omitempty"`
	// Fatal says the worker's GPU state is broken (a sticky CUDA error) and it exits after this line;
	// the supervisor starts a fresh one for the next request.
	Fatal bool   `json:"fatal,omitempty"`
	Done  bool   `json:"done,omitempty"`
	Error string `json:"error,omitempty"`
}
