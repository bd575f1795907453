package server

import (
	"context"
	"fmt"
	"regexp"

	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/kernels/cuda"
	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/roofline"
)

// plan parses a cell's source by the cell's kind and returns the harness that runs it.
func (s *Server) plan(l *lessons.Lesson, cell lessons.Cell, source string, lim experiment.Limits) (func(context.Context, *streamSink) error, error) {
	switch kind := cell.Kind; kind {
	case "matmul":
		spec, err := experiment.Parse(source, s.kernels, lim)
		if err != nil {
			return nil, err
		}
		rec, hasRec := l.Recordings[cell.ID]
		return func(ctx context.Context, sink *streamSink) error {
			if spec.Peak {
				ceil, err := s.roof.Get(ctx) // measured once, here in the run queue, so nothing else is timing
				if err != nil {
					return err
				}
				pk := ceil.Peak(spec.DType)
				sink.Note("", "info", fmt.Sprintf("%s peak of this CPU: %.0f GFLOP/s, %s", spec.DType, pk.GFLOPS, pk.Method))
				label := fmt.Sprintf("measured peak, %.0f GFLOP/s", pk.GFLOPS)
				sink.chart = func(rs []experiment.Result) (string, error) { return chart.ThroughputPeak(rs, pk.GFLOPS, label) }
			}
			if hasRec && s.gpuReason != "" {
				var gpuKernels []string
				for _, name := range spec.Kernels {
					if k, _ := kernels.Lookup(s.kernels, name); k.Unavailable != "" {
						gpuKernels = append(gpuKernels, name)
					}
				}
				sink.Recorded(rec, gpuKernels)
			}
			return experiment.Run(ctx, spec, s.env(nil), sink)
		}, nil
	case "cuda":
		spec, err := experiment.ParseCUDA(source, s.kernels, lim)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, sink *streamSink) error { return s.runCUDA(ctx, spec, sink) }, nil
	case "simt":
		spec, err := experiment.ParseSIMT(source)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, sink *streamSink) error {
			done := 0
			var measureErr error
			err := experiment.RunSIMT(ctx, spec, func(r experiment.SIMTResult) {
				done++
				if s.gpuReason == "" && measureErr == nil { // a GPU: measure the real kernel beside the model
					var m experiment.Result
					m, measureErr = gpu.Run(ctx, s.worker, gpu.Request{Kernel: "cuda-" + r.Kernel, N: r.N, DType: "float32", Repeats: 5}, nil)
					if measureErr == nil {
						r.MeasuredSeconds, r.MeasuredKernel, r.MeasuredOn = m.Seconds, "cuda-"+r.Kernel, s.devices.Devices[0].Name
					}
				}
				sink.Progress(done, len(spec.Kernels))
				sink.SIMT(r)
			}, sink.Warp)
			if err == nil {
				err = measureErr
			}
			return err
		}, nil
	case "roofline":
		spec, err := experiment.ParseRoofline(source, s.kernels, lim)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, sink *streamSink) error {
			ceil, err := s.roof.Get(ctx) // measured once, here in the run queue, so nothing else is timing
			if err != nil {
				return err
			}
			sink.job.conn.send(Message{Type: TypeRoofline, ID: sink.job.id, Roofline: &RooflineInfo{
				Ceilings: ceil, ByteModel: byteModel, Predict: spec.Predict, GPU: spec.GPU}})
			var device *cuda.Device
			if len(s.devices.Devices) > 0 {
				device = &s.devices.Devices[0]
			}
			sink.chart = func(results []experiment.Result) (string, error) { return rooflineChart(ceil, spec, device, results) }
			return experiment.Run(ctx, spec.Spec, s.env(nil), sink)
		}, nil
	case "allreduce":
		spec, err := experiment.ParseAllReduce(source)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, sink *streamSink) error {
			points := experiment.ModelAllReduce(spec)
			for i := range points {
				sink.job.conn.send(Message{Type: TypeAllReduce, ID: sink.job.id, AllReduce: &points[i]})
			}
			if svg, err := chart.AllReduce(points, spec.GradientMB); err == nil {
				sink.job.conn.send(Message{Type: TypeChart, ID: sink.job.id, SVG: svg})
			}
			return nil
		}, nil
	case "systolic":
		spec, err := experiment.ParseSystolic(source)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, sink *streamSink) error {
			return experiment.RunSystolic(ctx, spec, sink.Frame, sink.Systolic)
		}, nil
	default:
		return nil, fmt.Errorf("this server cannot run %s cells", kind)
	}
}

