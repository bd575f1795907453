package cellstest

import (
	"regexp"
	"strings"
)

// exponent matches a number in exponent notation ("4.67e+10", "3.8e9", "1e-05") or a byte count
// of one in the plural ("× 1 bytes").
var exponent = regexp.MustCompile(`\b\d+(\.\d+)?[eE][+-]?\d+\b|\b1 bytes\b`)

// Unreadable lists the texts of r a learner reads as they are (notes, tables' captions and column
// labels, text values of rows, texts) that write a number as a machine does: in exponent notation
// ("4.67e+10 parameters" rather than "46.7 billion parameters"), or "1 bytes". Numbers in rows are
// left to the page, which formats them (static/format.js).
func (r *Recorder) Unreadable() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var texts []string
	for _, n := range r.Notes {
		texts = append(texts, n.Message)
	}
	for _, t := range r.Tables {
		texts = append(texts, t.Caption)
		for _, c := range t.Columns {
			texts = append(texts, c.Label+" "+c.Unit)
		}
	}
	for _, row := range r.Rows {
		for _, v := range row.Values {
			if s, ok := v.(string); ok {
				texts = append(texts, s)
			}
		}
	}
	for _, t := range r.Texts {
		texts = append(texts, t.Title, t.Body)
	}
	var bad []string
	for _, s := range texts {
		if m := exponent.FindString(s); m != "" {
			bad = append(bad, m+" in "+strings.TrimSpace(s))
		}
	}
	return bad
}
