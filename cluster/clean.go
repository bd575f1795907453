package cluster

import (
	"math"
	"strings"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/internal/untrusted"
)

// A worker is authenticated but not trusted: every string it sends is cleaned (package untrusted)
// before it reaches the operator's console or a learner's page: its announcement here, its runs'
// events by cells.Event.Clean, its tasks and errors in transport.go.

// Length caps (runes) of what a worker announces; those of its runs' events are package
// untrusted's.
const (
	maxNameLen  = 64  // a machine's name
	maxFieldLen = 128 // a CPU model, a GPU's name, a compiler, an OS, a kind's name
	maxList     = untrusted.MaxList
	maxCores    = 1 << 16
)

// cleanMachine is a worker's announcement with every string cleaned and bounded, its lists cut to
// maxList and its cores to 0…maxCores; a class no page or cell could name is dropped by hello. An
// empty name becomes "unnamed".
func cleanMachine(m Machine) Machine {
	m.Rates = cleanRates(m.Rates)
	m.Name = strings.TrimSpace(untrusted.Line(m.Name, maxNameLen))
	if m.Name == "" {
		m.Name = "unnamed"
	}
	m.Class = untrusted.Line(m.Class, maxNameLen)
	m.Host = untrusted.Line(m.Host, maxNameLen)
	m.CPU = untrusted.Line(m.CPU, maxFieldLen)
	m.OS = untrusted.Line(m.OS, maxFieldLen)
	m.Arch = untrusted.Line(m.Arch, maxFieldLen)
	m.Compiler = untrusted.Line(m.Compiler, maxFieldLen)
	m.GPUUnavailable = untrusted.Line(m.GPUUnavailable, untrusted.MaxLine)
	m.GPUs = cleanList(m.GPUs, maxFieldLen)
	m.Kinds = cleanList(m.Kinds, maxFieldLen)
	m.Cores = min(max(m.Cores, 0), maxCores)
	return m
}

// cleanList is list cut to maxList strings, each cleanLine'd to limit runes; nil stays nil.
func cleanList(list []string, limit int) []string {
	if list == nil {
		return nil
	}
	out := make([]string, 0, min(len(list), maxList))
	for _, s := range list[:min(len(list), maxList)] {
		out = append(out, untrusted.Line(s, limit))
	}
	return out
}

// cleanRates are a worker's reported rates if they can price a run: at most maxList kernels of at
// most maxList points each, at sizes from 1 strictly increasing with a cost above 0 (what the
// estimate's interpolation in log n and log cost needs), and maxList emulated kernels (with their
// launch times and instruction mixes), every number finite and not negative;
// else nil (estimate.Defaults then). A worker may lie about its speed; the server takes the fastest
// able machine's estimate (Cluster.Estimate), so a worker claiming to be slow cannot get runs
// refused; one claiming to be fast shortens no estimate and draws no more than its share of runs
// until its runs bear its prices out (trust.go).
func cleanRates(r *estimate.Rates) *estimate.Rates {
	if r == nil || len(r.Kernels) > maxList || len(r.SIMT) > maxList || len(r.SIMTN) > maxList || len(r.SIMTExp) > maxList ||
		len(r.SIMTLaunch) > maxList || len(r.SIMTMix) > maxList {
		return nil
	}
	ok := func(xs ...float64) bool {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return false
			}
		}
		return true
	}
	for _, pts := range r.Kernels {
		if len(pts) > maxList {
			return nil
		}
		for i, p := range pts {
			if p.N < 1 || i > 0 && p.N <= pts[i-1].N || !ok(p.SPF) || p.SPF == 0 {
				return nil
			}
		}
	}
	for k, v := range r.SIMT {
		if !ok(v, r.SIMTExp[k]) || r.SIMTN[k] < 0 {
			return nil
		}
	}
	for _, t := range r.SIMTLaunch {
		if !ok(t) {
			return nil
		}
	}
	for _, mix := range r.SIMTMix {
		if !ok(mix[:]...) {
			return nil
		}
	}
	sy := r.Systolic
	if !ok(r.FillNs, r.PointSeconds, sy.Cycle, sy.PE, sy.AnimCycle, sy.AnimPE) || r.Procs < 0 || sy.AnimatedN < 0 {
		return nil
	}
	out := *r
	out.Source, out.CPU = untrusted.Line(r.Source, maxFieldLen), untrusted.Line(r.CPU, maxFieldLen)
	return &out
}
