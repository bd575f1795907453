package gpumodel

import (
	"math"

	"github.com/gpuplayground/playground/vgpu"
)

// SASSPerLine is the SASS instructions (a fraction where ptxas unrolled the line's loop) that one
// execution of the PTX line line issues: nvidia.RungSASSPerLine's, from ptxas's line table.
type SASSPerLine func(line int) float64

// SASSWarpInstructions is the warp instructions c's launch issues in SASS: each executed PTX line's
// warp executions (c.Lines) times sass(line), rounded; c.WarpInstructions, the PTX's, where sass is
// nil or c has no lines.
func SASSWarpInstructions(c vgpu.Counts, sass SASSPerLine) int64 {
	if sass == nil || len(c.Lines) == 0 {
		return c.WarpInstructions
	}
	var n float64
	for _, l := range c.Lines {
		n += float64(l.Warp) * sass(l.Line)
	}
	return int64(math.Round(n))
}
