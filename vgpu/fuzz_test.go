package vgpu

import (
	"context"
	"testing"
	"time"
)

// FuzzParsePTX feeds arbitrary text to the parser (it must return a module or an error, never
// panic), and runs every parameterless kernel of what parses under a short deadline (it must end
// with counts or an error, never panic or hang). The kept corpus is in testdata/fuzz/FuzzParsePTX.
func FuzzParsePTX(f *testing.F) {
	for _, arch := range []int{70, 80} {
		if b, err := ptxFS(arch); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{stridePTX, banksPTX, divergePTX, barrierPTX, oobPTX, hazardPTX,
		ldmatrixPTX("x4.trans", 4), mmaPTX(16, "bf16"), cpAsyncPTX("", "bar.sync 0;", "cp.async.wait_group 0;")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		m, err := ParseModule(src)
		if err != nil {
			if m != nil {
				t.Fatal("a module and an error")
			}
			return
		}
		for _, fn := range m.Functions {
			if !fn.Entry || len(fn.Params) > 0 {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			_, _ = Launch(ctx, m, fn.Name, LaunchConfig{Grid: [3]int{2}, Block: [3]int{40}, DynamicShared: 64})
			cancel()
		}
	})
}
