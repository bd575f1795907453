package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
	"github.com/gpuplayground/playground/store"
)

// The instructor's /class in a real browser at 1,280 px: nothing wider than the window outside the
// tables' own scroll boxes, buttons in the app's accent style (not the browser's), the cell picker
// filled with the chosen lesson's cells (Show enabled once one is picked), no phantom student (the
// local user of a server without sign-in is not one), the progress grid drawn, no script error.
func TestClassPageInBrowser(t *testing.T) {
	p := openPageWith(t, 1280, 900, server.Config{})
	p.do("the class page", chromedp.Navigate(p.base+"/class"), waitVisible(chromedp.CSS(`#machines tr`)),
		waitVisible(chromedp.CSS(`#progress tr`)), waitVisible(chromedp.CSS(`#students tr`)))
	wide := p.str(`[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest(".class-scroll")).slice(0, 5).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).join(", ")`)
	if wide != "" || p.str(`String(document.documentElement.scrollWidth <= window.innerWidth)`) != "true" {
		t.Errorf("wider than the 1,280 px window: %s (page %s px)", wide, p.str(`String(document.documentElement.scrollWidth)`))
	}
	accent := p.str(`(() => { const d = document.createElement("div"); d.style.color = "var(--accent)"; document.body.append(d); const c = getComputedStyle(d).color; d.remove(); return c; })()`)
	if got := p.str(`getComputedStyle(document.getElementById("pause")).backgroundColor`); got != accent {
		t.Errorf("the Pause button's background: got %s, want the accent %s", got, accent)
	}
	cells := p.str(`[...document.querySelectorAll("#cell-pick option")].map((o) => o.value).join(" ")`)
	if !strings.HasPrefix(cells, " ") || len(strings.Fields(cells)) == 0 {
		t.Errorf("the cell picker: got %q, want all cells then the first lesson's cell ids", cells)
	}
	if p.str(`String(document.getElementById("show-board").disabled)`) != "true" {
		t.Error("Show is enabled with no cell picked")
	}
	p.do("picking a cell", evalDo(`const s = document.getElementById("cell-pick"); s.selectedIndex = 1; s.dispatchEvent(new Event("change"))`))
	if p.str(`String(document.getElementById("show-board").disabled)`) != "false" {
		t.Error("Show stays disabled with a cell picked")
	}
	if got := p.str(`document.getElementById("students").textContent`); !strings.Contains(got, "No student has joined yet") || strings.Contains(got, "this computer") {
		t.Errorf("the students without sign-in: %q, want none (no phantom local user)", got)
	}
	if got := p.str(`document.querySelectorAll("#progress-head th").length > 1 ? "ok" : document.getElementById("progress").textContent`); got != "ok" {
		t.Errorf("the progress grid has no lesson columns: %s", got)
	}
	p.errs.check(t, "class page")
}

