package server

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/store"
)

// The instructor's progress grid (/class): for each student and lesson, how many of its cells they
// ran to the end, how many of its challenges their latest finished run of the cell meets (judged
// here, as static/goal.js judges it), and how many of its check-yourself questions they last
// answered right (as their page judged it: POST /api/answers).

// progressLesson is one column of the grid: a lesson and what it has to do.
type progressLesson struct {
	Slug       string `json:"slug"`
	Title      string `json:"title"`
	Cells      int    `json:"cells"`
	Challenges int    `json:"challenges"`
	Questions  int    `json:"questions"`
}

// progressCell is one student's progress on one lesson.
type progressCell struct {
	CellsRun      int `json:"cells_run"`
	ChallengesMet int `json:"challenges_met"`
	AnswersRight  int `json:"answers_right"`
}

// progressStudent is one row of the grid: a student's progress by lesson slug (lessons not begun
// left out).
type progressStudent struct {
	ID      int64                    `json:"id"`
	Name    string                   `json:"name"`
	Lessons map[string]*progressCell `json:"lessons"`
}

// classProgress is the grid: the lessons in the index's order and the students by name.
type classProgress struct {
	Lessons  []progressLesson   `json:"lessons"`
	Students []*progressStudent `json:"students"`
}

// quizKey reports whether an answer key (lessons.Lesson.Answers) is a check-yourself question's
// ("{slug}-quiz-{i}.{n}"), not a prediction's.
func quizKey(key string) bool { return strings.Contains(key, "-quiz-") }

// progress builds the grid: the students (not instructors, not removed, not the local user,
// "(this computer)") and
// every lesson that loaded.
func (s *Server) progress(ctx context.Context) (classProgress, error) {
	all, err := s.store.Students(ctx)
	if err != nil {
		return classProgress{}, err
	}
	p := classProgress{Lessons: []progressLesson{}, Students: []*progressStudent{}}
	byID := map[int64]*progressStudent{}
	for _, st := range all {
		if st.Removed || st.Instructor || st.ID == s.local.ID {
			continue
		}
		ps := &progressStudent{ID: st.ID, Name: st.Name, Lessons: map[string]*progressCell{}}
		byID[st.ID] = ps
		p.Students = append(p.Students, ps)
	}
	at := func(student int64, lesson string) *progressCell {
		ps := byID[student]
		if ps == nil {
			return nil
		}
		if ps.Lessons[lesson] == nil {
			ps.Lessons[lesson] = &progressCell{}
		}
		return ps.Lessons[lesson]
	}
	questions := map[string]bool{} // lesson slug + " " + answer key, of the lessons as they are now
	for _, l := range s.library.Lessons() {
		if l.Err != nil {
			continue
		}
		q := 0
		for _, k := range l.Answers {
			if quizKey(k) {
				questions[l.Slug+" "+k] = true
				q++
			}
		}
		p.Lessons = append(p.Lessons, progressLesson{Slug: l.Slug, Title: l.Title, Cells: len(l.Cells), Challenges: len(l.Challenges), Questions: q})
		if err := s.challengesMet(ctx, l, at); err != nil {
			return classProgress{}, err
		}
	}
	done, err := s.store.CellsDone(ctx)
	if err != nil {
		return classProgress{}, err
	}
	for _, c := range done {
		if pc := at(c.Student, c.Lesson); pc != nil {
			pc.CellsRun = c.N
		}
	}
	right, err := s.store.RightAnswers(ctx)
	if err != nil {
		return classProgress{}, err
	}
	for _, a := range right {
		if pc := at(a.Student, a.Lesson); pc != nil && questions[a.Lesson+" "+a.Question] { // not a question the lesson no longer has
			pc.AnswersRight++
		}
	}
	return p, nil
}

