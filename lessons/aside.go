package lessons

import (
	"bytes"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// ModelSays is the lead of an aside that gives what the playground's model says, kept apart from
// what the hardware does (docs/lesson-style.md):
//
//	> **The model says:** the virtual GPU bounds this launch by its L1 traffic, 66.4 of 68.7 µs.
//
// A blockquote whose first words are this, in bold, renders with class "model-says" and role
// "note", so that the page can set it apart.
const ModelSays = "The model says:"

type asideTransformer struct{}

func (asideTransformer) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if q, ok := n.(*ast.Blockquote); ok {
			if modelSaysLead(q, src) {
				q.SetAttributeString("class", []byte("model-says"))
				q.SetAttributeString("role", []byte("note"))
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
}

// modelSaysLead reports whether q's first paragraph opens with ModelSays in bold.
func modelSaysLead(q *ast.Blockquote, src []byte) bool {
	p, ok := q.FirstChild().(*ast.Paragraph)
	if !ok {
		return false
	}
	e, ok := p.FirstChild().(*ast.Emphasis)
	if !ok || e.Level != 2 {
		return false
	}
	var lead bytes.Buffer
	for c := e.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			lead.Write(t.Segment.Value(src))
		}
	}
	return lead.String() == ModelSays
}
