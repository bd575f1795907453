package kernels

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/numeric"
)

// BenchmarkMatmul times every CPU kernel on square float32 and float64 products. Its GFLOP/s metric is
// 2·n³ / (ns/op); bench/compare sets it against the figures the server streams for the same kernel and
// size. Run: go test -run '^$' -bench Matmul -benchtime 5x ./kernels
func BenchmarkMatmul(b *testing.B) {
	for _, kern := range CPU() {
		for _, dtype := range []string{"float32", "float64"} {
			for _, n := range []int{128, 256, 512} {
				if kern.Name == "naive" && n > 256 && testing.Short() {
					continue
				}
				b.Run(fmt.Sprintf("%s/%s/n=%d", kern.Name, dtype, n), func(b *testing.B) {
					if dtype == "float32" {
						benchKernel(b, kern.F32, n)
					} else {
						benchKernel(b, kern.F64, n)
					}
				})
			}
		}
	}
}

func benchKernel[T Float](b *testing.B, f Func[T], n int) {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	x, y, z := make([]T, n*n), make([]T, n*n), make([]T, n*n)
	numeric.Random(rng, x)
	numeric.Random(rng, y)
	ctx := context.Background()
	if err := f(ctx, z, x, y, n, n, n, Options{}); err != nil { // warm-up, as the server does
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := f(ctx, z, x, y, n, n, n, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(FLOPs(n, n, n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
