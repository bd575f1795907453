// Command record runs every lesson cell that names GPU kernels on this machine's GPU and writes the
// results, with the device, driver, date and command, to lessons/recorded/<cell id>.json, so that
// learners without a GPU see real measured numbers, labelled as recorded. Run it on a GPU machine
// (docs/gpu.md); it refuses to run without one.
//
// Usage:
//
//	record [-lessons lessons] [-cells shared-memory-tiling-0,…]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/lessons"
)

func main() {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) { // this binary is also its own GPU worker
		return
	}
	dir := flag.String("lessons", "lessons", "the lessons directory; recordings go to its recorded/ folder")
	only := flag.String("cells", "", "comma-separated cell ids to record (default: every cell with a GPU kernel)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := record(ctx, *dir, *only); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(1)
	}
}

type collect struct{ results []harness.Result }

func (c *collect) Progress(int, int)       {}
func (c *collect) Note(_, _, msg string)   { fmt.Fprintln(os.Stderr, "  note:", msg) }
func (c *collect) Result(r harness.Result) { c.results = append(c.results, r) }

func record(ctx context.Context, dir, only string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	sup := &gpu.Supervisor{Transport: gpu.Exec{Path: exe, Args: []string{gpu.WorkerCommand}}}
	defer sup.Close()
	report := gpu.Probe(ctx, sup)
	if report.Unavailable != "" {
		return errors.New(report.Unavailable)
	}
	machine := &gpu.Machine{Worker: sup, Report: report}
	env := cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("")...), Limits: harness.DefaultLimits(), GPU: machine,
		Roofline: &peaks.Cache{}}
	// The recordings being replaced are not loaded: one of a changed cell would stop the load.
	ls, err := lessons.Load(withoutRecordings{os.DirFS(dir)}, lessons.Kinds(builtin.Kinds(env)))
	if err != nil {
		return err
	}
	wanted := strings.Split(only, ",")
	for _, l := range ls {
		for _, c := range l.Cells {
			if c.Kind != "matmul" || (only != "" && !slices.Contains(wanted, c.ID)) {
				continue
			}
			spec, err := kernelcell.Parse(c.Source, env.Kernels, env.Limits, env.Rates.Get())
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(spec.Kernels, func(name string) bool { k, _ := kernels.Lookup(env.Kernels, name); return k.Remote }) {
				continue
			}
			fmt.Fprintf(os.Stderr, "recording %s on %s\n", c.ID, report.Devices[0].Name)
			var sink collect
			if err := harness.Run(ctx, spec.Spec, kernelcell.Harness(env), &sink); err != nil {
				return fmt.Errorf("%s: %w", c.ID, err)
			}
			rec := cells.Recording{Cell: c.ID, SourceSHA256: cells.SourceHash(c.Source), Device: report.Devices[0].Name, Driver: report.Driver,
				Date: time.Now().UTC().Format(time.RFC3339), Command: strings.Join(append([]string{"record"}, os.Args[1:]...), " "),
				Results: sink.results}
			b, err := json.MarshalIndent(rec, "", "  ")
			if err != nil {
				return err
			}
			out := filepath.Join(dir, "recorded", c.ID+".json")
			if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
				return err
			}
			fmt.Fprintln(os.Stderr, "wrote", out)
		}
	}
	return nil
}

// withoutRecordings hides the recorded/ folder of a lessons directory.
type withoutRecordings struct{ fs.FS }

func (w withoutRecordings) Open(name string) (fs.File, error) {
	if name == "recorded" || strings.HasPrefix(name, "recorded/") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return w.FS.Open(name)
}
