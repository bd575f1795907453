package kernelcell

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/gpuplayground/playground/vgpurun"
)

// Emulate runs the named GPU kernels in the virtual GPU at every size (in full up to vgpurun.MaxN,
// sampled blocks up to vgpurun.MaxSampledN; vgpurun.RunOn host, the server's GPU host), as rows
// of the emulated table (EmulatedTable), labelled emulated with times modelled on g; custom, if not nil, adds a
// learner's kernel first at each size: it runs the kernel at n in dtype with times modelled on g. A
// fault or a size too large to emulate is a note, and the run goes on.
//
// A kernel's printf output is shown as text under its row; lines, if not nil, rewrites the virtual
// GPU's messages (a cuda cell maps "cell.cu:LINE" to the cell's own lines).
func Emulate(ctx context.Context, e cells.Emitter, host cells.GPU, names []string, sizes []int, dtype string, g gpumodel.GPU,
	custom func(ctx context.Context, n int, dtype string, g gpumodel.GPU) (vgpurun.Result, error), lines func(string) string) ([]vgpurun.Result, error) {
	if lines == nil {
		lines = func(s string) string { return s }
	}
	if custom != nil {
		names = append([]string{"custom"}, names...)
	}
	if len(names) == 0 {
		return nil, nil
	}
	e.Table(EmulatedTable(g.Name))
	var results []vgpurun.Result
	done, total := 0, len(names)*len(sizes)
	for _, n := range sizes {
		if n > vgpurun.MaxSampledN {
			e.Note("info", fmt.Sprintf("%s at n=%d: not emulated, over the virtual GPU's n ≤ %d", strings.Join(names, ", "), n, vgpurun.MaxSampledN))
			done += len(names)
			continue
		}
		for _, name := range names {
			var res vgpurun.Result
			var err error
			if name == "custom" {
				res, err = custom(ctx, n, dtype, g)
			} else {
				res, err = vgpurun.RunOn(ctx, host, vgpurun.Request{Kernel: name, N: n, DType: dtype, GPU: g})
			}
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
			if err != nil {
				e.Note("error", lines(vgpurun.Failure(name, n, err)))
			} else {
				e.Row(EmulatedRow(res))
				if note := SampledNote(res); note != "" {
					e.Note("info", note)
				}
				if res.PrecisionNote != "" { // a kernel computing in half failing at the cell's precision
					e.Note("info", fmt.Sprintf("%s at n=%d: %s", name, n, res.PrecisionNote))
				}
				results = append(results, res)
			}
			for _, f := range res.Notes { // uninitialised reads: the run went on
				e.Note(NoteLevel(f), lines(fmt.Sprintf("%s at n=%d, in the virtual GPU: %v", name, n, f)))
			}
			if out := res.Counts.Printf; out != "" {
				e.Text(fmt.Sprintf("printf output of %s at n=%d (virtual GPU)", name, n), lines(out))
			}
			done++
			e.Progress(done, total)
		}
	}
	return results, nil
}

// NoteLevel is the level of the note that shows f, one of a launch's vgpu.Counts.Notes: "warning"
// for a finding (an uninitialised read), "info" for a limit of a check (the global race check
// stopped on a large launch).
func NoteLevel(f *vgpu.Fault) string {
	if f.Kind == vgpu.KindRaceCheckStopped {
		return "info"
	}
	return "warning"
}

// EmulatedTableID is the id of the table of emulated launches.
const EmulatedTableID = "emulated"

