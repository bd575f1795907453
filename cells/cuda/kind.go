package cuda

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/gpu"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/problems"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/gpuplayground/playground/vgpurun"
)

//go:embed render.js
var script string

// New returns the cuda kind for env. Its editor highlights a YAML header, "---", then CUDA C++; its
// run compiles the kernel, then times it as `custom` beside the compared kernels; its action Show
// PTX compiles the kernel and shows its PTX, with or without a GPU; Show SASS (sass.go) the machine
// code ptxas makes of it, per line.
func New(env cells.Env) cells.Kind {
	d := cells.Def[Spec]{Name: "cuda", Script: script, Language: "yaml+cuda",
		Parse: func(src string) (Spec, error) { return Parse(src, env.Kernels, env.Limits) },
		Run:   func(s Spec, _ cells.Cell) cells.Run { return &run{env: env, spec: s} }}
	d.Actions = []cells.Action{
		d.Action("ptx", "Show PTX", func(s Spec, _ cells.Cell) cells.Run { return newShowPTX(env, s) }),
		d.Action("sass", "Show SASS", func(s Spec, _ cells.Cell) cells.Run { return &showSASS{env: env, spec: s} }),
	}
	return cells.Define(d)
}

// newShowPTX is Show PTX of the cell spec on env: the run of spec at its smallest size.
func newShowPTX(env cells.Env, spec Spec) *showPTX {
	spec.Sizes = []int{slices.Min(spec.Sizes)}
	spec.Variants = nil // Show PTX is the learner's kernel alone: neither probed nor priced with the variants
	return &showPTX{&run{env: env, spec: spec}}
}

// compileEstimate is the most a compile may take: gpu.CompileTimeout, and gpu.DisassembleTimeout
// for the ptxas and nvdisasm runs that count the SASS per PTX line the model charges (or Show
// SASS's listing), which the compile's limit gains.
const compileEstimate = gpu.CompileTimeout + gpu.DisassembleTimeout

// showPTX is Show PTX: the cell's run at its smallest size (r's spec has that one size), which
// launches the virtual GPU once there. It is priced and guarded as that run is: the up-front
// estimate of its one emulation, then after the compile the same probe of one block
// (run.probeEmulation), which refuses it with the run's reason where the emulation would outrun
// the run time limit, and sets how many blocks a sampled emulation runs.
type showPTX struct{ r *run }

// Estimate is the compile and the emulation at the cell's smallest size, at this machine's rates.
func (p *showPTX) Estimate() time.Duration {
	return compileEstimate + p.r.customEstimate(p.r.spec, p.r.spec.Sizes[0])
}

// Run compiles the kernel and shows its PTX; with the counts of one launch in the virtual GPU at the
// cell's smallest size written beside each line that ran (thread instructions, and for memory
// instructions requests and 32-byte sectors per request), when that size can be emulated.
func (p *showPTX) Run(ctx context.Context, e cells.Emitter) error {
	spec := p.r.spec
	ptx, err := p.r.compile(ctx)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("PTX of %s for compute_%s", spec.Kernel, compiledArch(ptx, p.r.env.GPU))
	n := spec.Sizes[0]
	g := gpumodel.Or(spec.GPU)
	if _, err := spec.request(ptx, n); err != nil || n > spec.Problem.FullN {
		e.Text(title, ptx)
		return nil
	}
	if p.r.samples, err = p.r.probeEmulation(ctx, ptx); err != nil {
		return err
	}
	res, err := p.r.custom(ptx)(ctx, n, spec.DType, g)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		e.Note("error", spec.cellLines(fmt.Sprintf("in the virtual GPU at n=%d: %v", n, err)))
		e.Text(title, ptx)
		return nil
	}
	for _, f := range res.Notes { // uninitialised reads: the run went on
		e.Note("warning", spec.cellLines(fmt.Sprintf("in the virtual GPU at n=%d: %v", n, f)))
	}
	term := gpumodel.Dominant(res.Model)
	shares := gpumodel.Attribute(res.Counts, g, res.Occupancy, term.Name)
	src := sourceShares(ptx, shares)
	title += fmt.Sprintf(", with the virtual GPU's counts of one launch at n=%d (emulated) beside each line that ran", n)
	if len(shares.Lines) > 0 {
		title += fmt.Sprintf(" and, on the lines with the largest shares, their share of the modelled %s time", termLabel(term.Name))
	}
	e.Text(title, AnnotateShares(ptx, res.Counts.Lines, shares))
	p.sourceLines(e, n, res.Counts.Sources, term.Name, src)
	if len(shares.Lines) > 0 {
		e.Note("info", p.sharesNote(n, res.Model, shares, src))
	}
	return nil
}