// challengesMet counts, into at's cells, the challenges of l that each student's latest finished
// run of the challenge's cell meets.
func (s *Server) challengesMet(ctx context.Context, l *lessons.Lesson, at func(int64, string) *progressCell) error {
	for _, c := range l.Challenges {
		if c.Cell == "" {
			continue
		}
		runs, err := s.store.LatestDone(ctx, l.Slug, c.Cell)
		if err != nil {
			return err
		}
		for _, run := range runs {
			pc := at(run.Student, l.Slug)
			if pc == nil {
				continue
			}
			met, err := s.verdicts.met(run.ID, c, func() (bool, error) { return s.judgeRun(ctx, run, c.Goal) })
			if err != nil {
				return err
			}
			if met {
				pc.ChallengesMet++
			}
		}
	}
	return nil
}

// judgeRun reads a finished run's messages and judges its table against g (judgeChallenge).
func (s *Server) judgeRun(ctx context.Context, run store.Run, g lessons.Goal) (bool, error) {
	msgs, err := s.store.Messages(ctx, run.ID)
	if err != nil {
		return false, err
	}
	var cols []string
	var rows [][]any
	for _, km := range msgs {
		var m Message
		if json.Unmarshal([]byte(km.Body), &m) != nil {
			continue
		}
		switch {
		case m.Type == TypeTable && m.Table != nil && m.Table.ID == g.Table && cols == nil:
			for _, c := range m.Table.Columns {
				cols = append(cols, c.Label)
			}
		case m.Type == TypeRow && m.Row != nil && m.Row.Table == g.Table:
			rows = append(rows, m.Row.Values)
		}
	}
	return judgeChallenge(g, cols, rows), nil
}

// judgeChallenge reports whether a challenge is met by a table (its column labels and rows), as
// static/goal.js judges it: the first row whose values of g.Row's columns equal them (as text,
// jsText) is the one, and each check holds on it. A column is named by its label, or by its label
// before a bracketed metric ("sectors" for "sectors [l1tex__…]"). A table without the row or a
// column is not met. The cases of testdata/challenges.json run through both judges
// (TestChallengeCases here, TestGoalsAndNumbersInBrowser in e2e).
func judgeChallenge(g lessons.Goal, cols []string, rows [][]any) bool {
	idx := func(label string) int {
		if i := slices.Index(cols, label); i >= 0 {
			return i
		}
		return slices.IndexFunc(cols, func(c string) bool { return strings.HasPrefix(c, label+" [") })
	}
	value := func(row []any, label string) (any, bool) {
		i := idx(label)
		if i < 0 || i >= len(row) {
			return nil, false
		}
		return row[i], true
	}
	for _, row := range rows {
		match := true
		for k, want := range g.Row {
			v, ok := value(row, k)
			match = match && ok && jsText(v) == jsText(want)
		}
		if !match {
			continue
		}
		for _, c := range g.Checks {
			v, ok := value(row, c.Column)
			x, isNum := toFloat(v)
			switch {
			case !ok:
				return false
			case c.Equals != nil && jsText(v) != jsText(c.Equals):
				return false
			case c.AtMost != nil && !(isNum && x <= *c.AtMost):
				return false
			case c.AtLeast != nil && !(isNum && x >= *c.AtLeast):
				return false
			}
		}
		return true
	}
	return false
}

// jsText is v as text the way static/goal.js's String(v) writes it, so that both judges compare the
// same text: a number in JavaScript's shortest form (1048576 and 0.000001 where Go's %v writes
// 1.048576e+06 and 1e-06; 1.5e-7 and 1e+21 with an exponent), null as "null".
func jsText(v any) string {
	x, ok := toFloat(v)
	switch {
	case v == nil:
		return "null"
	case !ok:
		return fmt.Sprint(v)
	case x == 0:
		return "0"
	case math.Abs(x) >= 1e-6 && math.Abs(x) < 1e21:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(x, 'e', -1, 64), "e") // "1.5", "-07"
	return mant + "e" + exp[:1] + strings.TrimLeft(exp[1:], "0")
}

