package simt

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Float is an element type of emulated memory.
type Float interface{ float32 | float64 }

// nextBase hands out global address ranges, 256-byte aligned as cudaMalloc's are (CUDA C++
// Programming Guide, "Device Memory Accesses"), so that sector counts match the device's.
var nextBase atomic.Int64

// Global is a typed buffer in emulated global (device) memory.
type Global[T Float] struct {
	Name string
	Data []T
	base int64
}

// NewGlobal places data in emulated global memory under name (shown in traces).
func NewGlobal[T Float](name string, data []T) *Global[T] {
	size := (int64(len(data))*int64(unsafe.Sizeof(data[0])) + 255) &^ 255
	base := nextBase.Add(size+256) - size
	return &Global[T]{Name: name, Data: data, base: base}
}

func elemSize[T Float]() uint8 {
	var z T
	return uint8(unsafe.Sizeof(z))
}

// Index maps a global byte address back to an element index of g, for traces.
func (g *Global[T]) Index(addr int64) (int, bool) {
	sz := int64(elemSize[T]())
	if addr < g.base || addr >= g.base+int64(len(g.Data))*sz {
		return 0, false
	}
	return int((addr - g.base) / sz), true
}

// Load reads element i, recording the access.
func (g *Global[T]) Load(t *Thread, i int) T {
	record[T](t, globalLoad, g.Name, g.base, i, len(g.Data))
	return g.Data[i]
}

// Store writes element i, recording the access.
func (g *Global[T]) Store(t *Thread, i int, v T) {
	record[T](t, globalStore, g.Name, g.base, i, len(g.Data))
	g.Data[i] = v
}

// record appends thread t's access to element i of an array of length n at byte address base; an
// index out of range panics with a message naming the array, which Launch turns into an error.
func record[T Float](t *Thread, k kind, name string, base int64, i, n int) {
	if i < 0 || i >= n {
		panic(fmt.Sprintf("out-of-bounds %s %s[%d] (length %d)", kindNames[k], name, i, n))
	}
	sz := elemSize[T]()
	t.recs = append(t.recs, access{kind: k, bytes: sz, addr: base + int64(i)*int64(sz)})
}

// Shared is a typed array in its block's emulated shared memory.
type Shared[T Float] struct {
	Name string
	data []T
	base int64
}

// SharedArray is `__shared__ T name[n]`: every thread of a block that asks for name gets the same
// array (zeroed, as the first thread asked for it).
func SharedArray[T Float](t *Thread, name string, n int) *Shared[T] {
	if s, ok := t.blk.shared[name].(*Shared[T]); ok {
		return s
	}
	s := &Shared[T]{Name: name, data: make([]T, n), base: t.blk.sharedSize}
	t.blk.sharedSize += int64(n) * int64(elemSize[T]())
	t.blk.shared[name] = s
	return s
}

// Load reads element i, recording the access.
func (s *Shared[T]) Load(t *Thread, i int) T {
	record[T](t, sharedLoad, s.Name, s.base, i, len(s.data))
	return s.data[i]
}

// Store writes element i, recording the access.
func (s *Shared[T]) Store(t *Thread, i int, v T) {
	record[T](t, sharedStore, s.Name, s.base, i, len(s.data))
	s.data[i] = v
}