// EmulatedTable declares the table of emulated launches, its caption saying what is emulated and what is
// modelled on which datasheet GPU. A column that mirrors a profiler metric names it in brackets:
// docs/vgpu-metrics.md says how each is counted and where the PTX-level count differs from the
// SASS-level one Nsight Compute reports.
func EmulatedTable(gpuName string) cells.Table {
	return cells.Table{ID: EmulatedTableID,
		Caption: fmt.Sprintf("Emulated in the virtual GPU, from each kernel's PTX (the kernel table's compute_%d, its Hopper rungs' compute_%s; a cell's own kernel the architecture it compiles for, as Show PTX names it): exact results and the counts the hardware would produce, per PTX instruction (Nsight Compute counts the compiled SASS: see docs/vgpu-metrics.md); the time is modelled from the %s datasheet, not measured. %s %s", vgpurun.Arch, nvidia.HopperArch, gpuName, CacheNote, OccupancyNote),
		// Primary: what the GPU lessons ask the learner to compare (the goals' sectors, global
		// requests and same-address passes; coalescing, bank conflicts, the modelled time and its
		// bound; the inputs' precision in Tensor cores and precision).
		Columns: []cells.Column{{Label: "kernel", Primary: true, Key: true}, {Label: "n", Primary: true, Key: true}, {Label: "inputs", Primary: true, Key: true}, {Label: "blocks run"}, {Label: "rel. error"}, {Label: "check", Primary: true},
			{Label: "thread instructions [smsp__thread_inst_executed_pred_on.sum, PTX]"},
			{Label: "active lanes per warp instruction [smsp__thread_inst_executed_per_inst_executed]"},
			{Label: "predicated-off lanes per warp instruction"},
			{Label: "branch efficiency [smsp__sass_average_branch_targets_threads_uniform.pct, PTX bra]", Unit: "%"},
			{Label: "global requests [l1tex__t_requests_pipe_lsu_mem_global_op_ld + _st]", Primary: true},
			{Label: "sectors [l1tex__t_sectors_pipe_lsu_mem_global_op_ld + _st]", Primary: true},
			{Label: "coalescing (bytes used / moved)", Unit: "%", Primary: true},
			{Label: "shared requests [smsp__inst_executed_op_shared_ld + _st]"},
			{Label: "shared wavefronts [l1tex__data_pipe_lsu_wavefronts_mem_shared]", Primary: true},
			{Label: "bank conflicts [l1tex__data_bank_conflicts_pipe_lsu_mem_shared]", Primary: true},
			{Label: "atomic requests (global + shared)"}, {Label: "atomic serialisation (same-address passes beyond one per request)", Primary: true},
			{Label: "barriers (all blocks)"}, {Label: "occupancy (theoretical) [sm__maximum_warps_per_active_cycle_pct]"},
			{Label: "L1 hit rate, modelled [l1tex__t_sector_hit_rate.pct]", Unit: "%"},
			{Label: "L2 hit rate, modelled [lts__t_sector_hit_rate.pct]", Unit: "%"},
			{Label: "DRAM bytes, modelled [dram__bytes_read.sum + dram__bytes_write.sum]", Unit: "MB"},
			{Label: "modelled time (bound)", Unit: "µs", Primary: true}, {Label: "modelled", Unit: "GFLOP/s"}, {Label: "emulation", Unit: "s"}}}
}

// OccupancyNote says where the occupancy column's registers come from, and what it cannot know.
const OccupancyNote = "Occupancy (theoretical) is the CUDA occupancy calculator's on the datasheet GPU's compute capability, with the resource that limits it; " +
	"the table's own kernels use the registers Nsight Compute measured on an H100 for this PTX. A cuda cell's kernel uses the registers ptxas allocates for the datasheet GPU's architecture " +
	"(labelled ptxas; the PTX's .reg are virtual registers, several times as many), or what its registers: key assumes (labelled assumed); " +
	"where there is no ptxas, its occupancy is the bound without registers (≤), or a range where .maxnreg or __launch_bounds__ caps them."

// EmulatedRow is r as a row of EmulatedTable; a relative error that is NaN or Inf says so (cells.ErrorValue). The
// atomics columns are empty for a kernel without atomics, the cache columns without a cache model
// (a GPU without cache sizes), and
// branch efficiency says "no branches" for a kernel without any (Nsight Compute shows 0 there).
func EmulatedRow(r vgpurun.Result) cells.Row {
	c := r.Counts
	check := "ok"
	if !r.OK {
		check = "WRONG: over tolerance"
	}
	rate := 2 * float64(r.N) * float64(r.N) * float64(r.N) / r.Model.Seconds / 1e9
	if r.RateUnit != "" { // a learner's kernel: its problem's rate (ProblemTable's unit)
		rate = r.Rate
	}
	blocks := "all"
	if r.Sampled {
		blocks = fmt.Sprintf("%d of %d sampled", r.BlocksRun, r.GridBlocks) // SampledNote says the rest
	}
	var atomics, serialised any = "", ""
	if req := c.GlobalAtomicRequests + c.SharedAtomicRequests; req > 0 {
		atomics, serialised = req, c.AtomicSerialisation()
	}
	var branchEff any = "no branches"
	if c.Branches > 0 {
		branchEff = c.BranchEfficiency()
	}
	predOff := 0.0
	if c.WarpInstructions > 0 {
		predOff = float64(c.PredicatedOffThreadInstructions) / float64(c.WarpInstructions)
	}
	var l1, l2, dram any = "", "", ""
	if c.Cached {
		l1, l2, dram = c.L1HitRate(), c.L2HitRate(), float64(c.DRAMReadBytes+c.DRAMWriteBytes)/1e6
	}
	return cells.Row{Table: EmulatedTableID, Bad: !r.OK, Values: []any{r.Kernel, r.N, r.Precision, blocks, cells.ErrorValue(r.RelError), check,
		c.ThreadInstructions, c.ActiveLanes(), predOff, branchEff,
		c.GlobalLoadRequests + c.GlobalStoreRequests, c.LoadSectors + c.StoreSectors, 100 * c.Coalescing(),
		c.SharedLoadRequests + c.SharedStoreRequests, c.SharedWavefronts, c.BankConflicts(), atomics, serialised, c.Barriers, r.Occupancy.Text, l1, l2, dram,
		ModelText(r.Model), rate, r.EmulationSeconds}}
}