// sourceLines emits the counts per line of the learner's CUDA source (from the PTX's .loc lines),
// numbered as the cell's lines, and where shares (kernel source line → fraction) are known each
// line's share of the modelled time's term.
func (p *showPTX) sourceLines(e cells.Emitter, n int, lines []vgpu.LineCount, term string, shares map[int]float64) {
	var rows []cells.Row
	for _, l := range lines {
		if !strings.HasSuffix(l.File, "cell.cu") {
			continue
		}
		perReq := func(x, req int64) any {
			if req == 0 {
				return ""
			}
			return float64(x) / float64(req)
		}
		values := []any{p.r.spec.SourceLine + l.Line - 1, l.Thread, l.Requests,
			perReq(l.Sectors, l.Requests), l.SharedRequests, perReq(l.Wavefronts, l.SharedRequests), l.Wavefronts - l.IdealWavefronts}
		if shares != nil {
			values = append(values, math.Round(1000*shares[l.Line])/10)
		}
		rows = append(rows, cells.Row{Table: "lines", Values: values})
	}
	if len(rows) == 0 {
		return
	}
	caption := fmt.Sprintf("Per line of your kernel: one launch at n=%d in the virtual GPU (emulated counts)", n)
	columns := []cells.Column{{Label: "cell line"}, {Label: "thread instructions"}, {Label: "global requests"}, {Label: "sectors per request"},
		{Label: "shared requests"}, {Label: "wavefronts per request"}, {Label: "bank conflicts (wavefronts beyond the ideal)"}}
	if shares != nil {
		caption += fmt.Sprintf("; the last column is each line's share of the %s term of the time modelled from them", termLabel(term))
		columns = append(columns, cells.Column{Label: shareColumn(term), Unit: "%"})
	}
	e.Table(cells.Table{ID: "lines", Caption: caption, Columns: columns})
	for _, r := range rows {
		e.Row(r)
	}
}

// Annotate writes each line's counts as a PTX comment at its end: "// 4096 thr" and, for memory
// instructions, "; 128 req, 4.0 sectors/req" (global) or "; 128 req, 1.0 wavefronts/req" (shared),
// then ", 384 bank conflicts" where a shared access had some, ", 992 serialised atomic passes"
// where lanes of an atomic shared an address, "; 16 lanes predicated off" for a guard that was
// false in active lanes, and "; 12 divergent" for a branch whose lanes went different ways.
func Annotate(ptx string, lines []vgpu.LineCount) string {
	return AnnotateShares(ptx, lines, gpumodel.Shares{})
}

