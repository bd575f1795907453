package inference

import "fmt"

// Reservations are the ways the KV pool can hold a request's cache. The first three reserve one
// contiguous stretch when the request is admitted, as the systems before vLLM did and as vLLM's
// paper models Orca (Kwon et al. 2023, §6.1): "max" the longest sequence the server allows, "pow2"
// the request's final length rounded up to a power of two (at most 2× too much), "oracle" exactly its
// final length (which no real server knows). "paged" allocates blocks of Block tokens as the cache
// grows, PagedAttention's way: at most one partly filled block per request.
var Reservations = []string{"max", "pow2", "oracle", "paged"}

// pool is the KV cache's memory, counted in units: tokens for a contiguous reservation, blocks for
// paged. A contiguous reservation fits whenever enough units are free (no addresses, so no
// external fragmentation).
type pool struct {
	mode     string
	block    int // tokens per unit: Block when paged, 1 otherwise
	maxLen   int
	capacity int // units
	used     int
}

// newPool is a pool of kvBytes bytes for tokens of perToken bytes each.
func newPool(mode string, block, maxLen int, kvBytes, perToken float64) (*pool, error) {
	p := &pool{mode: mode, block: 1, maxLen: maxLen}
	switch mode {
	case "paged":
		if block < 1 {
			return nil, fmt.Errorf("serving: a paged pool needs a block of at least 1 token, not %d", block)
		}
		p.block = block
	case "max", "pow2", "oracle":
	default:
		return nil, fmt.Errorf("serving: unknown KV reservation %q; known: max, pow2, oracle, paged", mode)
	}
	if kvBytes > 0 && perToken > 0 {
		p.capacity = int(kvBytes / (perToken * float64(p.block)))
	}
	return p, nil
}

// free is the units not allocated.
func (p *pool) free() int { return p.capacity - p.used }

// tokens is the capacity in tokens.
func (p *pool) tokens() int { return p.capacity * p.block }

// units is what holding tokens tokens of r takes: the blocks that hold them (paged), or r's
// reservation (contiguous), whatever tokens is.
func (p *pool) units(r *request, tokens int) int {
	switch p.mode {
	case "paged":
		return (tokens + p.block - 1) / p.block
	case "max":
		return p.maxLen
	case "pow2":
		n := 1
		for n < r.prompt+r.output {
			n *= 2
		}
		return min(n, p.maxLen)
	default: // oracle
		return r.prompt + r.output
	}
}

// hold makes r's allocation big enough for tokens tokens, reporting false (and changing nothing)
// when the pool has too few free units.
func (p *pool) hold(r *request, tokens int) bool {
	need := p.units(r, tokens) - r.units
	if need <= 0 {
		return true
	}
	if p.used+need > p.capacity {
		return false
	}
	p.used += need
	r.units += need
	return true
}

// release frees r's allocation.
func (p *pool) release(r *request) {
	p.used -= r.units
	r.units = 0
}
