// A strict stand-in for libcuda.so.1 and libcublas.so.13, for tests on machines without a GPU.
//
// Package internal/fakecuda builds it for the gpu and server tests with the system C compiler (the
// playground itself never uses cgo); the real GPU worker loads it through purego, exactly as it
// loads the NVIDIA libraries. It implements the functions the binding calls, with the prototypes of
// cuda.h and cublas_api.h, over host memory: "device" pointers are malloc'd, kernels and GEMMs are computed on the CPU, events read
// the clock. It is strict where a wrong call would go unnoticed on a real GPU until it crashed: every
// copy, memset and kernel argument must lie inside a live allocation, launches and events must use
// the stream the context made, a kernel must be an .entry of the PTX it was loaded from, and cuBLAS
// computes in column-major order, so a row-major call with swapped roles gives a wrong C.
//
// Nothing it does is a measurement: the times it reports are those of its CPU loops.
//
// It is built twice: as libcuda.so.1, and with -DFAKE_CUBLAS as libcublas.so.13, which links against
// the first and shares its allocations and stream through the fakecuda_* functions (two separately
// loaded libraries, as with NVIDIA's, so the loader reports each file).
//
// cuTensorMapEncodeTiled checks every requirement cuda.h (CUDA 12.4) documents for its arguments and
// also that the tensor lies inside one live allocation; it writes a map the launch recognises. A
// kernel whose PTX entry has `.param .align 64 .b8 X[128]` parameters (const __grid_constant__
// CUtensorMap) must get, for each, a 64-byte aligned pointer to such a map whose tensor is still
// allocated. With $FAKECUDA_LOG set, each encode, each tensor map a launch passes and each launch
// (its grid, block and dynamic shared bytes) is appended to that file as a line, so that tests can read what the worker asked for.
//
// The device's compute capability is 9.0, or $FAKECUDA_CC (e.g. "80", "100") where set, and it has 4
// SMs, or $FAKECUDA_SMS. As the driver
// does, it loads PTX for an architecture-specific target (".target sm_90a") only on exactly that
// compute capability (CUDA_ERROR_NO_BINARY_FOR_GPU elsewhere). A launch may ask for up to 48 KiB of
// dynamic shared memory, or more up to what cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_
// SIZE_BYTES) allowed the kernel beforehand (at most 227 KiB, Hopper's opt-in limit). The Hopper rungs
// (entries "hopper_…") multiply BF16 inputs. cuLaunchKernelEx takes the cluster dimension attribute
// (see there).
//
// A kernel whose name ends in "_oob" models an out-of-bounds write: the launch succeeds and the next
// synchronising call fails with CUDA_ERROR_ILLEGAL_ADDRESS (700), which then sticks, as on a GPU.

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static float bf16(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }

#ifndef FAKE_CUBLAS

typedef int CUresult;
enum {
	OK = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, INVALID_IMAGE = 200, INVALID_CONTEXT = 201,
	NO_BINARY_FOR_GPU = 209, INVALID_HANDLE = 400, NOT_FOUND = 500, ILLEGAL_ADDRESS = 700, NOT_SUPPORTED = 801,
};

static int initialised, sticky;
static uintptr_t ctx_handle = 0xC0;
static uintptr_t current_ctx;
static uintptr_t the_stream; // the one stream the context made

// ---- allocations ----

#define MAXALLOC 256
static struct { char *p; size_t n; } allocs[MAXALLOC];

// inside reports whether [p, p+n) lies inside one live allocation.
static int inside(uint64_t p, size_t n) {
	for (int i = 0; i < MAXALLOC; i++) {
		uint64_t a = (uint64_t)(uintptr_t)allocs[i].p;
		if (allocs[i].p && p >= a && p + n <= a + allocs[i].n) return 1;
	}
	return 0;
}

static CUresult ready(void) {
	if (!initialised) return NOT_INITIALIZED;
	if (sticky) return sticky;
	if (current_ctx != ctx_handle) return INVALID_CONTEXT;
	return OK;
}

