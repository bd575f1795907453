package lessons

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"gopkg.in/yaml.v3"
)

// Predictions and challenges are about the cell that follows them. A fenced block `predict` asks the
// learner for a number before Run and shows it beside the result; a fenced block `challenge` sets a
// goal the learner's edit of the cell must meet, judged on the run's table. Both name a table of the
// run, the row (by the values of some of its columns) and the columns that matter:
//
//	```predict
//	q: What GFLOP/s will `naive` reach at n = 512 here?
//	table: results
//	row: {kernel: naive, n: 512}
//	column: throughput
//	unit: GFLOP/s
//	```
//
//	```challenge
//	goal: Tile the kernel in shared memory so that it moves at most 300,000 sectors at n = 256.
//	table: emulated
//	row: {kernel: custom, n: 256}
//	checks:
//	  - {column: check, equals: ok}
//	  - {column: sectors, at_most: 300000}
//	```
//
// static/goal.js reads the run's table once the cell is done; the prediction is kept in the browser.

// Goal is a parsed `predict` or `challenge` block.
type Goal struct {
	Kind   string         `yaml:"-" json:"kind"`
	Q      string         `yaml:"q" json:"-"`
	Text   string         `yaml:"goal" json:"-"`
	Table  string         `yaml:"table" json:"table"`
	Row    map[string]any `yaml:"row" json:"row"`
	Column string         `yaml:"column" json:"column,omitempty"`
	Unit   string         `yaml:"unit" json:"unit,omitempty"`
	Checks []Check        `yaml:"checks" json:"checks,omitempty"`
}

// Check is one condition of a challenge on a column of the row: equal to a value, or at most / at
// least a number.
type Check struct {
	Column  string   `yaml:"column" json:"column"`
	Equals  any      `yaml:"equals" json:"equals,omitempty"`
	AtMost  *float64 `yaml:"at_most" json:"at_most,omitempty"`
	AtLeast *float64 `yaml:"at_least" json:"at_least,omitempty"`
	// Unit, if set, is the column's unit ("GB/s"), for the verdict's numbers.
	Unit string `yaml:"unit" json:"unit,omitempty"`
}

// ParseGoal reads a `predict` or `challenge` block (kind) of YAML.
func ParseGoal(kind, src string) (Goal, error) {
	var g Goal
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&g); err != nil {
		return g, err
	}
	g.Kind = kind
	switch {
	case g.Table == "" || len(g.Row) == 0:
		return g, fmt.Errorf("%s needs table: and row: (the run's table and the values that pick its row)", kind)
	case kind == "predict" && (strings.TrimSpace(g.Q) == "" || g.Column == ""):
		return g, fmt.Errorf("predict needs q: (the question) and column: (the number to predict)")
	case kind == "challenge" && (strings.TrimSpace(g.Text) == "" || len(g.Checks) == 0):
		return g, fmt.Errorf("challenge needs goal: (what to achieve) and checks:")
	}
	for _, c := range g.Checks {
		n := 0
		for _, set := range []bool{c.Equals != nil, c.AtMost != nil, c.AtLeast != nil} {
			if set {
				n++
			}
		}
		if c.Column == "" || n != 1 {
			return g, fmt.Errorf("each check needs column: and one of equals:, at_most:, at_least:")
		}
	}
	return g, nil
}

// Challenge is a lesson's `challenge` block and the cell it is about: the next cell of the lesson
// ("" when none follows).
type Challenge struct {
	ID   string // as the page's aside has it: "{slug}-challenge-{i}"
	Cell string
	Goal Goal
	line int // the block's line in the file, until Parse finds Cell
}

// followingCells names each challenge's cell: the first of cells (in document order) after it.
func followingCells(cs []Challenge, cells []Cell) []Challenge {
	for i := range cs {
		for _, c := range cells {
			if c.Line > cs[i].line {
				cs[i].Cell = c.ID
				break
			}
		}
	}
	return cs
}

type goalNode struct {
	ast.BaseBlock
	id   string
	goal Goal
}

var kindGoal = ast.NewNodeKind("Goal")

func (n *goalNode) Kind() ast.NodeKind { return kindGoal }
func (n *goalNode) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"ID": n.id}, nil)
}

type goalTransformer struct{}

func (goalTransformer) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	slug, _ := pc.Get(slugKey).(string)
	src := reader.Source()
	for i, fb := range fences(doc, src, func(l string) bool { return l == "predict" || l == "challenge" }) {
		body, line := fenceBody(fb, src)
		kind := string(fb.Language(src))
		g, err := ParseGoal(kind, body)
		if err != nil && pc.Get(errKey) == nil {
			pc.Set(errKey, &Error{Line: line, Msg: kind + ": " + err.Error()})
		}
		id := fmt.Sprintf("%s-%s-%d", slug, kind, i)
		fb.Parent().ReplaceChild(fb.Parent(), fb, &goalNode{id: id, goal: g})
		if answers, ok := pc.Get(answersKey).(*[]string); ok && kind == "predict" {
			*answers = append(*answers, id)
		}
		if cs, ok := pc.Get(challengesKey).(*[]Challenge); ok && kind == "challenge" && err == nil {
			*cs = append(*cs, Challenge{ID: id, Goal: g, line: line})
		}
	}
}

type goalRenderer struct{}

func (goalRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindGoal, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		g := n.(*goalNode)
		spec, err := json.Marshal(g.goal)
		if err != nil {
			return ast.WalkStop, err
		}
		return ast.WalkSkipChildren, goalHTML.Execute(w, map[string]any{
			"ID": g.id, "Kind": g.goal.Kind, "Spec": string(spec), "Q": inline(g.goal.Q), "Goal": inline(g.goal.Text), "Unit": g.goal.Unit,
		})
	})
}

// goalHTML is a prediction's or challenge's markup; static/goal.js fills in the verdict after the
// next cell's run.
var goalHTML = template.Must(template.New("goal").Parse(`<aside class="goal goal-{{.Kind}}" id="{{.ID}}" data-goal="{{.Spec}}">
{{if eq .Kind "predict"}}<label><b>Predict before you run:</b> {{.Q}} <input type="text" inputmode="decimal" class="goal-input" aria-label="your prediction">{{with .Unit}} {{.}}{{end}}</label>
{{else}}<p><b>Challenge:</b> {{.Goal}}</p>
{{end}}<p class="goal-verdict" role="status"></p>
</aside>
`))
