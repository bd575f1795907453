package roofline

import "fmt"

// PeakFor is the measured peak for dtype and how it was measured. TEMPORARY until the FMA peak lands.
func (c Ceilings) PeakFor(dtype string) (float64, string) {
	return c.PeakGFLOPS, fmt.Sprintf("best GEMM kernel %s at n=%d", c.PeakKernel, c.PeakN)
}

// Peek returns the kept ceilings without measuring; ok is false until a run has measured them.
// TEMPORARY until the FMA peak lands.
func (k *Cache) Peek() (Ceilings, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.c == nil {
		return Ceilings{}, false
	}
	return *k.c, true
}