// The helpers libcublas.so.13 uses.
int fakecuda_inside(uint64_t p, size_t n) { return inside(p, n); }
int fakecuda_ready(void) { return ready(); }
uintptr_t fakecuda_stream(void) { return the_stream; }
void fakecuda_fault(void) { sticky = ILLEGAL_ADDRESS; }

// ---- errors and devices ----

CUresult cuGetErrorName(CUresult code, const char **name) {
	switch (code) {
	case OK: *name = "CUDA_SUCCESS"; return OK;
	case INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return OK;
	case NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; return OK;
	case INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; return OK;
	case INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
	case INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; return OK;
	case NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; return OK;
	case ILLEGAL_ADDRESS: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return OK;
	case NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; return OK;
	case NO_BINARY_FOR_GPU: *name = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return OK;
	}
	*name = NULL;
	return INVALID_VALUE;
}

CUresult cuInit(unsigned flags) { if (flags != 0) return INVALID_VALUE; initialised = 1; return OK; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int *n) { if (!initialised) return NOT_INITIALIZED; *n = 1; return OK; }
CUresult cuDeviceGet(int *dev, int ordinal) {
	if (!initialised) return NOT_INITIALIZED;
	if (ordinal != 0) return INVALID_VALUE;
	*dev = 0;
	return OK;
}
CUresult cuDeviceGetName(char *name, int len, int dev) {
	if (dev != 0 || len < 32) return INVALID_VALUE;
	strncpy(name, "Fake GPU (host memory, tests)", len);
	return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) { if (dev != 0) return INVALID_VALUE; *bytes = (size_t)1 << 30; return OK; }
// compute_capability is 10·major + minor: 90, or $FAKECUDA_CC.
static int compute_capability(void) {
	const char *cc = getenv("FAKECUDA_CC");
	return cc && *cc ? atoi(cc) : 90;
}

CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
	if (dev != 0) return INVALID_VALUE;
	switch (attr) {
	case 13: *v = 1000000; return OK;  // clock rate, kHz
	case 16: *v = getenv("FAKECUDA_SMS") ? atoi(getenv("FAKECUDA_SMS")) : 4; return OK; // SMs
	case 36: *v = 1000000; return OK;  // memory clock, kHz
	case 37: *v = 256; return OK;      // bus width, bits
	case 38: *v = 1 << 20; return OK;  // L2 bytes
	case 75: *v = compute_capability() / 10; return OK; // compute capability 9.0
	case 76: *v = compute_capability() % 10; return OK;
	}
	return INVALID_VALUE;
}

// ---- context, stream, memory ----

CUresult cuDevicePrimaryCtxRetain(uintptr_t *ctx, int dev) {
	if (!initialised) return NOT_INITIALIZED;
	if (dev != 0) return INVALID_VALUE;
	*ctx = ctx_handle;
	return OK;
}
CUresult cuCtxSetCurrent(uintptr_t ctx) { if (ctx != ctx_handle) return INVALID_CONTEXT; current_ctx = ctx; return OK; }
CUresult cuCtxSynchronize(void) { return ready(); }
CUresult cuStreamCreate(uintptr_t *s, unsigned flags) {
	CUresult r = ready();
	if (r) return r;
	if (flags != 0 || the_stream) return INVALID_VALUE;
	the_stream = 0x5EA;
	*s = the_stream;
	return OK;
}
CUresult cuStreamDestroy_v2(uintptr_t s) { if (s != the_stream) return INVALID_HANDLE; the_stream = 0; return OK; }

CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
	CUresult r = ready();
	if (r) return r;
	if (n == 0) return INVALID_VALUE;
	for (int i = 0; i < MAXALLOC; i++) {
		if (!allocs[i].p) {
			allocs[i].p = malloc(n);
			allocs[i].n = n;
			memset(allocs[i].p, 0x5A, n); // garbage, as fresh device memory is
			*p = (uint64_t)(uintptr_t)allocs[i].p;
			return OK;
		}
	}
	return 2; // out of memory
}
CUresult cuMemFree_v2(uint64_t p) {
	for (int i = 0; i < MAXALLOC; i++) {
		if (allocs[i].p && (uint64_t)(uintptr_t)allocs[i].p == p) {
			free(allocs[i].p);
			allocs[i].p = NULL;
			return sticky;
		}
	}
	return INVALID_VALUE;
}
CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n) {
	CUresult r = ready();
	if (r) return r;
	if (!inside(dst, n)) return INVALID_VALUE;
	memcpy((void *)(uintptr_t)dst, src, n);
	return OK;
}
CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n) {
	CUresult r = ready();
	if (r) return r;
	if (!inside(src, n)) return INVALID_VALUE;
	memcpy(dst, (void *)(uintptr_t)src, n);
	return OK;
}
CUresult cuMemsetD32_v2(uint64_t dst, unsigned v, size_t words) {
	CUresult r = ready();
	if (r) return r;
	if (!inside(dst, words * 4)) return INVALID_VALUE;
	uint32_t *p = (uint32_t *)(uintptr_t)dst;
	for (size_t i = 0; i < words; i++) p[i] = v;
	return OK;
}

// ---- modules and kernels ----

typedef struct { char *ptx; } module;
typedef struct { char name[128]; char params[2048]; int max_shared; } function;

#define DEFAULT_SHARED (48 << 10)
#define OPTIN_SHARED (227 << 10)

CUresult cuModuleLoadData(uintptr_t *mod, const void *image) {
	CUresult r = ready();
	if (r) return r;
	const char *s = image;
	if (!strstr(s, ".version") || !strstr(s, ".target")) return INVALID_IMAGE; // not PTX text
	// An architecture-specific target (sm_90a) runs on that one compute capability only.
	const char *target = strstr(s, ".target sm_");
	if (target) {
		char *end;
		long arch = strtol(target + strlen(".target sm_"), &end, 10);
		if (*end == 'a' && arch != compute_capability()) return NO_BINARY_FOR_GPU;
	}
	module *m = malloc(sizeof *m);
	m->ptx = strdup(s);
	*mod = (uintptr_t)m;
	return OK;
}
CUresult cuModuleUnload(uintptr_t mod) {
	module *m = (module *)mod;
	free(m->ptx);
	free(m);
	return sticky;
}
CUresult cuModuleGetFunction(uintptr_t *fn, uintptr_t mod, const char *name) {
	CUresult r = ready();
	if (r) return r;
	module *m = (module *)mod;
	char want[160];
	snprintf(want, sizeof want, ".entry %s(", name);
	if (strlen(name) >= sizeof(((function *)0)->name) || !strstr(m->ptx, want)) return NOT_FOUND;
	function *f = malloc(sizeof *f);
	strcpy(f->name, name);
	f->max_shared = DEFAULT_SHARED;
	// The entry's parameter list, up to its closing parenthesis.
	const char *from = strstr(m->ptx, want) + strlen(want), *to = strchr(from, ')');
	size_t n = to ? (size_t)(to - from) : 0;
	if (n >= sizeof f->params) n = sizeof f->params - 1;
	memcpy(f->params, from, n);
	f->params[n] = 0;
	*fn = (uintptr_t)f;
	return OK;
}

// cuFuncSetAttribute supports CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8) only.
CUresult cuFuncSetAttribute(uintptr_t fn, int attr, int value) {
	CUresult r = ready();
	if (r) return r;
	if (!fn) return INVALID_HANDLE;
	if (attr != 8 || value < 0 || value > OPTIN_SHARED) return INVALID_VALUE;
	((function *)fn)->max_shared = value > DEFAULT_SHARED ? value : DEFAULT_SHARED;
	return OK;
}

// ---- tensor maps (cuTensorMapEncodeTiled) ----

static FILE *logfile(void) {
	const char *path = getenv("FAKECUDA_LOG");
	return path && *path ? fopen(path, "a") : NULL;
}

