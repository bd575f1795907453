package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuplayground/playground/lessons"
)

// The page's own modules, on one page: static/goal.js judges the server's challenge cases alike
// (checkChallengeCases), static/format.js writes numbers for people (checkFormatNumber), and
// static/table.js folds a long caption's notes below its table (checkTableNotes).
func TestGoalsAndNumbersInBrowser(t *testing.T) {
	p := openPage(t, 800, 600)
	p.open("counting-flops")
	checkChallengeCases(t, p)
	checkFormatNumber(t, p)
	checkTableNotes(t, p)
	p.errs.check(t, "goal.js, format.js and table.js")
}

// checkChallengeCases: the challenge cases the instructor's grid is judged by
// (server/testdata/challenges.json, server's TestChallengeCases) give the same verdicts through
// static/goal.js, which judges the learner's page: each challenge goes to the page as a lesson's
// aside carries it (the parsed goal as JSON), each table as a DataTable holds it.
func checkChallengeCases(t *testing.T, p *browserPage) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "server", "testdata", "challenges.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name      string   `json:"name"`
		Challenge string   `json:"challenge"`
		Columns   []string `json:"columns"`
		Rows      [][]any  `json:"rows"`
		Met       bool     `json:"met"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	type jsCase struct {
		Spec  lessons.Goal `json:"spec"`
		Table any          `json:"table"`
	}
	var in []jsCase
	for _, c := range cases {
		g, err := lessons.ParseGoal("challenge", c.Challenge)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		var cols []map[string]string
		for _, l := range c.Columns {
			cols = append(cols, map[string]string{"label": l})
		}
		rows := []map[string]any{}
		for _, r := range c.Rows {
			rows = append(rows, map[string]any{"values": r})
		}
		in = append(in, jsCase{g, map[string]any{"columns": cols, "rows": rows}})
	}
	arg, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := p.str(`(async () => {
  const { judgeChallenge } = await import("/static/goal.js");
  return JSON.stringify(` + string(arg) + `.map((c) => judgeChallenge(c.spec, c.table).met));
})()`)
	var met []bool
	if err := json.Unmarshal([]byte(out), &met); err != nil || len(met) != len(cases) {
		t.Fatalf("goal.js gave %s (%v), want %d verdicts", out, err, len(cases))
	}
	for i, c := range cases {
		if met[i] != c.Met {
			t.Errorf("%s: goal.js says met %v, want %v", c.Name, met[i], c.Met)
		}
	}
}
