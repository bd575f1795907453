package gpu

import (
	"fmt"
	"io/fs"
	"path"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// hopperModule loads hopper.cu's embedded compute_90a PTX (the driver JIT-compiles it for this
// device) once per worker. compute_90a's wgmma and setmaxnreg are architecture-specific: the PTX
// runs on compute capability 9.0 exactly, so any other device is refused before loading.
func (d *device) hopperModule(row nvidia.Kernel) (*nvidia.Module, error) {
	if d.cc != 90 {
		return nil, fmt.Errorf("%s is %s's compute_%s PTX (wgmma, setmaxnreg), which runs on sm_90 only; this GPU is sm_%d", row.Name, path.Base(row.Source), row.Arch, d.cc)
	}
	if d.hopper != nil {
		return d.hopper, nil
	}
	b, err := fs.ReadFile(nvidia.PTX, nvidia.PTXFile(path.Base(row.Source), row.Arch))
	if err != nil {
		return nil, err
	}
	if d.hopper, err = d.ctx.LoadPTX(string(b)); err != nil {
		return nil, fmt.Errorf("embedded compute_%s PTX of %s: %w", row.Arch, path.Base(row.Source), err)
	}
	return d.hopper, nil
}

// hopperLauncher returns the function that launches a Hopper rung (a row with an Arch) as l says on
// the padded l.N×l.N BF16 inputs *dA and *dB (inBytes each, read when it is called, after they are
// allocated) and the FP32 output *dC: its entry from hopperModule, opted in to the row's dynamic
// shared memory where it exceeds nvidia.DefaultSharedLimit, a persistent row's grid cut to the
// device's SMs, the row's tensor maps encoded over the inputs at the first launch, and a row with a
// Cluster launched in thread-block clusters (cuLaunchKernelEx).
func (d *device) hopperLauncher(row nvidia.Kernel, l nvidia.Launch, dA, dB, dC *nvidia.DevicePtr, inBytes int) (func() error, error) {
	mod, err := d.hopperModule(row)
	if err != nil {
		return nil, err
	}
	fn, err := mod.Function(l.Entry)
	if err != nil {
		return nil, err
	}
	if row.SharedBytes > nvidia.DefaultSharedLimit {
		if err := fn.SetMaxDynamicShared(row.SharedBytes); err != nil {
			return nil, fmt.Errorf("%s asks %d bytes of dynamic shared memory: %w", row.Name, row.SharedBytes, err)
		}
	}
	grid, err := hopperGrid(row, l, d.sms)
	if err != nil {
		return nil, err
	}
	m := int32(l.N)
	var maps []any
	return func() error {
		if maps == nil {
			if maps, err = d.rungMaps(row, l.N, inBytes, *dA, *dB); err != nil {
				return err
			}
		}
		args := append([]any{*dA, *dB, *dC, m, m, m}, maps...)
		if row.Cluster != ([3]int{}) {
			return fn.LaunchCluster(grid, l.Block, row.Cluster, row.SharedBytes, args...)
		}
		return fn.LaunchShared(grid, l.Block, row.SharedBytes, args...)
	}, nil
}

// hopperGrid is l's grid on a device with sms multiprocessors: a persistent row launches one block
// per SM (or per tile, where there are fewer tiles), rounded down to whole clusters (at least one)
// where it is launched in clusters; the others l.Grid, which must then be whole clusters.
func hopperGrid(row nvidia.Kernel, l nvidia.Launch, sms int) ([3]int, error) {
	grid := l.Grid
	if row.Persistent > 0 && sms > 0 {
		tiles := ceilDiv(l.N, row.Tile[0]) * ceilDiv(l.N, row.Tile[1])
		grid = [3]int{min(sms, tiles), 1, 1}
	}
	for i, c := range row.Cluster {
		switch {
		case c <= 1:
		case row.Persistent > 0:
			grid[i] = max(grid[i]/c, 1) * c
		case grid[i]%c != 0:
			return grid, fmt.Errorf("%s at n=%d: grid %v is not a whole number of %v clusters", row.Name, l.N, grid, row.Cluster)
		}
	}
	return grid, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// rungMaps encodes row's tensor maps over the row-major padded×padded BF16 inputs a and b (inBytes
// each): the row's box and swizzle, the L2 promotion tiledMaps uses, zero fill. The tensor a map
// declares must lie inside its allocation, or the copies would read past it.
func (d *device) rungMaps(row nvidia.Kernel, padded, inBytes int, a, b nvidia.DevicePtr) ([]any, error) {
	const elem = 2 // BF16
	n := uint64(padded)
	if need := int(n * n * elem); need > inBytes {
		return nil, fmt.Errorf("%s: a %d×%d BF16 tensor needs %d bytes; its buffer has %d", row.Name, padded, padded, need, inBytes)
	}
	var args []any
	for _, rm := range row.TensorMaps {
		addr, ok := map[string]nvidia.DevicePtr{"A": a, "B": b}[rm.Of]
		swizzle, okSw := swizzleModes[rm.Swizzle]
		if !ok || !okSw {
			return nil, fmt.Errorf("%s: tensor map over %q with swizzle %d; want A or B, 0, 32, 64 or 128 bytes", row.Name, rm.Of, rm.Swizzle)
		}
		tm, err := d.ctx.EncodeTiled(nvidia.TiledMap{Name: row.Name + " " + rm.Of, DataType: nvidia.TensorBFloat16, Address: addr,
			Dims: []uint64{n, n}, Strides: []uint64{n * elem}, Box: []uint32{uint32(rm.Box[0]), uint32(rm.Box[1])},
			Swizzle: swizzle, L2Promotion: nvidia.L2Promotion128B})
		if err != nil {
			return nil, err
		}
		args = append(args, tm)
	}
	return args, nil
}
