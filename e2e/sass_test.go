package e2e

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/server"
)

// A cuda cell's Show SASS compiles the learner's kernel, assembles it with ptxas and lists it with
// nvdisasm in the server's compile worker (no GPU needed), and the page shows each line of the
// kernel with the SASS instructions it became and a table of each line's count: first_matmul's
// multiply-add line holds an FFMA. It needs NVRTC, ptxas and nvdisasm (all three in CI).
func TestShowSASSInBrowser(t *testing.T) {
	chromiumPath(t)
	if _, err := nvidia.LoadNVRTC(); err != nil || nvidia.LookPtxas() == "" || nvidia.LookNvdisasm() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Show SASS needs NVRTC, ptxas and nvdisasm in CI (NVRTC: %v)", err)
		}
		t.Skip("skipping: Show SASS needs NVRTC, ptxas and nvdisasm")
	}
	base := serve(t, server.Config{})
	ctx := newTab(t, 1200, 1000)
	var pageErrs pageErrors
	if err := chromedp.Listen(ctx, pageErrs.listen); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute) // a guard against a hang, not a timing
	defer cancel()
	kcell := cellSel("first-cuda-kernel-0")
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/lessons/first-cuda-kernel"),
		waitVisible(chromedp.CSS(pageReady)),
		chromedp.Click(chromedp.CSS(kcell+" .cell-action[data-action=sass]")),
		waitVisible(chromedp.CSS(kcell+`[data-state="ended"]`)),
		waitVisible(chromedp.CSS(kcell+" .cell-text")),
	)
	if err != nil {
		t.Fatalf("Show SASS: %v", err)
	}
	read := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return s
	}
	query := func(sel string) string { return "document.querySelectorAll(" + strconv.Quote(sel) + ")" }
	listing := read("[..." + query(kcell+" .cell-text") + "].map(e => e.textContent).join('\\n')")
	status := read(query(kcell+" .cell-status") + "[0].textContent")
	summary := read("[..." + query(kcell+" .cell-table[data-table=sass] tbody tr") + "].map(r => r.textContent).join('\\n')")
	rows := strings.Count(summary, "\n") + 1
	if summary == "" {
		rows = 0
	}
	if !strings.Contains(listing, "// first_matmul: ") || !strings.Contains(listing, "FFMA") {
		t.Errorf("Show SASS: got %.300q, want first_matmul's listing with an FFMA", listing)
	}
	if !strings.Contains(listing, "instructions): ") {
		t.Errorf("Show SASS: no line of the kernel with its count in %.300q", listing)
	}
	if rows == 0 || !strings.Contains(summary, "FFMA") {
		t.Errorf("Show SASS: %d rows in the table (%q), want the kernel's lines, one with FFMA", rows, summary)
	}
	if !strings.Contains(status, "SASS of each line is below") {
		t.Errorf("Show SASS: status %q", status)
	}
	pageErrs.check(t, "Show SASS")
}
