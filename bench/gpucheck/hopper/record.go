package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/vgpurun"
)

// HopperCC is the compute capability the Hopper rungs need (sm_90).
const HopperCC = 90

// Record is what the command writes: where and when it ran, the rungs and the cells.
type Record struct {
	Provenance Provenance `json:"provenance"`
	// N is the rungs' size; Model the datasheet GPU the virtual GPU modelled them on.
	N     int       `json:"n"`
	Model string    `json:"model"`
	Rungs []Rung    `json:"rungs"`
	Cells []CellRun `json:"cells,omitempty"`
	// NsightCSV names the Nsight Compute CSV whose launches are in the rungs' Nsight (hopper -ncu).
	NsightCSV string `json:"nsight_csv,omitempty"`
}

// Provenance says where and when the numbers were measured.
type Provenance struct {
	Machine           string          `json:"machine"`
	Device            string          `json:"device"`
	ComputeCapability int             `json:"compute_capability"`
	Driver            string          `json:"driver"`
	Compiler          string          `json:"compiler,omitempty"`
	Libraries         []nvidia.Loaded `json:"libraries,omitempty"`
	Date              string          `json:"date"`
	Command           string          `json:"command"`
}

// provenance is the record's provenance from the worker's probe, or an error where the machine has
// no GPU (the probe's reason) or one older than Hopper: nothing is recorded without a measurement.
func provenance(r nvidia.Report, host, command string) (Provenance, error) {
	if r.Unavailable != "" {
		return Provenance{}, errors.New(r.Unavailable)
	}
	if len(r.Devices) == 0 {
		return Provenance{}, errors.New("the driver reports no devices")
	}
	d := r.Devices[0]
	if d.ComputeCapability < HopperCC {
		return Provenance{}, fmt.Errorf("%s is sm_%d; the Hopper rungs need sm_%d or newer", d.Name, d.ComputeCapability, HopperCC)
	}
	return Provenance{Machine: host, Device: d.Name, ComputeCapability: d.ComputeCapability, Driver: r.Driver,
		Compiler: r.Compiler, Libraries: r.Libraries, Date: time.Now().UTC().Format(time.RFC3339), Command: command}, nil
}

// hopperRungs are the rows of ks that need sm_90 or newer (MinCC), in the table's order.
func hopperRungs(ks []nvidia.Kernel) []nvidia.Kernel {
	var out []nvidia.Kernel
	for _, k := range ks {
		if k.Entry != "" && k.MinCC >= HopperCC {
			out = append(out, k)
		}
	}
	return out
}

// pickRungs is the table's rows called names, or its Hopper rungs where names is nil.
func pickRungs(names []string) ([]nvidia.Kernel, error) {
	if names == nil {
		return hopperRungs(nvidia.Kernels()), nil
	}
	var out []nvidia.Kernel
	for _, name := range names {
		k, ok := nvidia.LookupKernel(name)
		if !ok || k.Entry == "" {
			return nil, fmt.Errorf("%q is no own kernel of the table (gpu/nvidia/ladder.go)", name)
		}
		out = append(out, k)
	}
	return out, nil
}

// entryRegex is the regular expression of ks's entry points for `ncu -k regex:…`, or "" for none
// (run.sh then skips the pass).
func entryRegex(ks []nvidia.Kernel) string {
	var names []string
	for _, k := range ks {
		names = append(names, regexp.QuoteMeta(k.Entry))
	}
	if len(names) == 0 {
		return ""
	}
	return "^(" + strings.Join(names, "|") + ")$"
}

// Rung is one kernel of the table at n: measured on the GPU, and modelled by the virtual GPU.
type Rung struct {
	Kernel string `json:"kernel"`
	Entry  string `json:"entry"`
	N      int    `json:"n"`
	// Measured is the worker's run (CUDA events; checked against float64); MeasureError why none.
	Measured     *harness.Result `json:"measured,omitempty"`
	MeasureError string          `json:"measure_error,omitempty"`
	// Modelled is the virtual GPU's model of the same launch; ModelError why none.
	Modelled   *Modelled `json:"modelled,omitempty"`
	ModelError string    `json:"model_error,omitempty"`
	// Nsight is Nsight Compute's reading of the same entry point's last launch on this device
	// (nsightMetrics, each "value unit" as the CSV gives it; hopper -ncu).
	Nsight map[string]string `json:"nsight,omitempty"`
}

