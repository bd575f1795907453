package vgpurun

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync"
)

// A launch with a Seed (Request.Seed: the comparisons with kept measurements, the tests, gentune)
// draws the same inputs each time it is run at the same size and precision, and drawing them is
// most of what a sampled launch at n = 4096 costs outside the emulation (two n×n matrices from the
// PCG, rounded and laid out: about 0.4 CPU s). seededInputs keeps the most recent ones: a launch
// that draws them again shares the drawn a and b (read-only: the check reads them) and gets A and
// B copies of its own (a kernel never sees another launch's buffer, nor the kept bytes), and the
// generator's state just after the draw, so the sampled blocks and the checked entries it draws
// next are those an uncached launch draws: the launch is bit for bit the uncached one
// (TestSeededInputsKept). A launch without a Seed (every learner's and the server's) neither reads
// nor fills it, so a server holds nothing here.
//
// What it holds: the most recent draws whose bytes fit in seededBytes, each a and b as the kernel
// reads them, p×p elements of the precision (4 bytes in float32, 2 in bf16 or f16, 8 in
// float64): 128 MiB for a float32 draw at n = 4096, 64 MiB for a bf16 one.
var seededInputs inputCache

// seededBytes bounds the bytes seededInputs holds: 512 MiB, the draws a test binary alternates
// between (bench/vgpuvsncu: float32 at 4096 and 4092, bf16 at 4096 and at 4092 padded to 4096,
// about 384 MiB, and two small ones). A process that runs seeded launches (the tests, the bench
// tools, gentune) holds them until it exits; a server runs none.
const seededBytes = 512 << 20

// inputCache is seededInputs' store, the most recently drawn first, at most budget bytes
// (seededBytes where 0).
type inputCache struct {
	mu     sync.Mutex
	budget int
	draws  []*drawn
}

// drawKey is what decides a seeded launch's inputs.
type drawKey struct {
	n, p      int
	precision string
	seed      uint64
}

// drawn is one seeded launch's inputs: a and b (read-only, shared) and the PCG's state after the
// draw (rand.PCG.MarshalBinary).
type drawn struct {
	key   drawKey
	a, b  []byte
	state []byte
}

// draw is inputs(rng, n, p, precision) for a launch with seed whose rng draws from src: from c
// when seed is not 0 and c holds that draw (src then set to the state it had after drawing it),
// else drawn afresh, and kept in c when seed is not 0.
func (c *inputCache) draw(seed uint64, src *rand.PCG, rng *rand.Rand, n, p int, precision string) *launchInputs {
	if seed == 0 {
		return inputs(rng, n, p, precision)
	}
	key := drawKey{n: n, p: p, precision: precision, seed: seed}
	if d := c.get(key); d != nil && src.UnmarshalBinary(d.state) == nil {
		in := &launchInputs{n: n, p: p, a: d.a, b: d.b, kind: elementsOf(precision)}
		in.buffers()
		return in
	}
	in := inputs(rng, n, p, precision)
	if state, err := src.MarshalBinary(); err == nil {
		c.put(&drawn{key: key, a: in.a, b: in.b, state: state})
	}
	return in
}

// get is key's draw, moved to the front; nil if c does not hold it.
func (c *inputCache) get(key drawKey) *drawn {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.draws, func(d *drawn) bool { return d.key == key })
	if i < 0 {
		return nil
	}
	d := c.draws[i]
	c.draws = slices.Insert(slices.Delete(c.draws, i, i+1), 0, d)
	return d
}

// put keeps d first, replacing a draw of its key, and drops the oldest draws while c holds more
// than its budget.
func (c *inputCache) put(d *drawn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draws = slices.DeleteFunc(c.draws, func(o *drawn) bool { return o.key == d.key })
	c.draws = slices.Insert(c.draws, 0, d)
	budget, held := cmp.Or(c.budget, seededBytes), 0
	for _, o := range c.draws {
		held += len(o.a) + len(o.b)
	}
	for held > budget {
		last := len(c.draws) - 1
		held -= len(c.draws[last].a) + len(c.draws[last].b)
		c.draws[last] = nil
		c.draws = c.draws[:last]
	}
}
