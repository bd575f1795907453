package server

import (
	"context"
	"fmt"
	"regexp"

	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/gpu"
)

// plan parses a cell's source by the cell's kind and returns the harness that runs it.
func (s *Server) plan(kind, source string, lim experiment.Limits) (func(context.Context, experiment.Sink) error, error) {
	switch kind {
	case "matmul":
		spec, err := experiment.Parse(source, s.kernels, lim)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, sink experiment.Sink) error {
			return experiment.Run(ctx, spec, s.kernels, sink)
		}, nil
	case "cuda":
		spec, err := experiment.ParseCUDA(source, s.kernels, lim)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, sink experiment.Sink) error { return s.runCUDA(ctx, spec, sink) }, nil
	}
	return nil, fmt.Errorf("this server cannot run %s cells", kind)
}

// runCUDA compiles a learner's kernel (its errors are the run's error), reports that the kernel
// itself cannot run here and why, then measures the kernels it is compared with.
func (s *Server) runCUDA(ctx context.Context, spec experiment.CUDASpec, sink experiment.Sink) error {
	if _, err := s.compile(ctx, spec); err != nil {
		return err
	}
	sink.Note("custom", "info", fmt.Sprintf("custom: %s compiles for compute_%d", spec.Kernel, s.compileArch()))
	sink.Note("custom", "error", "custom: "+s.gpuReason)
	if len(spec.Compare) == 0 {
		return nil
	}
	cmp := experiment.Spec{Kernels: spec.Compare, Sizes: spec.Sizes, DType: spec.DType, Repeats: spec.Repeats}
	return experiment.Run(ctx, cmp, s.kernels, sink)
}

// nvrtcLine finds "cell.cu(LINE)" in NVRTC's log.
var nvrtcLine = regexp.MustCompile(`cell\.cu\((\d+)\)`)

// compile compiles the cell's kernel in the GPU worker. A compile error comes back as NVRTC's log
// with its line numbers turned into the cell's own ("line 12: error: …").
func (s *Server) compile(ctx context.Context, spec experiment.CUDASpec) (string, error) {
	ptx, err := gpu.Compile(ctx, s.worker, spec.Source, "cell.cu", s.compileArch())
	if err == nil || ctx.Err() != nil {
		return ptx, err
	}
	msg := nvrtcLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		var n int
		fmt.Sscanf(nvrtcLine.FindStringSubmatch(m)[1], "%d", &n)
		return fmt.Sprintf("line %d", spec.SourceLine+n-1)
	})
	return "", fmt.Errorf("the kernel does not compile:\n%s", msg)
}
