package vgpu

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
)

// vprintf and __assertfail, the two external functions the CUDA compilers call (CUDA C++
// Programming Guide, "Formatted Output" and "Assertion"). printf's arguments arrive in a buffer in
// the thread's local memory, each aligned to its size (ints 4 bytes, long/long long/pointers and
// doubles 8: a float is promoted to double). Output is collected per CTA and joined in CTA order,
// so it is deterministic, at most MaxPrintfBytes per launch (beyond that it ends with
// "… (output truncated)" and which CTAs' lines survive depends on scheduling).

// MaxPrintfBytes is the most printf output a launch keeps.
const MaxPrintfBytes = 64 << 10

const printfTruncated = "… (output truncated)\n"

type printChunk struct {
	cta  int
	text []byte
}

func (c *cta) flushPrint(i int) {
	if len(c.out) == 0 {
		return
	}
	L := c.L
	L.printMu.Lock()
	if L.printBytes <= MaxPrintfBytes {
		L.prints = append(L.prints, printChunk{i, append([]byte(nil), c.out...)})
		L.printBytes += len(c.out)
	} else {
		L.printTrunc = true
	}
	L.printMu.Unlock()
	c.out = c.out[:0]
}

func (L *launch) printOutput() string {
	if len(L.prints) == 0 {
		return ""
	}
	sort.Slice(L.prints, func(i, j int) bool { return L.prints[i].cta < L.prints[j].cta })
	var b strings.Builder
	for _, p := range L.prints {
		b.Write(p.text)
	}
	s := b.String()
	if len(s) > MaxPrintfBytes || L.printTrunc {
		s = strings.ToValidUTF8(s[:min(len(s), MaxPrintfBytes)], "")
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		s += printfTruncated
	}
	return s
}

// cstring reads a NUL-terminated string at a generic address (at most max bytes), faulting on a
// bad address as any load would.
func (c *cta) cstring(w *warp, in *inst, l int, addr uint64, maxLen int) string {
	var b []byte
	for len(b) < maxLen {
		m, _, _ := c.resolve(w, in, l, addr+uint64(len(b)), 1, spGeneric, accLoad)
		if m[0] == 0 {
			break
		}
		b = append(b, m[0])
	}
	return string(b)
}

func execVprintf(w *warp, in *inst, m uint32) {
	c := w.c
	site := in.call
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		f := c.cstring(w, in, l, c.argValue(w, in, l, site.args[0]), 4096)
		buf := c.argValue(w, in, l, site.args[1])
		text, n := formatPrintf(f, func(off, size int) uint64 {
			mem, _, _ := c.resolve(w, in, l, buf+uint64(off), size, spGeneric, accLoad)
			return readN(mem, size)
		}, func(addr uint64) string {
			if addr == 0 {
				return "(null)"
			}
			return c.cstring(w, in, l, addr, 4096)
		})
		if room := MaxPrintfBytes + 1 - len(c.out); room > 0 {
			c.out = append(c.out, text[:min(len(text), room)]...)
		}
		if len(site.rets) > 0 {
			a := site.rets[0]
			var v [8]byte
			writeN(v[:], 8, uint64(int64(n)))
			if a.frameReg >= 0 {
				copy(c.localBytes(w, in, l, w.regs[a.frameReg][l], a.size), v[:a.size])
			} else {
				w.regs[a.reg][l] = uint64(uint32(n))
			}
		}
	}
}

// execAssertfail is __assertfail(message, file, line, function, charSize): the kernel stops with an
// "assertion" fault.
func execAssertfail(w *warp, in *inst, m uint32) {
	c := w.c
	site := in.call
	l := bits.TrailingZeros32(m)
	str := func(i int) string {
		a := c.argValue(w, in, l, site.args[i])
		if a == 0 {
			return ""
		}
		return c.cstring(w, in, l, a, 1024)
	}
	msg, file, fn := str(0), str(1), str(3)
	line := uint32(c.argValue(w, in, l, site.args[2]))
	f := &Fault{Kind: "assertion", Msg: fmt.Sprintf("Assertion `%s` failed", msg)}
	if fn != "" {
		f.Msg += " in " + fn
	}
	if file != "" {
		f.Source = fmt.Sprintf("%s:%d", file, line)
	}
	c.fault(f, w, l, in)
}

