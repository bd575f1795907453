package nvidia

import (
	"runtime"
	"unsafe"
)

// Data and compute types from library_types.h and cublas_api.h (CUDA 12).
const (
	TypeF32  = 0  // CUDA_R_32F
	TypeF64  = 1  // CUDA_R_64F
	TypeF16  = 2  // CUDA_R_16F
	TypeBF16 = 14 // CUDA_R_16BF

	Compute32F         = 68 // CUBLAS_COMPUTE_32F
	Compute32FFastTF32 = 77 // CUBLAS_COMPUTE_32F_FAST_TF32: FP32 data, tensor cores with TF32 inputs

	opN         = 0  // CUBLAS_OP_N
	gemmDefault = -1 // CUBLAS_GEMM_DEFAULT
)

// CuBLAS is a cuBLAS handle (libcublas), bound to the context current when it was created.
type CuBLAS struct {
	Lib    Loaded
	handle uintptr

	create    func(h *uintptr) int32
	destroy   func(h uintptr) int32
	setStream func(h, stream uintptr) int32
	sgemm     func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a uint64, lda int32, b uint64, ldb int32, beta *float32, c uint64, ldc int32) int32
	dgemm     func(h uintptr, ta, tb, m, n, k int32, alpha *float64, a uint64, lda int32, b uint64, ldb int32, beta *float64, c uint64, ldc int32) int32
	gemmEx    func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, a uint64, aType, lda int32, b uint64, bType, ldb int32, beta unsafe.Pointer, c uint64, cType, ldc, compute, algo int32) int32
}

// CuBLAS loads cuBLAS (libcublas.so.13, .12, .11), creates a handle on c (the context current on this
// thread) and sets its stream to c's, so that cuBLAS calls, the playground's kernels and the timing
// events are ordered on one stream.
func (l Loader) CuBLAS(c *Context) (*CuBLAS, error) {
	lib, err := l.Load(CuBLASNames)
	if err != nil {
		return nil, err
	}
	b := &CuBLAS{Lib: lib}
	if err := bind(lib, b.symbols()...); err != nil {
		return nil, err
	}
	if err := check("cublasCreate_v2", b.create(&b.handle), cublasStatusNames); err != nil {
		return nil, err
	}
	if err := check("cublasSetStream_v2", b.setStream(b.handle, c.stream), cublasStatusNames); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// symbols pairs each function variable with the libcublas symbol it binds (the _v2 names are the
// ones cublas_v2.h maps the plain names to).
func (b *CuBLAS) symbols() []any {
	return []any{
		&b.create, "cublasCreate_v2",
		&b.destroy, "cublasDestroy_v2",
		&b.setStream, "cublasSetStream_v2",
		&b.sgemm, "cublasSgemm_v2",
		&b.dgemm, "cublasDgemm_v2",
		&b.gemmEx, "cublasGemmEx",
	}
}

// Close destroys the handle.
func (b *CuBLAS) Close() error {
	return check("cublasDestroy_v2", b.destroy(b.handle), cublasStatusNames)
}

// cuBLAS is column-major. A row-major m×n matrix is the column-major n×m transpose, so the row-major
// C = A·B is computed as the column-major Cᵀ = Bᵀ·Aᵀ: swap the operands and m with n, no transposes.

// Sgemm computes C = A·B in FP32 for row-major A (m×k), B (k×n) and C (m×n) in device memory.
func (b *CuBLAS) Sgemm(m, n, k int, A, B, C DevicePtr) error {
	one, zero := float32(1), float32(0)
	return check("cublasSgemm_v2", b.sgemm(b.handle, opN, opN, int32(n), int32(m), int32(k),
		&one, uint64(B), int32(n), uint64(A), int32(k), &zero, uint64(C), int32(n)), cublasStatusNames)
}

// Dgemm is Sgemm in FP64.
func (b *CuBLAS) Dgemm(m, n, k int, A, B, C DevicePtr) error {
	one, zero := float64(1), float64(0)
	return check("cublasDgemm_v2", b.dgemm(b.handle, opN, opN, int32(n), int32(m), int32(k),
		&one, uint64(B), int32(n), uint64(A), int32(k), &zero, uint64(C), int32(n)), cublasStatusNames)
}

// GemmEx computes C = A·B for row-major matrices with A and B of type abType (TypeF32, TypeBF16,
// TypeF16), C in FP32, and the given compute type (Compute32F, Compute32FFastTF32): cuBLAS on tensor
// cores with FP32 accumulation.
func (b *CuBLAS) GemmEx(m, n, k int, A, B DevicePtr, abType int32, C DevicePtr, compute int32) error {
	one, zero := float32(1), float32(0)
	res := b.gemmEx(b.handle, opN, opN, int32(n), int32(m), int32(k),
		unsafe.Pointer(&one), uint64(B), abType, int32(n), uint64(A), abType, int32(k),
		unsafe.Pointer(&zero), uint64(C), TypeF32, int32(n), compute, gemmDefault)
	runtime.KeepAlive(&one)
	runtime.KeepAlive(&zero)
	return check("cublasGemmEx", res, cublasStatusNames)
}
