package lessons

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// An aside that opens with **The model says:** is set apart; any other blockquote is not.
func TestModelSaysAside(t *testing.T) {
	src := "---\ntitle: T\nsummary: S\norder: 1\n---\n# T\n\nThe hardware does this.\n\n" +
		"> **The model says:** 406 µs (latency; limit tensor 196).\n\n" +
		"> **Our model:** not the lead.\n\n> A quotation.\n"
	l, err := Parse("a.md", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	html := string(l.HTML)
	if got, want := strings.Count(html, `<blockquote class="model-says" role="note">`), 1; got != want {
		t.Errorf("got %d model-says asides, want %d:\n%s", got, want, html)
	}
	if got, want := strings.Count(html, "<blockquote>"), 2; got != want {
		t.Errorf("got %d plain blockquotes, want %d:\n%s", got, want, html)
	}
}

// The lessons keep one style for what the playground's model says: an aside led by **The model
// says:**, never a variant ("Our model:", "The model:"), and the modelled time's table notation
// ("406 (latency; limit tensor 196)") only inside such an aside, not in the prose about the hardware.
func TestModelDetailStaysInItsAside(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	lead := regexp.MustCompile(`^>\s*\*\*([^*]*model[^*]*)\*\*`)
	notation := regexp.MustCompile(`\((latency|launch)[^)]*; limit [a-z]`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := lead.FindStringSubmatch(line); m != nil && m[1] != ModelSays {
				t.Errorf("%s:%d: an aside led by %q; the lessons' one style is **%s**", f, i+1, m[1], ModelSays)
			}
			if notation.MatchString(line) && !strings.HasPrefix(line, ">") {
				t.Errorf("%s:%d: the model's table notation outside a **%s** aside: %s", f, i+1, ModelSays, line)
			}
		}
	}
}
