package e2e

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/cluster"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// The page's machine menu in a real browser: hidden on a server of one machine; with workers of two
// classes it lists them, the pick sends the page's runs to that class (the "Ran on" note names the
// worker), a reload keeps it, and once the class's worker has gone the menu says so and a run ends
// with the error naming the classes there are.
func TestMachineMenuInBrowser(t *testing.T) {
	const lesson = "---\ntitle: Machines\nsummary: s\norder: 1\n---\n\n# Machines\n\n```matmul\nkernels: [naive]\nsizes: [16]\nrepeats: 1\n```\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "01-machines.md"), []byte(lesson), 0o644); err != nil {
		t.Fatal(err)
	}
	noGPU := func(context.Context) nvidia.Report {
		return nvidia.Report{Unavailable: "no CUDA device (test)", Compiler: "none"}
	}
	menu := `document.getElementById("machine-pick")`
	options := `[...document.querySelectorAll("#machine-pick option")].map((o) => o.textContent).join("|")`

	// One machine: no menu. A subtest, so that its tab is handed on (cleared) to the page below
	// rather than held beside it (a second tab would be a browser context of its own).
	t.Run("one machine", func(t *testing.T) {
		alone := openPageWith(t, 1200, 900, server.Config{Config: machine.Config{Devices: noGPU}, LessonsDir: dir})
		alone.open("01-machines")
		alone.do("machines listed", waitReady(chromedp.CSS(`#machine-pick[data-loaded="1"]`)))
		if hidden := alone.str(`String(` + menu + `.hidden)`); hidden != "true" {
			t.Errorf("on a server of one machine the menu shows (%s)", alone.str(options))
		}
		alone.errs.check(t, "one machine")
	})

	const beat = 200 * time.Millisecond
	c, err := cluster.Start(context.Background(), cluster.Config{Listen: "127.0.0.1:0", LocalWorker: true, Local: noGPU(context.Background()), Heartbeat: beat, Settle: -1, Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	stops := map[string]func(){}
	for _, class := range []string{"lab-a", "lab-b"} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- cluster.RunWorker(ctx, cluster.WorkerConfig{Config: machine.Config{Name: class + "-1", Devices: noGPU}, Join: c.WorkerURL(), Token: c.Token(), Class: class,
				Heartbeat: beat, Out: io.Discard})
		}()
		var once sync.Once
		stops[class] = func() {
			once.Do(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("worker %s: %v", class, err)
				}
			})
		}
		t.Cleanup(stops[class])
	}
	for deadline := time.Now().Add(time.Minute); len(c.ListMachines()) < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the workers did not join: %+v", c.ListMachines())
		}
	}
	p := openPageWith(t, 1200, 900, server.Config{Config: machine.Config{Devices: noGPU}, LessonsDir: dir, Executor: c})
	cell := cellSel("01-machines-0")
	p.open("01-machines")
	p.do("menu", waitVisible(chromedp.CSS(`#machine-pick[data-loaded="3"]`)))
	if got, want := p.str(options), "any machine|lab-a (lab-a-1)|lab-b (lab-b-1)"; got != want {
		t.Errorf("menu options %q, want %q", got, want)
	}
	pick := func(class string) chromedp.Action[chromedp.Void] {
		return evalDo(`(() => { const s = document.querySelector("#machine-pick select"); s.value = ` + strconv.Quote(class) + `; s.dispatchEvent(new Event("change")); })()`)
	}
	ranOn := `[...document.querySelectorAll(` + strconv.Quote(cell+" .cell-notes li") + `)].map((li) => li.textContent).find((t) => t.startsWith("Ran on")) || ""`
	run := func(what string) {
		t.Helper()
		p.do(what, chromedp.Click(chromedp.CSS(cell+" .cell-run")), waitVisible(chromedp.CSS(cell+`:is([data-state="ended"], [data-state="error"])`)))
	}
	p.do("pick lab-b", pick("lab-b"))
	run("run on lab-b")
	if got := p.str(ranOn); !strings.HasPrefix(got, "Ran on lab-b-1 (class lab-b;") {
		t.Errorf("with lab-b picked the run's note is %q, want Ran on lab-b-1", got)
	}
	status := `document.querySelector(` + strconv.Quote(cell+" .cell-status") + `).textContent`
	if got := p.str(status); !strings.Contains(got, "measured on lab-b-1 just now") {
		t.Errorf("the status %q does not name the machine that measured", got)
	}
	if got := p.str(`document.querySelector(` + strconv.Quote(cell+" caption") + `).textContent`); !strings.HasPrefix(got, "Measured on the machine lab-b-1 just now") {
		t.Errorf("the results caption %q does not name the machine that measured", got)
	}
	if note := p.str(`document.querySelector(".machine-pick-note").textContent`); !strings.Contains(note, "go to that machine") {
		t.Errorf("the note beside the menu: %q", note)
	}

	// A reload keeps the pick.
	p.open("01-machines")
	p.do("menu after reload", waitVisible(chromedp.CSS(`#machine-pick[data-loaded="3"]`)))
	if got := p.str(`document.querySelector("#machine-pick select").value`); got != "lab-b" {
		t.Errorf("after a reload the page's machine is %q, want lab-b", got)
	}
	p.do("pick lab-a", pick("lab-a"))
	run("run on lab-a")
	if got := p.str(ranOn); !strings.HasPrefix(got, "Ran on lab-a-1 (class lab-a;") {
		t.Errorf("with lab-a picked the run's note is %q, want Ran on lab-a-1", got)
	}

	// The picked class's only worker leaves: the menu says so, and a run names the classes there are.
	stops["lab-a"]()
	for deadline := time.Now().Add(time.Minute); len(c.ListMachines()) > 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("lab-a-1 is still listed a minute after it stopped")
		}
	}
	run("run with lab-a gone")
	if status := p.str(`document.querySelector(` + strconv.Quote(cell+" .cell-status") + `).textContent`); !strings.Contains(status, `no machine of class "lab-a" is connected (classes now: lab-b)`) {
		t.Errorf("a run for a class that left: status %q", status)
	}
	p.do("menu refreshed", waitReady(chromedp.CSS(`#machine-pick[data-loaded="2"]`)))
	if got, want := p.str(options), "any machine|lab-b (lab-b-1)|lab-a (not connected now)"; got != want {
		t.Errorf("menu options after lab-a left: %q, want %q", got, want)
	}
	p.do("pick any machine", pick(""))
	run("run on any machine")
	if got := p.str(`document.querySelector(` + strconv.Quote(cell) + `).dataset.state`); got != "ended" {
		t.Errorf("a run on any machine ended %s: %s", got, p.str(`document.querySelector(`+strconv.Quote(cell+" .cell-status")+`).textContent`))
	}
	p.errs.check(t, "machine menu")
}