// ModelText is a modelled time for the table: its microseconds and bound ("276 (latency)"), and
// where latency or the launch bounds it, the largest throughput limit beside it, which would bound
// it were the waits hidden ("404 (latency; limit tensor 196)").
func ModelText(m gpumodel.Time) string {
	text := fmt.Sprintf("%.3g (%s", m.Seconds*1e6, m.Bound)
	if m.Bound == "latency" || m.Bound == "launch" {
		var most gpumodel.Term
		for _, t := range m.Terms {
			if t.Name != "latency" && t.Name != "launch" && t.Seconds > most.Seconds {
				most = t
			}
		}
		if most.Seconds > 0 {
			text += fmt.Sprintf("; limit %s %.3g", most.Name, most.Seconds*1e6)
		}
	}
	return text + ")"
}

// SampledNote is the note beside a row of EmulatedRow whose blocks were sampled (its "blocks run"
// says only "8 of 4096 sampled"), saying what that means for the row; "" when every block ran.
func SampledNote(r vgpurun.Result) string {
	if !r.Sampled {
		return ""
	}
	return fmt.Sprintf("%s at n=%d: the virtual GPU ran %d of the %d blocks (sampled): the row's counts are scaled to the whole grid, and %d entries of the output were checked.",
		r.Kernel, r.N, r.BlocksRun, r.GridBlocks, r.Checked)
}

// CountsChart draws what the emulated rows teach (chart.Counts): the global memory each kernel
// moves (its sectors × 32 bytes) beside its FLOPs, at the largest n of results; "" and no error
// for no results. A cell that measured nothing offers it as its chart.
func CountsChart(results []vgpurun.Result) (string, error) {
	n := 0
	for _, r := range results {
		n = max(n, r.N)
	}
	var counts []chart.KernelCounts
	for _, r := range results {
		if r.N == n {
			counts = append(counts, chart.KernelCounts{Kernel: r.Kernel, N: n,
				BytesMoved: 32 * (r.Counts.LoadSectors + r.Counts.StoreSectors), FLOPs: r.Counts.FLOPs})
		}
	}
	if len(counts) == 0 {
		return "", nil
	}
	return chart.Counts(counts)
}

// CacheNote says what the cache columns are and what they cannot know.
const CacheNote = "The hit rates and DRAM bytes come from a model of the caches (an L1 per block, a shared L2, least-recently-used, sizes from the datasheet: docs/vgpu-metrics.md); " +
	"blocks run one after another, so where only some blocks ran (sampled) the L2 starts cold for them and the DRAM bytes are an upper bound. " +
	"The modelled time is the largest of the DRAM, L2, L1/shared-memory, instruction-issue, FP32, tensor-core, atomics and latency limits (the latency one by Little's law: the warps' waits overlapped by the warps the occupancy lets each SM hold), the bound naming it, plus the launch's fixed time; where latency or the launch bounds it, the largest of the throughput limits follows (\"limit\"), what would bound it were the waits hidden."

// ProblemTable is EmulatedTable with the modelled rate in unit, a problem's Rate, instead of GFLOP/s (EmulatedRow
// fills that column from vgpurun.Result.Rate).
func ProblemTable(gpuName, unit string) cells.Table {
	t := EmulatedTable(gpuName)
	t.Columns = slices.Clone(t.Columns)
	for i, c := range t.Columns {
		if c.Unit == "GFLOP/s" {
			t.Columns[i].Unit = unit
		}
	}
	return t
}
