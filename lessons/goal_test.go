package lessons

import (
	"fmt"
	"strings"
	"testing"
)

func TestGoalRendersBeforeItsCell(t *testing.T) {
	src := "---\ntitle: T\nsummary: S\norder: 1\n---\n# T\n\n```predict\nq: How fast is `naive`?\ntable: results\nrow: {kernel: naive, n: 512}\ncolumn: throughput\nunit: GFLOP/s\n```\n"
	l, err := Parse("g.md", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	html := string(l.HTML)
	for _, want := range []string{
		`<aside class="goal goal-predict" id="g-predict-0" data-goal="{&#34;kind&#34;:&#34;predict&#34;,&#34;table&#34;:&#34;results&#34;,&#34;row&#34;:{&#34;kernel&#34;:&#34;naive&#34;,&#34;n&#34;:512},&#34;column&#34;:&#34;throughput&#34;,&#34;unit&#34;:&#34;GFLOP/s&#34;}">`,
		`How fast is <code>naive</code>?`,
		`class="goal-input" aria-label="your prediction"> GFLOP/s</label>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %s:\n%s", want, html)
		}
	}
}

func TestGoalErrors(t *testing.T) {
	for src, want := range map[string]string{
		"```predict\nq: Q\ntable: results\ncolumn: x\n```\n":                                           "g.md:9: predict: predict needs table: and row:",
		"```challenge\ngoal: G\ntable: t\nrow: {a: 1}\n```\n":                                          "g.md:9: challenge: challenge needs goal: (what to achieve) and checks:",
		"```challenge\ngoal: G\ntable: t\nrow: {a: 1}\nchecks: [{column: c}]\n```\n":                   "each check needs column: and one of",
		"```challenge\ngoal: G\ntable: t\nrow: {a: 1}\nchecks: [{column: c, at_most: 1}]\nx: 1\n```\n": "field x not found",
	} {
		_, err := Parse("g.md", []byte("---\ntitle: T\nsummary: S\norder: 1\n---\n# T\n\n"+src), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %s", err, want)
		}
	}
}

func FuzzParseGoal(f *testing.F) {
	f.Add("predict", "q: Q\ntable: results\nrow: {kernel: naive}\ncolumn: throughput\n")
	f.Add("challenge", "goal: G\ntable: emulated\nrow: {kernel: custom, n: 256}\nchecks:\n  - {column: sectors, at_most: 3}\n")
	f.Fuzz(func(t *testing.T, kind, src string) {
		if kind != "predict" && kind != "challenge" {
			return
		}
		g, err := ParseGoal(kind, src)
		if err != nil {
			return
		}
		if g.Table == "" || len(g.Row) == 0 || (kind == "challenge" && len(g.Checks) == 0) || (kind == "predict" && g.Column == "") {
			t.Errorf("accepted an incomplete %s: %+v", kind, g)
		}
	})
}

// A challenge's check carries its column's unit into the spec the page judges with.
func TestGoalCheckUnit(t *testing.T) {
	g, err := ParseGoal("challenge", "goal: G\ntable: emulated\nrow: {kernel: custom}\nchecks: [{column: modelled, at_least: 3000, unit: GB/s}]\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Checks[0].Unit, "GB/s"; got != want {
		t.Errorf("got unit %q, want %q", got, want)
	}
}

// Each challenge names the cell it is about: the next cell of the lesson ("" after the last).
func TestChallengesNameTheirCell(t *testing.T) {
	ch := "```challenge\ngoal: G\ntable: t\nrow: {a: 1}\nchecks: [{column: c, equals: ok}]\n```\n"
	src := "---\ntitle: T\nsummary: S\norder: 1\n---\n# T\n\n```matmul\nsizes: [64]\n```\n\n" + ch +
		"\n```matmul\nid: second\nsizes: [64]\n```\n\n" + ch
	l, err := Parse("g.md", []byte(src), kinds)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range l.Challenges {
		got = append(got, c.ID+"→"+c.Cell)
	}
	if want := "[g-challenge-0→second g-challenge-1→]"; fmt.Sprint(got) != want {
		t.Errorf("challenges: got %v, want %s", got, want)
	}
}
