package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells/shared/kernelcell"
)

// checkTableNotes: a table whose caption runs on past its first sentence (the emulated table's
// says how every count is made, over a thousand characters) shows its title and that first
// sentence above the table, and folds the rest below it behind a closed "How these numbers are
// made"; a short caption shows whole, with no fold. Each DataTable is built as a run's table
// arrives (static/table.js).
func checkTableNotes(t *testing.T, p *browserPage) {
	t.Helper()
	long := kernelcell.EmulatedTable("H100 SXM")
	defs, err := json.Marshal([]map[string]any{
		{"id": "emulated", "caption": long.Caption, "columns": []map[string]string{{"label": "kernel"}}},
		{"id": "results", "caption": "Measured on this server: the median of five runs", "columns": []map[string]string{{"label": "kernel"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := p.str(`(async () => {
  const { DataTable } = await import("/static/table.js");
  return JSON.stringify(` + string(defs) + `.map((def) => {
    const box = new DataTable(def, "x.csv").box;
    const notes = box.querySelector("details.cell-table-notes");
    return {title: box.querySelector(".cell-table-title").textContent,
      notes: notes ? notes.querySelector("p").textContent : null, open: notes ? notes.open : false,
      summary: notes ? notes.querySelector("summary").textContent : "",
      last: box.lastElementChild.className, caption: box.querySelector("caption").textContent};
  }));
})()`)
	var got []struct {
		Title, Summary, Last, Caption string
		Notes                         *string
		Open                          bool
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 2 {
		t.Fatalf("table.js gave %s (%v)", out, err)
	}
	em, short := got[0], got[1]
	if em.Notes == nil {
		t.Fatalf("the emulated table's caption (%d characters) folds nothing: title %q", len(long.Caption), em.Title)
	}
	if !strings.HasSuffix(em.Title, "not measured.") || em.Title+" "+*em.Notes != long.Caption {
		t.Errorf("emulated table: title %q and notes %q, want the caption's first sentence (to \"not measured.\") and the rest of %q", em.Title, *em.Notes, long.Caption)
	}
	if em.Open || em.Summary != "How these numbers are made" || em.Last != "cell-table-notes" {
		t.Errorf("emulated table's notes: open %v, summary %q, last in its box %q; want closed, \"How these numbers are made\", below the table", em.Open, em.Summary, em.Last)
	}
	if em.Caption != em.Title {
		t.Errorf("the table's own caption (for screen readers) is %q, want its title and first sentence, %q (the notes are read where they fold)", em.Caption, em.Title)
	}
	if short.Notes != nil || short.Title != "Measured on this server: the median of five runs" || short.Caption != short.Title {
		t.Errorf("short caption: title %q, notes %v; want it whole, no fold", short.Title, short.Notes)
	}
}
