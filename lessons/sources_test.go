package lessons

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The lesson "Why coalescing matters" shows kernels of matmul.cu: each CUDA snippet must be the real
// code, word for word, because the virtual GPU's counts beside it are of that very code (its PTX).
func TestLessonCodeIsTheRealCode(t *testing.T) {
	lesson, err := os.ReadFile("12-why-coalescing-matters.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../kernels/cuda/src/matmul.cu")
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
