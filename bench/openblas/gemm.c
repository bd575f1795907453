/* gemm: times OpenBLAS cblas_sgemm or cblas_dgemm on random n×n matrices, for bench/ladder.
 * Usage: gemm s|d n repeats   (threads: OPENBLAS_NUM_THREADS)
 * Prints one GFLOP/s figure per timed run (after one warm-up run), 2·n³ / seconds / 1e9. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: gemm s|d n repeats\n");
        return 2;
    }
    int dbl = argv[1][0] == 'd', n = atoi(argv[2]), reps = atoi(argv[3]);
    size_t sz = (size_t)n * n, el = dbl ? sizeof(double) : sizeof(float);
    char *a = malloc(sz * el), *b = malloc(sz * el), *c = malloc(sz * el);
    srand(1);
    for (size_t i = 0; i < sz; i++) {
        double x = 2.0 * rand() / RAND_MAX - 1.0 + 1e-9;
        if (dbl) { ((double *)a)[i] = x; ((double *)b)[i] = -x; }
        else { ((float *)a)[i] = (float)x; ((float *)b)[i] = (float)-x; }
    }
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        if (dbl)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, (double *)a, n, (double *)b, n, 0.0, (double *)c, n);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, (float *)a, n, (float *)b, n, 0.0f, (float *)c, n);
        double t = now() - t0;
        if (r >= 0) printf("%.3f\n", 2.0 * n * n * (double)n / t / 1e9);
    }
    return 0;
}