#define MAXMAPS 64
static const char map_magic[8] = "FAKETMAP";
// The last MAXMAPS maps encoded, by sequence number modulo MAXMAPS (an older one is refused).
static struct { int seq; uint64_t global; size_t bytes; } maps[MAXMAPS];
static int nmaps; // maps encoded so far

static const size_t elem_bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};

// tiled_invalid checks cuTensorMapEncodeTiled's arguments as cuda.h documents them; it returns 0
// where they are valid and sets *extent to the bytes the tensor spans from its address.
static int tiled_invalid(void *tm, int dt, unsigned rank, uint64_t global, const uint64_t *dims,
                         const uint64_t *strides, const unsigned *box, const unsigned *es, int il, int sw,
                         int l2, int oob, size_t *extent) {
	if (!tm || (uintptr_t)tm % 64) return 1;
	if (dt < 0 || dt > 12 || rank < 1 || rank > 5 || il < 0 || il > 2 || sw < 0 || sw > 3 || l2 < 0 || l2 > 3 || oob < 0 || oob > 1)
		return 1;
	if ((il != 0 && rank < 3) || (il == 2 && sw != 1) || (oob == 1 && dt < 6)) return 1;
	uint64_t align = il == 2 ? 32 : 16, elem = elem_bytes[dt];
	if (!global || global % align || !dims || !box || !es || (rank > 1 && !strides)) return 1;
	uint64_t covered = dims[0] * elem, last = (dims[0] - 1) * elem;
	for (unsigned i = 0; i < rank; i++) {
		if (dims[i] < 1 || dims[i] > (1ull << 32) || box[i] < 1 || box[i] > 256 || es[i] < 1 || es[i] > 8) return 1;
		if (i == 0) continue;
		uint64_t s = strides[i - 1];
		if (s % align || s >= (1ull << 40) || s < covered) return 1;
		covered = s * dims[i];
		last += (dims[i] - 1) * s;
	}
	uint64_t inner = box[0] * elem, span = sw ? 16u << sw : 0;
	if (il == 0 && (inner % 16 || (span && inner > span))) return 1;
	*extent = last + elem;
	return 0;
}

CUresult cuTensorMapEncodeTiled(void *tm, int dt, unsigned rank, void *global, const uint64_t *dims,
                                const uint64_t *strides, const unsigned *box, const unsigned *es, int il,
                                int sw, int l2, int oob) {
	CUresult r = ready();
	if (r) return r;
	size_t extent;
	uint64_t g = (uint64_t)(uintptr_t)global;
	if (tiled_invalid(tm, dt, rank, g, dims, strides, box, es, il, sw, l2, oob, &extent) || !inside(g, extent))
		return INVALID_VALUE;
	maps[nmaps % MAXMAPS].seq = nmaps;
	maps[nmaps % MAXMAPS].global = g;
	maps[nmaps % MAXMAPS].bytes = extent;
	memset(tm, 0, 128);
	memcpy(tm, map_magic, 8);
	memcpy((char *)tm + 8, &nmaps, sizeof nmaps);
	FILE *f = logfile();
	if (f) {
		fprintf(f, "cuTensorMapEncodeTiled map=%d dtype=%d rank=%u dims=", nmaps, dt, rank);
		for (unsigned i = 0; i < rank; i++) fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)dims[i]);
		fprintf(f, " strides=");
		for (unsigned i = 0; i + 1 < rank; i++) fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)strides[i]);
		fprintf(f, " box=");
		for (unsigned i = 0; i < rank; i++) fprintf(f, "%s%u", i ? "," : "", box[i]);
		fprintf(f, " elementStrides=");
		for (unsigned i = 0; i < rank; i++) fprintf(f, "%s%u", i ? "," : "", es[i]);
		fprintf(f, " interleave=%d swizzle=%d l2=%d oob=%d\n", il, sw, l2, oob);
		fclose(f);
	}
	nmaps++;
	return OK;
}