// Modelled is the virtual GPU's view of a launch: the modelled time and its bound on the datasheet
// GPU, the warp instructions it counts in PTX and SASS, the registers per thread its occupancy used
// (the kernel table's, as Nsight Compute read them on an earlier lease, else ptxas's for the GPU's
// architecture; 0 where unknown) and that occupancy. Nsight Compute's own counts of this lease are
// in run.sh's CSV, beside the model by bench/vgpuvsncu.
type Modelled struct {
	Seconds          float64 `json:"seconds"`
	Bound            string  `json:"bound"`
	WarpInstructions int64   `json:"warp_instructions"`
	SASSInstructions int64   `json:"sass_instructions"`
	Registers        int     `json:"registers"`
	Occupancy        string  `json:"occupancy"`
	Sampled          bool    `json:"sampled,omitempty"`
}

// recordRung measures k at n through w (float32 inputs, repeats timed launches) and models it on g.
func recordRung(ctx context.Context, w *gpu.Supervisor, k nvidia.Kernel, n, repeats int, g gpumodel.GPU) Rung {
	r := Rung{Kernel: k.Name, Entry: k.Entry, N: n}
	err := w.Do(ctx, gpu.Request{Op: "run", Kernel: k.Name, N: n, DType: "float32", Repeats: repeats}, func(resp gpu.Response) {
		if resp.Result != nil {
			r.Measured = resp.Result
		}
	})
	if err != nil {
		r.Measured, r.MeasureError = nil, err.Error()
	}
	r.Modelled, err = model(ctx, k, n, g)
	if err != nil {
		r.ModelError = err.Error()
	}
	return r
}

// model runs k at n in the virtual GPU (sampling blocks above vgpurun.MaxN) and models it on g.
func model(ctx context.Context, k nvidia.Kernel, n int, g gpumodel.GPU) (*Modelled, error) {
	res, err := vgpurun.Run(ctx, vgpurun.Request{Kernel: k.Name, N: n, DType: "float32", GPU: g, Seed: 1})
	if err != nil {
		return nil, err
	}
	return &Modelled{Seconds: res.Model.Seconds, Bound: res.Model.Bound, WarpInstructions: res.Counts.WarpInstructions,
		SASSInstructions: res.SASSInstructions, Registers: res.Occupancy.Registers, Occupancy: res.Occupancy.Text, Sampled: res.Sampled}, nil
}

// CellRun is one lesson cell run on the GPU: what it emitted (its measured rows, and the emulated
// rows with ptxas's registers that it sets beside them), or why it failed.
type CellRun struct {
	Cell         string        `json:"cell"`
	File         string        `json:"file"`
	Line         int           `json:"line"`
	SourceSHA256 string        `json:"source_sha256"`
	Tables       []cells.Table `json:"tables,omitempty"`
	Rows         []cells.Row   `json:"rows,omitempty"`
	Notes        []cells.Note  `json:"notes,omitempty"`
	Error        string        `json:"error,omitempty"`
}

// tensorMapsKey is a `tensor_maps:` key of a cell's YAML header.
var tensorMapsKey = regexp.MustCompile(`(?m)^tensor_maps:`)

// hasTensorMaps says whether a cuda cell's header (its text before the `---` line) asks for tensor maps.
func hasTensorMaps(src string) bool {
	header, _, _ := strings.Cut(src, "\n---")
	return tensorMapsKey.MatchString(header)
}