// verdicts caches challenge verdicts of finished runs (which do not change), by run and challenge
// (its id and what it asks: a lesson edited under -lessons is judged again), so that the grid,
// polled every few seconds, reads each run's messages once. It holds at most maxVerdicts; past that
// it starts again.
type verdicts struct {
	mu sync.Mutex
	m  map[verdictKey]bool
}

type verdictKey struct {
	run             int64
	challenge, spec string
}

const maxVerdicts = 100000

// met is the cached verdict of run on challenge c, else judge's (then cached; an error is not).
func (v *verdicts) met(run int64, c lessons.Challenge, judge func() (bool, error)) (bool, error) {
	spec, _ := json.Marshal(c.Goal)
	k := verdictKey{run, c.ID, string(spec)}
	v.mu.Lock()
	ok, found := v.m[k]
	v.mu.Unlock()
	if found {
		return ok, nil
	}
	ok, err := judge()
	if err != nil {
		return false, err
	}
	v.mu.Lock()
	if v.m == nil || len(v.m) >= maxVerdicts {
		v.m = map[verdictKey]bool{}
	}
	v.m[k] = ok
	v.mu.Unlock()
	return ok, nil
}

// apiClassProgress is GET /api/class/progress: the grid (classProgress) as JSON.
func (s *Server) apiClassProgress(w http.ResponseWriter, r *http.Request) {
	p, err := s.progress(r.Context())
	if err != nil {
		httpErr(w, err)
		return
	}
	writeJSON(w, p)
}

// classProgressCSV is GET /api/class/progress.csv: the grid, one line per student and lesson
// (student, lesson, cells run, cells, challenges met, challenges, answers right, questions).
func (s *Server) classProgressCSV(w http.ResponseWriter, r *http.Request) {
	p, err := s.progress(r.Context())
	if err != nil {
		httpErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="class-progress.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"student", "lesson", "cells_run", "cells", "challenges_met", "challenges", "answers_right", "questions"})
	for _, st := range p.Students {
		for _, l := range p.Lessons {
			pc := st.Lessons[l.Slug]
			if pc == nil {
				pc = &progressCell{}
			}
			_ = cw.Write([]string{csvText(st.Name), l.Slug, strconv.Itoa(pc.CellsRun), strconv.Itoa(l.Cells),
				strconv.Itoa(pc.ChallengesMet), strconv.Itoa(l.Challenges), strconv.Itoa(pc.AnswersRight), strconv.Itoa(l.Questions)})
		}
	}
	cw.Flush()
}

// apiAnswer is POST /api/answers with form fields lesson, key (one of the lesson's check-yourself
// answer keys, lessons.Lesson.Answers) and right (true or false, as the student's page judged
// their answer): recorded for the instructor's progress grid, replacing the student's previous
// answer to that question. 204; 404 for an unknown lesson or key; 400 for a body over
// maxAnswerForm; 503 while the disk is nearly full (store.Room).
func (s *Server) apiAnswer(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxAnswerForm)
	if err := s.store.Room(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: it could not be read (at most 4 KiB)", http.StatusBadRequest)
		return
	}
	slug, key := r.FormValue("lesson"), r.FormValue("key")
	right, err := strconv.ParseBool(r.FormValue("right"))
	if err != nil {
		http.Error(w, "right is true or false", http.StatusBadRequest)
		return
	}
	ls := s.library.Lessons() // once: a lessons directory may change between two calls
	i := slices.IndexFunc(ls, func(l *lessons.Lesson) bool { return l.Slug == slug })
	if i < 0 || !quizKey(key) || !slices.Contains(ls[i].Answers, key) {
		http.Error(w, "no such question", http.StatusNotFound)
		return
	}
	if err := s.store.SaveAnswer(r.Context(), studentOf(r.Context()).ID, slug, key, right); err != nil {
		httpErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// maxAnswerForm bounds POST /api/answers' body, in bytes: a slug, a key and a boolean.
const maxAnswerForm = 4 << 10