// tensor_map_params checks each `.param .align 64 .b8 X[128]` parameter of f (a CUtensorMap by
// value) against params: a 64-byte aligned map this library encoded, over a live allocation.
static CUresult tensor_map_params(function *f, void **params) {
	FILE *log = logfile();
	CUresult r = OK;
	int i = 0;
	for (const char *p = strstr(f->params, ".param"); p; p = strstr(p + 1, ".param"), i++) {
		const char *next = strstr(p + 1, ".param"), *end = next ? next : p + strlen(p);
		const char *b8 = strstr(p, ".b8"), *size = strstr(p, "[128]"), *al = strstr(p, ".align 64");
		if (!b8 || b8 > end || !size || size > end || !al || al > end) continue;
		int id = -1;
		const char *v = params[i];
		if ((uintptr_t)v % 64 == 0 && memcmp(v, map_magic, 8) == 0) memcpy(&id, v + 8, sizeof id);
		if (id < 0 || maps[id % MAXMAPS].seq != id || !inside(maps[id % MAXMAPS].global, maps[id % MAXMAPS].bytes)) {
			r = INVALID_VALUE;
			continue;
		}
		if (log) fprintf(log, "cuLaunchKernel %s param=%d map=%d\n", f->name, i, id);
	}
	if (log) fclose(log);
	return r;
}


static int ends_with(const char *s, const char *suffix) {
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

// Every playground kernel, and every learner kernel the tests launch, has the signature
// (const T* A, const T* B, float* C, int M, int N, int K) for row-major A (M×K), B (K×N), C (M×N):
// FP32 inputs, or BF16 for cuda_wmma_bf16 and the mma.sync kernels (cuda_mma…).
// launch is cuLaunchKernel, called by name from cuLaunchKernelEx too: a static function, since a
// call to the exported name could bind to another loaded copy of this library.
static CUresult launch(uintptr_t fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned smem, uintptr_t stream, void **params, void **extra) {
	CUresult r = ready();
	if (r) return r;
	function *f = (function *)fn;
	if (stream != the_stream || extra != NULL || (int)smem > f->max_shared || smem > OPTIN_SHARED) return INVALID_VALUE;
	if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024) return INVALID_VALUE;
	if (tensor_map_params(f, params) != OK) return INVALID_VALUE;
	FILE *log = logfile();
	if (log) {
		fprintf(log, "cuLaunchKernel %s grid=%u,%u,%u block=%u,%u,%u shared=%u\n", f->name, gx, gy, gz, bx, by, bz, smem);
		fclose(log);
	}
	uint64_t A = *(uint64_t *)params[0], B = *(uint64_t *)params[1], C = *(uint64_t *)params[2];
	int M = *(int *)params[3], N = *(int *)params[4], K = *(int *)params[5];
	int bf = strcmp(f->name, "cuda_wmma_bf16") == 0 || strncmp(f->name, "cuda_mma", 8) == 0 ||
	         strncmp(f->name, "hopper_", 7) == 0;
	if (strcmp(f->name, "cuda_wmma_f16") == 0) return NOT_SUPPORTED;
	size_t in = bf ? 2 : 4;
	if (M < 1 || N < 1 || K < 1 || !inside(A, (size_t)M * K * in) || !inside(B, (size_t)K * N * in) ||
	    !inside(C, (size_t)M * N * 4)) {
		sticky = ILLEGAL_ADDRESS; // reading or writing outside the buffers faults
		return OK;
	}
	if (ends_with(f->name, "_oob")) {
		sticky = ILLEGAL_ADDRESS;
		return OK;
	}
	float *c = (float *)(uintptr_t)C;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			float s = 0;
			for (int p = 0; p < K; p++) {
				size_t ia = (size_t)i * K + p, ib = (size_t)p * N + j;
				s += bf ? bf16(((uint16_t *)(uintptr_t)A)[ia]) * bf16(((uint16_t *)(uintptr_t)B)[ib])
				        : ((float *)(uintptr_t)A)[ia] * ((float *)(uintptr_t)B)[ib];
			}
			c[(size_t)i * N + j] = s;
		}
	return OK;
}

