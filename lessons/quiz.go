package lessons

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"gopkg.in/yaml.v3"
)

// Check-yourself questions: a fenced block with the info string `quiz` holds a YAML list of questions,
// each either multiple choice or a number:
//
//	```quiz
//	- q: How many FLOPs does an n×n×n matrix multiply take?   # inline markdown
//	  choices: ["n²", "n³", "2n³"]
//	  answer: 3                      # the right choice, counting from 1
//	  explain: n² outputs, each n multiply-adds of 2 FLOPs.
//	- q: How many bytes do two 1024×1024 float32 matrices take?
//	  number: 8388608
//	  tolerance: 0.01                # relative (default 0.02): 1% either side is right
//	  unit: bytes
//	  explain: 2 × 1024² × 4 bytes.
//	- q: Double n. What happens to the FLOPs per byte, and why?
//	  predict: true                  # a predict-and-explain question (docs/lesson-style.md)
//	  choices: ["halves", "doubles: 2n³ FLOPs on 3n² numbers", "stays"]
//	  answer: 2
//	  explain: The FLOPs grow as n³ and the numbers as n², so their ratio grows as n.
//	```
//
// A question marked `predict: true` asks the learner to predict what a change does (to a kernel, a
// size, a layout) and to reason out why before checking; its explain: gives the reason. The page
// marks it "Predict and explain". Every embedded lesson has at least three questions, at least one
// of them such (TestEveryLessonHasThreeQuestionsOnePredictAndExplain).
//
// The page renders it as a form that checks each answer in the browser (static/quiz.js) and then
// shows the explanation; the learner's answers are kept in the browser with their work.

// Question is one check-yourself question.
type Question struct {
	Q       string   `yaml:"q"`
	Choices []string `yaml:"choices"`
	// Answer is the right choice, 1-based.
	Answer int      `yaml:"answer"`
	Number *float64 `yaml:"number"`
	// Tolerance is the relative error accepted for a Number (default 0.02).
	Tolerance float64 `yaml:"tolerance"`
	Unit      string  `yaml:"unit"`
	Explain   string  `yaml:"explain"`
	// Predict marks a predict-and-explain question: what will a change do, and why.
	Predict bool `yaml:"predict"`
}

// ParseQuiz reads a quiz block's YAML. Errors carry the 1-based line within src.
func ParseQuiz(src string) ([]Question, error) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(src), &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.SequenceNode {
		return nil, &quizError{1, "a quiz is a YAML list of questions (- q: …)"}
	}
	var qs []Question
	for _, item := range root.Content[0].Content {
		var q Question
		dec := item
		if err := dec.Decode(&q); err != nil {
			return nil, &quizError{item.Line, err.Error()}
		}
		if err := q.check(); err != nil {
			return nil, &quizError{item.Line, err.Error()}
		}
		if q.Number != nil && q.Tolerance == 0 {
			q.Tolerance = 0.02
		}
		qs = append(qs, q)
	}
	if len(qs) == 0 {
		return nil, &quizError{1, "a quiz needs at least one question"}
	}
	return qs, nil
}

func (q Question) check() error {
	switch {
	case strings.TrimSpace(q.Q) == "":
		return fmt.Errorf("a question needs q: (its text)")
	case strings.TrimSpace(q.Explain) == "":
		return fmt.Errorf("question %q needs explain: (why the answer is right)", q.Q)
	case (len(q.Choices) > 0) == (q.Number != nil):
		return fmt.Errorf("question %q needs either choices: with answer: or number:", q.Q)
	case len(q.Choices) == 1:
		return fmt.Errorf("question %q needs at least two choices", q.Q)
	case len(q.Choices) > 0 && (q.Answer < 1 || q.Answer > len(q.Choices)):
		return fmt.Errorf("question %q: answer: %d is not one of its %d choices (counting from 1)", q.Q, q.Answer, len(q.Choices))
	case q.Number != nil && (math.IsNaN(*q.Number) || math.IsInf(*q.Number, 0)):
		return fmt.Errorf("question %q: number: must be finite", q.Q)
	case q.Tolerance < 0 || q.Tolerance >= 1:
		return fmt.Errorf("question %q: tolerance: is relative, in [0, 1)", q.Q)
	}
	return nil
}

type quizError struct {
	line int
	msg  string
}

func (e *quizError) Error() string   { return e.msg }
func (e *quizError) SourceLine() int { return e.line }

