package e2e

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// shot is one picture of a page: its viewport, its colour scheme, and how much of it.
type shot struct {
	suffix        string
	width, height int64
	dark          bool
	full          bool    // the whole page (a JPEG), else the first screen (a PNG)
	scale         float64 // of a full page: its size against the page's CSS pixels
}

// shots keep the pictures small (about 15 MB for all 22 lessons, the index, /devices and /class): first screens as PNG, whole pages as
// JPEG at quality 35, scaled down; dark mode as a whole page only (it is the light layout recoloured).
var shots = []shot{
	{suffix: "1280.png", width: 1280, height: 800},
	{suffix: "1280-full.jpg", width: 1280, height: 800, full: true, scale: 0.4},
	{suffix: "390.png", width: 390, height: 844},
	{suffix: "390-full.jpg", width: 390, height: 844, full: true, scale: 0.5},
	{suffix: "dark-full.jpg", width: 1280, height: 800, dark: true, full: true, scale: 0.4},
}

// TestLessonScreenshots is not a check but the pictures a change to the site's look is reviewed
// by: with PLAYGROUND_SCREENSHOTS=1 it runs every cell of every lesson at its smallest size
// (cellstest.Small; WebGPU on SwiftShader) and writes each lesson's first screen (PNG) and whole page
// (JPEG, reduced) at 1,280 and 390 px wide, and the whole page in dark mode, to docs/screenshots/<lesson>-…, and the
// index's, /devices' and /class' (the instructor's page, after the lessons' runs) the same way.
// PLAYGROUND_SCREENSHOTS_ONLY=text limits it to the lessons whose file name contains text ("index"
// for the index); PLAYGROUND_SCREENSHOTS_DIR=dir writes there instead, and
// PLAYGROUND_SCREENSHOTS_SCALE=1 draws whole pages at full size (for looking closely, not for docs/).
func TestLessonScreenshots(t *testing.T) {
	if os.Getenv("PLAYGROUND_SCREENSHOTS") != "1" {
		t.Skip("writes docs/screenshots/: PLAYGROUND_SCREENSHOTS=1 go test ./e2e -run LessonScreenshots")
	}
	out := filepath.Join("..", "docs", "screenshots")
	if dir := os.Getenv("PLAYGROUND_SCREENSHOTS_DIR"); dir != "" {
		out = dir
	}
	fullScale, _ := strconv.ParseFloat(os.Getenv("PLAYGROUND_SCREENSHOTS_SCALE"), 64)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	p := openPageOn(t, 1280, 800, server.Config{Config: machine.Config{Roofline: peaks.Options{PeakSizes: []int{64, 128}, TriadMiB: 16, Repeats: 3}}}, true)
	files, err := fs.Glob(lessons.Embedded, "*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("lessons: %v %v", files, err)
	}
	// "" is the index, "devices" the machine's page, "class" the instructor's (last: it shows the runs)
	pages := append(append([]string{"", "devices"}, files...), "class")
	for _, f := range pages {
		slug := strings.TrimSuffix(f, ".md")
		name := slug
		if slug == "" {
			name = "index"
		}
		if only := os.Getenv("PLAYGROUND_SCREENSHOTS_ONLY"); only != "" && !strings.Contains(name, only) {
			continue
		}
		if slug == "" || slug == "devices" || slug == "class" {
			p.do("opening "+name, chromedp.Navigate(p.base+"/"+slug), waitVisible(chromedp.CSS("main")))
		} else {
			p.open(slug)
			runEveryCell(p)
		}
		for _, s := range shots {
			if fullScale > 0 && s.full {
				s.scale = fullScale
			}
			img := capture(t, p, s)
			if err := os.WriteFile(filepath.Join(out, name+"-"+s.suffix), img, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		p.errs.check(t, name)
	}
}

// runEveryCell runs the open lesson's cells, each at its smallest size, one after the other; a cell
// that has not ended after cellGuard is reported (its status and the page's banner) and left.
func runEveryCell(p *browserPage) {
	p.t.Helper()
	ids := p.str(`[...document.querySelectorAll(".cell")].map((e) => e.id).join(" ")`)
	for _, id := range strings.Fields(ids) {
		sel := cellSel(id)
		src := p.str(`document.querySelector(` + strconv.Quote(sel) + `).playground.getSource()`)
		if small := cellstest.Small(src); small != src {
			p.do("shrinking "+id, setCellSource(sel, small))
		}
		p.do("running "+id, chromedp.Click(chromedp.CSS(sel+" .cell-run")))
		ctx, cancel := context.WithTimeout(p.ctx, cellGuard)
		err := chromedp.Do(ctx, waitVisible(chromedp.CSS(sel+`:is([data-state="ended"], [data-state="error"])`)))
		cancel()
		if err != nil {
			p.t.Errorf("%s has not ended after %v: status %q, banner %q", id, cellGuard,
				p.str(`document.querySelector(`+strconv.Quote(sel+" .cell-status")+`).textContent`),
				p.str(`document.querySelector("#conn-banner").textContent + " (ws " + document.body.dataset.ws + ")"`))
		}
	}
	p.do("scrolling to the top", evalDo(`window.scrollTo(0, 0)`))
}

// cellGuard is how long runEveryCell waits for one cell: a guard against a hang, not a budget.
const cellGuard = 4 * time.Minute

// capture takes one picture of the open page as s says.
func capture(t *testing.T, p *browserPage, s shot) []byte {
	t.Helper()
	scheme := "light"
	if s.dark {
		scheme = "dark"
	}
	var img []byte
	p.do("capturing "+s.suffix,
		chromedp.EmulateViewport(s.width, s.height),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
				return err
			}
			params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng}
			if s.full {
				size, err := chromedp.Evaluate[[]float64](`[document.documentElement.scrollWidth, document.documentElement.scrollHeight]`)(ctx, tg)
				if err != nil {
					return err
				}
				q, beyond := int64(35), true
				params = page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatJpeg, Quality: &q, CaptureBeyondViewport: &beyond,
					Clip: &page.Viewport{Width: size[0], Height: size[1], Scale: s.scale}}
			}
			res, err := cdp.Call(ctx, tg, page.CaptureScreenshot, params)
			img = res.Data
			return err
		}))
	return img
}
