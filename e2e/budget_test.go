package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A budget cell in a real browser: its table and chart arrive, the status says the times are
// modelled, and the kind's module moves the sentence saying what dominates from the notes to under
// the chart.
func TestBudgetCellInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	ctx := p.ctx
	cell := cellSel("budgets-and-supercomputers-2")
	p.open("budgets-and-supercomputers")
	p.do("running the budget cell", chromedp.Click(chromedp.CSS(cell+" .cell-run")), waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)))
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(cell+" .cell-table[data-table=budget] tbody tr")+`).length`))
	if err != nil {
		t.Fatal(err)
	}
	// The verdict is the output's last part, after the chart.
	last, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+strconv.Quote(cell+" .cell-output")+`).lastElementChild.className`))
	if err != nil {
		t.Fatal(err)
	}
	status, verdict, notes, svg := text(cell+" .cell-status"), text(cell+" .cell-verdict"), text(cell+" .cell-notes"), text(cell+" .cell-chart")
	if rows != 5 || !strings.Contains(status, "modelled") {
		t.Errorf("%d budget rows, status %q; want 5 rows and a status saying modelled", rows, status)
	}
	// Memory dominates on the four datasheet rows; the CPU row's rates are measured now, and a
	// machine busy with other work measures a peak low enough for arithmetic to dominate there.
	if last != "cell-verdict" || !strings.HasPrefix(verdict, "Memory dominates on every row.") && !strings.HasPrefix(verdict, "Arithmetic dominates on this machine's CPU; memory dominates on 4 of the 5 rows.") ||
		strings.Contains(notes, "dominates on") {
		t.Errorf("last part %q, verdict %q, notes %q: want the sentence under the chart only", last, verdict, notes)
	}
	if !strings.Contains(svg, "1 year") {
		t.Errorf("chart lacks its time axis: %q", svg)
	}
	p.errs.check(t, "budget cell")
}
