// Package lessons parses the markdown lessons (YAML front matter, GFM, highlighted code) into HTML once,
// turning each fenced block whose info string names a cell kind (such as `matmul`) into a runnable
// cell; it embeds the project's own lessons and can serve a directory that authors edit.
package lessons

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	highlighting "github.com/yuin/goldmark-highlighting/v2"
	meta "github.com/yuin/goldmark-meta"

	"github.com/gpuplayground/playground/cells"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Embedded holds the project's lessons, one markdown file each.
//
//go:embed *.md recorded renamed.yaml
var Embedded embed.FS

// Lesson is one parsed and rendered lesson.
type Lesson struct {
	// Slug is the file name without ".md"; the page is /lessons/{Slug}.
	Slug    string
	File    string
	Title   string
	Summary string
	// Order sorts the index; any number, so a lesson can slot in between (3.5).
	Order float64
	// HTML is the rendered body; cells are already turned into their editable form.
	HTML  template.HTML
	Cells []Cell
	// Answers are the keys under which the learner's browser keeps their answers on this page:
	// "{quiz id}.{question number from 1}" for each check-yourself question, and the id of each
	// prediction (static/quiz.js, static/goal.js).
	Answers []string
	// Challenges are the lesson's `challenge` blocks, each with the cell it is about (the next one).
	Challenges []Challenge
	// Sections are the lesson's prose by heading, for the index page's search (search.go).
	Sections []Section
	// Err is set, and the fields above except Slug and File are empty, when a lesson served from a
	// directory broke after start-up; its page shows the error.
	Err error
}

// Cell finds the cell with the given id.
func (l *Lesson) Cell(id string) (Cell, bool) {
	for _, c := range l.Cells {
		if c.ID == id {
			return c, true
		}
	}
	return Cell{}, false
}

// Cell is a runnable fenced block.
type Cell struct {
	// ID is the spec's `id:` key if it has one (stable when cells move), else "{slug}-{index}", index
	// counting cells from 0 in document order.
	ID string
	// Kind is the fence's info string, e.g. "matmul".
	Kind string
	// Source is the block's text, the spec the learner sees and edits.
	Source string
	// Line is the 1-based line of the file where Source starts.
	Line int
	// Recording, if not nil, is a real GPU run of this cell (recorded/<cell id>.json), made from
	// this very source.
	Recording *cells.Recording
}

// Kinds are the cell kinds whose fences become cells; each cell's source must parse (a parse error
// may implement SourceLine() int, a 1-based line within the source, so that the lesson error points
// at the file's line).
type Kinds []cells.Kind

