package cuda

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuplayground/playground/gpumodel"
)

// hottestPTX is how many PTX lines, at most, get their share written beside them (those with the
// largest shares, of at least minShown).
const (
	hottestPTX = 8
	minShown   = 0.01
)

// termLabel is a model term as the per-line column and note name it: "shared-memory", "DRAM", …
func termLabel(term string) string {
	if term == "shared memory" {
		return "shared-memory"
	}
	return term
}

// shareColumn is the per-line table's column of shares: "share of modelled shared-memory time".
func shareColumn(term string) string {
	return fmt.Sprintf("share of modelled %s time", termLabel(term))
}

var (
	ptxFile = regexp.MustCompile(`^\s*\.file\s+(\d+)\s+"([^"]*)"`)
	ptxLoc  = regexp.MustCompile(`^\s*\.loc\s+(\d+)\s+(\d+)`)
)

// srcLine is a line of a source file.
type srcLine struct {
	file string
	line int
}

// ptxSources maps each line of ptx (1-based) to the source line of the .loc in force there, as the
// virtual GPU reads them (a .loc holds until the next one): lines before the first .loc have none.
func ptxSources(ptx string) map[int]srcLine {
	lines := strings.Split(ptx, "\n")
	files := map[int]string{} // NVRTC writes the .file directives after the code
	for _, text := range lines {
		if m := ptxFile.FindStringSubmatch(text); m != nil {
			n, _ := strconv.Atoi(m[1])
			files[n] = m[2]
		}
	}
	out := map[int]srcLine{}
	cur, ok := srcLine{}, false
	for i, text := range lines {
		if m := ptxLoc.FindStringSubmatch(text); m != nil {
			f, _ := strconv.Atoi(m[1])
			l, _ := strconv.Atoi(m[2])
			cur, ok = srcLine{files[f], l}, true
			continue
		}
		if ok {
			out[i+1] = cur
		}
	}
	return out
}

// sourceShares adds up the PTX lines' shares by the line of the cell's kernel (cell.cu) they came
// from: kernel source line → fraction. What ran on no line of it (PTX without a .loc, or of a header)
// is the rest, 1 − the sum.
func sourceShares(ptx string, s gpumodel.Shares) map[int]float64 {
	if len(s.Lines) == 0 {
		return nil
	}
	locs := ptxSources(ptx)
	out := map[int]float64{}
	for l, f := range s.Lines {
		if src, ok := locs[l]; ok && strings.HasSuffix(src.file, "cell.cu") {
			out[src.line] += f
		}
	}
	return out
}

// hottest is the keys of shares in decreasing order of share (ties by key), at most n, each at
// least minShown.
func hottest(shares map[int]float64, n int) []int {
	keys := make([]int, 0, len(shares))
	for k, f := range shares {
		if f >= minShown {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b int) int {
		if shares[a] != shares[b] {
			if shares[a] > shares[b] {
				return -1
			}
			return 1
		}
		return a - b
	})
	return keys[:min(n, len(keys))]
}

// percent writes a share: "61%", "4.2%", "0.3%".
func percent(f float64) string {
	if p := 100 * f; p >= 9.95 {
		return fmt.Sprintf("%.0f%%", p)
	} else {
		return fmt.Sprintf("%.1f%%", p)
	}
}

// sharesNote is the one-line summary of where the modelled time goes: the bound, then the cell lines
// with the largest shares ("line 12 (`sum += As[ty][p] * Bs[p][tx];`) takes 61% of the modelled
// shared-memory time"), what the shares are of, and what is estimated.
func (p *showPTX) sharesNote(n int, m gpumodel.Time, s gpumodel.Shares, src map[int]float64) string {
	term := gpumodel.Dominant(m)
	var b strings.Builder
	fmt.Fprintf(&b, "Where the time goes (modelled on the %s from the emulated counts of one launch at n=%d): ", gpumodel.Or(p.r.spec.GPU).Name, n)
	if m.Bound == "launch" {
		fmt.Fprintf(&b, "%s takes %s, and the launch's fixed %s is longer than any term its work makes; the largest of those is %s (%s).",
			p.r.spec.Kernel, micro(m.Seconds), micro(gpumodel.LaunchSeconds(gpumodel.Or(p.r.spec.GPU))), termLabel(term.Name), micro(term.Seconds))
	} else {
		fmt.Fprintf(&b, "%s takes %s, bound by %s (%s, the largest term).", p.r.spec.Kernel, micro(m.Seconds), term.Name, micro(term.Seconds))
	}
	var parts []string
	covered := 0.0
	for _, l := range hottest(src, 3) {
		if covered >= 0.8 {
			break
		}
		covered += src[l]
		what := fmt.Sprintf("line %d", p.r.spec.SourceLine+l-1)
		if len(parts) == 0 {
			what = "Line" + strings.TrimPrefix(what, "line")
		}
		if code := p.sourceText(l); code != "" {
			what += fmt.Sprintf(" (`%s`)", code)
		}
		if len(parts) == 0 {
			parts = append(parts, fmt.Sprintf("%s takes %s of the %s time", what, percent(src[l]), termLabel(term.Name)))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s", what, percent(src[l])))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(&b, " %s.", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, " Shares of %s.", s.Of)
	if s.Approx != "" {
		fmt.Fprintf(&b, " Estimated: %s.", s.Approx)
	}
	return b.String()
}

// sourceText is line l of the kernel's source, trimmed, its comment dropped, shortened to 100 characters.
func (p *showPTX) sourceText(l int) string {
	lines := strings.Split(p.r.spec.Source, "\n")
	if l < 1 || l > len(lines) {
		return ""
	}
	t := lines[l-1]
	if i := strings.Index(t, "//"); i >= 0 {
		t = t[:i]
	}
	t = strings.TrimSpace(t)
	if r := []rune(t); len(r) > 100 {
		t = string(r[:99]) + "…"
	}
	return t
}

// micro writes seconds in µs, or in ms from 1 ms: "3.21 µs", "1.85 ms".
func micro(s float64) string {
	if s >= 1e-3 {
		return strconv.FormatFloat(s*1e3, 'f', max(0, 2-int(math.Floor(math.Log10(s*1e3)))), 64) + " ms"
	}
	return strconv.FormatFloat(s*1e6, 'f', max(0, 2-int(math.Floor(math.Log10(max(s*1e6, 1e-3))))), 64) + " µs"
}