// AnnotateShares is Annotate, and on the hottestPTX lines with the largest shares of s (of at least
// 1%) ends the comment with the line's share of the modelled time's term: "; 61% of modelled
// shared-memory time".
func AnnotateShares(ptx string, lines []vgpu.LineCount, s gpumodel.Shares) string {
	hot := map[int]bool{}
	for _, l := range hottest(s.Lines, hottestPTX) {
		hot[l] = true
	}
	byLine := map[int]vgpu.LineCount{}
	for _, l := range lines {
		byLine[l.Line] = l
	}
	var b strings.Builder
	for i, text := range strings.Split(ptx, "\n") {
		b.WriteString(text)
		if l, ok := byLine[i+1]; ok {
			fmt.Fprintf(&b, "\t// %s thr", grouped(int64(l.Thread)))
			switch {
			case l.Requests > 0:
				fmt.Fprintf(&b, "; %s req, %.1f sectors/req", grouped(int64(l.Requests)), float64(l.Sectors)/float64(l.Requests))
			case l.SharedRequests > 0:
				fmt.Fprintf(&b, "; %s req, %.1f wavefronts/req", grouped(int64(l.SharedRequests)), float64(l.Wavefronts)/float64(l.SharedRequests))
			}
			annotateMore(&b, l)
			if hot[i+1] {
				fmt.Fprintf(&b, "; %s of modelled %s time", percent(s.Lines[i+1]), termLabel(s.Term))
			}
		}
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

type run struct {
	env  cells.Env
	spec Spec
	// samples are the blocks a sampled emulation runs at a size, where probeEmulation found
	// vgpurun.SampledBlocks too long (none: the default).
	samples map[int]int
	// variantSamples are samples for each of the spec's variants.
	variantSamples []map[int]int
	// ptxas is ptxas's report of the compiled PTX for the datasheet GPU's architecture (run.compile):
	// its resources and SASS per PTX line, none where there is none.
	ptxas ptxasReport
}

func (r *run) measured() harness.Spec {
	return harness.Spec{Kernels: append([]string{"custom"}, r.spec.Compare...), Sizes: r.spec.Sizes, DType: r.spec.DType, Repeats: r.spec.Repeats, Threads: 1}
}

// Estimate is the compile, the measured part (a matmul cell's compared kernels and its float64
// reference, n³ on the CPU) and the emulation at each size. A problem other than matmul compares
// with nothing and checks against its own reference, which customEstimate includes.
func (r *run) Estimate() time.Duration {
	if r.spec.Problem.Name != "matmul" {
		est := compileEstimate
		for _, n := range r.spec.Sizes {
			est += r.customEstimate(r.spec, n)
			for _, v := range r.spec.Variants {
				est += r.customEstimate(v.Spec, n)
			}
		}
		return est
	}
	est := compileEstimate + time.Duration(r.measured().EstimateSeconds(r.env.Kernels, r.env.Rates.Get())*float64(time.Second))
	_, emulated := r.split()
	if r.unavailable(r.spec.compileArch()) == "" {
		emulated = nil // measured on the GPU; only the custom kernel is also emulated, for its counts
	}
	for _, n := range r.spec.Sizes {
		est += r.customEstimate(r.spec, n)
		for _, k := range emulated {
			est += vgpurun.Estimate(r.env.Rates.Get(), k, n)
		}
	}
	return est
}

// Run compiles the learner's kernel (its errors are the run's error). With a GPU it measures it as
// "custom" beside the kernels it is compared with, then runs the same PTX in the virtual GPU for its
// counts; without one, the kernel (and the compared kernels with PTX) run in the virtual GPU only.
func (r *run) Run(ctx context.Context, e cells.Emitter) error {
	e = cells.Showing(e, r.spec.Show)
	ptx, err := r.compile(ctx)
	if err != nil {
		return err
	}
	e.Note(r.spec.targetNote(ptx, r.env.GPU))
	e.Note("info", chargedNote(gpumodel.Or(r.spec.GPU), r.ptxas))
	if r.samples, err = r.probeEmulation(ctx, ptx); err != nil {
		return err
	}
	reason := r.unavailable(compiledArch(ptx, r.env.GPU))
	if reason != "" && r.env.GPU.Unavailable() == "" {
		e.Note("info", reason)
	}
	env := kernelcell.Harness(r.env)
	if reason != "" { // no GPU: the learner's kernel, and the compared kernels with PTX, run in the virtual GPU
		measured, emulated := r.split()
		parts := 2 // the compared kernels measured here, then the emulated ones (the learner's at least)
		if len(measured.Kernels) == 0 {
			parts = 1
		}
		sink := &kernelcell.Results{E: cells.Stage(e, 0, parts), Machine: r.env.Machine}
		if err := harness.Run(ctx, measured, env, sink); err != nil {
			return err
		}
		results, err := r.emulate(ctx, cells.Stage(e, parts-1, parts), emulated, ptx)
		if len(sink.Measured()) == 0 && len(results) > 0 { // nothing measured: the chart is what the virtual GPU counted
			if r.spec.Problem.Name != "matmul" {
				r.problemChart(e, results)
			} else {
				e.Chart(func() (string, error) { return kernelcell.CountsChart(results) })
			}
		}
		return err
	}
	env.Kernels = append(append([]kernels.Kernel(nil), env.Kernels...),
		kernels.Kernel{Name: "custom", Summary: "the cell's own kernel", Remote: true, OnGPU: true})
	measure := env.Remote
	env.Remote = func(ctx context.Context, kernel string, n int, s harness.Spec, progress func(int)) (harness.Result, error) {
		if kernel != "custom" {
			return measure(ctx, kernel, n, s, progress)
		}
		grid, err := r.spec.GridFor(n)
		if err != nil {
			return harness.Result{}, err
		}
		shared, err := r.spec.SharedFor(n)
		if err != nil {
			return harness.Result{}, err
		}
		return r.env.GPU.Measure(ctx, gpu.Request{Kernel: kernel, N: n, DType: s.DType, Repeats: s.Repeats,
			PTX: ptx, Entry: r.spec.Kernel, Block: r.spec.Block, Grid: grid,
			Problem: r.spec.problemKey(), SharedBytes: shared, Precision: r.spec.precisionKey(), TensorMaps: r.spec.workerTensorMaps()}, progress)
	}
	if err := harness.Run(ctx, r.measured(), env, r.results(cells.Stage(e, 0, 2))); err != nil {
		return err
	}
	// The measured time stands beside what the virtual GPU counts running the same PTX.
	_, err = r.emulate(ctx, cells.Stage(e, 1, 2), nil, ptx)
	return err
}

// emulate runs the learner's kernel (and for matmul the compared kernels named, for another
// problem the cell's variants) in the virtual GPU at every size, as rows of the emulated table, and
// returns their results. A variant that changes only the registers assumed (Spec.sameLaunches)
// launches nothing of its own: its rows are the cell's launches, with its registers' occupancy and
// modelled time (a cell of four registers: variants at n = 4096 launched four sampled transposes).
func (r *run) emulate(ctx context.Context, e cells.Emitter, names []string, ptx string) ([]vgpurun.Result, error) {
	if r.spec.Problem.Name == "matmul" {
		return kernelcell.Emulate(ctx, e, r.env.GPU, names, r.spec.Sizes, r.spec.DType, gpumodel.Or(r.spec.GPU), r.custom(ptx), r.spec.cellLines)
	}
	own := map[int]vgpurun.Result{} // the cell's launches by size, as the virtual GPU returned them
	launches := []launchRun{{"custom", r.spec, func(ctx context.Context, n int, dtype string, g gpumodel.GPU) (vgpurun.Result, error) {
		res, err := r.spec.launch(ctx, r.env.GPU, ptx, n, dtype, g, r.samples[n])
		if err != nil {
			return res, err
		}
		own[n] = res
		return r.spec.finish(res, g, r.ptxas)
	}}}
	for i, v := range r.spec.Variants {
		var samples map[int]int
		if i < len(r.variantSamples) {
			samples = r.variantSamples[i]
		}
		same := r.spec.sameLaunches(v.Spec, ptx)
		launches = append(launches, launchRun{v.Label, v.Spec, func(ctx context.Context, n int, dtype string, g gpumodel.GPU) (vgpurun.Result, error) {
			if res, ok := own[n]; ok && same {
				res.EmulationSeconds = 0              // it emulated nothing of its own
				return v.Spec.finish(res, g, r.ptxas) // a registers: variant: the cell's launch, its own registers
			}
			return v.Spec.emulate(ctx, r.env.GPU, ptx, r.ptxas, n, dtype, g, samples[n])
		}})
	}
	return emulateProblem(ctx, e, r.spec, launches...)
}

// custom runs the learner's kernel at n in the virtual GPU (Spec.emulate), sampling as many blocks
// as probeEmulation found fit.
func (r *run) custom(ptx string) func(ctx context.Context, n int, dtype string, g gpumodel.GPU) (vgpurun.Result, error) {
	return func(ctx context.Context, n int, dtype string, g gpumodel.GPU) (vgpurun.Result, error) {
		return r.spec.emulate(ctx, r.env.GPU, ptx, r.ptxas, n, dtype, g, r.samples[n])
	}
}

// request is the emulation request for the cell's kernel at n: its PTX launched with the grid and
// dynamic shared memory its formulas give, for its problem, checked at its precision. The caller
// sets N, DType and GPU.
func (s Spec) request(ptx string, n int) (vgpurun.Request, error) {
	grid, err := s.GridFor(n)
	if err != nil {
		return vgpurun.Request{}, err
	}
	shared, err := s.SharedFor(n)
	return vgpurun.Request{Kernel: "custom", PTX: ptx, Entry: s.Kernel, Grid: grid, Block: s.Block,
		Problem: s.Problem, SharedBytes: shared, Precision: s.Precision, TensorMaps: s.tensorMapRequests()}, err
}

// problemKey and precisionKey are the worker request's problem and precision: "" for the defaults,
// so that a matmul cell's request is as it always was.
func (s Spec) problemKey() string {
	if s.Problem.Name == problems.Default {
		return ""
	}
	return s.Problem.Name
}

func (s Spec) precisionKey() string {
	if s.Precision == problems.DefaultPrecision(s.DType) {
		return ""
	}
	return s.Precision.Name
}

// Exclusive is false only without a GPU when the cell compares with no kernel timed here: the
// learner's kernel (and the compared ones with PTX) then run in the virtual GPU, which times nothing.
func (r *run) Exclusive() bool {
	if r.unavailable(r.spec.compileArch()) == "" {
		return true
	}
	measured, _ := r.split()
	return kernelcell.MeasuresHere(measured.Kernels, r.env.Kernels)
}

// unavailable says why the kernel, compiled for arch ("90a"; "": the server's), cannot run on this
// server's GPU: there is none (cells.GPU.Unavailable), or it cannot run that architecture's PTX
// (archUnavailable); "" when it can.
func (r *run) unavailable(arch string) string {
	if why := r.env.GPU.Unavailable(); why != "" {
		return why
	}
	return archUnavailable(r.env.GPU, arch)
}

// customEstimate is the emulation of the learner's kernel (or a variant), spec, at n, priced with
// the grid its formulas give.
func (r *run) customEstimate(spec Spec, n int) time.Duration {
	g, err := spec.GridFor(n)
	if err != nil {
		return 0 // the run fails at once
	}
	return vgpurun.EstimateProblem(r.env.Rates.Get(), spec.Problem, n, g[0]*g[1]*g[2])
}

// split separates, on a server without a GPU, the compared kernels measured here (CPU kernels, and
// closed GPU kernels, which get their note) from those with PTX, which run in the virtual GPU.
func (r *run) split() (measured harness.Spec, emulated []string) {
	measured = r.measured()
	measured.Kernels = nil
	for _, name := range r.spec.Compare {
		if vgpurun.Emulatable(name) {
			emulated = append(emulated, name)
		} else {
			measured.Kernels = append(measured.Kernels, name)
		}
	}
	return measured, emulated
}

// locLine finds "cell.cu:LINE" in the virtual GPU's messages (a .loc source line; NVRTC writes the
// file name with the server's working directory in front).
var locLine = regexp.MustCompile(`(?:[^\s():]*/)?cell\.cu:(\d+)`)

// cellLines rewrites "cell.cu:LINE" (a line of the kernel source) as the cell's own "line N".
func (s Spec) cellLines(msg string) string { return s.toCellLines(locLine, msg) }

// toCellLines rewrites every match of re, whose group is a line of the kernel source, as the cell's
// own "line N" (the source starts at the cell's SourceLine).
func (s Spec) toCellLines(re *regexp.Regexp, msg string) string {
	return re.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(re.FindStringSubmatch(m)[1])
		return fmt.Sprintf("line %d", s.SourceLine+n-1)
	})
}

