package emulate

import (
	"fmt"

	"github.com/gpuplayground/playground/cells"
)

// TableID is the id of the table of emulated launches.
const TableID = "emulated"

// Table declares the table of emulated launches, its caption saying what is emulated and what is
// modelled on which datasheet GPU.
func Table(gpuName string) cells.Table {
	return cells.Table{ID: TableID,
		Caption: fmt.Sprintf("Emulated in the virtual GPU, from the kernel's PTX (compute_%d): exact results and the counts the hardware would produce; the time is modelled from the %s datasheet, not measured. %s", Arch, gpuName, OccupancyNote),
		Columns: []cells.Column{{Label: "kernel"}, {Label: "n"}, {Label: "inputs"}, {Label: "blocks run"}, {Label: "rel. error"}, {Label: "check"},
			{Label: "thread instructions"}, {Label: "active lanes per warp instruction"}, {Label: "global requests"}, {Label: "sectors"},
			{Label: "coalescing", Unit: "%"}, {Label: "bank conflicts"}, {Label: "barriers"}, {Label: "occupancy (theoretical)"},
			{Label: "modelled time (bound)", Unit: "µs"}, {Label: "modelled", Unit: "GFLOP/s"}, {Label: "emulation", Unit: "s"}}}
}

// OccupancyNote says where the occupancy column's registers come from, and what it cannot know.
const OccupancyNote = "Occupancy (theoretical) is the CUDA occupancy calculator's on the datasheet GPU's compute capability, with the resource that limits it; " +
	"the table's own kernels use the registers Nsight Compute measured on an H100 for this PTX. A learner's kernel's registers are not known without ptxas " +
	"(the PTX's .reg are virtual registers, several times what ptxas allocates), so its occupancy is the bound without registers (≤), " +
	"or a range where .maxnreg or __launch_bounds__ caps them."

// Row is r as a row of Table.
func Row(r Result) cells.Row {
	c := r.Counts
	check := "ok"
	if !r.OK {
		check = "WRONG: over tolerance"
	}
	flops := 2 * float64(r.N) * float64(r.N) * float64(r.N)
	blocks := "all"
	if r.Sampled {
		blocks = fmt.Sprintf("%d of %d (sampled: counts scaled, %d entries checked)", r.BlocksRun, r.GridBlocks, r.Checked)
	}
	return cells.Row{Table: TableID, Bad: !r.OK, Values: []any{r.Kernel, r.N, r.Precision, blocks, r.RelError, check,
		c.ThreadInstructions, c.ActiveLanes(), c.GlobalLoadRequests + c.GlobalStoreRequests, c.LoadSectors + c.StoreSectors,
		100 * c.Coalescing(), c.BankConflicts(), c.Barriers, r.Occupancy.Text,
		fmt.Sprintf("%.3g (%s)", r.Model.Seconds*1e6, r.Model.Bound), flops / r.Model.Seconds / 1e9, r.EmulationSeconds}}
}