// The instructor's /class page in a real browser lists every machine live: this server's own and a
// worker that joined, with its class, slots, idle state and heartbeat, with no script error.
func TestClassMachinesInBrowser(t *testing.T) {
	noGPU := func(context.Context) nvidia.Report {
		return nvidia.Report{Unavailable: "no CUDA device (test)", Compiler: "none"}
	}
	const beat = 200 * time.Millisecond
	c, err := cluster.Start(context.Background(), cluster.Config{Listen: "127.0.0.1:0", LocalWorker: true, Local: noGPU(context.Background()), Heartbeat: beat, Settle: -1, Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cluster.RunWorker(ctx, cluster.WorkerConfig{Config: machine.Config{Name: "lab-a-1", Slots: 3, Devices: noGPU}, Join: c.WorkerURL(), Token: c.Token(), Class: "lab-a",
			Heartbeat: beat, Out: io.Discard})
	}()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(time.Minute); len(c.ListMachines()) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not join: %+v", c.ListMachines())
		}
	}
	p := openPageWith(t, 1200, 900, server.Config{Config: machine.Config{Devices: noGPU}, Executor: c})
	rows := `[...document.querySelectorAll("#machines tr")].map((tr) => [...tr.cells].map((td) => td.textContent).join(" | ")).join("\n")`
	p.do("the class page", chromedp.Navigate(p.base+"/class"), waitVisible(chromedp.CSS(`#machines tr:nth-child(2)`)))
	got := p.str(rows)
	lines := strings.Split(got, "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "(this server)") || !strings.Contains(lines[0], "never leaves") ||
		!strings.HasPrefix(lines[1], "lab-a-1 | lab-a | ") || !strings.Contains(lines[1], " | 3 | idle | ") || !strings.Contains(lines[1], " s ago)") {
		t.Errorf("the machines on /class:\n%s", got)
	}
	p.errs.check(t, "class page")
}
