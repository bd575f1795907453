// Package launch is the launch header of kernel cells: a grid (cuda) or dispatch (wgsl) written as
// one to three integer formulas in the problem size n, parsed once and evaluated exactly per size
// within the API's per-dimension limits.
package launch

import (
	"fmt"

	"github.com/gpuplayground/playground/cells"
)

// Shape is a kernel launch's shape as one to three formulas in n (x, y, z): a cuda cell's grid (in
// thread blocks), a wgsl cell's dispatch (in workgroups). A dimension without a formula is 1.
type Shape struct {
	// Key is the spec key the formulas came from ("grid", "dispatch"), for errors.
	Key string
	// Src is each formula's text, "1" where none was given.
	Src [3]string
	f   [3]*Formula
	// lines are the formulas' cell lines, for errors.
	lines [3]int
}

// Limits bound a Shape per dimension: 1 to Max[i] of Unit ("blocks", "workgroups"), as API
// ("CUDA", "WebGPU") allows.
type Limits struct {
	Max       [3]int64
	Unit, API string
}

// Parse parses the formulas fs of spec key key (written on line): 1 to 3 of them, each a
// Formula. Errors are *cells.SpecError values on the formula's own line.
func Parse(key string, line int, fs []cells.At[string]) (Shape, error) {
	l := Shape{Key: key, Src: [3]string{"1", "1", "1"}, lines: [3]int{line, line, line}}
	if len(fs) < 1 || len(fs) > 3 {
		return l, cells.Errorf(line, "%s has %d formulas; give 1 to 3 (x, y, z)", key, len(fs))
	}
	for i, f := range fs {
		formula, err := ParseFormula(f.V)
		if err != nil {
			return l, cells.Errorf(f.Line, "%s formula %q: %v (write formulas in n, like ceil(n/16))", key, f.V, err)
		}
		l.Src[i], l.f[i], l.lines[i] = f.V, formula, f.Line
	}
	return l, nil
}

// Formula is dimension i's parsed formula (0: x, 1: y, 2: z), or nil where none was given.
func (l Shape) Formula(i int) *Formula { return l.f[i] }

// Eval evaluates the formulas for size n: each must give a whole number within lim; overflow and
// division by zero are errors too. line is the cell line of the formula that failed.
func (l Shape) Eval(n int, lim Limits) (dims [3]int, line int, err error) {
	for i := range dims {
		if l.f[i] == nil {
			dims[i] = 1
			continue
		}
		num, den, err := l.f[i].Eval(n)
		switch {
		case err != nil:
			return dims, l.lines[i], fmt.Errorf("%s formula %q for n=%d: %v", l.Key, l.Src[i], n, err)
		case den != 1:
			return dims, l.lines[i], fmt.Errorf("%s formula %q gives %g for n=%d, not a whole number: `/` divides exactly, so round up with ceil(…)", l.Key, l.Src[i], float64(num)/float64(den), n)
		case num < 1 || num > lim.Max[i]:
			return dims, l.lines[i], fmt.Errorf("%s formula %q gives %d %s for n=%d; %s allows 1 to %d", l.Key, l.Src[i], num, lim.Unit, n, lim.API, lim.Max[i])
		}
		dims[i] = int(num)
	}
	return dims, 0, nil
}
