package nvidia

import "testing"

// Line ends and splices are read as clang reads them: a lone CR ends a line, blanks may stand
// between a splice's backslash and its line end, and CR LF or LF CR after a backslash is one line
// end; form feed and vertical tab are blanks.
func TestLineSplice(t *testing.T) {
	for _, tc := range []struct {
		src    string
		at     int
		brk    int
		splice int
		blanks bool
		end    int
	}{
		{"a\nb", 1, 1, 0, false, 1},
		{"a\r\nb", 1, 2, 0, false, 1},
		{"a\rb", 1, 1, 0, false, 1},
		{"a\fb\vc\n", 1, 0, 0, false, 5},
		{"\\\nb\n", 0, 0, 2, false, 3},
		{"\\\r\nb\n", 0, 0, 3, false, 4},
		{"\\\rb\n", 0, 0, 2, false, 3},
		{"\\\r\r\nb\n", 0, 0, 2, false, 2}, // the splice takes the lone CR; CR LF then ends the line
		{"\\\n\r\nb\n", 0, 0, 3, false, 3}, // LF CR is one line end after a backslash; LF ends the line
		{"\\ \t\f\v\nb\n", 0, 0, 6, true, 7},
		{"\\x\n", 0, 0, 0, false, 2},
		{"\\", 0, 0, 0, false, 1},
		{"x", 5, 0, 0, false, 1},
	} {
		if got := lineBreak(tc.src, tc.at); got != tc.brk {
			t.Errorf("lineBreak(%q, %d) = %d, want %d", tc.src, tc.at, got, tc.brk)
		}
		if n, blanks := lineSplice(tc.src, tc.at); n != tc.splice || blanks != tc.blanks {
			t.Errorf("lineSplice(%q, %d) = %d, %v; want %d, %v", tc.src, tc.at, n, blanks, tc.splice, tc.blanks)
		}
		if got := lineEnd([]byte(tc.src), min(tc.at, len(tc.src))); got != tc.end {
			t.Errorf("lineEnd(%q, %d) = %d, want %d", tc.src, tc.at, got, tc.end)
		}
	}
	if got, want := joinSplices("#define A \\\r\n  1 \\\n+ 2\\  \n"), "#define A   1 + 2"; got != want {
		t.Errorf("joinSplices = %q, want %q", got, want)
	}
}
