package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/lessons"
)

// progressLessonMD is a lesson of two probe cells, a challenge about the second (a row i = 3 with
// square at least 9: a run of 4 rows or more) and a quiz of two questions.
const progressLessonMD = "---\ntitle: G\nsummary: s\norder: 2\n---\n\n```probe\nrows: 1\n```\n\n" +
	"```challenge\ngoal: Make four rows.\ntable: t\nrow: {i: 3}\nchecks:\n  - {column: square, at_least: 9}\n```\n\n" +
	"```probe\nrows: 1\n```\n\n" +
	"```quiz\n- q: One?\n  choices: [a, b]\n  answer: 1\n  explain: e\n- q: Two?\n  number: 2\n  explain: e\n```\n"

// runCell runs source in lesson's cell as st and waits for its end.
func runCell(t *testing.T, st *student, lesson, cell, source string) {
	t.Helper()
	ws := st.dialLesson(t, lesson)
	defer ws.Close()
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "r", RunRequest: &RunRequest{Lesson: lesson, Cell: cell, Source: source}}); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "r", 60*time.Second); msgs[len(msgs)-1].Type != TypeDone {
		t.Fatalf("%s's run of %s: ended %+v", st.name, cell, msgs[len(msgs)-1])
	}
}

// The instructor's progress grid counts, per student and lesson, the cells run to the end, the
// challenges their latest run of the cell meets (judged on its table), and the questions their page
// last judged right; students only, as JSON and CSV. A student records only their lesson's
// questions.
func TestClassProgress(t *testing.T) {
	cfg := classConfig(t)
	if err := os.WriteFile(filepath.Join(cfg.LessonsDir, "g.md"), []byte(progressLessonMD), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, base := startServer(t, cfg)
	ada, bob, teacher := join(t, base, "class-token", "Ada"), join(t, base, "class-token", "Bob"), join(t, base, "teach", "Teacher")
	runCell(t, ada, "g", "g-0", "rows: 1\n")
	runCell(t, ada, "g", "g-1", "rows: 4\n")
	runCell(t, bob, "g", "g-1", "rows: 2\n")
	for _, a := range []struct {
		key, right string
		want       int
	}{
		{"g-quiz-0.1", "false", http.StatusNoContent}, {"g-quiz-0.1", "true", http.StatusNoContent},
		{"g-quiz-0.2", "false", http.StatusNoContent}, {"g-quiz-0.9", "true", http.StatusNotFound},
		{"g-challenge-0", "true", http.StatusNotFound},
	} {
		if got := bob.post(t, "/api/answers", url.Values{"lesson": {"g"}, "key": {a.key}, "right": {a.right}}); got != a.want {
			t.Errorf("Bob answers %s: got %d, want %d", a.key, got, a.want)
		}
	}
	if got, want := bob.post(t, "/api/answers", url.Values{"lesson": {"g"}, "key": {"g-quiz-0.1"}, "right": {"true"}, "pad": {strings.Repeat("x", maxAnswerForm)}}), http.StatusBadRequest; got != want {
		t.Errorf("an answer in a body over %d bytes: got %d, want %d", maxAnswerForm, got, want)
	}
	if got, want := bob.post(t, "/api/answers", url.Values{"lesson": {"p"}, "key": {"g-quiz-0.1"}, "right": {"true"}}), http.StatusNotFound; got != want {
		t.Errorf("another lesson's question: got %d, want %d", got, want)
	}
	// An answer kept for a question the lesson no longer has (edited, or renamed) does not count.
	if err := srv.store.SaveAnswer(context.Background(), studentID(t, teacher, "Bob"), "g", "g-quiz-3.1", true); err != nil {
		t.Fatal(err)
	}
	if code, _ := bob.get(t, "/api/class/progress"); code != http.StatusForbidden {
		t.Errorf("a student asks for the grid: got %d, want 403", code)
	}
	code, body := teacher.get(t, "/api/class/progress")
	var p classProgress
	if err := json.Unmarshal([]byte(body), &p); code != http.StatusOK || err != nil {
		t.Fatalf("/api/class/progress: %d %v %s", code, err, body)
	}
	got := map[string]progressCell{}
	for _, st := range p.Students {
		if pc := st.Lessons["g"]; pc != nil {
			got[st.Name] = *pc
		} else {
			got[st.Name] = progressCell{}
		}
	}
	want := map[string]progressCell{"Ada": {CellsRun: 2, ChallengesMet: 1}, "Bob": {CellsRun: 1, AnswersRight: 1}}
	if len(got) != len(want) || got["Ada"] != want["Ada"] || got["Bob"] != want["Bob"] {
		t.Errorf("progress on g: got %+v, want %+v (no instructor)", got, want)
	}
	if i := indexLesson(p.Lessons, "g"); i < 0 || p.Lessons[i] != (progressLesson{Slug: "g", Title: "G", Cells: 2, Challenges: 1, Questions: 2}) {
		t.Errorf("lessons: got %+v, want g with 2 cells, 1 challenge, 2 questions", p.Lessons)
	}
	code, csv := teacher.get(t, "/api/class/progress.csv")
	if code != http.StatusOK || !strings.HasPrefix(csv, "student,lesson,cells_run,cells,challenges_met,challenges,answers_right,questions\n") ||
		!strings.Contains(csv, "\nAda,g,2,2,1,1,0,2\n") || !strings.Contains(csv, "\nBob,g,1,2,0,1,1,2\n") {
		t.Errorf("progress CSV: %d\n%s", code, csv)
	}
	// A later run that does not meet the challenge: the grid follows the latest run.
	runCell(t, ada, "g", "g-1", "rows: 3\n")
	_, body = teacher.get(t, "/api/class/progress")
	if !strings.Contains(body, `"name":"Ada","lessons":{"g":{"cells_run":2,"challenges_met":0`) {
		t.Errorf("after Ada's run of 3 rows: %s", body)
	}
}

func indexLesson(ls []progressLesson, slug string) int {
	for i, l := range ls {
		if l.Slug == slug {
			return i
		}
	}
	return -1
}

// judgeChallenge picks the first row with the row's values (compared as text) and checks it; a
// column is found by its label or the label before its bracketed metric.
func TestJudgeChallenge(t *testing.T) {
	most, least := 300000.0, 1.0
	g := lessons.Goal{Table: "emulated", Row: map[string]any{"kernel": "custom", "n": 256},
		Checks: []lessons.Check{{Column: "check", Equals: "ok"}, {Column: "sectors", AtMost: &most}, {Column: "speedup", AtLeast: &least}}}
	cols := []string{"kernel", "n", "check", "sectors [l1tex__t_sectors]", "speedup"}
	for _, tt := range []struct {
		rows [][]any
		want bool
	}{
		{[][]any{{"naive", 256.0, "ok", 1.0, 2.0}, {"custom", 256.0, "ok", 250000.0, 1.5}}, true},
		{[][]any{{"custom", 256.0, "ok", 350000.0, 1.5}}, false},
		{[][]any{{"custom", 256.0, "wrong", 250000.0, 1.5}}, false},
		{[][]any{{"custom", 256.0, "ok", 250000.0, 0.5}}, false},
		{[][]any{{"custom", 128.0, "ok", 250000.0, 1.5}}, false},
		{[][]any{{"custom", 256.0, "ok", "n/a", 1.5}}, false},
		{nil, false},
	} {
		if got := judgeChallenge(g, cols, tt.rows); got != tt.want {
			t.Errorf("rows %v: got %v, want %v", tt.rows, got, tt.want)
		}
	}
	if judgeChallenge(g, []string{"kernel", "n"}, [][]any{{"custom", 256.0}}) {
		t.Error("a table without the checks' columns: met")
	}
}

// challengeCase is one case of testdata/challenges.json: a challenge block as a lesson writes it, a
// run's table, and whether the run meets it. e2e's TestGoalsAndNumbersInBrowser runs the same cases
// through static/goal.js, so the two judges cannot drift apart.
type challengeCase struct {
	Name      string   `json:"name"`
	Challenge string   `json:"challenge"`
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Met       bool     `json:"met"`
}

func TestChallengeCases(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "challenges.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []challengeCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		g, err := lessons.ParseGoal("challenge", c.Challenge)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if got := judgeChallenge(g, c.Columns, c.Rows); got != c.Met {
			t.Errorf("%s: met %v, want %v", c.Name, got, c.Met)
		}
	}
}

