package kernels

import (
	"context"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// tile is the cache-blocking edge, in elements: three 64×64 float64 tiles are 96 KiB, which fits a
// typical 1–2 MiB L2 with room to spare and keeps one row of a B tile (512 bytes) in L1.
const tile = 64

// Naive computes c = a·b with the textbook i-j-k loop order: the inner loop walks b down a column,
// touching a new cache line for every multiply-add once b is larger than the cache.
func Naive[T Float](ctx context.Context, c, a, b []T, m, n, k int, _ Options) error {
	checkDims(c, a, b, m, n, k)
	for i := 0; i < m; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		aRow := a[i*k : i*k+k]
		for j := 0; j < n; j++ {
			var sum T
			for p, av := range aRow {
				sum += av * b[p*n+j]
			}
			c[i*n+j] = sum
		}
	}
	return nil
}

// IKJ computes c = a·b with the loops interchanged to i-k-j: the inner loop streams one row of b and
// one row of c with unit stride.
func IKJ[T Float](ctx context.Context, c, a, b []T, m, n, k int, _ Options) error {
	checkDims(c, a, b, m, n, k)
	for i := 0; i < m; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		cRow := c[i*n : i*n+n]
		clear(cRow)
		for p := 0; p < k; p++ {
			axpy(cRow, b[p*n:p*n+n], a[i*k+p])
		}
	}
	return nil
}

// axpy adds alpha·x to y element-wise (len(x) ≥ len(y)). It is unrolled by four: besides doing more
// work per loop branch, this made its speed far less sensitive to where the linker places the loop
// (see docs/benchmarks.md, "Same kernel, different binary").
func axpy[T Float](y, x []T, alpha T) {
	x = x[:len(y)]
	j := 0
	for ; j+4 <= len(y); j += 4 {
		yy, xx := y[j:j+4:j+4], x[j:j+4:j+4]
		yy[0] += alpha * xx[0]
		yy[1] += alpha * xx[1]
		yy[2] += alpha * xx[2]
		yy[3] += alpha * xx[3]
	}
	for ; j < len(y); j++ {
		y[j] += alpha * x[j]
	}
}

// Tiled computes c = a·b by cache blocking: it multiplies tile×tile blocks so that the block of b being
// reused stays in cache, using the i-k-j order inside each block. Sizes need not be multiples of the
// tile.
func Tiled[T Float](ctx context.Context, c, a, b []T, m, n, k int, _ Options) error {
	checkDims(c, a, b, m, n, k)
	clear(c[:m*n])
	for i0 := 0; i0 < m; i0 += tile {
		if err := tiledRows(ctx, c, a, b, m, n, k, i0); err != nil {
			return err
		}
	}
	return nil
}

// tiledRows accumulates rows [i0, i0+tile) of c = a·b, block by block; c's rows must start zeroed.
func tiledRows[T Float](ctx context.Context, c, a, b []T, m, n, k, i0 int) error {
	i1 := min(i0+tile, m)
	for p0 := 0; p0 < k; p0 += tile {
		if err := ctx.Err(); err != nil {
			return err
		}
		p1 := min(p0+tile, k)
		for j0 := 0; j0 < n; j0 += tile {
			j1 := min(j0+tile, n)
			for i := i0; i < i1; i++ {
				cRow := c[i*n+j0 : i*n+j1]
				for p := p0; p < p1; p++ {
					axpy(cRow, b[p*n+j0:p*n+j1], a[i*k+p])
				}
			}
		}
	}
	return nil
}

// Parallel is Tiled with its row blocks handed out to opt.Threads goroutines (GOMAXPROCS if 0) from a
// shared counter, so a fast goroutine takes more blocks and none sits idle at the end.
func Parallel[T Float](ctx context.Context, c, a, b []T, m, n, k int, opt Options) error {
	checkDims(c, a, b, m, n, k)
	clear(c[:m*n])
	blocks := (m + tile - 1) / tile
	workers := min(threads(opt), max(blocks, 1))
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				blk := int(next.Add(1) - 1)
				if blk >= blocks {
					return
				}
				if err := tiledRows(ctx, c, a, b, m, n, k, blk*tile); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// gonumRows is how many rows of c one gonum call computes, so that cancellation is checked between
// calls; 64 matches gonum's own block size.
const gonumRows = 64

// Gonum computes c = a·b with gonum's pure-Go BLAS (Sgemm for float32, Dgemm for float64), which is
// blocked and uses GOMAXPROCS goroutines internally. It is called on blocks of gonumRows rows so that
// cancellation is honoured between blocks.
func Gonum[T Float](ctx context.Context, c, a, b []T, m, n, k int, _ Options) error {
	checkDims(c, a, b, m, n, k)
	if m == 0 || n == 0 {
		return ctx.Err()
	}
	var impl gonum.Implementation
	for i0 := 0; i0 < m; i0 += gonumRows {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows := min(gonumRows, m-i0)
		if k == 0 {
			clear(c[i0*n : (i0+rows)*n])
			continue
		}
		switch cc := any(c).(type) {
		case []float32:
			impl.Sgemm(blas.NoTrans, blas.NoTrans, rows, n, k, 1, any(a).([]float32)[i0*k:], k,
				any(b).([]float32), n, 0, cc[i0*n:], n)
		case []float64:
			impl.Dgemm(blas.NoTrans, blas.NoTrans, rows, n, k, 1, any(a).([]float64)[i0*k:], k,
				any(b).([]float64), n, 0, cc[i0*n:], n)
		}
	}
	return nil
}
