// Package untrusted cleans what another process sends to be shown: a worker of the cluster is
// authenticated but not trusted, so every string it sends (its announcement, its runs' notes,
// tables, rows, texts, frames, charts, tasks and errors) goes through here before it reaches the
// operator's console or a learner's page. A line keeps printable characters only; a text (a
// listing, an error with the compiler's log) keeps newlines and tabs too. Control characters (ANSI
// escapes, carriage returns, NUL), Unicode format characters (bidi overrides and isolates,
// zero-width characters) and line or paragraph separators become U+FFFD, so that what was there
// stays visible; invalid UTF-8 does too. Each string is cut to a length in runes, marked with "…".
// A chart is written again through allow-lists (SVG).
package untrusted

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
)

// Length caps (runes) of what another process sends.
const (
	// MaxLine caps a caption, a column's label, a table cell, a text's title, a string in a frame
	// or a task.
	MaxLine = 1024
	// MaxMessage caps a note and a run's error.
	MaxMessage = 8192
	// MaxText caps a text's body and a chart's text: the largest event message a worker sends
	// (package cluster's maxEvent, 2 MiB), which bounds them anyway.
	MaxText = 2 << 20
	// MaxList caps a table's columns and a row's values (and, in package cluster, GPUs and kinds).
	MaxList = 64
	// MaxDepth caps the nesting of a frame's or a task's JSON.
	MaxDepth = 16
)

// replacement stands for each character that may not be shown.
const replacement = '\uFFFD'

// Line is s as one line: printable characters only (a tab or a newline becomes a space, every
// other control or format character U+FFFD), cut to limit runes.
func Line(s string, limit int) string { return clean(s, limit, false) }

// Text is s as text of several lines: Line's rule, except that newlines and tabs stay ("\r\n"
// becomes "\n").
func Text(s string, limit int) string {
	return clean(strings.ReplaceAll(s, "\r\n", "\n"), limit, true)
}

func clean(s string, limit int, lines bool) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == limit {
			b.WriteRune('…')
			break
		}
		n++
		switch {
		case r == '\n' || r == '\t':
			if !lines {
				r = ' '
			}
		case !unicode.IsGraphic(r): // controls (Cc), format characters (Cf: bidi, zero-width), Zl, Zp, unassigned
			r = replacement
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Level is a note's level if it is one the page knows (info, warning, error), else "info": the
// page uses it as a CSS class.
func Level(level string) string {
	switch level {
	case "info", "warning", "error":
		return level
	}
	return "info"
}

// Attributed is s, a line a worker wrote about its run (a note, a caption), with every "this
// server" (any case) said as "the machine NAME": a worker's results are never this server's.
func Attributed(s, machine string) string {
	return ReplaceFold(s, "this server", "the machine "+machine)
}

// ReplaceFold is s with every old (ASCII, lower case) in any ASCII case replaced by repl.
func ReplaceFold(s, old, repl string) string {
	var b strings.Builder
	for {
		i := indexFold(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i] + repl)
		s = s[i+len(old):]
	}
}

// ContainsFold reports whether s holds old (ASCII, lower case) in any ASCII case.
func ContainsFold(s, old string) bool { return indexFold(s, old) >= 0 }

// indexFold is the index in s of old (ASCII, lower case) in any ASCII case, or -1.
func indexFold(s, old string) int {
	for i := 0; i+len(old) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(old)], old) {
			return i
		}
	}
	return -1
}

// Value is v, a value decoded from JSON (a row's cell, a frame, a task), with every string in it
// Line'd, maps' keys too, and what is nested past MaxDepth null. Lists keep their length: the
// message's size bounds them. Slices are cleaned in place.
func Value(v any) any { return value(v, 0) }

func value(v any, depth int) any {
	if depth > MaxDepth {
		return nil
	}
	switch v := v.(type) {
	case string:
		return Line(v, MaxLine)
	case []any:
		for i := range v {
			v[i] = value(v[i], depth+1)
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[Line(k, MaxLine)] = value(x, depth+1)
		}
		return out
	}
	return v // a number, a bool, nil, json.Number
}

// Raw is raw JSON (a worker's task for the page) with every string in it cleaned (Value); what is
// not one JSON value becomes null.
func Raw(raw []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // numbers pass as written
	var v any
	if d.Decode(&v) != nil || d.More() {
		return json.RawMessage("null")
	}
	out, err := json.Marshal(Value(v))
	if err != nil {
		return json.RawMessage("null")
	}
	return out
}
