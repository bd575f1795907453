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

// A question marked predict: true is shown as one to predict and explain.
func TestQuizMarksPredictAndExplain(t *testing.T) {
	src := "---\ntitle: T\nsummary: S\norder: 1\n---\n# T\n\n```quiz\n- q: Recall\n  number: 1\n  explain: E.\n- q: Double n. What happens, and why?\n  predict: true\n  choices: [a, b]\n  answer: 1\n  explain: Because.\n```\n"
	l, err := Parse("q.md", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	html := string(l.HTML)
	if got, want := strings.Count(html, `data-predict="true"`), 1; got != want {
		t.Errorf("got %d questions marked predict, want %d:\n%s", got, want, html)
	}
	if want := `data-answer="1" data-predict="true">` + "\n" + `<legend>2. <span class="quiz-predict">Predict and explain:</span> Double n.`; !strings.Contains(html, want) {
		t.Errorf("HTML lacks %s:\n%s", want, html)
	}
}

// Every lesson ends with questions to check yourself: at least three, and at least one that asks the
// learner to predict what a change does and explain why (predict: true), not only to recall or
// compute (docs/lesson-style.md).
func TestEveryLessonHasThreeQuestionsOnePredictAndExplain(t *testing.T) {
	ls, err := Load(Embedded, kinds)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		html := string(l.HTML)
		if n := strings.Count(html, `<fieldset class="quiz-q"`); n < 3 {
			t.Errorf("%s has %d check-yourself questions, want at least 3", l.File, n)
		}
		if !strings.Contains(html, `data-predict="true"`) {
			t.Errorf("%s has no predict-and-explain question (predict: true)", l.File)
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
