package cells

import (
	"errors"
	"strings"
	"testing"
)

type flowSpec struct {
	ID      string   `yaml:"id"`
	Kernels []string `yaml:"kernels"`
	Sizes   []int    `yaml:"sizes"`
	Repeats int      `yaml:"repeats"`
}

// A YAML syntax error in a flow list lands on the learner's line, not on the line yaml.v3 reports
// (0-based for its parser's errors: the list's opening line or the one before it); where the parser
// cannot say which line of a list, the message names both.
func TestYAMLErrorInFlowListOnLearnersLine(t *testing.T) {
	for _, c := range []struct {
		src      string
		line     int
		contains string
	}{
		// a list left open: the line the list is on, where the `]` is missing
		{"kernels: [naive, tiled\nsizes: [64]\n", 1, "the list on line 1 has no closing `]`"},
		{"id: a\nkernels: [naive, tiled\nsizes: [64]\nrepeats: 2\n", 2, "the list on line 2 has no closing `]`"},
		{"id: a\nkernels: [naive,\n  tiled\nsizes: [64]\n", 3, "the list that opens on line 2 has no closing `]` (end it on line 3)"},
		{"id: a\nsizes: [64, 128\n", 2, "the list on line 2 has no closing `]`"},
		// an empty entry on the list's second line
		{"kernels: [naive,\n  tiled,,\n  simd]\n", 2, "did not find expected node content"},
		{"id: x\nrepeats: 3\nkernels: [a,\n   b,\n   c,,\n   d]\n", 5, "did not find expected node content"},
		// on one line
		{"id: x\nkernels: [a,,b]\nsizes: [1]\n", 2, "did not find expected node content"},
		{"kernels: [a,,b]\n", 1, "did not find expected node content"},
		// a stray `]` after the list: the parser's own line, one below what it reports
		{"id: x\nkernels: [a, b]]\nsizes: [1]\n", 2, "did not find expected key"},
	} {
		var v flowSpec
		err := Decode(c.src, &v)
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a *SpecError", c.src, err)
			continue
		}
		if se.Line != c.line || !strings.Contains(se.Msg, c.contains) {
			t.Errorf("%q: line %d: %s; want line %d, saying %q", c.src, se.Line, se.Msg, c.line, c.contains)
		}
	}
}

// A list spanning lines whose mistake the parser cannot place gives both ends of the list.
func TestFlowLineUnsureNamesBothLines(t *testing.T) {
	line, msg, ok := flowLine("id: x\nkernels: [a,\n  b c: d,\n  e]\n", 1, "did not find expected ',' or ']'")
	if !ok || line != 2 || !strings.Contains(msg, "somewhere in the list on lines 2 to 4") {
		t.Errorf("got line %d %q %v", line, msg, ok)
	}
	// A scanner's error keeps its line.
	if _, _, ok := flowLine("a: b: c\n", 1, "mapping values are not allowed in this context"); ok {
		t.Errorf("a scanner error was moved")
	}
}
