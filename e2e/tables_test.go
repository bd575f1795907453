package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// tableCheck is the page's check of every table in it: with its fold closed, whether the table is
// wider than the box it scrolls in; then, with every "more columns" toggle pressed, whether each
// column that has a value shows.
const tableCheck = `(() => {
  const out = [];
  for (const box of document.querySelectorAll(".cell-table-box")) {
    const scroll = box.querySelector(".cell-table-scroll");
    const table = box.querySelector("table.cell-table");
    const visible = () => [...table.tHead.rows[0].cells].filter((th) => th.getClientRects().length > 0).length;
    const more = box.querySelector(".cell-table-more:not([hidden])");
    const r = {cell: box.closest(".cell").id, table: table.dataset.table,
      // a lesson's tables are blocks that scroll themselves (style.css: article table)
      width: Math.max(table.scrollWidth, scroll.scrollWidth, Math.ceil(table.getBoundingClientRect().width)), box: Math.floor(scroll.clientWidth),
      shown: visible(), columns: table.tHead.rows[0].cells.length,
      filled: [...table.tHead.rows[0].cells].filter((th) => !th.hidden).length, toggle: !!more};
    if (more) {
      more.click();
      r.opened = visible();
      r.expanded = more.getAttribute("aria-expanded");
      more.click();
      r.closed = visible();
    }
    out.push(r);
  }
  return JSON.stringify(out);
})()`

// addTables puts each run's tables and rows into p's page where the run puts them, through the
// page's own CellView.
func addTables(t *testing.T, p *browserPage, runs []lessonTables) {
	t.Helper()
	js, err := json.Marshal(runs)
	if err != nil {
		t.Fatal(err)
	}
	p.str(`(async () => {
  const { CellView } = await import("/static/view.js");
  for (const c of ` + string(js) + `) {
    const view = new CellView(document.getElementById(c.Cell));
    for (const t of c.Tables) view.addTable(t);
    for (const r of c.Rows) view.addRow(r);
  }
  await document.fonts.ready;
  return "";
})()`)
}

// checkTablesFit runs tableCheck in p's page, 1,280 px wide, fails t for each table that does not
// fit its box with its fold closed or whose toggle does not show the rest, and returns how many
// tables it checked.
func checkTablesFit(t *testing.T, p *browserPage) int {
	t.Helper()
	shots := os.Getenv("TABLE_SHOTS")
	var res []struct {
		Cell, Table                                        string
		Width, Box, Shown, Columns, Filled, Opened, Closed int
		Toggle                                             bool
		Expanded                                           string
	}
	if err := json.Unmarshal([]byte(p.str(tableCheck)), &res); err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		name := fmt.Sprintf("%s, table %s", r.Cell, r.Table)
		t.Logf("%s: %d px in a %d px box, %d of %d columns shown (toggle %v)", name, r.Width, r.Box, r.Shown, r.Filled, r.Toggle)
		if r.Width > r.Box+1 {
			t.Errorf("%s: %d px wide in a %d px box at 1,280 px, fold closed (%d of %d columns shown)", name, r.Width, r.Box, r.Shown, r.Filled)
		}
		if r.Toggle {
			if r.Opened != r.Filled || r.Expanded != "true" || r.Closed != r.Shown {
				t.Errorf("%s: the toggle shows %d of %d columns (aria-expanded %q), closed again %d (want %d)", name, r.Opened, r.Filled, r.Expanded, r.Closed, r.Shown)
			}
		} else if r.Shown != r.Filled {
			t.Errorf("%s: %d of %d columns shown, and no toggle for the rest", name, r.Shown, r.Filled)
		}
		if shots != "" {
			png, err := chromedp.Run(p.ctx, chromedp.Screenshot(chromedp.CSS(fmt.Sprintf(`#%s .cell-table-box:has(table[data-table=%q])`, cssEscapeID(r.Cell), r.Table))))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(shots, fmt.Sprintf("%s-%s.png", r.Cell, r.Table)), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return len(res)
}

// cssEscapeID escapes a cell id (which starts with a digit) for a CSS id selector.
func cssEscapeID(id string) string { return fmt.Sprintf(`\%x %s`, id[0], id[1:]) }
