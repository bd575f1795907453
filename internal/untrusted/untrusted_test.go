package untrusted

import (
	"strings"
	"testing"
	"unicode"
)

// printable reports whether s holds only what a console or a page may show of a worker's string:
// graphic characters, and with lines newlines and tabs too.
func printable(s string, lines bool) bool {
	for _, r := range s {
		if !unicode.IsGraphic(r) && !(lines && (r == '\n' || r == '\t')) {
			return false
		}
	}
	return true
}

// What a worker may use to rewrite a console or a page (ANSI escapes, carriage returns, newlines in a
// line, bidi overrides, zero-width characters, invalid UTF-8) is replaced; letters, symbols and
// accents of any script stay; a string is cut to its cap.
func TestLineAndText(t *testing.T) {
	for _, tt := range []struct{ in, line, text string }{
		{"gpu-box", "gpu-box", "gpu-box"},
		{"\x1b[2J\x1b[Hmachine joined: x", "\uFFFD[2J\uFFFD[Hmachine joined: x", "\uFFFD[2J\uFFFD[Hmachine joined: x"},
		{"a\nb\r\nc\td", "a b\uFFFD c d", "a\nb\nc\td"},
		{"user\u202Egnp.exe", "user\uFFFDgnp.exe", "user\uFFFDgnp.exe"},
		{"zero\u200Bwidth\u2028line\x00nul\x7f", "zero\uFFFDwidth\uFFFDline\uFFFDnul\uFFFD", "zero\uFFFDwidth\uFFFDline\uFFFDnul\uFFFD"},
		{"bad \xff utf-8", "bad \uFFFD utf-8", "bad \uFFFD utf-8"},
		{"Größe 4×4 µs é 😀 ✓", "Größe 4×4 µs é 😀 ✓", "Größe 4×4 µs é 😀 ✓"},
	} {
		if got := Line(tt.in, 100); got != tt.line {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
		}
		if got := Text(tt.in, 100); got != tt.text {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
		}
	}
	if got, want := Line(strings.Repeat("é", 70), 64), strings.Repeat("é", 64)+"…"; got != want {
		t.Errorf("a 70-rune line cut to 64: %q, want %q", got, want)
	}
}

// A worker's task for the page keeps its shape and its numbers as written; its strings are cleaned;
// what is not one JSON value becomes null.
func TestRaw(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"op":"matmul","n":9007199254740993,"x":1.50,"k":[{"name":"a\u001b[2J\n"}]}`, `{"k":[{"name":"a` + "\uFFFD" + `[2J "}],"n":9007199254740993,"op":"matmul","x":1.50}`},
		{`[1,2`, `null`}, {`{} {}`, `null`}, {`"\u202e"`, "\"\uFFFD\""},
	} {
		if got := string(Raw([]byte(tt.in))); got != tt.want {
			t.Errorf("Raw(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// What a worker says of "this server", in any case, is said of the machine it is.
func TestAttributed(t *testing.T) {
	if got, want := Attributed("Measured on THIS SERVER and this Server.", "gpu-box"), "Measured on the machine gpu-box and the machine gpu-box."; got != want {
		t.Errorf("Attributed = %q, want %q", got, want)
	}
}
