package lessons

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// lessonLink is a link to a lesson page, with its optional #fragment: a markdown link's target or
// an HTML href (a path in running text or code, such as an example, is not a link).
var lessonLink = regexp.MustCompile(`(?:\]\(|href=")/lessons/([a-z0-9-]+)(#[a-z0-9-]+)?`)

// Every link to a lesson, in every lesson's rendered HTML, in README.md and in docs/, names a lesson
// that exists under that very name (not a former one, which would only redirect), and its
// #fragment, if any, is the id of a heading of that lesson.
func TestLessonLinksResolve(t *testing.T) {
	all, err := Load(Embedded, kinds)
	if err != nil {
		t.Fatal(err)
	}
	bySlug := map[string]*Lesson{}
	for _, l := range all {
		bySlug[l.Slug] = l
	}
	renamed, err := LoadRenamed(Embedded, all)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	for _, l := range all {
		texts[l.File] = string(l.HTML)
	}
	docs, _ := filepath.Glob("../docs/*.md")
	for _, f := range append(docs, "../README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	links := 0
	for file, text := range texts {
		for _, m := range lessonLink.FindAllStringSubmatch(text, -1) {
			links++
			l, ok := bySlug[m[1]]
			if !ok {
				hint := ""
				if now, ok := renamed.Lesson(m[1]); ok {
					hint = " (renamed: link /lessons/" + now + ")"
				}
				t.Errorf("%s links to %s, which is no lesson%s", file, m[0], hint)
				continue
			}
			if m[2] != "" && !strings.Contains(string(l.HTML), ` id="`+m[2][1:]+`"`) {
				t.Errorf("%s links to %s, but %s has no heading with id %q", file, m[0], l.Slug, m[2][1:])
			}
		}
	}
	if links < 50 {
		t.Errorf("found %d links to lessons, want the course's many cross-references", links)
	}
}

// A lesson's file name is its slug and its URL, so it carries no number: its place in the course is
// its front matter's order, and moving it renames nothing. Orders are distinct.
func TestLessonNamesCarryNoOrder(t *testing.T) {
	all, err := Load(Embedded, kinds)
	if err != nil {
		t.Fatal(err)
	}
	orders := map[float64]string{}
	for _, l := range all {
		if regexp.MustCompile(`^[0-9]`).MatchString(l.Slug) {
			t.Errorf("%s: a lesson's file name starts with a number; name it %s.md and put its place in `order:`", l.File, regexp.MustCompile(`^[0-9.]+-`).ReplaceAllString(l.Slug, ""))
		}
		if other, dup := orders[l.Order]; dup {
			t.Errorf("%s and %s both have order %g", other, l.Slug, l.Order)
		}
		orders[l.Order] = l.Slug
	}
}

// The embedded renamed.yaml holds: every current name it gives exists, no former name is a current
// one, and the course's own former names are there (the numbered slugs of before issue 27).
func TestEmbeddedRenamed(t *testing.T) {
	all, err := Load(Embedded, kinds)
	if err != nil {
		t.Fatal(err)
	}
	r, err := LoadRenamed(Embedded, all)
	if err != nil {
		t.Fatal(err)
	}
	for old, want := range map[string]string{"14-the-roofline": "the-roofline", "11-moving-data": "the-gpu-in-front-of-you#across-the-bus-pcie"} {
		if got, ok := r.Lesson(old); !ok || got != want {
			t.Errorf("lesson %s: got %q, %v; want %s", old, got, ok, want)
		}
	}
	for old, want := range map[string]string{"11-moving-data-quiz-0.2": "the-gpu-in-front-of-you-quiz-0.5", "02-from-graphics-to-ai-quiz-0.3": "from-graphics-to-ai-quiz-0.2", "12-why-coalescing-matters-predict-0": "why-coalescing-matters-predict-0"} {
		if got := r.Answers[old]; got != want {
			t.Errorf("answer %s: got %q, want %s", old, got, want)
		}
	}
	for old, want := range map[string]string{"11-moving-data-1": "the-gpu-in-front-of-you-2", "02-from-graphics-to-ai-2": "budgets-and-supercomputers-2", "14-the-roofline-0": "the-roofline-0"} {
		if got := r.Cells[old]; got != want {
			t.Errorf("cell %s: got %q, want %s", old, got, want)
		}
	}
}

// LoadRenamed refuses a table that points at nothing, at a missing section, or from a current name.
func TestLoadRenamedChecks(t *testing.T) {
	lesson := "---\ntitle: A\nsummary: s\norder: 1\n---\n\n## Part two\n\n```matmul\nkernels: [ikj]\n```\n\n```quiz\n- q: One?\n  number: 1\n  tolerance: 0\n  explain: e\n```\n"
	for _, tt := range []struct{ name, yaml, want string }{
		{"fine", "lessons: {old-a: \"a#part-two\"}\ncells: {old-a-0: a-0}\n", ""},
		{"none", "", ""},
		{"no such lesson", "lessons: {old-a: b}\n", "which no lesson is called"},
		{"no such heading", "lessons: {old-a: \"a#part-three\"}\n", `no heading with id "part-three"`},
		{"no such cell", "cells: {old-a-0: a-7}\n", "which no lesson's cell is called"},
		{"still current", "lessons: {a: a}\n", "a lesson is still called a"},
		{"cell still current", "cells: {a-0: a-0}\n", "a cell is still called a-0"},
		{"unknown key", "lesson: {old-a: a}\n", "field lesson not found"},
		{"answer", "answers: {old-a-quiz-0.1: a-quiz-0.1}\n", ""},
		{"no such question", "answers: {old-a-quiz-0.1: a-quiz-0.2}\n", "which no question or prediction is called"},
		{"answer still current", "answers: {a-quiz-0.1: a-quiz-0.1}\n", "a question or prediction is still called a-quiz-0.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"a.md": {Data: []byte(lesson)}}
			if tt.yaml != "" {
				fsys[RenamedFile] = &fstest.MapFile{Data: []byte(tt.yaml)}
			}
			ls, err := Load(fsys, kinds)
			if err != nil {
				t.Fatal(err)
			}
			_, err = LoadRenamed(fsys, ls)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// README's list of the lessons ("## The lessons") names every lesson, by its title, in the course's
// order, each numbered with its place.
func TestReadmeListsTheLessonsInOrder(t *testing.T) {
	all, err := Load(Embedded, kinds) // sorted by order
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## The lessons")
	if start < 0 {
		t.Fatal(`README.md has no "## The lessons" section`)
	}
	section := text[start+len("## The lessons"):]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^(\d+)\. \*\*(.+?)\*\*`).FindAllStringSubmatch(section, -1) {
		got = append(got, m[1]+". "+m[2])
	}
	var want []string
	for i, l := range all {
		want = append(want, strconv.Itoa(i+1)+". "+l.Title)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("README's lesson list:\n%s\nwant, from the lessons' order and titles:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
