package gpu

import (
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/measure"
)

// The worker protocol (docs/worker.md): the supervisor writes one Request as a JSON line to the
// worker's stdin; the worker answers with Response lines on stdout carrying the same ID, ending with
// exactly one whose Done is true (Error set if the request failed). Nothing else may go to stdout;
// the tail of the worker's stderr explains a crash. Requests carry everything they need, so the
// transport can be a pipe to a child process today and a connection to a remote GPU machine later.

// Request asks the worker to do one thing (measure.Request).
type Request = measure.Request

// Response is one line from the worker.
type Response struct {
	ID int64 `json:"id"`
	// Progress is [done, total] units of work; each progress line restarts the launch time limit.
	Progress *[2]int        `json:"progress,omitempty"`
	Report   *nvidia.Report `json:"report,omitempty"`
	PTX      string         `json:"ptx,omitempty"`
	// Resources (compile, with Request.Sass) is what ptxas -v reported of each kernel of the PTX for
	// each architecture asked, in the order asked; ResourcesError says why one is missing (no ptxas,
	// or its refusal, at most MaxResourcesError bytes). A compile asked for Sass first sends a line
	// (not Done) with the PTX alone, so that a ptxas that outruns the compile's time limit still
	// leaves the PTX; its Done line carries the resources (and SASS) without the PTX. No line is
	// longer than the supervisor reads (1 MiB): a Done line that would be leaves the SASS out
	// (SASSError, SASSLinesError say so), and a PTX too large for a line fails the compile (Error).
	Resources      []nvidia.EntryResources `json:"resources,omitempty"`
	ResourcesError string                  `json:"resources_error,omitempty"`
	// SASS (compile, with Request.Disassemble) is the machine code ptxas made of the PTX for the
	// first architecture asked, with each instruction's source line (at most
	// nvidia.MaxSASSInstructions kept); SASSError says why there is none (no ptxas or nvdisasm,
	// their refusal; at most MaxResourcesError bytes).
	SASS      *nvidia.SASS `json:"sass,omitempty"`
	SASSError string       `json:"sass_error,omitempty"`
	// SASSLines (compile, with Request.SassLines) is the SASS instructions per line of the PTX for
	// the first architecture asked; SASSLinesError says why there is none (at most
	// MaxResourcesError bytes).
	SASSLines      *nvidia.PTXLineSASS `json:"sass_lines,omitempty"`
	SASSLinesError string              `json:"sass_lines_error,omitempty"`
	Result         *harness.Result     `json:"result,omitempty"`
	// Fatal says the worker's GPU state is broken (a sticky CUDA error) and it exits after this line;
	// the supervisor starts a fresh one for the next request.
	Fatal bool   `json:"fatal,omitempty"`
	Done  bool   `json:"done,omitempty"`
	Error string `json:"error,omitempty"`
}