// seedClass writes into a new data directory six students who joined from two addresses, each
// with a finished run of fast-cpu-matmul-0 whose table has integer sizes and relative errors, 0
// among them, and returns the directory.
func seedClass(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	add := func(run int64, seq int64, m server.Message) {
		b, _ := json.Marshal(m)
		if err := st.AddMessage(ctx, run, seq, m.Type, string(b), false); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"Ada", "Bob", "Cy", "Dee", "bot1", "bot2"} {
		addr := "203.0.113.7"
		if i >= 4 {
			addr = "198.51.100.9"
		}
		s, err := st.Join(ctx, name, "session-"+name, addr, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		run, err := st.AddRun(ctx, store.Run{Student: s.ID, Lesson: "fast-cpu-matmul", Cell: "fast-cpu-matmul-0", Source: "x", Machine: "CPU"})
		if err != nil {
			t.Fatal(err)
		}
		add(run.ID, 1, server.Message{Type: server.TypeTable, Body: machine.Body{Table: &cells.Table{ID: "results", Caption: "CPU results",
			Columns: []cells.Column{{Label: "kernel"}, {Label: "n"}, {Label: "throughput", Unit: "GFLOP/s"}, {Label: "rel. error"}}}}})
		for j, n := range []int{128, 256} {
			add(run.ID, int64(2+j), server.Message{Type: server.TypeRow, Body: machine.Body{Row: &cells.Row{Table: "results",
				Values: []any{"ikj", n, float64(i+1) * 1.25 * float64(j+1), 1.2e-7 * float64(j)}}}})
		}
		if err := st.Ended(ctx, run.ID, store.StatusDone, ""); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The instructor's /class of a class with results, in a real browser: students grouped by the
// address they joined from, each address with Block; the progress grid counts each student's cell;
// the picked cell's board titled by the cell, its integers as integers (128, not 128.0) and its
// relative errors to significant digits (1.20e-7 and 0, not 0.000).
func TestClassBoardInBrowser(t *testing.T) {
	p := openPageWith(t, 1280, 900, server.Config{DataDir: seedClass(t), Token: "class-token", InstructorToken: "teach"})
	p.do("the instructor joins", chromedp.Navigate(p.base+"/?token=teach"), waitVisible(chromedp.CSS(`input[name=name]`)),
		chromedp.SetValue(`input[name=name]`, "Teacher"), chromedp.Submit(`input[name=name]`), waitVisible(chromedp.CSS(`header.site`)))
	p.do("the class page", chromedp.Navigate(p.base+"/class"), waitVisible(chromedp.CSS(`#students tr.class-group`)),
		waitVisible(chromedp.CSS(`#progress tr`)),
		evalDo(`const l = document.getElementById("lesson-pick"); l.value = "fast-cpu-matmul"; l.dispatchEvent(new Event("change"));
			const c = document.getElementById("cell-pick"); c.value = "fast-cpu-matmul-0"; c.dispatchEvent(new Event("change"));
			document.getElementById("show-board").click()`),
		waitVisible(chromedp.CSS(`#board tr`)))
	groups := p.str(`[...document.querySelectorAll("#students tr.class-group th")].map((th) => th.textContent).join(" | ")`)
	if groups != "203.0.113.7: 4 studentsBlock | 198.51.100.9: 2 studentsBlock | instructors" {
		t.Errorf("the students' groups: %q", groups)
	}
	want := fmt.Sprintf("Ada1/2✓ 0/%d", quizQuestions(t, "fast-cpu-matmul.md"))
	if got := p.str(`[...document.querySelectorAll("#progress tr")].find((tr) => tr.cells[0].textContent === "Ada")?.textContent.replaceAll("–", "") || ""`); got != want {
		t.Errorf("Ada's progress row (– for lessons not begun left out): %q, want %s (a cell of two, no question right)", got, want)
	}
	if got := p.str(`document.querySelector("#board-extras svg title")?.textContent || document.querySelector("#board-extras svg")?.textContent.slice(0, 200) || ""`); !strings.Contains(got, "Class results of fast-cpu-matmul-0") {
		t.Errorf("the class chart's title: %q", got)
	}
	rows := p.str(`[...document.querySelectorAll("#board tr")].filter((tr) => tr.cells[0].textContent === "bot2").map((tr) => [...tr.cells].slice(1, 5).map((td) => td.textContent).join(" ")).join(" | ")`)
	if rows != "ikj 256 15 1.20e-7 | ikj 128 7.50 0" {
		t.Errorf("bot2's rows on the board: %q, want integers as integers and errors to significant digits", rows)
	}
	p.errs.check(t, "class page")
}

// quizQuestions counts the check-yourself questions ("- q:" items of its quiz fences) of the
// embedded lesson file.
func quizQuestions(t *testing.T, file string) int {
	t.Helper()
	b, err := fs.ReadFile(lessons.Embedded, file)
	if err != nil {
		t.Fatal(err)
	}
	n, in := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "```quiz"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && strings.HasPrefix(line, "- q:"):
			n++
		}
	}
	if n == 0 {
		t.Fatalf("%s has no quiz questions", file)
	}
	return n
}
