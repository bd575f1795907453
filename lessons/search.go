package lessons

import (
	"strings"

	"github.com/yuin/goldmark/ast"
)

// Section is one part of a lesson's prose for the index page's search: a heading (level 2 or
// deeper) and the text under it up to the next such heading. Experiments, quizzes, challenges and
// code blocks are left out; code spans in the prose are kept as text.
type Section struct {
	// ID is the heading's anchor on the lesson's page ("" for the text before the first heading).
	ID      string `json:"id"`
	Heading string `json:"heading"`
	Text    string `json:"text"`
}

// maxSectionText bounds a section's text (bytes, cut at a word), so that the search index stays
// small whatever a lesson holds.
const maxSectionText = 8 << 10

// sections splits doc's prose at its headings of level 2 and deeper (sections without text or
// heading are dropped).
func sections(doc ast.Node, src []byte) []Section {
	var out []Section
	cur := Section{}
	flush := func() {
		cur.Text = cut(strings.Join(strings.Fields(cur.Text), " "), maxSectionText)
		if cur.Heading != "" || cur.Text != "" {
			out = append(out, cur)
		}
	}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch b := n.(type) {
		case *ast.Heading:
			if b.Level == 1 {
				continue
			}
			flush()
			cur = Section{Heading: strings.Join(strings.Fields(plainText(b, src)), " ")}
			if id, ok := b.AttributeString("id"); ok {
				if v, ok := id.([]byte); ok {
					cur.ID = string(v)
				}
			}
		case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock, *cellNode, *quizNode, *goalNode, *solutionNode:
			continue
		default:
			cur.Text += " " + plainText(n, src)
		}
	}
	flush()
	return out
}

// plainText is the text of n's inline content, without markup.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			if c.Type() == ast.TypeBlock {
				b.WriteByte(' ')
			}
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		case *ast.RawHTML, *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// cut returns s, or its first max bytes cut back to the last space.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	if i := strings.LastIndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	return s
}