// formatPrintf formats a C printf format with arguments read by arg(offset, size) from the
// argument buffer and strings by str(address); it returns the text and the arguments consumed.
func formatPrintf(f string, arg func(off, size int) uint64, str func(addr uint64) string) (string, int) {
	var b strings.Builder
	args := &printfArgs{arg: arg}
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		start := i
		i++
		if i < len(f) && f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		var spec string
		var long int
		spec, long, i = printfSpec(f, i, args)
		if i >= len(f) {
			b.WriteString(f[start:])
			break
		}
		if !printfConv(&b, f[i], spec, long, args, str) {
			b.WriteString(f[start : i+1])
		}
	}
	return b.String(), args.n
}

// printfArgs reads a printf's arguments in turn from its argument buffer, each aligned to its size.
type printfArgs struct {
	arg    func(off, size int) uint64
	off, n int // the next offset, and the arguments read
}

func (a *printfArgs) next(size int) uint64 {
	a.off = (a.off + size - 1) / size * size
	v := a.arg(a.off, size)
	a.off += size
	a.n++
	return v
}

// printfSpec reads the flags, width, precision and length modifiers of the conversion whose
// first character after the % is f[i]: spec is them as a Go format ("%-8.3"; a * width or
// precision is read from the arguments), long the length (0 int, -1 short, -2 char, 1 long), and
// j the index of the conversion character (len(f) when the format ends first).
func printfSpec(f string, i int, args *printfArgs) (spec string, long, j int) {
	spec = "%"
	for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
		spec += f[i : i+1]
		i++
	}
	num := func() {
		if i < len(f) && f[i] == '*' {
			spec += fmt.Sprint(int32(args.next(4)))
			i++
			return
		}
		for i < len(f) && f[i] >= '0' && f[i] <= '9' {
			spec += f[i : i+1]
			i++
		}
	}
	num()
	if i < len(f) && f[i] == '.' {
		spec += "."
		i++
		num()
	}
	for i < len(f) && strings.IndexByte("hlLqjzt", f[i]) >= 0 {
		switch f[i] {
		case 'h':
			long--
		default:
			long = 1
		}
		i++
	}
	return spec, long, i
}

// printfConv writes conversion conv of spec and length long (printfSpec) with its argument; false
// for a conversion it does not know, which the caller copies as written.
func printfConv(b *strings.Builder, conv byte, spec string, long int, args *printfArgs, str func(addr uint64) string) bool {
	size := 4
	if long > 0 {
		size = 8
	}
	switch conv {
	case 'd', 'i':
		v := args.next(size)
		var x int64
		switch {
		case size == 8:
			x = int64(v)
		case long == -1:
			x = int64(int16(v))
		case long <= -2:
			x = int64(int8(v))
		default:
			x = int64(int32(v))
		}
		fmt.Fprintf(b, spec+"d", x)
	case 'u', 'x', 'X', 'o':
		v := args.next(size)
		switch {
		case size == 8:
		case long == -1:
			v = uint64(uint16(v))
		case long <= -2:
			v = uint64(uint8(v))
		default:
			v = uint64(uint32(v))
		}
		verb := string(conv)
		if conv == 'u' {
			verb = "d"
		}
		fmt.Fprintf(b, spec+verb, v)
	case 'c':
		fmt.Fprintf(b, spec+"c", rune(byte(args.next(4))))
	case 'f', 'F', 'e', 'E', 'g', 'G', 'a', 'A':
		printfFloat(b, conv, spec, math.Float64frombits(args.next(8)))
	case 's':
		fmt.Fprintf(b, spec+"s", str(args.next(8)))
	case 'p':
		v := args.next(8)
		if v == 0 {
			fmt.Fprintf(b, strings.TrimSuffix(spec, ".")+"s", "(nil)")
		} else {
			fmt.Fprintf(b, spec+"s", fmt.Sprintf("%#x", v))
		}
	case 'n':
		args.next(8) // %n writes nothing here
	default:
		return false
	}
	return true
}

// printfFloat writes x by a floating-point conversion as C does: inf and nan spelled out, %g with
// C's default precision.
func printfFloat(b *strings.Builder, conv byte, spec string, x float64) {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		s := "inf"
		switch {
		case math.IsNaN(x):
			s = "nan"
		case x < 0:
			s = "-inf"
		case strings.Contains(spec, "+"):
			s = "+inf"
		}
		if conv >= 'A' && conv <= 'Z' {
			s = strings.ToUpper(s)
		}
		fmt.Fprintf(b, strings.ReplaceAll(spec, "0", "")+"s", s)
		return
	}
	verb := string(conv)
	switch conv {
	case 'F':
		verb = "f"
	case 'a':
		verb = "x"
	case 'A':
		verb = "X"
	case 'g', 'G':
		if !strings.Contains(spec, ".") {
			spec += ".6" // C's default precision (Go's %g is the shortest form)
		}
	}
	fmt.Fprintf(b, spec+verb, x)
}