// The class page offers the lessons' cells to pick from (no free-text cell box), in the app's
// style (its own sheet, no unstyled controls of its own making).
func TestClassPageCellPicker(t *testing.T) {
	cfg := classConfig(t)
	if err := os.WriteFile(filepath.Join(cfg.LessonsDir, "g.md"), []byte(progressLessonMD), 0o644); err != nil {
		t.Fatal(err)
	}
	_, base := startServer(t, cfg)
	teacher := join(t, base, "teach", "Teacher")
	code, page := teacher.get(t, "/class")
	if code != http.StatusOK {
		t.Fatalf("/class: %d", code)
	}
	_, js, ok := strings.Cut(page, `<script type="application/json" id="lesson-cells">`)
	js, _, _ = strings.Cut(js, "</script>")
	var cellsOf map[string][]pickCell
	if err := json.Unmarshal([]byte(js), &cellsOf); !ok || err != nil {
		t.Fatalf("the page's lesson cells: %v in %q", err, js)
	}
	if got, want := cellsOf["g"], []pickCell{{"g-0", "probe"}, {"g-1", "probe"}}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("lesson g's cells: got %v, want %v", got, want)
	}
	for _, want := range []string{`<select name="cell" id="cell-pick">`, `<link rel="stylesheet" href="/static/class.css">`, `id="progress"`} {
		if !strings.Contains(page, want) {
			t.Errorf("/class lacks %s", want)
		}
	}
	if strings.Contains(page, `<input name="cell"`) {
		t.Error("/class still has a free-text cell box")
	}
	if code, css := teacher.get(t, "/static/class.css"); code != http.StatusOK || !strings.Contains(css, "main.class button") {
		t.Errorf("/static/class.css: %d", code)
	}
}

