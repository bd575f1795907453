// Package gpu runs GPU work in a child process of the same binary, so that a driver that hangs or a
// kernel that faults or never ends cannot take the server down: the Supervisor starts the worker on
// demand, kills it on Stop or when it shows no progress, and restarts it after a crash.
package gpu

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// WorkerCommand is the hidden subcommand that turns this binary into the GPU worker.
const WorkerCommand = "gpu-worker"

// ServeChild handles the hidden subcommand: when args (os.Args) name it, it serves the worker
// protocol on in and out until in closes and returns true, and the caller must exit. A main function
// and a TestMain call it first thing.
func ServeChild(args []string, in io.Reader, out io.Writer) bool {
	if len(args) < 2 || args[1] != WorkerCommand {
		return false
	}
	Serve(in, out)
	return true
}

// Serve is the worker: it answers requests read from in, one at a time, on out, until in closes.
// It runs on one locked OS thread, because a CUDA context is current per thread.
func Serve(in io.Reader, out io.Writer) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var dev *device
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			_ = enc.Encode(Response{Done: true, Error: "bad request: " + err.Error()})
			continue
		}
		switch req.Op {
		case "probe":
			r := nvidia.Probe()
			_ = enc.Encode(Response{ID: req.ID, Report: &r, Done: true})
		case "compile":
			resp := Response{ID: req.ID, Done: true}
			if req.MemoryLimit > 0 {
				if err := limitMemory(req.MemoryLimit); err != nil {
					resp.Error = "cannot limit the compiler's memory: " + err.Error()
					_ = enc.Encode(resp)
					return
				}
			}
			sent := false // the PTX went on a line of its own before ptxas: the Done line does not repeat it
			c, err := compileHere(req, func(ptx string) {
				if line, ok := replyLine(Response{ID: req.ID, PTX: ptx}); ok {
					_, _ = out.Write(line)
					sent = true
				}
			})
			line, _ := replyLine(compileDone(req.ID, c, err, sent))
			_, _ = out.Write(line)
			if req.MemoryLimit > 0 {
				return // a worker whose memory is limited serves no more requests
			}
		case "run":
			resp := Response{ID: req.ID, Done: true}
			var err error
			if dev == nil {
				dev, err = openDevice()
			}
			if err == nil {
				var r harness.Result
				r, err = dev.run(req, func(done, total int) {
					_ = enc.Encode(Response{ID: req.ID, Progress: &[2]int{done, total}})
				})
				resp.Result = &r
			}
			if err != nil {
				resp.Result, resp.Error, resp.Fatal = nil, err.Error(), sticky(err)
			}
			_ = enc.Encode(resp)
			if resp.Fatal {
				os.Exit(1) // the context is unusable; the supervisor starts a fresh worker
			}
		default:
			_ = enc.Encode(Response{ID: req.ID, Done: true, Error: fmt.Sprintf("unknown op %q", req.Op)})
		}
	}
}

// compileDone is the Done line of compile id: c's resources and SASS, its PTX unless it went on a
// line of its own before ptxas (sent), and err. What would push the line past maxLine is left out,
// saying why: the SASS (SASSError, SASSLinesError), then a PTX too large to send (the compile's
// Error), so that a big kernel fails as itself, not as a broken worker.
func compileDone(id int64, c Compiled, err error, sent bool) Response {
	resp := Response{ID: id, Done: true, Resources: c.Resources, ResourcesError: c.ResourcesError, SASS: c.SASS, SASSError: c.SASSError,
		SASSLines: c.SASSLines, SASSLinesError: c.SASSLinesError}
	if !sent {
		resp.PTX = c.PTX
	}
	if err != nil {
		resp.Error = err.Error()
	}
	if _, ok := replyLine(resp); ok {
		return resp
	}
	tooLarge := fmt.Sprintf("too large to send with the PTX (over the compile worker's %s reply line)", mib(maxLine))
	if resp.SASS != nil {
		resp.SASS, resp.SASSError = nil, "the SASS is "+tooLarge
	}
	if resp.SASSLines != nil {
		resp.SASSLines, resp.SASSLinesError = nil, "the SASS per PTX line is "+tooLarge
	}
	if _, ok := replyLine(resp); ok {
		return resp
	}
	if resp.PTX == "" { // the compiler's log is what is too long: its head says what went wrong
		resp.Error = cutLog(resp.Error, maxLine/8) // JSON escapes a byte into at most 6
		resp.Resources, resp.ResourcesError = nil, cutLog(resp.ResourcesError, maxLine/8)
		return resp
	}
	n := len(resp.PTX)
	resp.PTX, resp.SASS, resp.SASSLines = "", nil, nil
	resp.Error = fmt.Sprintf("the compiler made %.1f MiB of PTX, more than the %s a compile's reply may carry: make the kernel smaller (fewer unrolled iterations or inlined calls)", float64(n)/(1<<20), mib(maxLine))
	return resp
}

// cutLog is s cut to at most n bytes (at a line's end where one is near), saying it was cut.
func cutLog(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, '\n'); i > n/2 {
		s = s[:i]
	}
	return strings.ToValidUTF8(s, "") + "\n(the compiler's log is cut here: it was too long to send)"
}

// replyLine is r as one JSON line, and whether it fits the supervisor's line (maxLine, the newline
// included).
func replyLine(r Response) ([]byte, bool) {
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(Response{ID: r.ID, Done: true, Error: "cannot encode the reply: " + err.Error()})
	}
	return append(b, '\n'), len(b)+1 <= maxLine
}

// Probe asks the supervisor's worker for the device report. A worker that fails, hangs past
// ProbeTimeout or breaks the protocol yields a report whose Unavailable says so; Probe never returns
// an error.
func Probe(ctx context.Context, s *Supervisor) nvidia.Report {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	var r *nvidia.Report
	err := s.Do(ctx, Request{Op: "probe"}, func(resp Response) { r = resp.Report })
	if err == nil && r == nil {
		err = fmt.Errorf("it answered without a report")
	}
	if err != nil {
		return nvidia.Report{Unavailable: "no CUDA device: the GPU probe failed: " + err.Error()}
	}
	return *r
}

// ProbeTimeout bounds the probe: cuInit on a sick driver can hang.
const ProbeTimeout = 20 * time.Second

// Run has the worker measure one kernel (a "run" request), passing each progress line's count of
// finished launches to progress, and returns its result.
func Run(ctx context.Context, s *Supervisor, req Request, progress func(done int)) (harness.Result, error) {
	r, err := run(ctx, s, req, progress)
	if err != nil {
		return r, fmt.Errorf("%s at n=%d: %w", req.Kernel, req.N, err)
	}
	return r, nil
}

// run is Run without the kernel and size in its error, which harness.Run adds to its note.
func run(ctx context.Context, s *Supervisor, req Request, progress func(done int)) (harness.Result, error) {
	req.Op = "run"
	var res *harness.Result
	err := s.Do(ctx, req, func(r Response) {
		if r.Progress != nil && progress != nil {
			progress(r.Progress[0])
		}
		if r.Result != nil {
			res = r.Result
		}
	})
	if err == nil && res == nil {
		err = fmt.Errorf("GPU worker answered %s without a result", req.Kernel)
	}
	if err != nil {
		return harness.Result{}, err
	}
	return *res, nil
}
