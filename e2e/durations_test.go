package e2e

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// shownSeconds reads a duration as the page's status line writes it ("12 ms", "0.4 s", "9.1 s",
// "1 min 5 s") and the half of its last shown digit (the rounding the display allows).
func shownSeconds(t *testing.T, s string) (secs, half float64) {
	t.Helper()
	if m := regexp.MustCompile(`^(\d+) min (\d+) s$`).FindStringSubmatch(s); m != nil {
		mins, _ := strconv.Atoi(m[1])
		sec, _ := strconv.Atoi(m[2])
		return float64(mins*60 + sec), 0.5
	}
	m := regexp.MustCompile(`^([\d.]+) (ms|s)$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%q is not a duration as the page writes one", s)
	}
	x, _ := strconv.ParseFloat(m[1], 64)
	if m[2] == "ms" {
		return x / 1000, 0.0005
	}
	if strings.Contains(m[1], ".") {
		return x, 0.05
	}
	return x, 0.5
}

// A run shown again (a reload) states when it ran and how long it took from the stored start and
// end, never how long the replay took; a run picked up while it runs goes on with its clock from its
// real start. The tolerances come from the stored times and the display's rounding, not from a
// wall-clock budget.
func TestShownAgainDurationsInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	cell := cellSel("counting-flops-0")
	status := func() string {
		return p.str(`document.querySelector(` + strconv.Quote(cell+" .cell-status") + `).textContent`)
	}
	// stored is the cell's latest run's stored start and end as the server keeps them, in ms since
	// the epoch, and the page's own rendering of the start (its locale).
	stored := func() (start, end float64, startText string) {
		s := p.str(`fetch("/api/state?lesson=counting-flops").then((r) => r.json()).then((st) => {
			const r = st.cells["counting-flops-0"].run;
			const s = Date.parse(r.started), e = r.ended ? Date.parse(r.ended) : 0;
			return [s, e, new Date(s).toLocaleString()].join("|");
		})`)
		parts := strings.SplitN(s, "|", 3)
		if len(parts) != 3 {
			t.Fatalf("stored times %q", s)
		}
		start, _ = strconv.ParseFloat(parts[0], 64)
		end, _ = strconv.ParseFloat(parts[1], 64)
		return start, end, parts[2]
	}

	// A run long enough that a replay's own few milliseconds cannot pass for it.
	p.open("counting-flops")
	p.do("run", setCellSource(cell, "kernels: [naive]\nsizes: [128, 256, 384]\nrepeats: 5\n"),
		chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)))
	live := status()
	start, end, startText := stored()
	took := (end - start) / 1000
	if end == 0 || took < 0.2 {
		t.Fatalf("the run took %.3f s by its stored times (live status %q): too short to tell a replay's time from it", took, live)
	}
	p.do("reload", chromedp.Reload(), waitVisible(chromedp.CSS(pageReady)),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)))
	again := status()
	m := regexp.MustCompile(`; ran (.+), took ([^,;()]+)$`).FindStringSubmatch(again)
	if m == nil {
		t.Fatalf("after a reload the status is %q (live: %q), want it to end \"; ran <date/time>, took <duration>\"", again, live)
	}
	if m[1] != startText {
		t.Errorf("after a reload: ran %q, want the stored start %q", m[1], startText)
	}
	if secs, half := shownSeconds(t, m[2]); math.Abs(secs-took) > half+0.001 {
		t.Errorf("after a reload: took %s, want the stored %.3f s (status %q)", m[2], took, again)
	}
	if regexp.MustCompile(` in \d`).MatchString(again) {
		t.Errorf("after a reload the status %q still says how long something took \"in\"", again)
	}

	// A run picked up while it runs: its clock goes on from its stored start.
	p.do("long run", setCellSource(cell, "kernels: [naive]\nsizes: [512]\nrepeats: 50\n"),
		chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="running"]`)))
	p.str(`new Promise((ok) => { const f = () => /^running… /.test(document.querySelector(` + strconv.Quote(cell+" .cell-status") + `).textContent) ? setTimeout(() => ok(""), 1500) : setTimeout(f, 50); f(); })`)
	p.do("reload while it runs", chromedp.Reload(), waitVisible(chromedp.CSS(pageReady)))
	// The status's seconds and the seconds since the stored start, read together in the page: the
	// stored start first, then the status as the clock's next tick writes it (a MutationObserver's
	// callback runs right after the tick's task), so a tick that a busy machine delays, or a slow
	// fetch, is not counted as the clock being behind.
	got := p.str(`new Promise((ok, fail) => {
		const sel = ` + strconv.Quote(cell+" .cell-status") + `;
		const f = () => {
			if (!/^running… /.test(document.querySelector(sel).textContent)) { setTimeout(f, 20); return; }
			fetch("/api/state?lesson=counting-flops").then((r) => r.json()).then((st) => {
				const r = st.cells["counting-flops-0"].run;
				const el = document.querySelector(sel);
				const obs = new MutationObserver(() => {
					const s2 = el.textContent;
					if (!/^running… /.test(s2)) return;
					obs.disconnect();
					ok([s2, (Date.now() - Date.parse(r.started)) / 1000, r.ended || ""].join("|"));
				});
				obs.observe(el, {childList: true, characterData: true, subtree: true});
			}, fail);
		};
		f();
	})`)
	parts := strings.SplitN(got, "|", 3)
	if parts[2] != "" {
		t.Fatalf("the long run ended before it was picked up (%q): make it longer", got)
	}
	sm := regexp.MustCompile(`^running… (.+?)(?: of about .*|; taking longer than .*)?$`).FindStringSubmatch(parts[0])
	if sm == nil {
		t.Fatalf("picked-up status %q", parts[0])
	}
	since, _ := strconv.ParseFloat(parts[1], 64)
	secs, half := shownSeconds(t, sm[1])
	// Read as a tick writes it, the shown time is the time since the stored start, within the
	// display's rounding (and a tick, for a clock that counts from its last tick), never ahead.
	if secs < since-0.2-half || secs > since+half+0.01 || since < 1.5 {
		t.Errorf("picked up: %q, %.3f s after the run's stored start; want the clock to go on from the start", parts[0], since)
	}
	p.do("stop", chromedp.Click(chromedp.CSS(cell+" .cell-stop")), waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)))
	p.errs.check(t, "durations")
}