// nvrtcLine finds "cell.cu(LINE)" in NVRTC's log.
var nvrtcLine = regexp.MustCompile(`cell\.cu\((\d+)\)`)

// compile compiles the run's kernel (its spec) in a compile worker, keeping in r.resources what
// ptxas reports of it there (compileSass). A compile error comes back as the compiler's log with
// its line numbers turned into the cell's own (compileMessage).
func (r *run) compile(ctx context.Context) (string, error) {
	spec := r.spec
	ptx, res, err := compileSass(ctx, r.env.GPU, spec)
	if err == nil {
		r.ptxas = res
		return kcuda.NameEntry(ptx, spec.Kernel), nil // a kernel declared without extern "C" too
	}
	if ctx.Err() != nil || !nvrtcLine.MatchString(err.Error()) {
		return ptx, err // cancelled, or no compiler's verdict (a limit hit, no NVRTC): as it is
	}
	return "", errors.New(spec.compileMessage(err.Error()))
}

// compileSummary is the compiler log's last line, "1 error detected in the compilation of "cell.cu"."
var compileSummary = regexp.MustCompile(`^(\d+ errors? detected) in the compilation of .*$`)

// compileMessage writes a compiler's error, msg ("nvrtcCompileProgram: NVRTC_ERROR_COMPILATION
// (6):" or "clang 14.0.6: exit status 1:" over its log, whose lines read "cell.cu(LINE): error: …"),
// for the learner: the log's lines first, on the cell's own line numbers ("line 12: error: …", the
// source line and its caret), without blank lines, then one line that says the kernel does not
// compile, with the log's count of errors and the compiler's name and code last.
func (s Spec) compileMessage(msg string) string {
	head, log, ok := strings.Cut(msg, ":\n")
	if !ok || nvrtcLine.MatchString(head) { // no compiler's line on top: all of it is the log
		head, log = "", msg
	}
	var lines, after []string
	for _, l := range strings.Split(log, "\n") {
		l = strings.TrimRight(l, " \t\r")
		switch m := compileSummary.FindStringSubmatch(strings.TrimSpace(l)); {
		case strings.TrimSpace(l) == "":
		case m != nil:
			after = append(after, m[1])
		default:
			lines = append(lines, l)
		}
	}
	if head = strings.TrimSpace(head); head != "" {
		after = append(after, head)
	}
	end := "The kernel does not compile."
	if len(after) > 0 {
		end = fmt.Sprintf("The kernel does not compile (%s).", strings.Join(after, "; "))
	}
	return s.toCellLines(nvrtcLine, strings.Join(append(lines, end), "\n"))
}

// Needs says the run measures the learner's kernel on an NVIDIA GPU.
func (r *run) Needs() cells.Needs { return cells.Needs{GPU: true} }

// grouped writes n with thousands separators: 2,179,072.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// annotateMore appends a line's bank conflicts, atomic serialisation, predicated-off lanes and
// divergent branches, where it has any.
func annotateMore(b *strings.Builder, l vgpu.LineCount) {
	if k := l.Wavefronts - l.IdealWavefronts; k > 0 {
		fmt.Fprintf(b, ", %s bank conflicts", grouped(k))
	}
	if x := l.AtomicPasses - l.Requests - l.SharedRequests; l.AtomicPasses > 0 && x > 0 {
		fmt.Fprintf(b, ", %s serialised atomic passes", grouped(x))
	}
	if l.PredicatedOff > 0 {
		fmt.Fprintf(b, "; %s lanes predicated off", grouped(l.PredicatedOff))
	}
	if l.DivergentBranches > 0 {
		fmt.Fprintf(b, "; %s divergent", grouped(l.DivergentBranches))
	}
}
