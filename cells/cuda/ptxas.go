package cuda

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
)

// ptxasTimeout bounds one ptxas run on a cell's PTX (a kernel takes well under a second).
const ptxasTimeout = 10 * time.Second

// ptxasCacheSize bounds the reports kept: a run asks once per size and variant for the same PTX.
const ptxasCacheSize = 64

// findPtxas is this process's ptxas (kcuda.FindPtxas), looked for once.
var findPtxas = sync.OnceValues(kcuda.FindPtxas)

// ptxasReports keeps ptxas's reports by PTX and architecture.
var ptxasReports = struct {
	sync.Mutex
	m map[string][]kcuda.EntryResources
}{m: map[string][]kcuda.EntryResources{}}

// ptxasRegisters is what ptxas -v reports of entry (or of the PTX's only kernel) in ptx assembled
// for compute capability cc ("9.0" → sm_90); ok is false where there is no ptxas, ptxas refuses
// the PTX or the architecture (PTX built for a newer one than cc; an architecture newer than
// ptxas), or reports no such kernel. ptxas reads only the PTX it is given (PTX has no directive
// that reads a file) and runs under a time limit, outside the compile worker's sandbox.
func ptxasRegisters(ctx context.Context, ptx, entry, cc string) (kcuda.EntryResources, bool) {
	p, err := findPtxas()
	if err != nil {
		return kcuda.EntryResources{}, false
	}
	arch, err := strconv.Atoi(strings.ReplaceAll(cc, ".", ""))
	if err != nil {
		return kcuda.EntryResources{}, false
	}
	key := fmt.Sprintf("%x sm_%d", sha256.Sum256([]byte(ptx)), arch)
	ptxasReports.Lock()
	report, cached := ptxasReports.m[key]
	ptxasReports.Unlock()
	if !cached {
		ctx, cancel := context.WithTimeout(ctx, ptxasTimeout)
		defer cancel()
		if report, err = p.Resources(ctx, ptx, arch); err != nil {
			return kcuda.EntryResources{}, false
		}
		ptxasReports.Lock()
		if len(ptxasReports.m) >= ptxasCacheSize {
			clear(ptxasReports.m)
		}
		ptxasReports.m[key] = report
		ptxasReports.Unlock()
	}
	for _, r := range report {
		if r.Entry == entry || len(report) == 1 {
			return r, r.Registers > 0
		}
	}
	return kcuda.EntryResources{}, false
}

// ptxasLabel says, in the occupancy column, that r's registers are ptxas's, and what spilled.
func ptxasLabel(r kcuda.EntryResources) string {
	label := fmt.Sprintf("%d registers: ptxas %s", r.Registers, r.Arch)
	if r.SpillStores > 0 || r.SpillLoads > 0 {
		label += fmt.Sprintf(", %d B spilled, %d B reloaded", r.SpillStores, r.SpillLoads)
	}
	return label
}
