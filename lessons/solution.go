package lessons

import (
	"html/template"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// A fenced block `solution` is a reference answer to the challenge before it, folded away until the
// learner opens it (an HTML <details>, no script): the kernel of the solution kept in
// testdata/challenges, which the challenge test checks meets the goal and this block repeats word for
// word.
//
//	```solution
//	extern "C" __global__ void …
//	```
type solutionNode struct {
	ast.BaseBlock
	code string
}

var kindSolution = ast.NewNodeKind("Solution")

func (n *solutionNode) Kind() ast.NodeKind { return kindSolution }
func (n *solutionNode) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, nil, nil)
}

type solutionTransformer struct{}

func (solutionTransformer) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	for _, fb := range fences(doc, src, func(l string) bool { return l == "solution" }) {
		body, _ := fenceBody(fb, src)
		fb.Parent().ReplaceChild(fb.Parent(), fb, &solutionNode{code: body})
	}
}

type solutionRenderer struct{}

func (solutionRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindSolution, func(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		return ast.WalkSkipChildren, solutionHTML.Execute(w, n.(*solutionNode).code)
	})
}

var solutionHTML = template.Must(template.New("solution").Parse(`<details class="solution">
<summary>Reveal a solution</summary>
<pre><code class="language-cuda">{{.}}</code></pre>
</details>
`))
