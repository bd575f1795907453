package cells

import (
	"slices"
	"testing"
)

// Sizes reads a header's flow list of sizes; WithSizes rewrites that line alone, and leaves a
// source without one (or with one in another form, or a `sizes:` below the header) as it was.
func TestSizesAndWithSizes(t *testing.T) {
	src := "kernels: [naive]\nsizes: [256, 512, 4096]  # the largest costs most\nrepeats: 3\n---\nsizes: [1]\n"
	got, ok := Sizes(src)
	if want := []int{256, 512, 4096}; !ok || !slices.Equal(got, want) {
		t.Errorf("Sizes: got %v, %v; want %v", got, ok, want)
	}
	out, ok := WithSizes(src, []int{256, 512})
	if want := "kernels: [naive]\nsizes: [256, 512]\nrepeats: 3\n---\nsizes: [1]\n"; !ok || out != want {
		t.Errorf("WithSizes: got %q, %v; want %q", out, ok, want)
	}
	for _, src := range []string{"kernels: [naive]\n", "sizes:\n  - 64\n", "sizes: [64, x]\n", "---\nsizes: [64]\n", "sizes: 64\n"} {
		if got, ok := Sizes(src); ok {
			t.Errorf("Sizes(%q): got %v, want none", src, got)
		}
		if out, ok := WithSizes(src, []int{8}); ok || out != src {
			t.Errorf("WithSizes(%q): got %q, %v; want it as it was", src, out, ok)
		}
	}
}
