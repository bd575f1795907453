package vgpurun

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// dots gives each entry, in the order asked, the product summed in k order, bit for bit, though
// it takes the entries column by column (entries repeated and in shared columns included).
func TestDotsAreEntrywiseProducts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 37
	in := &launchInputs{n: n, a: make([]float64, n*n), b: make([]float64, n*n)}
	for i := range in.a {
		in.a[i], in.b[i] = rng.NormFloat64(), rng.NormFloat64()
	}
	entries := make([][2]int, 300)
	for c := range entries {
		entries[c] = [2]int{rng.IntN(n), rng.IntN(n / 4)}
	}
	got, err := in.dots(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	for c, e := range entries {
		var want float64
		for k := range n {
			want += in.a[e[0]*n+k] * in.b[k*n+e[1]]
		}
		if math.Float64bits(got[c]) != math.Float64bits(want) {
			t.Fatalf("entry %d (%d, %d): got %v, want %v", c, e[0], e[1], got[c], want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := in.dots(ctx, entries); err == nil {
		t.Error("a cancelled check returned no error")
	}
}