// quizNode replaces a `quiz` fenced block.
type quizNode struct {
	ast.BaseBlock
	id        string
	questions []Question
}

var kindQuiz = ast.NewNodeKind("Quiz")

func (n *quizNode) Kind() ast.NodeKind { return kindQuiz }
func (n *quizNode) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"ID": n.id}, nil)
}

type quizTransformer struct{}

func (quizTransformer) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	slug, _ := pc.Get(slugKey).(string)
	src := reader.Source()
	for i, fb := range fences(doc, src, func(l string) bool { return l == "quiz" }) {
		body, line := fenceBody(fb, src)
		qs, err := ParseQuiz(body)
		if err != nil && pc.Get(errKey) == nil {
			at := line
			if le, ok := err.(interface{ SourceLine() int }); ok && le.SourceLine() > 0 {
				at = line + le.SourceLine() - 1
			}
			pc.Set(errKey, &Error{Line: at, Msg: "quiz: " + err.Error()})
		}
		node := &quizNode{id: fmt.Sprintf("%s-quiz-%d", slug, i), questions: qs}
		fb.Parent().ReplaceChild(fb.Parent(), fb, node)
		if answers, ok := pc.Get(answersKey).(*[]string); ok {
			for q := range qs {
				*answers = append(*answers, fmt.Sprintf("%s.%d", node.id, q+1))
			}
		}
	}
}

// inline renders a question's text or explanation: markdown (code spans, emphasis, links), no raw
// HTML, without the paragraph around it.
var inlineMD = goldmark.New(goldmark.WithExtensions())

func inline(s string) template.HTML {
	var buf bytes.Buffer
	if err := inlineMD.Convert([]byte(s), &buf); err != nil {
		return template.HTML(template.HTMLEscapeString(s))
	}
	out := strings.TrimSpace(buf.String())
	out = strings.TrimSuffix(strings.TrimPrefix(out, "<p>"), "</p>")
	return template.HTML(out)
}

type quizRenderer struct{}

func (quizRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindQuiz, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		q := n.(*quizNode)
		type choice struct {
			N    int
			Text template.HTML
		}
		type item struct {
			N        int
			Q        template.HTML
			Explain  template.HTML
			Choices  []choice
			IsNumber bool
			Predict  bool
			Number   string
			Tol      string
			Unit     string
			Answer   int
		}
		var items []item
		for i, x := range q.questions {
			it := item{N: i + 1, Q: inline(x.Q), Explain: inline(x.Explain), Answer: x.Answer, Unit: x.Unit, Predict: x.Predict}
			for j, c := range x.Choices {
				it.Choices = append(it.Choices, choice{j + 1, inline(c)})
			}
			if x.Number != nil {
				it.IsNumber = true
				it.Number = strconv.FormatFloat(*x.Number, 'f', -1, 64)
				it.Tol = fmt.Sprint(x.Tolerance)
			}
			items = append(items, it)
		}
		return ast.WalkSkipChildren, quizHTML.Execute(w, map[string]any{"ID": q.id, "Items": items})
	})
}

// quizHTML is a quiz's markup; static/quiz.js checks the answers and keeps them.
var quizHTML = template.Must(template.New("quiz").Parse(`<section class="quiz" id="{{.ID}}" data-quiz="{{.ID}}" aria-label="Check yourself">
{{range .Items}}<fieldset class="quiz-q" data-q="{{.N}}"{{if .IsNumber}} data-number="{{.Number}}" data-tolerance="{{.Tol}}"{{else}} data-answer="{{.Answer}}"{{end}}{{if .Predict}} data-predict="true"{{end}}>
<legend>{{.N}}. {{if .Predict}}<span class="quiz-predict">Predict and explain:</span> {{end}}{{.Q}}</legend>
{{if .IsNumber}}<label>Your answer <input type="text" inputmode="decimal" class="quiz-input" aria-label="your answer">{{with .Unit}} {{.}}{{end}}</label>
{{else}}{{$n := .N}}{{range .Choices}}<label><input type="radio" name="{{$.ID}}-{{$n}}" value="{{.N}}"> {{.Text}}</label>
{{end}}{{end}}<button type="button" class="quiz-check">Check</button>
<p class="verdict" role="status"></p>
<p class="explain" hidden>{{.Explain}}</p>
</fieldset>
{{end}}</section>
`))
