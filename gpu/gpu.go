// Package gpu runs GPU work in a child process of the same binary, so that a driver that hangs or a
// kernel that faults cannot take the server down. Today the child answers one question, the device
// report; the supervised run worker of the GPU issue plugs in here.
package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/gpuplayground/playground/kernels/cuda"
)

// ProbeCommand is the hidden subcommand that prints the device report as JSON and exits.
const ProbeCommand = "gpu-probe"

// ServeChild handles the hidden subcommands: when args (os.Args) name one, it does that work,
// writes to out and returns true, and the caller must exit. A main function and a TestMain call it
// first thing.
func ServeChild(args []string, out io.Writer) bool {
	if len(args) < 2 || args[1] != ProbeCommand {
		return false
	}
	_ = json.NewEncoder(out).Encode(cuda.Probe())
	return true
}

// ProbeTimeout bounds the child: cuInit on a sick driver can hang.
const ProbeTimeout = 20 * time.Second

// ProbeInChild runs `exe gpu-probe` (exe: this binary, from os.Executable) and returns its report. A
// child that fails, hangs past ProbeTimeout or prints garbage yields a report whose Unavailable says
// so; it never returns an error.
func ProbeInChild(ctx context.Context, exe string) cuda.Report {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, ProbeCommand)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return cuda.Report{Unavailable: "no CUDA device: the GPU probe did not answer in time (a hung driver?)"}
	}
	if err != nil {
		return cuda.Report{Unavailable: fmt.Sprintf("no CUDA device: the GPU probe failed (%v): %s", err, bytes.TrimSpace(stderr.Bytes()))}
	}
	var r cuda.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return cuda.Report{Unavailable: fmt.Sprintf("no CUDA device: the GPU probe printed no report (%v)", err)}
	}
	return r
}

// ProbeSelf runs ProbeInChild on this process's own executable.
func ProbeSelf(ctx context.Context) cuda.Report {
	exe, err := os.Executable()
	if err != nil {
		return cuda.Report{Unavailable: "no CUDA device: cannot find this program to start the GPU probe: " + err.Error()}
	}
	return ProbeInChild(ctx, exe)
}
