// Package measure holds the plain values that the cell kinds share with what measures for them:
// a kernel's descriptor (Kernel), the bounds of a run (Limits), a measured point (Result), when
// timings are noisy (Noise), a GPU as its driver reports it (Device), a request to the GPU worker
// (Request) and the CPU's roofline ceilings (Ceilings). It imports only the standard library and the
// value packages estimate and numeric, so that package cells can name these types without the timing
// harness, the GPU worker or the kernels behind them. The packages that own the behaviour keep their
// names for them as aliases (kernels.Kernel, harness.Limits, harness.Result, harness.Noise,
// gpu.Request, nvidia.Device, peaks.Ceilings).
package measure