// cuLaunchKernelEx takes cuda.h's CUlaunchConfig with its attributes (CUlaunchAttribute: an id, padding,
// a 64-byte value); the fake knows the cluster dimension (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, 4)
// only, which needs compute capability 9.0 or newer, each grid dimension a multiple of the cluster's
// and at most 8 blocks a cluster (the portable limit). The launch is then cuLaunchKernel's.
typedef struct { int id; char pad[4]; union { char bytes[64]; struct { unsigned x, y, z; } cluster; } value; } launch_attribute;
typedef struct {
	unsigned gx, gy, gz, bx, by, bz, smem;
	uintptr_t stream;
	launch_attribute *attrs;
	unsigned nattrs;
} launch_config;

CUresult cuLaunchKernelEx(const launch_config *c, uintptr_t fn, void **params, void **extra) {
	CUresult r = ready();
	if (r) return r;
	if (!c || (c->nattrs && !c->attrs)) return INVALID_VALUE;
	unsigned cx = 1, cy = 1, cz = 1;
	for (unsigned i = 0; i < c->nattrs; i++) {
		if (c->attrs[i].id != 4) return NOT_SUPPORTED;
		cx = c->attrs[i].value.cluster.x, cy = c->attrs[i].value.cluster.y, cz = c->attrs[i].value.cluster.z;
		if (compute_capability() < 90 || !cx || !cy || !cz || (uint64_t)cx * cy * cz > 8) return INVALID_VALUE;
		if (c->gx % cx || c->gy % cy || c->gz % cz) return INVALID_VALUE;
	}
	FILE *log = logfile();
	if (log) {
		fprintf(log, "cuLaunchKernelEx %s cluster=%u,%u,%u\n", ((function *)fn)->name, cx, cy, cz);
		fclose(log);
	}
	return launch(fn, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->smem, c->stream, params, extra);
}

CUresult cuLaunchKernel(uintptr_t fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned smem, uintptr_t stream, void **params, void **extra) {
	return launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra);
}

// ---- events ----

typedef struct { double t; int recorded; } event;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
CUresult cuEventCreate(uintptr_t *ev, unsigned flags) {
	CUresult r = ready();
	if (r) return r;
	if (flags != 0) return INVALID_VALUE;
	*ev = (uintptr_t)calloc(1, sizeof(event));
	return OK;
}
CUresult cuEventRecord(uintptr_t ev, uintptr_t stream) {
	CUresult r = ready();
	if (r) return r;
	if (stream != the_stream) return INVALID_HANDLE;
	((event *)ev)->t = now();
	((event *)ev)->recorded = 1;
	return OK;
}
CUresult cuEventSynchronize(uintptr_t ev) { (void)ev; return ready(); }
CUresult cuEventElapsedTime(float *ms, uintptr_t start, uintptr_t end) {
	CUresult r = ready();
	if (r) return r;
	event *a = (event *)start, *b = (event *)end;
	if (!a->recorded || !b->recorded) return INVALID_HANDLE;
	*ms = (float)((b->t - a->t) * 1e3);
	return OK;
}
CUresult cuEventDestroy_v2(uintptr_t ev) { free((void *)ev); return OK; }

#else // FAKE_CUBLAS

int fakecuda_inside(uint64_t p, size_t n);
int fakecuda_ready(void);
uintptr_t fakecuda_stream(void);
void fakecuda_fault(void);
#define inside fakecuda_inside
#define ready fakecuda_ready

// ---- cuBLAS (column-major, as cublas_api.h documents) ----

typedef int cublasStatus_t;
static int blas_handle_stream_set;
static uintptr_t blas_handle = 0xB1A5;

