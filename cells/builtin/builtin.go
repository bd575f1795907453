// Package builtin lists the playground's cell kinds: the one place a kind is added.
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

// Kinds returns every cell kind, for env.
func Kinds(env cells.Env) []cells.Kind {
	return []cells.Kind{matmul.New(env), cuda.New(env), wgsl.New(env), simt.New(env), systolic.Kind{Rates: env.Rates}, roofline.New(env), allreduce.Kind{}, budget.New(env), tpu.Kind{}, precision.Kind{}}
}
