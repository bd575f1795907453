package cells

import (
	"slices"
	"strings"
)

// MaxShow caps the names of a cell's `show:` key.
const MaxShow = 32

// ColumnName is the name by which a cell's `show:` key names c: its label up to the first " [" (the
// Nsight Compute metric it mirrors), " (" or ", " (a qualifier), so "occupancy (theoretical) [sm__…]"
// is "occupancy", "modelled time (bound)" is "modelled time" and "L1 hit rate, modelled […]" is "L1
// hit rate". The whole label names it too.
func ColumnName(c Column) string {
	name := c.Label
	for _, sep := range []string{" [", " (", ", "} {
		if i := strings.Index(name, sep); i > 0 {
			name = name[:i]
		}
	}
	return name
}

// names reports whether c is named name (ColumnName or the whole label).
func named(c Column, name string) bool { return name == c.Label || name == ColumnName(c) }

// ParseShow reads a cell's `show:` key: names of columns that the cell's tables show beside their
// primary ones (the page folds the others behind "more columns"). tables are the tables the cell's
// kind can declare; a name none of their columns has is a *SpecError on its line that lists the
// valid names. An absent key is nil, nil.
func ParseShow(key At[[]At[string]], tables ...Table) ([]string, error) {
	if key.Line == 0 {
		return nil, nil
	}
	if len(key.V) > MaxShow {
		return nil, Errorf(key.Line, "show names %d columns; at most %d", len(key.V), MaxShow)
	}
	var valid []string
	for _, t := range tables {
		for _, c := range t.Columns {
			if n := ColumnName(c); !slices.Contains(valid, n) {
				valid = append(valid, n)
			}
		}
	}
	var names []string
	for _, n := range key.V {
		ok := false
		for _, t := range tables {
			ok = ok || slices.ContainsFunc(t.Columns, func(c Column) bool { return named(c, n.V) })
		}
		if !ok {
			line := n.Line
			if line == 0 {
				line = key.Line
			}
			return nil, Errorf(line, "show: no column %q; the columns are %s", n.V, strings.Join(valid, ", "))
		}
		names = append(names, n.V)
	}
	return names, nil
}

// Show returns t with the columns named in names (ColumnName or label) marked Primary, the others
// as they were, when t marks some columns Primary (the page folds the unmarked ones behind "more
// columns": `show:` unfolds the named ones). A table that marks none shows every column, and Show
// returns it as it is: naming columns never folds the others, so that no table hides the columns
// that say what a row is (kernel, n, …). t's Columns are copied, never changed.
func (t Table) Show(names []string) Table {
	if len(names) == 0 || !slices.ContainsFunc(t.Columns, func(c Column) bool { return c.Primary }) {
		return t
	}
	t.Columns = slices.Clone(t.Columns)
	for i, c := range t.Columns {
		if slices.ContainsFunc(names, func(n string) bool { return named(c, n) }) {
			t.Columns[i].Primary = true
		}
	}
	return t
}

// Shown reports which of t's columns the page shows before "more columns" is opened: those marked
// Primary where t marks some, every column where it marks none.
func (t Table) Shown() []bool {
	folds := slices.ContainsFunc(t.Columns, func(c Column) bool { return c.Primary })
	shown := make([]bool, len(t.Columns))
	for i, c := range t.Columns {
		shown[i] = !folds || c.Primary
	}
	return shown
}

// Showing returns e, its tables declared with the columns named in names made primary (Table.Show);
// e itself when names is empty. Ask and Placed reach through it to e.
func Showing(e Emitter, names []string) Emitter {
	if len(names) == 0 {
		return e
	}
	return shown{e, names}
}

type shown struct {
	Emitter
	names []string
}

func (s shown) Table(t Table) { s.Emitter.Table(t.Show(s.names)) }

func (s shown) unwrap() Emitter { return s.Emitter }
