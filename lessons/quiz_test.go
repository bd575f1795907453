package lessons

import (
	"strings"
	"testing"
)

func TestQuizRendersChoicesNumbersAndExplanations(t *testing.T) {
	src := "---\ntitle: T\nsummary: S\norder: 1\n---\n# T\n\n```quiz\n- q: Pick `two`\n  choices: [one, \"*two*\"]\n  answer: 2\n  explain: Because.\n- q: How many?\n  number: 2097152\n  unit: FLOPs\n  explain: 2 × 128³.\n```\n"
	l, err := Parse("q.md", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	html := string(l.HTML)
	for _, want := range []string{
		`<section class="quiz" id="q-quiz-0" data-quiz="q-quiz-0"`,
		`<fieldset class="quiz-q" data-q="1" data-answer="2">`,
		`<legend>1. Pick <code>two</code></legend>`,
		`<input type="radio" name="q-quiz-0-1" value="2"> <em>two</em></label>`,
		`data-q="2" data-number="2097152" data-tolerance="0.02"`,
		`class="quiz-input" aria-label="your answer"> FLOPs</label>`,
		`<p class="explain" hidden>Because.</p>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %s:\n%s", want, html)
		}
	}
}

func TestQuizErrorsNameTheLine(t *testing.T) {
	for src, want := range map[string]string{
		"```quiz\n- q: A\n  choices: [x, y]\n  answer: 3\n  explain: E\n```\n":              "q.md:9: quiz: question \"A\": answer: 3 is not one of its 2 choices",
		"```quiz\n- q: A\n  number: 1\n  explain: E\n- q: B\n  number: 2\n```\n":            "q.md:12: quiz: question \"B\" needs explain:",
		"```quiz\n- q: A\n  choices: [x, y]\n  number: 1\n  answer: 1\n  explain: E\n```\n": "q.md:9: quiz: question \"A\" needs either choices: with answer: or number:",
		"```quiz\nq: A\n```\n": "q.md:9: quiz: a quiz is a YAML list",
	} {
		_, err := Parse("q.md", []byte("---\ntitle: T\nsummary: S\norder: 1\n---\n# T\n\n"+src), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %s", err, want)
		}
	}
}

// Every lesson ends with questions to check yourself.
func TestEveryLessonHasAQuiz(t *testing.T) {
	ls, err := Load(Embedded, nil)
	if err == nil {
		for _, l := range ls {
			if !strings.Contains(string(l.HTML), `class="quiz"`) {
				t.Errorf("%s has no check-yourself questions", l.File)
			}
		}
	}
}

func FuzzParseQuiz(f *testing.F) {
	f.Add("- q: A\n  choices: [x, y]\n  answer: 1\n  explain: E\n")
	f.Add("- q: B\n  number: 1e3\n  tolerance: 0.5\n  explain: E\n")
	f.Add("[]")
	f.Fuzz(func(t *testing.T, src string) {
		qs, err := ParseQuiz(src)
		if err != nil {
			return
		}
		for _, q := range qs {
			if q.check() != nil {
				t.Errorf("accepted an invalid question %+v", q)
			}
		}
	})
}
