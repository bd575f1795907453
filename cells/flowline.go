package cells

import (
	"fmt"
	"regexp"
	"strings"
)

// yaml.v3 reports its parser's errors (not its scanner's) on a 0-based line: the line where the
// parser met the problem, or, while it parses a flow collection ([…] or {…}) that opens below the
// first line, the line where the collection opens (the error's "context mark"; yaml.v3's
// parser.fail). These are the parser's messages (yaml.v3's parserc.go); scanner messages carry
// 1-based lines and are left alone.
var parserMessages = []string{
	"did not find expected node content",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
}

// flowSpan is a flow collection of the source: the line it opens on, its last line, its closer
// (']' or '}'), and whether it is closed (false: a later top-level key or the end came first).
type flowSpan struct {
	open, last int
	closer     byte
	closed     bool
}

// topKey is a line that starts a top-level key ("sizes: …").
var topKey = regexp.MustCompile(`^[A-Za-z_][\w-]*\s*:(\s|$)`)

// flowSpans lists the source's outermost flow collections, skipping quoted text and comments.
func flowSpans(src string) []flowSpan {
	var spans []flowSpan
	var stack []byte // closers of the open collections
	var cur flowSpan
	lastText := 0 // the last line with text
	quote := byte(0)
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		if len(stack) > 0 && quote == 0 && topKey.MatchString(line) { // a new key: the collection never closed
			cur.last = lastText
			spans = append(spans, cur)
			stack = stack[:0]
		}
		for j := 0; j < len(line); j++ {
			c := line[j]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '#' && (j == 0 || line[j-1] == ' ' || line[j-1] == '\t'):
				j = len(line)
			case c == '[' || c == '{':
				if len(stack) == 0 {
					cur = flowSpan{open: n}
				}
				stack = append(stack, map[byte]byte{'[': ']', '{': '}'}[c])
			case (c == ']' || c == '}') && len(stack) > 0:
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					cur.last, cur.closer, cur.closed = n, c, true
					spans = append(spans, cur)
				}
			}
		}
		if len(stack) > 0 {
			cur.closer = stack[0]
		}
		if strings.TrimSpace(line) != "" {
			lastText = n
		}
	}
	if len(stack) > 0 {
		cur.last = lastText
		spans = append(spans, cur)
	}
	return spans
}

// suspect is a line of a flow collection's that likely holds the mistake: an empty entry (",,"), a
// block-list dash, or a stray opening quote.
var suspect = regexp.MustCompile(`,\s*,|\[\s*,|^\s*- |^[^"']*["'][^"']*$`)

// flowLine places a YAML parser error (msg, at yaml.v3's reported line) on the learner's line, and
// says more where a flow collection is involved: an unclosed one is named with its opening line; in
// a closed one spanning several lines, the line that looks wrong, else both the collection's lines.
// ok is false for an error that is not the parser's.
func flowLine(src string, reported int, msg string) (line int, out string, ok bool) {
	parser := false
	for _, m := range parserMessages {
		parser = parser || strings.HasPrefix(msg, m)
	}
	if !parser {
		return 0, "", false
	}
	line = reported + 1 // the problem's line, or a collection's opening line
	lines := strings.Split(src, "\n")
	for _, s := range flowSpans(src) {
		switch {
		case !s.closed && s.open <= line && line <= s.last+1:
			where := fmt.Sprintf("the list on line %d has no closing `%c`", s.open, s.closer)
			if s.last > s.open {
				where = fmt.Sprintf("the list that opens on line %d has no closing `%c` (end it on line %d)", s.open, s.closer, s.last)
			}
			return s.last, "YAML: " + where + " (the parser: " + msg + ")", true
		case s.closed && s.open <= line && line <= s.last && s.last > s.open:
			if line > s.open || s.open == 1 { // the parser's own line: the problem's
				return line, "YAML: " + msg, true
			}
			for n := s.open; n <= s.last; n++ {
				text := lines[n-1]
				if n == s.open {
					text = text[strings.IndexAny(text, "[{")+1:]
				}
				if suspect.MatchString(text) {
					return n, fmt.Sprintf("YAML: %s (in the list that opens on line %d)", msg, s.open), true
				}
			}
			return s.open, fmt.Sprintf("YAML: %s somewhere in the list on lines %d to %d (the parser cannot say which line)", msg, s.open, s.last), true
		}
	}
	return line, "YAML: " + msg, true
}