// Error is a lesson problem at File:Line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Load parses every *.md file at the top of fsys, sorted by front-matter order, then slug, and
// attaches the recordings in recorded/*.json. The first error stops it and names file:line.
func Load(fsys fs.FS, kinds Kinds) ([]*Lesson, error) {
	names, err := fs.Glob(fsys, "*.md")
	if err != nil {
		return nil, err
	}
	var out []*Lesson
	for _, name := range names {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		l, err := Parse(name, src, kinds)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	if err := uniqueIDs(out); err != nil {
		return nil, err
	}
	if err := loadRecordings(fsys, out); err != nil {
		return nil, err
	}
	Sort(out)
	return out, nil
}

// Sort orders lessons by Order, then Slug; broken lessons go last.
func Sort(ls []*Lesson) {
	sort.SliceStable(ls, func(i, j int) bool {
		a, b := ls[i], ls[j]
		if (a.Err == nil) != (b.Err == nil) {
			return a.Err == nil
		}
		if a.Order != b.Order {
			return a.Order < b.Order
		}
		return a.Slug < b.Slug
	})
}

var (
	slugKey  = parser.NewContextKey()
	cellsKey = parser.NewContextKey()
	errKey   = parser.NewContextKey()
	kindsKey = parser.NewContextKey()
	// answersKey holds a *[]string, the page's answer keys (Lesson.Answers), in document order.
	answersKey = parser.NewContextKey()
	// challengesKey holds a *[]Challenge, the page's challenges with the source line of each in
	// Cell, until Parse names the cell that follows it.
	challengesKey = parser.NewContextKey()
)

// md is stateless after construction; per-document state travels in the parser.Context.
var md = goldmark.New(
	goldmark.WithExtensions(
		extension.GFM,
		meta.Meta,
		highlighting.NewHighlighting(highlighting.WithStyle("github")),
	),
	goldmark.WithParserOptions(
		parser.WithAutoHeadingID(),
		parser.WithASTTransformers(util.Prioritized(cellTransformer{}, 100), util.Prioritized(quizTransformer{}, 101), util.Prioritized(goalTransformer{}, 102), util.Prioritized(solutionTransformer{}, 103), util.Prioritized(asideTransformer{}, 104)),
	),
	goldmark.WithRendererOptions(
		renderer.WithNodeRenderers(util.Prioritized(cellRenderer{}, 100), util.Prioritized(quizRenderer{}, 101), util.Prioritized(goalRenderer{}, 102), util.Prioritized(solutionRenderer{}, 103)),
	),
)

var yamlLine = regexp.MustCompile(`line (\d+)`)

// Parse renders one lesson file. name is used for the slug and in errors. Raw HTML in the markdown is
// not rendered (goldmark's default), so a lesson cannot inject script into the page.
func Parse(name string, src []byte, kinds Kinds) (*Lesson, error) {
	slug := strings.TrimSuffix(path.Base(name), ".md")
	pc := parser.NewContext()
	pc.Set(slugKey, slug)
	pc.Set(kindsKey, kinds)
	found := &[]Cell{}
	pc.Set(cellsKey, found)
	answers := &[]string{}
	pc.Set(answersKey, answers)
	challenges := &[]Challenge{}
	pc.Set(challengesKey, challenges)
	var buf bytes.Buffer
	doc := md.Parser().Parse(text.NewReader(src), parser.WithContext(pc))
	if err := md.Renderer().Render(&buf, src, doc); err != nil {
		return nil, &Error{File: name, Line: 1, Msg: err.Error()}
	}
	fm, err := meta.TryGet(pc)
	if err != nil {
		line := 1
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			line = n + 1 // the front matter starts after the opening "---" line
		}
		return nil, &Error{File: name, Line: line, Msg: "front matter: " + err.Error()}
	}
	if e, ok := pc.Get(errKey).(*Error); ok {
		e.File = name
		return nil, e
	}
	l := &Lesson{Slug: slug, File: name, HTML: template.HTML(buf.String()), Cells: *found, Answers: *answers,
		Challenges: followingCells(*challenges, *found), Sections: sections(doc, src)}
	var ok bool
	if l.Title, ok = fm["title"].(string); !ok || l.Title == "" {
		return nil, &Error{File: name, Line: 1, Msg: "front matter needs `title: ...` (a string)"}
	}
	if l.Summary, ok = fm["summary"].(string); !ok || l.Summary == "" {
		return nil, &Error{File: name, Line: 1, Msg: "front matter needs `summary: ...` (a string)"}
	}
	switch o := fm["order"].(type) {
	case int:
		l.Order = float64(o)
	case float64:
		l.Order = o
	default:
		return nil, &Error{File: name, Line: 1, Msg: "front matter needs `order: N` (a number)"}
	}
	return l, nil
}

// cellNode replaces a fenced block whose info string is a cell kind.
type cellNode struct {
	ast.BaseBlock
	cell    Cell
	slug    string
	lines   int
	actions []cells.Action
	lang    string // the editor's highlighting (cells.Languager)
}

var kindCell = ast.NewNodeKind("Cell")

func (n *cellNode) Kind() ast.NodeKind { return kindCell }
func (n *cellNode) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"ID": n.cell.ID}, nil)
}

type cellTransformer struct{}

