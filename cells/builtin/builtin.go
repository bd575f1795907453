// Package builtin lists the playground's cell kinds: the one place a kind is added, by one line in
// Kinds's list (and its import); docs/kinds.md says what a kind's folder holds.
package builtin

import (
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/allreduce"
	"github.com/gpuplayground/playground/cells/budget"
	"github.com/gpuplayground/playground/cells/cuda"
	"github.com/gpuplayground/playground/cells/matmul"
	"github.com/gpuplayground/playground/cells/precision"
	"github.com/gpuplayground/playground/cells/roofline"
	"github.com/gpuplayground/playground/cells/simt"
	"github.com/gpuplayground/playground/cells/systolic"
	"github.com/gpuplayground/playground/cells/tpu"
	"github.com/gpuplayground/playground/cells/wgsl"
)

// Kinds returns every cell kind, for env, in the order the list below gives them.
func Kinds(env cells.Env) []cells.Kind {
	var ks []cells.Kind
	for _, k := range []func(cells.Env) cells.Kind{
		matmul.New,
		cuda.New,
		wgsl.New,
		simt.New,
		systolic.New,
		roofline.New,
		allreduce.New,
		budget.New,
		tpu.New,
		precision.New,
	} {
		ks = append(ks, k(env))
	}
	return ks
}
