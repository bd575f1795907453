package lessons

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The lesson "Why coalescing matters" shows the coalesced kernel in CUDA and in Go side by side:
// each snippet must be the real code, word for word, so the emulator's counts describe what the
// lesson shows.
func TestLessonCodeIsTheRealCode(t *testing.T) {
	lesson, err := os.ReadFile("10-why-coalescing-matters.md")
	if err != nil {
		t.Fatal(err)
	}
	fences := regexp.MustCompile("(?s)```(cpp|go)\n(.*?)```").FindAllStringSubmatch(string(lesson), -1)
	sources := map[string]string{"cpp": "../kernels/cuda/src/matmul.cu", "go": "../kernels/simt/ladder.go"}
	words := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	checked := 0
	for _, f := range fences {
		src, err := os.ReadFile(sources[f[1]])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(words(string(src)), words(f[2])) {
			t.Errorf("the %s snippet of lesson 10 is not in %s:\n%s", f[1], sources[f[1]], f[2])
		}
		checked++
	}
	if checked != 2 {
		t.Errorf("checked %d snippets, want the CUDA and the Go one", checked)
	}
}