cublasStatus_t cublasCreate_v2(uintptr_t *h) { if (ready()) return 1; *h = blas_handle; return 0; }
cublasStatus_t cublasDestroy_v2(uintptr_t h) { return h == blas_handle ? 0 : 7; }
cublasStatus_t cublasSetStream_v2(uintptr_t h, uintptr_t stream) {
	if (h != blas_handle || stream != fakecuda_stream()) return 7;
	blas_handle_stream_set = 1;
	return 0;
}

// gemm computes C = alpha·A·B + beta·C, column-major, no transposes; load reads element i of a
// matrix of the given type (0 FP32, 1 FP64, 14 BF16).
static double load(uint64_t p, int type, size_t i) {
	switch (type) {
	case 0: return ((float *)(uintptr_t)p)[i];
	case 1: return ((double *)(uintptr_t)p)[i];
	case 14: return bf16(((uint16_t *)(uintptr_t)p)[i]);
	}
	return NAN;
}
static size_t typesize(int type) { return type == 1 ? 8 : type == 14 ? 2 : 4; }

static cublasStatus_t gemm(uintptr_t h, int ta, int tb, int m, int n, int k, double alpha, uint64_t A,
                           int at, int lda, uint64_t B, int bt, int ldb, double beta, uint64_t C, int ct, int ldc) {
	if (h != blas_handle || !blas_handle_stream_set) return 7;
	if (ta != 0 || tb != 0 || m < 1 || n < 1 || k < 1 || lda < m || ldb < k || ldc < m) return 7;
	if (ready()) return 13; // execution failed
	if (!inside(A, ((size_t)(k - 1) * lda + m) * typesize(at)) || !inside(B, ((size_t)(n - 1) * ldb + k) * typesize(bt)) ||
	    !inside(C, ((size_t)(n - 1) * ldc + m) * typesize(ct))) {
		fakecuda_fault();
		return 13;
	}
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double s = 0;
			for (int p = 0; p < k; p++) s += load(A, at, (size_t)p * lda + i) * load(B, bt, (size_t)j * ldb + p);
			size_t ic = (size_t)j * ldc + i;
			double v = alpha * s + (beta != 0 ? beta * load(C, ct, ic) : 0);
			if (ct == 1) ((double *)(uintptr_t)C)[ic] = v;
			else ((float *)(uintptr_t)C)[ic] = (float)v;
		}
	return 0;
}

cublasStatus_t cublasSgemm_v2(uintptr_t h, int ta, int tb, int m, int n, int k, const float *alpha, uint64_t A,
                              int lda, uint64_t B, int ldb, const float *beta, uint64_t C, int ldc) {
	return gemm(h, ta, tb, m, n, k, *alpha, A, 0, lda, B, 0, ldb, *beta, C, 0, ldc);
}
cublasStatus_t cublasDgemm_v2(uintptr_t h, int ta, int tb, int m, int n, int k, const double *alpha, uint64_t A,
                              int lda, uint64_t B, int ldb, const double *beta, uint64_t C, int ldc) {
	return gemm(h, ta, tb, m, n, k, *alpha, A, 1, lda, B, 1, ldb, *beta, C, 1, ldc);
}
cublasStatus_t cublasGemmEx(uintptr_t h, int ta, int tb, int m, int n, int k, const void *alpha, uint64_t A,
                            int at, int lda, uint64_t B, int bt, int ldb, const void *beta, uint64_t C, int ct,
                            int ldc, int compute, int algo) {
	// FP32 or BF16 inputs, FP32 output, CUBLAS_COMPUTE_32F (68) or _32F_FAST_TF32 (77), whose
	// alpha and beta are floats; CUBLAS_GEMM_DEFAULT (-1).
	if (at != bt || (at != 0 && at != 14) || ct != 0 || (compute != 68 && compute != 77) || algo != -1) return 7;
	if (compute == 77 && at != 0) return 7;
	return gemm(h, ta, tb, m, n, k, *(const float *)alpha, A, at, lda, B, bt, ldb, *(const float *)beta, C, ct, ldc);
}

#endif // FAKE_CUBLAS
