// Package launchtable renders the playground's own GPU kernels of the table in gpu/nvidia/ladder.go
// as a C header, bench/gpucheck/kernels.gen.h, for bench/gpucheck/launch.cu: the nvcc harness that
// launches them outside the Go worker so that Nsight Compute can profile them. The header is
// generated (by ./gpu/nvidia/internal/genlaunch) so that a new row of the table reaches the
// harness without a second hand-written list; a test in gpu/nvidia fails when it is stale.
package launchtable

import (
	"fmt"
	"strings"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// Path is where the header lives, relative to the repository root.
const Path = "bench/gpucheck/kernels.gen.h"

// Input names, in the header, what A and B hold when the worker runs the kernel on a float32 cell:
// gpu/run.go rounds them to 16 bits for "bf16" and "f16" (gpu/host.go, to16) and copies float32
// as it is for the others (a "tf32" own kernel would round in its own code).
func input(precision string) (string, error) {
	switch precision {
	case "", "float32", "tf32":
		return "GC_F32", nil
	case "bf16":
		return "GC_BF16", nil
	case "f16":
		return "GC_F16", nil
	}
	return "", fmt.Errorf("precision %q has no input type in launch.cu", precision)
}

// Header returns the C header listing every own kernel of ks (the rows with an Entry; cuBLAS rows
// are skipped, launch.cu cannot call cuBLAS, and so are the Hopper rungs, rows with an Arch of
// their own, which need hopper.cu's compute_90a build and tensor maps) in table order, with what launch.cu needs to launch it
// as the GPU worker does for a float32 cell: entry points, input type, minimum compute capability,
// block, tile (grid for size n: ⌈n′/tile[0]⌉ × ⌈n′/tile[1]⌉, n′ = n rounded up to pad) and whether
// any block works. It fails for a row launch.cu could not launch like the worker: one that does not
// take float32 cells or rounds its inputs to a precision launch.cu has no buffer for.
func Header(ks []nvidia.Kernel) (string, error) {
	var b strings.Builder
	b.WriteString(preamble)
	for _, k := range ks {
		if k.BLAS != nil || k.Entry == "" || k.Arch != "" {
			continue
		}
		row, err := headerRow(k)
		if err != nil {
			return "", fmt.Errorf("kernel %s: %w", k.Name, err)
		}
		b.WriteString(row)
	}
	b.WriteString(postamble)
	return b.String(), nil
}

// headerRow is one initializer of gc_kernels.
func headerRow(k nvidia.Kernel) (string, error) {
	if !k.Takes("float32") {
		return "", fmt.Errorf("takes %s only; launch.cu runs float32 cells", strings.Join(k.DTypes, ", "))
	}
	in, err := input(k.Precision)
	if err != nil {
		return "", err
	}
	older, olderIn, below := "0", "GC_F32", 0
	if k.Older != nil {
		if olderIn, err = input(k.Older.Precision); err != nil {
			return "", err
		}
		older, below = cString(k.Older.Entry), k.Older.Below
	}
	if k.Tile[0] <= 0 || k.Tile[1] <= 0 || k.Block[0] <= 0 || k.Block[1] <= 0 || k.Block[2] <= 0 {
		return "", fmt.Errorf("no block or tile (block %v, tile %v)", k.Block, k.Tile)
	}
	pad := max(k.Pad, 1)
	anyBlock := 0
	if k.AnyBlock {
		anyBlock = 1
	}
	return fmt.Sprintf("    {%s, %s, %s, %s, %d, %s, %d, {%d, %d, %d}, {%d, %d}, %d, %d},\n",
		cString(k.Name), cString(k.Entry), in, older, below, olderIn, k.MinCC,
		k.Block[0], k.Block[1], k.Block[2], k.Tile[0], k.Tile[1], pad, anyBlock), nil
}

// cString quotes s as a C string literal. Names and entry points of the table are C identifiers
// and kebab-case names; anything else is escaped so that the header always compiles.
func cString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r > 0x7e:
			for _, c := range []byte(string(r)) {
				fmt.Fprintf(&b, "\\%03o", c)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

const preamble = `// Generated from gpu/nvidia/ladder.go by ` + "`go run ./gpu/nvidia/internal/genlaunch`" + ` (bench/gpucheck/build.sh
// runs it); DO NOT EDIT. TestLaunchHeaderIsCurrent (gpu/nvidia) fails when it is stale.
//
// The playground's own GPU kernels (the table's rows with an entry point; cuBLAS rows are left out),
// in ladder order, for bench/gpucheck/launch.cu. Each is launched as the GPU worker launches it for a
// float32 cell (gpu/run.go): on a device of compute capability cc (major*10 + minor) it runs
// entry with A and B of type input, or older_entry with older_input when cc < older_below; it is
// skipped when cc < min_cc. For size n it runs on n' = n rounded up to a multiple of pad (the host
// zero-pads A and B), with grid (ceil(n'/tile[0]), ceil(n'/tile[1]), 1) and block block, and the
// arguments (A, B, C, n', n', n'), C in float32. any_block: the kernel reads blockDim, so any block
// works with the grid ceil(n/block).
#ifndef GPUCHECK_KERNELS_GEN_H
#define GPUCHECK_KERNELS_GEN_H

enum gc_input { GC_F32, GC_BF16, GC_F16 };

struct gc_kernel {
    const char* name;
    const char* entry;
    enum gc_input input;
    const char* older_entry;
    int older_below;
    enum gc_input older_input;
    int min_cc;
    int block[3];
    int tile[2];
    int pad;
    int any_block;
};

static const struct gc_kernel gc_kernels[] = {
`

const postamble = `};

#define GC_NKERNELS ((int)(sizeof gc_kernels / sizeof gc_kernels[0]))

#endif
`
