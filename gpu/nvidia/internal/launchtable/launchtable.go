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
// are skipped, launch.cu cannot call cuBLAS) in table order, with what launch.cu needs to launch it
// as the GPU worker does for a float32 cell (gpu/run.go, and gpu/hopper.go for a row with an Arch):
// entry points, input type, minimum compute capability, block, tile (grid for size n: ⌈n′/tile[0]⌉ ×
// ⌈n′/tile[1]⌉, n′ = n rounded up to pad), whether any block works, and a Hopper rung's
// architecture, dynamic shared memory, persistent grid, cluster and tensor maps (box and swizzle
// over A or B). GC_MAXMAPS is the most tensor maps any row takes (at least 1). It fails for a row
// launch.cu could not launch like the worker: one that does not take float32 cells, rounds its
// inputs to a precision launch.cu has no buffer for, or whose tensor maps or cluster it cannot make.
func Header(ks []nvidia.Kernel) (string, error) {
	maxMaps := 1
	for _, k := range ks {
		maxMaps = max(maxMaps, len(k.TensorMaps))
	}
	var b strings.Builder
	b.WriteString(preamble)
	fmt.Fprintf(&b, "#define GC_MAXMAPS %d\n", maxMaps)
	b.WriteString(declarations)
	for _, k := range ks {
		if k.BLAS != nil || k.Entry == "" {
			continue
		}
		row, err := headerRow(k, maxMaps)
		if err != nil {
			return "", fmt.Errorf("kernel %s: %w", k.Name, err)
		}
		b.WriteString(row)
	}
	b.WriteString(postamble)
	return b.String(), nil
}

// headerRow is one initializer of gc_kernels, its maps array filled to maxMaps.
func headerRow(k nvidia.Kernel, maxMaps int) (string, error) {
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
	hopper, err := hopperFields(k, maxMaps)
	if err != nil {
		return "", err
	}
	pad := max(k.Pad, 1)
	anyBlock := 0
	if k.AnyBlock {
		anyBlock = 1
	}
	return fmt.Sprintf("    {%s, %s, %s, %s, %d, %s, %d, {%d, %d, %d}, {%d, %d}, %d, %d,\n     %s},\n",
		cString(k.Name), cString(k.Entry), in, older, below, olderIn, k.MinCC,
		k.Block[0], k.Block[1], k.Block[2], k.Tile[0], k.Tile[1], pad, anyBlock, hopper), nil
}

// hopperFields renders a row's arch, shared_bytes, persistent, cluster, nmaps and maps (maxMaps of
// them, the unused ones zero). A map must be over A or B with a swizzle span cuda.h has (0, 32, 64
// or 128 bytes) and a positive box; a cluster sets all three dimensions.
func hopperFields(k nvidia.Kernel, maxMaps int) (string, error) {
	if k.SharedBytes < 0 || k.Persistent < 0 {
		return "", fmt.Errorf("negative shared bytes %d or persistent grid %d", k.SharedBytes, k.Persistent)
	}
	if c := k.Cluster; c != ([3]int{}) && (c[0] < 1 || c[1] < 1 || c[2] < 1) {
		return "", fmt.Errorf("cluster %v: each dimension is 1 or more", c)
	}
	if len(k.TensorMaps) > maxMaps {
		return "", fmt.Errorf("%d tensor maps, more than GC_MAXMAPS %d", len(k.TensorMaps), maxMaps)
	}
	maps := make([]string, maxMaps)
	for i := range maps {
		maps[i] = "{0, {0, 0}, 0}"
	}
	for i, m := range k.TensorMaps {
		if m.Of != "A" && m.Of != "B" {
			return "", fmt.Errorf("tensor map %d over %q; launch.cu maps A or B", i, m.Of)
		}
		if m.Swizzle != 0 && m.Swizzle != 32 && m.Swizzle != 64 && m.Swizzle != 128 {
			return "", fmt.Errorf("tensor map %d: swizzle %d bytes; cuda.h has 0, 32, 64 or 128", i, m.Swizzle)
		}
		if m.Box[0] < 1 || m.Box[1] < 1 {
			return "", fmt.Errorf("tensor map %d: box %v", i, m.Box)
		}
		maps[i] = fmt.Sprintf("{'%s', {%d, %d}, %d}", m.Of, m.Box[0], m.Box[1], m.Swizzle)
	}
	return fmt.Sprintf("%s, %d, %d, {%d, %d, %d}, %d, {%s}", cString(k.Arch), k.SharedBytes, k.Persistent,
		k.Cluster[0], k.Cluster[1], k.Cluster[2], len(k.TensorMaps), strings.Join(maps, ", ")), nil
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
// float32 cell (gpu/run.go; gpu/hopper.go for a row with an arch): on a device of compute capability
// cc (major*10 + minor) it runs entry with A and B of type input, or older_entry with older_input
// when cc < older_below; it is skipped when cc < min_cc. For size n it runs on n' = n rounded up to
// a multiple of pad (the host zero-pads A and B), with grid (ceil(n'/tile[0]), ceil(n'/tile[1]), 1)
// and block block, and the arguments (A, B, C, n', n', n'), C in float32, then one CUtensorMap per
// map. any_block: the kernel reads blockDim, so any block works with the grid ceil(n/block).
// arch: the one virtual architecture of its PTX ("90a": hopper.cu's compute_90a PTX, which loads on
// sm_90 only), "" for matmul.cu's. shared_bytes: its dynamic shared memory (over 48 KiB the kernel
// opts in with cuFuncSetAttribute first). persistent: when over 0 the grid is one block per SM
// (fewer where there are fewer tiles). cluster: when not all 0, the thread-block cluster it is
// launched in by cuLaunchKernelEx (a persistent grid rounded down to whole clusters; any other must
// be whole clusters). maps: nmaps tensor maps, each cuTensorMapEncodeTiled over the n'×n' input of
// (A or B) in its input type (rows n'·size bytes apart), box elements (innermost first) and swizzle
// bytes, no interleave, 128-byte L2 promotion, zero fill.
#ifndef GPUCHECK_KERNELS_GEN_H
#define GPUCHECK_KERNELS_GEN_H

`

const declarations = `
enum gc_input { GC_F32, GC_BF16, GC_F16 };

struct gc_map {
    char of;
    int box[2];
    int swizzle;
};

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
    const char* arch;
    int shared_bytes;
    int persistent;
    int cluster[3];
    int nmaps;
    struct gc_map maps[GC_MAXMAPS];
};

static const struct gc_kernel gc_kernels[] = {
`

const postamble = `};

#define GC_NKERNELS ((int)(sizeof gc_kernels / sizeof gc_kernels[0]))

#endif
`
