package cellstest

import "testing"

func TestSmall(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"kernels: [naive, ikj]\nsizes: [256, 64, 1024]\ndtype: float32\nrepeats: 3\n", "kernels: [naive, ikj]\nsizes: [64]\ndtype: float32\nrepeats: 1\n"},
		{"sizes: [1048576]\nrepeats: 5", "sizes: [256]\nrepeats: 1"},
		{"sizes: [512, 1024]", "sizes: [256]"},
		{"sizes: [16, 64]", "sizes: [16]"},
		// The header ends at ---: a kernel's code is left alone.
		{"kernel: k\nsizes: [512, 256]\n---\n// sizes: [1, 2]\nrepeats: 9\n", "kernel: k\nsizes: [256]\n---\n// sizes: [1, 2]\nrepeats: 9\n"},
		// What is not a list of sizes stays as written.
		{"n: 128\nsizes: [a, 2]\nsizes: 64\n", "n: 128\nsizes: [a, 2]\nsizes: 64\n"},
		{"sizes: [128, 64] # two\r\n", "sizes: [64]\r\n"},
	} {
		if got := Small(c.in); got != c.want {
			t.Errorf("Small(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// SmallAt caps the size kept at its maxN instead of SmallMaxN; the rest as Small.
func TestSmallAt(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"sizes: [256, 512]\nrepeats: 3\n", "sizes: [128]\nrepeats: 1\n"},
		{"sizes: [64, 512]", "sizes: [64]"},
		{"sizes: [1048576]\n---\nsizes: [4]\n", "sizes: [128]\n---\nsizes: [4]\n"},
	} {
		if got := SmallAt(c.in, 128); got != c.want {
			t.Errorf("SmallAt(%q, 128) = %q, want %q", c.in, got, c.want)
		}
	}
}
