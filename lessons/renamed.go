package lessons

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"gopkg.in/yaml.v3"
)

// RenamedFile is the file beside the lessons that lists their former names (Renamed).
const RenamedFile = "renamed.yaml"

// Renamed lists what lessons and cells were once called, each with what it is now, so that what a
// learner kept under an old name (a link or bookmark, saved edits, runs and shared results) still
// finds its lesson and cell: the server answers an old lesson URL with a redirect (301) and, at
// start, moves the edits and runs its store keeps under old names to the current ones
// (store.Store.Rename). A lesson's slug is its file name and its order is front matter, so moving a
// lesson in the course renames nothing; only renaming a file, merging lessons or moving cells
// between lessons adds entries here.
type Renamed struct {
	// Lessons maps a former slug to the current one, optionally followed by "#id", the id of the
	// heading of the section it became (a lesson merged into another).
	Lessons map[string]string `yaml:"lessons"`
	// Cells maps a former cell id to the current one. Cell ids are unique across the lessons, so the
	// current id also says which lesson holds the cell now.
	Cells map[string]string `yaml:"cells"`
	// Answers maps a former key of an answer kept in the learner's browser (Lesson.Answers: a
	// question's "{quiz id}.{n}", a prediction's id) to the current one; the lesson page that has
	// the current key moves the answer there.
	Answers map[string]string `yaml:"answers"`
}

// LoadRenamed reads RenamedFile from fsys (none: nothing was renamed) and checks it against the
// lessons ls: every current name it gives exists (a lesson, the heading a fragment names, a cell),
// and no former name is a current one. An error names the file and the entry.
func LoadRenamed(fsys fs.FS, ls []*Lesson) (Renamed, error) {
	var r Renamed
	b, err := fs.ReadFile(fsys, RenamedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil && !errors.Is(err, io.EOF) {
		return r, &Error{File: RenamedFile, Line: 1, Msg: err.Error()}
	}
	return r, r.check(ls)
}

// check is LoadRenamed's check of r against the current lessons.
func (r Renamed) check(ls []*Lesson) error {
	bad := func(msg string, args ...any) error {
		return &Error{File: RenamedFile, Line: 1, Msg: fmt.Sprintf(msg, args...)}
	}
	slugs := map[string]*Lesson{}
	cellsNow := map[string]bool{}
	for _, l := range ls {
		slugs[l.Slug] = l
		for _, c := range l.Cells {
			cellsNow[c.ID] = true
		}
	}
	for old, now := range r.Lessons {
		slug, frag, _ := strings.Cut(now, "#")
		l, ok := slugs[slug]
		switch {
		case slugs[old] != nil:
			return bad("lesson %s is renamed to %s, but a lesson is still called %s", old, now, old)
		case !ok:
			return bad("lesson %s is renamed to %s, which no lesson is called: give the current name", old, slug)
		case frag != "" && l.Err == nil && !strings.Contains(string(l.HTML), ` id="`+frag+`"`):
			return bad("lesson %s is renamed to %s, but %s has no heading with id %q", old, now, slug, frag)
		}
	}
	answersNow := map[string]bool{}
	for _, l := range ls {
		for _, a := range l.Answers {
			answersNow[a] = true
		}
	}
	for old, now := range r.Answers {
		switch {
		case answersNow[old]:
			return bad("answer %s is renamed to %s, but a question or prediction is still called %s", old, now, old)
		case !answersNow[now]:
			return bad("answer %s is renamed to %s, which no question or prediction is called: give the current key", old, now)
		}
	}
	for old, now := range r.Cells {
		switch {
		case cellsNow[old]:
			return bad("cell %s is renamed to %s, but a cell is still called %s", old, now, old)
		case !cellsNow[now]:
			return bad("cell %s is renamed to %s, which no lesson's cell is called: give the current id", old, now)
		}
	}
	return nil
}

// Lesson returns the current path of a lesson once called old ("slug" or "slug#section"), if it
// was renamed.
func (r Renamed) Lesson(old string) (string, bool) {
	now, ok := r.Lessons[old]
	return now, ok
}

// AnswersTo returns, of the renamed answers, those whose current key is one of l's (former key →
// current key), for l's page to move; nil when there are none.
func (r Renamed) AnswersTo(l *Lesson) map[string]string {
	mine := map[string]bool{}
	for _, a := range l.Answers {
		mine[a] = true
	}
	var out map[string]string
	for old, now := range r.Answers {
		if mine[now] {
			if out == nil {
				out = map[string]string{}
			}
			out[old] = now
		}
	}
	return out
}
