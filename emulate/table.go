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
		Caption: fmt.Sprintf("Emulated in the virtual GPU, from the kernel's PTX (compute_%d): exact results and the counts the hardware would produce; the time is modelled from the %s datasheet, not measured", Arch, gpuName),
		Columns: []cells.Column{{Label: "kernel"}, {Label: "n"}, {Label: "inputs"}, {Label: "blocks run"}, {Label: "rel. error"}, {Label: "check"},
			{Label: "thread instructions"}, {Label: "active lanes per warp instruction"}, {Label: "global requests"}, {Label: "sectors"},
			{Label: "coalescing", Unit: "%"}, {Label: "bank conflicts"}, {Label: "barriers"},
			{Label: "modelled time (bound)", Unit: "µs"}, {Label: "modelled", Unit: "GFLOP/s"}, {Label: "emulation", Unit: "s"}}}
}

// Row is r as a row of Table.
func Row(r Result) cells.Row {
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
		blocks = fmt.Sprintf("%d of %d (sampled: counts scaled, %d entries checked)", r.BlocksRun, r.GridBlocks, r.Checked)
	}
	return cells.Row{Table: TableID, Bad: !r.OK, Values: []any{r.Kernel, r.N, r.Precision, blocks, r.RelError, check,
		c.ThreadInstructions, c.ActiveLanes(), c.GlobalLoadRequests + c.GlobalStoreRequests, c.LoadSectors + c.StoreSectors,
		100 * c.Coalescing(), c.BankConflicts(), c.Barriers,
		fmt.Sprintf("%.3g (%s)", r.Model.Seconds*1e6, r.Model.Bound), rate, r.EmulationSeconds}}
}
