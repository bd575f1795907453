package lessons

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells/budget"
)

// The lesson "Why coalescing matters" shows kernels of matmul.cu: each CUDA snippet must be the real
// code, word for word, because the virtual GPU's counts beside it are of that very code (its PTX).
func TestLessonCodeIsTheRealCode(t *testing.T) {
	lesson, err := os.ReadFile("why-coalescing-matters.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../gpu/nvidia/src/matmul.cu")
	if err != nil {
		t.Fatal(err)
	}
	words := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	fences := regexp.MustCompile("(?s)```cpp\n(.*?)```").FindAllStringSubmatch(string(lesson), -1)
	for _, f := range fences {
		if !strings.Contains(words(string(src)), words(f[1])) {
			t.Errorf("a CUDA snippet of the lesson is not in matmul.cu:\n%s", f[1])
		}
	}
	if len(fences) == 0 {
		t.Error("the lesson shows no kernel of matmul.cu")
	}
}

// sourced are the lessons in which every figure sits next to its source: each sentence of the prose
// (and each table row) that states a number cites a source of the lesson's Sources list, as [n], or
// the number is computed by a cell. Add a lesson here once it keeps to that.
var sourced = []string{"from-graphics-to-ai.md", "budgets-and-supercomputers.md", "beyond-matmul.md", "the-tpu-as-a-system.md", "occupancy-and-latency-hiding.md", "transformer-accounting.md", "mixed-precision.md", "parallelism.md", "serving.md", "flash-attention.md", "a-hopper-gemm.md"}

// A figure is a number standing on its own: "3.14·10²³", "1,281,167", "70 times", "2006". Digits
// inside a name (GPT-3, H100, TPU v4, FP32, ResNet-50, 224×224 after its first number) are not.
var figure = regexp.MustCompile(`(^|[^\p{L}\p{N}\-_/.])[0-9][0-9,.]*`)

func TestEveryFigureHasASource(t *testing.T) {
	for _, name := range sourced {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		prose, sources := lessonProse(string(src))
		if len(sources) == 0 {
			t.Errorf("%s: no numbered Sources list", name)
		}
		cited := map[string]bool{}
		for _, s := range sentences(prose) {
			refs := regexp.MustCompile(`\[(\d+)\]`).FindAllStringSubmatch(s, -1)
			for _, r := range refs {
				if !sources[r[1]] {
					t.Errorf("%s: [%s] is not in the Sources list: %q", name, r[1], s)
				}
				cited[r[1]] = true
			}
			bare := regexp.MustCompile(`\[\d+\]`).ReplaceAllString(s, "")
			if figure.MatchString(bare) && len(refs) == 0 {
				t.Errorf("%s: a figure without a source: %q", name, s)
			}
		}
		for n := range sources {
			if !cited[n] {
				t.Errorf("%s: source %s is never cited", name, n)
			}
		}
	}
}

// The checker itself: what counts as a figure, and what a sentence is.
func TestFigureChecker(t *testing.T) {
	for s, want := range map[string]bool{
		"GPT-3 has 175 billion parameters":     true,
		"about 3.14·10²³ FLOPs":                true,
		"in 2006":                              true,
		"an H100 SXM, a TPU v4, FP32 and BF16": false,
		"ResNet-50 on ImageNet":                false,
		"see /lessons/many-gpus":               false,
		"a training step costs three passes":   false,
	} {
		if got := figure.MatchString(s); got != want {
			t.Errorf("figure in %q: got %v, want %v", s, got, want)
		}
	}
	prose, _ := lessonProse("> **The model says:** one [1].\n> Two, 2 of them.\n")
	got := sentences(prose + "\n\nOne [1]. Two, e.g. 2 of them [2]. Three\nlines.\n\n| a | 3 |\n- item 4")
	want := []string{"**The model says:** one [1].", "Two, 2 of them.", "One [1].", "Two, e.g. 2 of them [2].", "Three lines.", "| a | 3 |", "item 4"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sentences: got %q, want %q", got, want)
	}
}

// lessonProse returns a lesson's text without its front matter, fenced blocks (cells and code),
// headings, inline code, link targets and Sources section, and the numbers of its sources.
func lessonProse(src string) (string, map[string]bool) {
	if _, rest, ok := strings.Cut(strings.TrimPrefix(src, "---\n"), "\n---\n"); ok {
		src = rest
	}
	src = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(src, "")
	body, list, _ := strings.Cut(src, "\n## Sources\n")
	sources := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(\d+)\. `).FindAllStringSubmatch(list, -1) {
		sources[m[1]] = true
	}
	body = regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(body, "")
	body = regexp.MustCompile(`(?m)^>[ \t]?`).ReplaceAllString(body, "") // an aside's lines are prose too
	body = regexp.MustCompile("`[^`]*`").ReplaceAllString(body, "")
	body = regexp.MustCompile(`\]\([^)]*\)`).ReplaceAllString(body, "]")
	return body, sources
}

// sentences splits prose into sentences (a full stop, question or exclamation mark, then a space and
// a capital letter or the end), and table rows and list items into one each.
func sentences(prose string) []string {
	var out []string
	for _, block := range regexp.MustCompile(`\n\s*\n`).Split(prose, -1) {
		var lines []string
		for _, line := range strings.Split(block, "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "|"):
				if !regexp.MustCompile(`^\|[-| ]*\|$`).MatchString(line) {
					out = append(out, line)
				}
				continue
			case strings.HasPrefix(line, "- "):
				out = append(out, strings.TrimPrefix(line, "- "))
				continue
			}
			if line != "" {
				lines = append(lines, line)
			}
		}
		text := strings.Join(lines, " ")
		for text != "" {
			end := regexp.MustCompile(`[.!?]\s+[A-Z*\[]`).FindStringIndex(text)
			if end == nil {
				out = append(out, text)
				break
			}
			out = append(out, strings.TrimSpace(text[:end[0]+1]))
			text = text[end[1]-1:]
		}
	}
	return out
}

// The lesson "Budgets and supercomputers" quotes the published inputs of the budget cell's presets: both
// must say the same.
func TestBudgetPresetsMatchTheLesson(t *testing.T) {
	raw, err := os.ReadFile("budgets-and-supercomputers.md")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Join(strings.Fields(string(raw)), " ")
	for _, tt := range []struct {
		constant, value float64 // the preset's input, and the value written in the lesson
		written         string
	}{
		{budget.GPT3FLOPs, 3.14e23, "3.14·10²³"},
		{budget.GPT3Params, 175e9, "175 billion parameters"},
		{budget.GPT3Tokens, 300e9, "300 billion tokens"},
		{budget.ResNet50MACs, 3.8e9, "3.8·10⁹ multiply-adds"},
		{budget.ImageNetImages, 1281167, "1,281,167 training images"},
		{budget.ResNet50Batch, 256, "256 images"},
		{budget.TrainingFactor, 3, "three forward passes"},
	} {
		if tt.constant != tt.value || !strings.Contains(src, tt.written) {
			t.Errorf("the budget cell uses %g; the lesson should say %q (%g)", tt.constant, tt.written, tt.value)
		}
	}
	for _, want := range []string{"3.14·10²³", "3.8 billion", "1,281,167", "175 billion", "300 billion"} {
		found := false
		for _, w := range budget.Presets {
			found = found || strings.Contains(w.How+w.Source, want)
		}
		if !found {
			t.Errorf("no preset states %q", want)
		}
	}
}