// env is the run environment: every kernel, with GPU kernels measured by the worker. custom, if not
// nil, is a cuda cell whose kernel joins as "custom".
func (s *Server) env(custom *experiment.CUDASpec) experiment.Env {
	env := experiment.Env{Kernels: s.kernels}
	if custom != nil {
		env.Kernels = append(append([]kernels.Kernel(nil), s.kernels...),
			kernels.Kernel{Name: "custom", Summary: "the cell's own kernel", Unavailable: s.gpuReason, Remote: s.gpuReason == ""})
	}
	env.Remote = func(ctx context.Context, kernel string, n int, spec experiment.Spec, progress func(int)) (experiment.Result, error) {
		req := gpu.Request{Kernel: kernel, N: n, DType: spec.DType, Repeats: spec.Repeats, Transfers: spec.Transfers}
		if kernel == "custom" && custom != nil {
			grid, err := custom.GridFor(n)
			if err != nil {
				return experiment.Result{}, err
			}
			req.Source, req.Entry, req.Block, req.Grid = custom.Source, custom.Kernel, custom.Block, grid
		}
		return gpu.Run(ctx, s.worker, req, progress)
	}
	return env
}

// runCUDA compiles a learner's kernel (its errors are the run's error), then measures it as
// "custom" beside the kernels it is compared with; without a GPU the kernel gets a note saying why.
func (s *Server) runCUDA(ctx context.Context, spec experiment.CUDASpec, sink experiment.Sink) error {
	if _, err := s.compile(ctx, spec); err != nil {
		return err
	}
	sink.Note("custom", "info", fmt.Sprintf("custom: %s compiles for compute_%d", spec.Kernel, s.compileArch()))
	run := experiment.Spec{Kernels: append([]string{"custom"}, spec.Compare...), Sizes: spec.Sizes, DType: spec.DType, Repeats: spec.Repeats}
	return experiment.Run(ctx, run, s.env(&spec), sink)
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

// byteModel is how a roofline cell computes a matmul's arithmetic intensity.
const byteModel = "intensity = 2·n³ FLOPs / (3·n² × element bytes): A and B read once, C written once (the best case)"

// rooflineChart draws this machine's measured roofline, a datasheet GPU's if the cell names one, and
// the server's own GPU's from its attributes if it has one, with every result and the learner's
// predictions.
func rooflineChart(c roofline.Ceilings, spec experiment.RooflineSpec, device *cuda.Device, results []experiment.Result) (string, error) {
	roofs := []chart.Roof{{Label: fmt.Sprintf("this machine, measured: %.3g GFLOP/s, %.3g GB/s", c.PeakGFLOPS, c.BandwidthGBs),
		PeakGFLOPS: c.PeakGFLOPS, Bandwidth: c.BandwidthGBs}}
	if g := spec.GPU; g != nil {
		roofs = append(roofs, chart.Roof{Label: g.Name + " FP32, datasheet (not measured)", PeakGFLOPS: g.FP32 / 1e9, Bandwidth: g.DRAM / 1e9})
	}
	if d := device; d != nil { // this server's own GPU, from the attributes its driver reports
		if peak, ok := d.PeakFP32(); ok {
			roofs = append(roofs, chart.Roof{Label: d.Name + " FP32, from the device's attributes", PeakGFLOPS: peak / 1e9, Bandwidth: d.Bandwidth() / 1e9})
		}
	}
	var points []chart.Point
	for _, r := range results {
		ai := roofline.MatmulIntensity(r.N, spec.ElemBytes()) // n is the point's x position
		points = append(points, chart.Point{Label: r.Kernel, Intensity: ai, GFLOPS: r.GFLOPS})
		if g, ok := spec.Predict[r.Kernel]; ok {
			points = append(points, chart.Point{Label: r.Kernel, Intensity: ai, GFLOPS: g, Predicted: true})
		}
	}
	return chart.Roofline(roofs, points)
}
