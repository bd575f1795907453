package cells

import (
	"context"
	"errors"
	"testing"
	"time"
)

// sumRun is a run of a parsed "n: N" cell, keeping the cell it was made for.
type sumRun struct {
	n    int
	cell Cell
}

func (sumRun) Estimate() time.Duration            { return time.Second }
func (sumRun) Run(context.Context, Emitter) error { return nil }
func (r sumRun) Exclusive() bool                  { return r.n > 1 }

func sumDef() Def[int] {
	return Def[int]{Name: "sum", Script: "export default {};", Language: "yaml+sum",
		Parse: func(src string) (int, error) {
			var y struct {
				Common `yaml:",inline"`
				N      At[int] `yaml:"n"`
			}
			if err := Decode(src, &y); err != nil {
				return 0, err
			}
			if y.N.V < 1 {
				return 0, Errorf(y.N.Line, "n is %d; use 1 or more", y.N.V)
			}
			return y.N.V, nil
		},
		Run: func(n int, c Cell) Run { return sumRun{n, c} }}
}

// A kind made by Define is what its Def says: its name, module and language; Parse is the Def's
// Parse then its Run, given the spec and the cell; a Parse error comes back as it is, with no run.
func TestDefine(t *testing.T) {
	k := Define(sumDef())
	if k.Name() != "sum" || k.Script() != "export default {};" {
		t.Errorf("name %q, script %q", k.Name(), k.Script())
	}
	if l, ok := k.(Languager); !ok || l.Language() != "yaml+sum" {
		t.Errorf("Languager %v: want yaml+sum", ok)
	}
	rec := &Recording{}
	r, err := k.Parse(Cell{ID: "a", Source: "n: 3\n", Recording: rec})
	if got, ok := r.(sumRun); err != nil || !ok || got.n != 3 || got.cell.ID != "a" || got.cell.Recording != rec {
		t.Errorf("Parse: got %#v, %v; want the run of 3 for cell a with its recording", r, err)
	}
	r, err = k.Parse(Cell{Source: "n: 0\n"})
	var se *SpecError
	if r != nil || !errors.As(err, &se) || se.Line != 1 {
		t.Errorf("Parse of n: 0: got %v, %v; want no run and a *SpecError at line 1", r, err)
	}
	if a, ok := k.(Actioner); !ok || len(a.Actions()) != 0 {
		t.Errorf("a Def without actions: Actioner %v with %d actions, want none", ok, len(a.Actions()))
	}
	// Parse (the package's, as the server calls it) keeps what the run says of itself.
	if r, err := Parse(k, "", Cell{Source: "n: 2\nmachine: lab-a\n"}); err != nil || !Exclusive(r) || NeedsOf(r).Machine != "lab-a" {
		t.Errorf("cells.Parse: %v, exclusive %v, needs %+v", err, r != nil && Exclusive(r), NeedsOf(r))
	}
}

// Def.Action parses a cell as the kind's Parse does and runs the spec its own way; cells.Parse finds
// it by name, and the kind's own run stays its Run.
func TestDefineAction(t *testing.T) {
	d := sumDef()
	d.Actions = []Action{d.Action("double", "Double", func(n int, c Cell) Run { return sumRun{2 * n, c} })}
	k := Define(d)
	a, ok := k.(Actioner)
	if !ok || len(a.Actions()) != 1 || a.Actions()[0].Name != "double" || a.Actions()[0].Label != "Double" {
		t.Fatalf("actions: %v", ok)
	}
	r, err := Parse(k, "double", Cell{Source: "n: 4\n"})
	if got, ok := r.(sumRun); err != nil || !ok || got.n != 8 {
		t.Errorf("double of 4: %#v, %v; want the run of 8", r, err)
	}
	if _, err := Parse(k, "double", Cell{Source: "n: -1\n"}); err == nil {
		t.Error("double of n: -1: no error, want Parse's")
	}
	if r, err := Parse(k, "run", Cell{Source: "n: 4\n"}); err != nil || r.(sumRun).n != 4 {
		t.Errorf("run of 4: %#v, %v", r, err)
	}
}
