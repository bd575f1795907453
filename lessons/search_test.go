package lessons

import (
	"slices"
	"strings"
	"testing"
)

// A lesson's prose is split at its headings for the search, without its code, cells and quizzes, and
// its challenges are listed by id.
func TestSectionsAndChallenges(t *testing.T) {
	src := "---\ntitle: T\nsummary: S\norder: 1\n---\n\n# Title\n\nIntro with `code span` and *emphasis*.\n\n" +
		"## Memory *bound*\n\nA kernel that\nmoves bytes.\n\n```go\nfunc hidden() {}\n```\n\n" +
		"```challenge\ngoal: Be fast.\ntable: results\nrow: {kernel: naive}\nchecks:\n  - {column: check, equals: ok}\n```\n\n" +
		"```matmul\nkernels: [naive]\nsizes: [4]\n```\n\n### Sub\n\n- one item\n- two\n\n" +
		"```quiz\n- q: Secret question?\n  choices: [a, b]\n  answer: 1\n  explain: because.\n```\n"
	l, err := Parse("t.md", []byte(src), kinds)
	if err != nil {
		t.Fatal(err)
	}
	want := []Section{
		{ID: "", Heading: "", Text: "Intro with code span and emphasis."},
		{ID: "memory-bound", Heading: "Memory bound", Text: "A kernel that moves bytes."},
		{ID: "sub", Heading: "Sub", Text: "one item two"},
	}
	if !slices.Equal(l.Sections, want) {
		t.Errorf("sections\n%+v, want\n%+v", l.Sections, want)
	}
	for _, s := range l.Sections {
		for _, hidden := range []string{"hidden", "Secret", "kernels", "Be fast"} {
			if strings.Contains(s.Text, hidden) {
				t.Errorf("section %q has %q", s.Heading, hidden)
			}
		}
	}
	if got := l.Challenges; len(got) != 1 || got[0].ID != "t-challenge-0" {
		t.Errorf("challenges %+v, want one, t-challenge-0", got)
	}
}

// A section's text is cut at a word once over the bound.
func TestSectionTextBounded(t *testing.T) {
	src := "---\ntitle: T\nsummary: S\norder: 1\n---\n\n## Long\n\n" + strings.Repeat("word ", 4000) + "\n"
	l, err := Parse("t.md", []byte(src), kinds)
	if err != nil {
		t.Fatal(err)
	}
	got := l.Sections[0].Text
	if len(got) > maxSectionText || !strings.HasSuffix(got, "word") {
		t.Errorf("text of %d bytes ending %q, want at most %d ending in a whole word", len(got), got[len(got)-8:], maxSectionText)
	}
}
