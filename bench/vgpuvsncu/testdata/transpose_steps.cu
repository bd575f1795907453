// The steps of a matrix transpose as a learner writes them after Mark Harris's "An Efficient
// Matrix Transpose in CUDA C/C++" (NVIDIA technical blog, 2013), in the order and launch shapes of
// Yen Cal's H100 measurements ("Optimizing GPU Matrix Transpose: From 14% to 88% of Peak
// Bandwidth", 2025, yencal.github.io/gpu-matrix-transpose-optimization). Our own code, written for
// bench/vgpuvsncu's published comparison (published_transpose.go); out = inᵀ, both n×n row-major.

#define TILE 32
#define ROWS 8 // step 4's blockDim.y

// Step 1: one thread per element, blocks of 32×32. The read of a row is coalesced; the write goes
// down a column of out, one 4-byte store per 32-byte sector.
extern "C" __global__ void transpose_naive(const float* in, float* out, int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) {
        out[col * n + row] = in[row * n + col];
    }
}

// Step 2: stage a 32×32 tile in shared memory so that both the read and the write go along rows.
// Blocks of 32×32, one element per thread. Reading a column of the tile hits one bank 32 times.
extern "C" __global__ void transpose_smem(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row = blockIdx.y * TILE + threadIdx.y;
    if (row < n && col < n) {
        tile[threadIdx.y][threadIdx.x] = in[row * n + col];
    }
    __syncthreads();
    col = blockIdx.y * TILE + threadIdx.x;
    row = blockIdx.x * TILE + threadIdx.y;
    if (row < n && col < n) {
        out[row * n + col] = tile[threadIdx.x][threadIdx.y];
    }
}

// Step 3: the same with a padded row (33 floats), so that a column of the tile falls in 32
// different banks.
extern "C" __global__ void transpose_smem_padded(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row = blockIdx.y * TILE + threadIdx.y;
    if (row < n && col < n) {
        tile[threadIdx.y][threadIdx.x] = in[row * n + col];
    }
    __syncthreads();
    col = blockIdx.y * TILE + threadIdx.x;
    row = blockIdx.x * TILE + threadIdx.y;
    if (row < n && col < n) {
        out[row * n + col] = tile[threadIdx.x][threadIdx.y];
    }
}

// Step 4: each thread moves 4 elements of the padded tile (blocks of 32×ROWS over a 32×32 tile;
// ROWS a constant, as in the published kernels, so the compiler unrolls the loops and the 4 loads
// are in flight together).
extern "C" __global__ void transpose_padded_4rows(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (row + j < n && col < n) {
            tile[threadIdx.y + j][threadIdx.x] = in[(row + j) * n + col];
        }
    }
    __syncthreads();
    col = blockIdx.y * TILE + threadIdx.x;
    row = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (row + j < n && col < n) {
            out[(row + j) * n + col] = tile[threadIdx.x][threadIdx.y + j];
        }
    }
}