// A verdict is judged once per run and challenge, and again when the challenge asks otherwise.
func TestVerdictsCached(t *testing.T) {
	var v verdicts
	least := 9.0
	c := lessons.Challenge{ID: "g-challenge-0", Goal: lessons.Goal{Table: "t", Checks: []lessons.Check{{Column: "square", AtLeast: &least}}}}
	judged := 0
	judge := func() (bool, error) { judged++; return true, nil }
	for range 3 {
		if ok, err := v.met(7, c, judge); !ok || err != nil {
			t.Fatalf("met: %v %v", ok, err)
		}
	}
	more := 16.0
	c.Goal.Checks[0].AtLeast = &more
	v.met(7, c, judge)
	v.met(8, c, judge)
	if judged != 3 {
		t.Errorf("judged %d times, want 3 (once, again for the changed check, once for another run)", judged)
	}
}

// jsText writes numbers as JavaScript's String does (the page's judge compares that text).
func TestJSText(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{1048576.0, "1048576"}, {1048576, "1048576"}, {int64(7), "7"}, {2.5, "2.5"}, {0.000001, "0.000001"},
		{1.5e-7, "1.5e-7"}, {1e21, "1e+21"}, {-1e21, "-1e+21"}, {1e20, "100000000000000000000"},
		{0.30000000000000004, "0.30000000000000004"}, {-0.0, "0"}, {"ok", "ok"}, {true, "true"}, {nil, "null"},
	} {
		if got := jsText(tt.v); got != tt.want {
			t.Errorf("jsText(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
