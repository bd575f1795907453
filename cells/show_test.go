package cells

import (
	"slices"
	"strings"
	"testing"
)

func showTable() Table {
	return Table{ID: "t", Columns: []Column{{Label: "kernel", Primary: true},
		{Label: "occupancy (theoretical) [sm__maximum_warps_per_active_cycle_pct]"},
		{Label: "modelled time (bound)", Unit: "µs", Primary: true}, {Label: "modelled", Unit: "GB/s"}, {Label: "rel. error"}}}
}

func TestParseShowAndShow(t *testing.T) {
	var y struct {
		Show At[[]At[string]] `yaml:"show"`
	}
	if err := Decode("show: [occupancy, modelled]\n", &y); err != nil {
		t.Fatal(err)
	}
	names, err := ParseShow(y.Show, showTable())
	if err != nil {
		t.Fatal(err)
	}
	orig := showTable()
	shown := orig.Show(names)
	var got []string
	for _, c := range shown.Columns {
		if c.Primary {
			got = append(got, c.Label)
		}
	}
	if want := "kernel|occupancy (theoretical) [sm__maximum_warps_per_active_cycle_pct]|modelled time (bound)|modelled"; strings.Join(got, "|") != want {
		t.Errorf("primary columns %q, want %q", strings.Join(got, "|"), want)
	}
	if orig.Columns[1].Primary {
		t.Error("Show changed the table it was given")
	}
}

func TestParseShowUnknownColumn(t *testing.T) {
	var y struct {
		Show At[[]At[string]] `yaml:"show"`
	}
	if err := Decode("show:\n  - occupancy\n  - occupncy\n", &y); err != nil {
		t.Fatal(err)
	}
	_, err := ParseShow(y.Show, showTable())
	se, ok := err.(*SpecError)
	if !ok {
		t.Fatalf("got %v, want a *SpecError", err)
	}
	if got, want := se.Line, 3; got != want {
		t.Errorf("error on line %d, want %d", got, want)
	}
	for _, want := range []string{`"occupncy"`, "kernel, occupancy, modelled time, modelled, rel. error"} {
		if !strings.Contains(se.Msg, want) {
			t.Errorf("error %q lacks %q", se.Msg, want)
		}
	}
	if names, err := ParseShow(At[[]At[string]]{}, showTable()); names != nil || err != nil {
		t.Errorf("no key: got %v, %v, want nil, nil", names, err)
	}
}

// Showing makes the named columns primary in the tables declared through it.
func TestShowingEmitter(t *testing.T) {
	rec := &tableRecorder{}
	Showing(rec, []string{"rel. error"}).Table(showTable())
	if !rec.tables[0].Columns[4].Primary {
		t.Error("rel. error is not primary through Showing")
	}
	if Showing(rec, nil) != Emitter(rec) {
		t.Error("Showing with no names is not e itself")
	}
}

type tableRecorder struct {
	Emitter
	tables []Table
	rows   []Row
}

func (r *tableRecorder) Table(t Table) { r.tables = append(r.tables, t) }
func (r *tableRecorder) Row(row Row)   { r.rows = append(r.rows, row) }

// A recording stays valid when a cell gains a show: key (a line or a block list), and only then.
func TestSourceHashIgnoresShow(t *testing.T) {
	src := "kernels: [cublas]\nsizes: [256]\n"
	if got, want := SourceHash("kernels: [cublas]\nshow: [rel. error]\nsizes: [256]\n"), SourceHash(src); got != want {
		t.Errorf("show: changed the hash: %s, want %s", got, want)
	}
	if got, want := SourceHash("kernels: [cublas]\nshow:\n  - rel. error\n  - GFLOP/s\nsizes: [256]\n"), SourceHash(src); got != want {
		t.Errorf("a show: block list changed the hash: %s, want %s", got, want)
	}
	if SourceHash("kernels: [cublas]\nsizes: [512]\n") == SourceHash(src) {
		t.Error("another size kept the hash")
	}
	if SourceHash("kernels:\n  - cublas\nsizes: [256]\n") == SourceHash("kernels:\nsizes: [256]\n") {
		t.Error("another key's block list was dropped")
	}
}

// show: never folds a table that marks no columns primary (a recorded table): the named columns
// are shown, and so is every other, the ones that say what a row is first of all.
func TestShowNeverFolds(t *testing.T) {
	plain := Table{ID: "recorded", Columns: []Column{{Label: "kernel"}, {Label: "n"}, {Label: "throughput", Unit: "GFLOP/s"}, {Label: "rel. error"}}}
	shown := plain.Show([]string{"rel. error"}).Shown()
	for i, c := range plain.Columns {
		if !shown[i] {
			t.Errorf("show: [rel. error] hides %q", c.Label)
		}
	}
	folded := showTable().Show([]string{"rel. error"}).Shown()
	if got, want := folded, []bool{true, false, true, false, true}; !slices.Equal(got, want) {
		t.Errorf("a table with primary columns shows %v, want %v", got, want)
	}
}

// show: puts the columns it names right after a table's key columns, in the order named, and
// Showing puts each row's values in the same order; a table without key columns keeps its order.
func TestShowReorders(t *testing.T) {
	keyed := Table{ID: "t", Columns: []Column{{Label: "kernel", Key: true, Primary: true}, {Label: "a", Primary: true},
		{Label: "b"}, {Label: "n", Key: true, Primary: true}, {Label: "c (µs)"}}}
	rec := &tableRecorder{}
	e := Showing(rec, []string{"c", "b"})
	e.Table(keyed)
	e.Row(Row{Table: "t", Values: []any{"naive", 1, 2, 64, 3}})
	e.Row(Row{Table: "other", Values: []any{"x", "y"}})
	var got []string
	for _, c := range rec.tables[0].Columns {
		got = append(got, c.Label)
	}
	if want := []string{"kernel", "n", "c (µs)", "b", "a"}; !slices.Equal(got, want) {
		t.Errorf("columns %q, want %q", got, want)
	}
	if got, want := rec.rows[0].Values, []any{"naive", 64, 3, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("row %v, want %v", got, want)
	}
	if got, want := rec.rows[1].Values, []any{"x", "y"}; !slices.Equal(got, want) {
		t.Errorf("another table's row %v, want %v", got, want)
	}
	if got := showTable().Order([]string{"rel. error", "kernel"}); !slices.IsSorted(got) {
		t.Errorf("a table without key columns reordered: %v", got)
	}
}
