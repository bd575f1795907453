package cells

import (
	"slices"
	"strings"
	"sync"
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

// ParseShow reads a cell's `show:` key: names of columns that the cell's tables show, unfolded
// and right after their key columns (Table.Show); no column is hidden by it. tables are the tables the cell's
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

// Show returns t as a cell's `show:` key names (names: ColumnName or label) asks, never hiding a
// column: where t marks some columns Primary (the page folds the unmarked ones behind "more
// columns"), the named ones are marked Primary too; a table that marks none shows every column, and
// keeps it so. Where t has Key columns, the named columns move, in the order named, to right after
// them (Order). t's Columns are copied, never changed.
func (t Table) Show(names []string) Table {
	if len(names) == 0 {
		return t
	}
	cols, order := t.Columns, t.Order(names)
	t.Columns = make([]Column, len(cols))
	folds := slices.ContainsFunc(cols, func(c Column) bool { return c.Primary })
	for i, from := range order {
		t.Columns[i] = cols[from]
		if folds && slices.ContainsFunc(names, func(n string) bool { return named(cols[from], n) }) {
			t.Columns[i].Primary = true
		}
	}
	return t
}

// Order is where Show puts t's columns for names: Order[i] is the index in t.Columns of the column
// shown at i. The Key columns come first, then the columns named (in the order of names), then the
// rest, each group in t's order; a table without Key columns keeps its order.
func (t Table) Order(names []string) []int {
	order := make([]int, 0, len(t.Columns))
	placed := make([]bool, len(t.Columns))
	add := func(ok func(i int, c Column) bool) {
		for i, c := range t.Columns {
			if !placed[i] && ok(i, c) {
				order, placed[i] = append(order, i), true
			}
		}
	}
	if slices.ContainsFunc(t.Columns, func(c Column) bool { return c.Key }) {
		add(func(_ int, c Column) bool { return c.Key })
		for _, n := range names {
			add(func(_ int, c Column) bool { return named(c, n) })
		}
	}
	add(func(int, Column) bool { return true })
	return order
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

// Showing returns e, its tables declared with the columns named in names shown as Table.Show says,
// and their rows' values put in the same order; e itself when names is empty. Ask and Placed reach
// through it to e.
func Showing(e Emitter, names []string) Emitter {
	if len(names) == 0 {
		return e
	}
	return &shown{Emitter: e, names: names, orders: map[string][]int{}}
}

type shown struct {
	Emitter
	names []string

	mu     sync.Mutex
	orders map[string][]int // table id → Order, for the tables whose columns moved
}

func (s *shown) Table(t Table) {
	order := t.Order(s.names)
	s.mu.Lock()
	if slices.IsSorted(order) {
		delete(s.orders, t.ID)
	} else {
		s.orders[t.ID] = order
	}
	s.mu.Unlock()
	s.Emitter.Table(t.Show(s.names))
}

// Row puts r's values in its table's shown order (a row of another length is passed as it is).
func (s *shown) Row(r Row) {
	s.mu.Lock()
	order := s.orders[r.Table]
	s.mu.Unlock()
	if order != nil && len(r.Values) == len(order) {
		values := make([]any, len(order))
		for i, from := range order {
			values[i] = r.Values[from]
		}
		r.Values = values
	}
	s.Emitter.Row(r)
}

func (s *shown) Emit(ev Event) {
	switch {
	case ev.Type == TypeTable && ev.Table != nil:
		s.Table(*ev.Table)
	case ev.Type == TypeRow && ev.Row != nil:
		s.Row(*ev.Row)
	default:
		s.Emitter.Emit(ev)
	}
}

func (s *shown) unwrap() Emitter { return s.Emitter }
