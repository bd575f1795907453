package cluster

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"unicode"

	"github.com/gpuplayground/playground/estimate"
)

// A worker is authenticated but not trusted: every string it sends (its announcement, its runs'
// notes, tables, rows, texts, frames, tasks and errors) is cleaned before it reaches the operator's
// console or a learner's page. A line keeps printable characters only; a text (a listing, an error
// with the compiler's log) keeps newlines and tabs too. Control characters (ANSI escapes, carriage
// returns, NUL), Unicode format characters (bidi overrides and isolates, zero-width characters) and
// line or paragraph separators become U+FFFD, so that what was there stays visible; invalid UTF-8
// does too. Each string is cut to a length in runes, marked with "…".

// Length caps (runes) of what a worker sends.
const (
	maxNameLen    = 64   // a machine's name
	maxFieldLen   = 128  // a CPU model, a GPU's name, a compiler, an OS, a kind's name
	maxLineLen    = 1024 // a caption, a column's label, a table cell, a text's title, a string in a frame or task
	maxMessageLen = 8192 // a note, a run's error
	maxTextLen    = maxEvent
	maxList       = 64 // GPUs, kinds, a table's columns, a row's values
	maxCores      = 1 << 16
	maxJSONDepth  = 16 // nesting of a frame's or a task's JSON
)

// replacement stands for each character a worker may not show.
const replacement = '\uFFFD'

// cleanLine is s as one line: printable characters only (a tab or a newline becomes a space, every
// other control or format character U+FFFD), cut to limit runes.
func cleanLine(s string, limit int) string { return clean(s, limit, false) }

// cleanText is s as text of several lines: cleanLine's rule, except that newlines and tabs stay
// ("\r\n" becomes "\n").
func cleanText(s string, limit int) string {
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

// cleanMachine is a worker's announcement with every string cleaned and bounded, its lists cut to
// maxList and its cores to 0…maxCores; a class no page or cell could name is dropped by hello. An
// empty name becomes "unnamed".
func cleanMachine(m Machine) Machine {
	m.Rates = cleanRates(m.Rates)
	m.Name = strings.TrimSpace(cleanLine(m.Name, maxNameLen))
	if m.Name == "" {
		m.Name = "unnamed"
	}
	m.Class = cleanLine(m.Class, maxNameLen)
	m.Host = cleanLine(m.Host, maxNameLen)
	m.CPU = cleanLine(m.CPU, maxFieldLen)
	m.OS = cleanLine(m.OS, maxFieldLen)
	m.Arch = cleanLine(m.Arch, maxFieldLen)
	m.Compiler = cleanLine(m.Compiler, maxFieldLen)
	m.GPUUnavailable = cleanLine(m.GPUUnavailable, maxLineLen)
	m.GPUs = cleanList(m.GPUs, maxFieldLen)
	m.Kinds = cleanList(m.Kinds, maxFieldLen)
	m.Cores = min(max(m.Cores, 0), maxCores)
	return m
}

// cleanList is list cut to maxList strings, each cleanLine'd to limit runes; nil stays nil.
func cleanList(list []string, limit int) []string {
	if list == nil {
		return nil
	}
	out := make([]string, 0, min(len(list), maxList))
	for _, s := range list[:min(len(list), maxList)] {
		out = append(out, cleanLine(s, limit))
	}
	return out
}

// cleanLevel is a note's level if it is one the page knows (info, warning, error), else "info": the
// page uses it as a CSS class.
func cleanLevel(level string) string {
	switch level {
	case "info", "warning", "error":
		return level
	}
	return "info"
}

// attributed is s, a line a worker wrote about its run (a note, a caption), with every "this
// server" (any case) said as "the machine NAME": a worker's results are never this server's.
func attributed(s, machine string) string {
	return replaceFold(s, "this server", "the machine "+machine)
}

// replaceFold is s with every old (ASCII, lower case) in any case replaced by repl.
func replaceFold(s, old, repl string) string {
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

// indexFold is the index in s of old (ASCII, lower case) in any ASCII case, or -1.
func indexFold(s, old string) int {
	for i := 0; i+len(old) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(old)], old) {
			return i
		}
	}
	return -1
}

// cleanValue is v, a value decoded from a worker's JSON (a row's cell, a frame, a task; depth is
// its nesting so far), with every string in it cleanLine'd, maps' keys too, and what is nested past
// maxJSONDepth null. Lists keep their length: the message's size (maxEvent) bounds them.
func cleanValue(v any, depth int) any {
	if depth > maxJSONDepth {
		return nil
	}
	switch v := v.(type) {
	case string:
		return cleanLine(v, maxLineLen)
	case []any:
		for i := range v {
			v[i] = cleanValue(v[i], depth+1)
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[cleanLine(k, maxLineLen)] = cleanValue(x, depth+1)
		}
		return out
	}
	return v // a number, a bool, nil, json.Number
}

// cleanRaw is raw JSON from a worker (a task for the page) with every string in it cleaned
// (cleanValue); what is not JSON becomes null.
func cleanRaw(raw []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // numbers pass as written
	var v any
	if d.Decode(&v) != nil || d.More() {
		return json.RawMessage("null")
	}
	out, err := json.Marshal(cleanValue(v, 0))
	if err != nil {
		return json.RawMessage("null")
	}
	return out
}

// cleanRates are a worker's reported rates if they can price a run: at most maxList kernels of at
// most maxList points each, at sizes from 1 strictly increasing with a cost above 0 (what the
// estimate's interpolation in log n and log cost needs), and maxList emulated kernels (with their
// launch times and instruction mixes), every number finite and not negative;
// else nil (estimate.Defaults then). A worker may lie about its speed; the server takes the fastest
// able machine's estimate (Cluster.Estimate), so a worker claiming to be slow cannot get runs
// refused; one claiming to be fast shortens no estimate and draws no more than its share of runs
// until its runs bear its prices out (trust.go).
func cleanRates(r *estimate.Rates) *estimate.Rates {
	if r == nil || len(r.Kernels) > maxList || len(r.SIMT) > maxList || len(r.SIMTN) > maxList || len(r.SIMTExp) > maxList ||
		len(r.SIMTLaunch) > maxList || len(r.SIMTMix) > maxList {
		return nil
	}
	ok := func(xs ...float64) bool {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return false
			}
		}
		return true
	}
	for _, pts := range r.Kernels {
		if len(pts) > maxList {
			return nil
		}
		for i, p := range pts {
			if p.N < 1 || i > 0 && p.N <= pts[i-1].N || !ok(p.SPF) || p.SPF == 0 {
				return nil
			}
		}
	}
	for k, v := range r.SIMT {
		if !ok(v, r.SIMTExp[k]) || r.SIMTN[k] < 0 {
			return nil
		}
	}
	for _, t := range r.SIMTLaunch {
		if !ok(t) {
			return nil
		}
	}
	for _, mix := range r.SIMTMix {
		if !ok(mix[:]...) {
			return nil
		}
	}
	sy := r.Systolic
	if !ok(r.FillNs, r.PointSeconds, sy.Cycle, sy.PE, sy.AnimCycle, sy.AnimPE) || r.Procs < 0 || sy.AnimatedN < 0 {
		return nil
	}
	out := *r
	out.Source, out.CPU = cleanLine(r.Source, maxFieldLen), cleanLine(r.CPU, maxFieldLen)
	return &out
}