func (cellTransformer) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	kinds, _ := pc.Get(kindsKey).(Kinds)
	slug, _ := pc.Get(slugKey).(string)
	found := pc.Get(cellsKey).(*[]Cell)
	src := reader.Source()
	isCell := func(lang string) bool { _, ok := cells.Lookup(kinds, lang); return ok }
	for _, fb := range fences(doc, src, isCell) {
		kind := string(fb.Language(src))
		body, line := fenceBody(fb, src)
		c := Cell{ID: fmt.Sprintf("%s-%d", slug, len(*found)), Kind: kind, Source: body, Line: line}
		k, _ := cells.Lookup(kinds, kind)
		id, err := cells.ExplicitID(c.Source)
		if id != "" {
			c.ID = id
		}
		if err == nil {
			_, err = k.Parse(cells.Cell{ID: c.ID, Source: c.Source})
		}
		if err != nil && pc.Get(errKey) == nil {
			at := line
			if le, ok := err.(interface{ SourceLine() int }); ok && le.SourceLine() > 0 {
				at = line + le.SourceLine() - 1
			}
			pc.Set(errKey, &Error{Line: at, Msg: fmt.Sprintf("%s cell %s: %v", kind, c.ID, err)})
		}
		*found = append(*found, c)
		var actions []cells.Action
		if a, ok := k.(cells.Actioner); ok {
			actions = a.Actions()
		}
		lang := "yaml"
		if l, ok := k.(cells.Languager); ok && l.Language() != "" {
			lang = l.Language()
		}
		node := &cellNode{cell: c, slug: slug, lines: fb.Lines().Len(), actions: actions, lang: lang}
		fb.Parent().ReplaceChild(fb.Parent(), fb, node)
	}
}

type cellRenderer struct{}

func (cellRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindCell, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			c := n.(*cellNode)
			err := cellHTML.Execute(w, map[string]any{"Cell": c.cell, "Slug": c.slug, "Rows": max(c.lines+1, 3), "Actions": c.actions, "Lang": c.lang})
			return ast.WalkSkipChildren, err
		}
		return ast.WalkContinue, nil
	})
}

// cellHTML is a cell's markup; static/app.js finds cells by the "cell" class and data attributes,
// and renders what runs emit into .cell-output (with the kind's module, /cells/{kind}.js).
var cellHTML = template.Must(template.New("cell").Parse(`<section class="cell" id="{{.Cell.ID}}" data-cell="{{.Cell.ID}}" data-kind="{{.Cell.Kind}}" data-lesson="{{.Slug}}" data-lang="{{.Lang}}" aria-label="{{.Cell.Kind}} experiment {{.Cell.ID}}">
<div class="cell-head"><span class="cell-kind">{{.Cell.Kind}} experiment</span><span class="cell-hint">edit, then Run or Shift+Enter · Esc leaves the editor</span></div>
<textarea class="cell-source" rows="{{.Rows}}" spellcheck="false" aria-label="experiment spec">{{.Cell.Source}}</textarea>
<div class="cell-controls"><button type="button" class="cell-run">Run</button><button type="button" class="cell-stop" disabled>Stop</button>{{range .Actions}}<button type="button" class="cell-action" data-action="{{.Name}}">{{.Label}}</button>{{end}}<button type="button" class="cell-reset" title="put back the lesson's source">Reset</button><progress class="cell-progress" max="1" value="0" aria-label="progress"></progress><span class="cell-status" role="status" aria-live="polite"></span></div>
<div class="cell-output"></div>
</section>
`))

// uniqueIDs checks that no two cells of the lessons share an id (recordings and links name them).
func uniqueIDs(ls []*Lesson) error {
	seen := map[string]string{}
	for _, l := range ls {
		for _, c := range l.Cells {
			at := fmt.Sprintf("%s:%d", l.File, c.Line)
			if first, dup := seen[c.ID]; dup {
				return &Error{File: l.File, Line: c.Line, Msg: fmt.Sprintf("cell id %q is already used at %s", c.ID, first)}
			}
			seen[c.ID] = at
		}
	}
	return nil
}

// fences lists doc's fenced code blocks whose info string is (its language) accepted by want, in
// document order.
func fences(doc *ast.Document, src []byte, want func(lang string) bool) []*ast.FencedCodeBlock {
	var out []*ast.FencedCodeBlock
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if fb, ok := n.(*ast.FencedCodeBlock); ok && entering && want(string(fb.Language(src))) {
			out = append(out, fb)
		}
		return ast.WalkContinue, nil
	})
	return out
}

// fenceBody is a fenced block's text and the 1-based line of the file it starts on (for an empty
// block, the line after its opening fence).
func fenceBody(fb *ast.FencedCodeBlock, src []byte) (body string, line int) {
	var b strings.Builder
	lines := fb.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		b.Write(seg.Value(src))
	}
	line = 1
	if lines.Len() > 0 {
		line = bytes.Count(src[:lines.At(0).Start], []byte("\n")) + 1
	} else if fb.Info != nil {
		line = bytes.Count(src[:fb.Info.Segment.Start], []byte("\n")) + 2
	}
	return b.String(), line
}
