// Command hopper is the Hopper part of docs/gpu.md's runbook (`bench/gpucheck/run.sh hopper`). On a
// lent GPU of compute capability 9.0 or newer it times every rung of the kernel table that needs
// sm_90 (gpu/nvidia/ladder.go: MinCC 90 or more) through the GPU worker, runs every lesson `cuda`
// cell with `tensor_maps:` on the GPU (its measured rows, and the emulated rows with ptxas's
// registers that the cell sets beside them), and models each rung's launch in the virtual GPU on a
// datasheet GPU (time, bound, SASS instructions, registers, occupancy). It writes all of it as JSON
// with its provenance: the machine's host name, the device, its compute capability, the driver, the
// libraries loaded, the compiler, the date and the command. Nsight Compute's counters of the same
// rungs come from run.sh's ncu pass (launch.cu; `hopper -entries` prints the regular expression of
// their entry points for `ncu -k`): `hopper -ncu` adds each rung's (registers, instructions, wgmma
// and TMA counts; nsightMetrics) to the record, refusing a CSV of another device, and
// bench/vgpuvsncu sets the rest beside the model.
//
// Usage:
//
//	hopper [-n 4096] [-repeats 10] [-gpu "H100 SXM"] [-lessons lessons] [-kernels a,b] [-out hopper.json]
//	hopper -entries    # the Hopper rungs' entry points as ncu's -k regex:^(…)$, no GPU needed
//	hopper -ncu ncu-hopper.csv -out hopper.json    # adds Nsight Compute's counts of the rungs to the record
//
// Nothing is measured without a GPU: it refuses to run without one (the probe's reason), and a
// device below sm_90 is refused too.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/machine"
)

func main() {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) { // this binary is also its own GPU worker
		return
	}
	var o options
	flag.IntVar(&o.n, "n", 4096, "the matrices' size for the rungs")
	flag.IntVar(&o.repeats, "repeats", 10, "timed launches per rung after one warm-up")
	flag.StringVar(&o.gpu, "gpu", "H100 SXM", "the datasheet GPU the virtual GPU models the rungs on")
	flag.StringVar(&o.lessons, "lessons", "lessons", "the lessons directory whose cuda cells with tensor_maps run ('' for none)")
	kernels := flag.String("kernels", "", "comma-separated kernel table rows to time instead of the Hopper rungs")
	flag.StringVar(&o.out, "out", "hopper.json", "the JSON file to write")
	entries := flag.Bool("entries", false, "print the Hopper rungs' entry points as an ncu -k regular expression and exit")
	ncu := flag.String("ncu", "", "add this Nsight Compute CSV (ncu --page raw --csv) of the same machine to the record in -out, and exit (no GPU needed)")
	flag.Parse()
	if *kernels != "" {
		o.kernels = strings.Split(*kernels, ",")
	}
	if *entries {
		fmt.Println(entryRegex(hopperRungs(nvidia.Kernels())))
		return
	}
	if *ncu != "" {
		rec, err := mergeNsight(o.out, *ncu)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hopper:", err)
			os.Exit(1)
		}
		fmt.Print(rec.Markdown())
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, strings.Join(os.Args, " ")); err != nil {
		fmt.Fprintln(os.Stderr, "hopper:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	n, repeats        int
	gpu, lessons, out string
	kernels           []string // nil: the Hopper rungs of the table
}

// run probes the GPU through a worker (this binary), checks it is sm_90 or newer, records the
// rungs and the cells, and writes the JSON to o.out.
func run(ctx context.Context, o options, command string) error {
	g, err := gpumodel.LookupGPU(o.gpu)
	if err != nil {
		return err
	}
	sup := &gpu.Supervisor{Transport: machine.SelfGPU()}
	defer sup.Close()
	report := gpu.Probe(ctx, sup)
	prov, err := provenance(report, machine.HostName(""), command)
	if err != nil {
		return err
	}
	rungs, err := pickRungs(o.kernels)
	if err != nil {
		return err
	}
	rec := Record{Provenance: prov, N: o.n, Model: g.Name}
	for _, k := range rungs {
		rec.Rungs = append(rec.Rungs, recordRung(ctx, sup, k, o.n, o.repeats, g))
	}
	if o.lessons != "" {
		machine := &gpu.Machine{Worker: sup, Report: report}
		if rec.Cells, err = recordCells(ctx, machine, o.lessons); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	fmt.Print(rec.Markdown())
	return os.WriteFile(o.out, append(b, '\n'), 0o644)
}