// recordCells runs, on machine, every `cuda` cell of the lessons in dir whose header has
// `tensor_maps:`, in the lessons' order.
func recordCells(ctx context.Context, machine *gpu.Machine, dir string) ([]CellRun, error) {
	env := cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("")...), Limits: harness.DefaultLimits(), GPU: machine,
		Roofline: &peaks.Cache{}}
	kinds := builtin.Kinds(env)
	ls, err := lessons.Load(os.DirFS(dir), lessons.Kinds(kinds))
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(kinds, func(k cells.Kind) bool { return k.Name() == "cuda" })
	if i < 0 {
		return nil, errors.New("no cuda cell kind")
	}
	var out []CellRun
	for _, l := range ls {
		for _, c := range l.Cells {
			if c.Kind != "cuda" || !hasTensorMaps(c.Source) {
				continue
			}
			cr := CellRun{Cell: c.ID, File: l.File, Line: c.Line, SourceSHA256: cells.SourceHash(c.Source)}
			rec := &cellstest.Recorder{}
			r, err := kinds[i].Parse(cells.Cell{ID: c.ID, Source: c.Source})
			if err == nil {
				err = r.Run(ctx, rec)
			}
			if err != nil {
				cr.Error = err.Error()
			}
			cr.Tables, cr.Rows, cr.Notes = rec.Tables, rec.Rows, rec.Notes
			out = append(out, cr)
		}
	}
	return out, nil
}

// Markdown is the record as tables for docs/benchmarks.md: each rung's measured time and rate beside
// the modelled ones, then each cell's outcome.
func (r Record) Markdown() string {
	var b strings.Builder
	p := r.Provenance
	fmt.Fprintf(&b, "%s (sm_%d), driver CUDA %s, on %s at %s; `%s`; model: virtual GPU on the %s datasheet\n\n",
		p.Device, p.ComputeCapability, p.Driver, p.Machine, p.Date, p.Command, r.Model)
	if len(r.Rungs) == 0 {
		b.WriteString("No rung of the kernel table needs sm_90.\n")
	} else {
		b.WriteString("| kernel | n | measured µs | TFLOP/s | modelled µs (bound) | measured / modelled | registers (model) | SASS warp instructions | registers (Nsight) | warp instructions (Nsight) |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
		for _, g := range r.Rungs {
			fmt.Fprintf(&b, "| %s | %d | %s |\n", g.Kernel, g.N, strings.Join(g.tableCells(), " | "))
		}
	}
	for _, c := range r.Cells {
		outcome := fmt.Sprintf("%d rows", len(c.Rows))
		if c.Error != "" {
			outcome = "error: " + c.Error
		}
		fmt.Fprintf(&b, "\ncell %s (%s:%d): %s\n", c.Cell, c.File, c.Line, outcome)
	}
	return b.String()
}

// tableCells are the rung's table cells after its kernel and n ("–" where a side is missing).
func (g Rung) tableCells() []string {
	v := []string{"–", "–", "–", "–", "–", "–", "–", "–"}
	if r, ok := g.Nsight["launch__registers_per_thread"]; ok {
		v[6], _, _ = strings.Cut(r, " ")
	}
	if n, ok := g.Nsight["smsp__inst_executed.sum"]; ok {
		v[7], _, _ = strings.Cut(n, " ")
	}
	if m := g.Measured; m != nil {
		v[0], v[1] = fmt.Sprintf("%.1f", m.Seconds*1e6), fmt.Sprintf("%.1f", m.GFLOPS/1e3)
	} else if g.MeasureError != "" {
		v[0] = "error: " + g.MeasureError
	}
	if m := g.Modelled; m != nil {
		v[2] = fmt.Sprintf("%.1f (%s)", m.Seconds*1e6, m.Bound)
		if g.Measured != nil && m.Seconds > 0 {
			v[3] = fmt.Sprintf("%.2f", g.Measured.Seconds/m.Seconds)
		}
		if m.Registers > 0 {
			v[4] = fmt.Sprint(m.Registers)
		}
		v[5] = fmt.Sprint(m.SASSInstructions)
	} else if g.ModelError != "" {
		v[2] = "error: " + g.ModelError
	}
	return v
}
