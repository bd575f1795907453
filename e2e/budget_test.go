package e2e

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/server"
)

// A budget cell in a real browser: its table and chart arrive, the status says the times are
// modelled, and the kind's module moves the sentence saying what dominates from the notes to under
// the chart.
func TestBudgetCellInBrowser(t *testing.T) {
	exe := chromiumPath(t)
	s, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stopServer := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(srvCtx, ln) }()
	defer func() {
		stopServer()
		<-served
	}()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	var pageErrs pageErrors
	if err := chromedp.Listen(ctx, pageErrs.listen); err != nil {
		t.Fatal(err)
	}
	// Only a guard against a hang: no step is timed.
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelTimeout()

	cell := cellSel("02-from-graphics-to-ai-2")
	err = chromedp.Do(ctx,
		chromedp.Navigate("http://"+ln.Addr().String()+"/lessons/02-from-graphics-to-ai"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ws="open"]`)),
		chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		chromedp.WaitVisible(chromedp.CSS(cell+`[data-state="ended"]`)),
	)
	if err != nil {
		t.Fatalf("running the budget cell: %v", err)
	}
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
	if last != "cell-verdict" || !strings.HasPrefix(verdict, "Memory dominates on every row.") || strings.Contains(notes, "dominates on") {
		t.Errorf("last part %q, verdict %q, notes %q: want the sentence under the chart only", last, verdict, notes)
	}
	if !strings.Contains(svg, "1 year") {
		t.Errorf("chart lacks its time axis: %q", svg)
	}
	pageErrs.check(t, "budget cell")
}
