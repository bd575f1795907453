// Package gpumodel is the GPU timing model: it turns the counts of a launch on the virtual GPU
// (package vgpu, the functional emulator) into a modelled, never measured, time on a datasheet GPU,
// as GPGPU-Sim splits its functional simulator (cuda-sim) from its performance model. It holds
//
//   - the datasheet (datasheet.go, accelerators.go): published figures of GPUs and of GPUs' and
//     TPUs' matrix units, with their sources, and the roofline (Roofline);
//   - the occupancy calculator (occupancy.go): per compute capability the published per-SM limits,
//     and a kernel's resident blocks and warps, theoretical occupancy and limiting resource
//     (LookupLimits, Limits.Occupancy); a launch's occupancy on a datasheet GPU (LaunchOccupancy);
//   - the time model (model.go, latency.go, tensor.go, atomics.go): the terms of a launch's time,
//     the largest of them its bound (Model, ModelAt), and the cache sizes the virtual GPU's cache
//     model is given (CacheFor);
//   - the waves of a sampled launch (wave.go): its DRAM reads between the L2's regimes (WaveReads);
//   - attribution (attribute.go): how one term divides among the PTX lines that ran (Attribute).
//
// It imports vgpu for its counts; vgpu imports nothing of it.
package gpumodel
