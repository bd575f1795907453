package cells

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// SpecError is a problem with a cell's source at a 1-based line of it (0 when it concerns the cell
// as a whole). Err, if set, is what kind of problem it is, for errors.Is (ErrOverLimit).
type SpecError struct {
	Line int
	Msg  string
	Err  error
}

// ErrOverLimit is the kind of a refusal of a run estimated over the run time limit, whoever priced
// it (a kind at parse, or the server): errors.Is(err, ErrOverLimit). A server then offers the
// largest of the cell's sizes that fit.
var ErrOverLimit = errors.New("estimated over the run time limit")

// Unwrap is Err.
func (e *SpecError) Unwrap() error { return e.Err }

func (e *SpecError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// SourceLine is Line, for callers that place the error inside a larger file.
func (e *SpecError) SourceLine() int { return e.Line }

// Errorf returns a *SpecError at line.
func Errorf(line int, format string, args ...any) *SpecError {
	return &SpecError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// At is a spec value that remembers the line it was written on, for errors that point at it. A
// whole number must be written as one: 64.5 where an int is wanted is an error, not 64.
type At[T any] struct {
	V    T
	Line int
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (a *At[T]) UnmarshalYAML(n *yaml.Node) error {
	a.Line = n.Line
	if wantsInts(reflect.TypeFor[T]()) {
		if bad := nonInteger(n); bad != nil {
			return Errorf(bad.Line, "%s is not a whole number", bad.Value)
		}
	}
	return n.Decode(&a.V)
}

// wantsInts reports whether t is an integer type or a slice or array of them.
func wantsInts(t reflect.Type) bool {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// nonInteger finds a float scalar in n (yaml.v3 would truncate it into an int).
func nonInteger(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" {
		return n
	}
	for _, c := range n.Content {
		if bad := nonInteger(c); bad != nil {
			return bad
		}
	}
	return nil
}

// Caps on what Decode reads, so that decoding costs time and memory in proportion to a small input:
// a cell's YAML is at most MaxSpecBytes long, each key and value at most MaxValueBytes, and YAML
// aliases (*name), which repeat a subtree without writing it out, are refused.
const (
	MaxSpecBytes  = 16 << 10
	MaxValueBytes = 256
)

// Decode reads a cell's YAML source into the struct *v: every key must be one of v's `yaml` fields
// (inline structs included), a key may appear once, and the source is one document, at most
// MaxSpecBytes long, with no alias and no key or value over MaxValueBytes. An `id:` key must be a
// valid cell id. Errors are *SpecError values with the line and, for an unknown key, the known ones.
// An empty source is an error that lists the keys.
func Decode(src string, v any) error {
	keys := Keys(v)
	if len(src) > MaxSpecBytes {
		return &SpecError{Msg: fmt.Sprintf("the cell's YAML is %d bytes long; a cell's YAML is at most %d bytes", len(src), MaxSpecBytes)}
	}
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &SpecError{Msg: "the cell is empty: write YAML keys: " + keys}
		}
		return yamlError(err, src, keys)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Errorf(extra.Line, "a cell holds one YAML document; remove the `---` and what follows it")
	} else if !errors.Is(err, io.EOF) {
		return yamlError(err, src, keys)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		line := 1
		if len(doc.Content) > 0 {
			line = doc.Content[0].Line
		}
		return Errorf(line, "the cell must be a YAML mapping of keys: %s", keys)
	}
	if err := bounded(&doc); err != nil {
		return err
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 { // yaml.v3 reports duplicates only after decoding
		for j := 0; j < i; j += 2 {
			if root.Content[j].Value == root.Content[i].Value {
				return Errorf(root.Content[i].Line, "key %q appears twice", root.Content[i].Value)
			}
		}
		if !slicesContains(keys, root.Content[i].Value) {
			return Errorf(root.Content[i].Line, "unknown key %q; known keys: %s", root.Content[i].Value, keys)
		}
		if key, val := root.Content[i].Value, root.Content[i+1]; (key == "id" || key == "machine") && (val.Kind != yaml.ScalarNode || !validID.MatchString(val.Value)) {
			return Errorf(val.Line, "%s %q: use 1 to 64 lower-case letters, digits and dashes, starting with a letter or digit", key, val.Value)
		}
	}
	if err := root.Decode(v); err != nil {
		return yamlError(err, src, keys)
	}
	return nil
}

// bounded refuses aliases and over-long keys and values anywhere in n.
func bounded(n *yaml.Node) error {
	switch {
	case n.Kind == yaml.AliasNode:
		return Errorf(n.Line, "YAML aliases (*%s) are not allowed in a cell; write the value out", n.Value)
	case len(n.Value) > MaxValueBytes:
		return Errorf(n.Line, "a key or value of %d bytes is too long; a cell's keys and values are at most %d bytes", len(n.Value), MaxValueBytes)
	}
	for _, c := range n.Content {
		if err := bounded(c); err != nil {
			return err
		}
	}
	return nil
}

func slicesContains(list, key string) bool {
	for _, k := range strings.Split(list, ", ") {
		if k == key {
			return true
		}
	}
	return false
}

// Keys lists the YAML keys of the struct *v, as written in its `yaml` tags, in field order.
func Keys(v any) string {
	var out []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			name, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(opts, "inline") {
				walk(f.Type)
				continue
			}
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			out = append(out, name)
		}
	}
	walk(reflect.TypeOf(v).Elem())
	return strings.Join(out, ", ")
}

// yamlError turns a yaml.v3 error ("yaml: line 3: did not find expected key", or a TypeError's
// "line 2: cannot unmarshal !!str `x` into int") in src into a *SpecError; a parser's error goes on
// the learner's line (flowLine).
func yamlError(err error, src, keys string) *SpecError {
	var se *SpecError
	if errors.As(err, &se) {
		return se
	}
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil {
		msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
	}
	if l, m, ok := flowLine(src, line, msg); ok {
		return &SpecError{Line: l, Msg: m}
	}
	msg = friendlier(msg)
	return &SpecError{Line: line, Msg: msg}
}

// friendlier rewords yaml.v3's type errors for learners.
func friendlier(msg string) string {
	if rest, ok := strings.CutPrefix(msg, "cannot unmarshal "); ok {
		// "!!str `x` into int" → "expected a whole number, got x"
		what, into, _ := strings.Cut(rest, " into ")
		got := what
		if i := strings.Index(what, "`"); i >= 0 {
			got = strings.Trim(what[i:], "`")
		} else {
			got = map[string]string{"!!seq": "a list", "!!map": "a mapping", "!!str": "text"}[strings.TrimSpace(what)]
		}
		return fmt.Sprintf("expected %s, got %s", describe(into), got)
	}
	return "YAML: " + msg
}

func describe(goType string) string {
	if inner, ok := strings.CutPrefix(goType, "cells.At["); ok {
		return describe(strings.TrimSuffix(inner, "]"))
	}
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list of " + plural(describe(goType[2:]))
	case strings.HasPrefix(goType, "map["):
		return "a mapping of name: value"
	case strings.Contains(goType, "int"):
		return "a whole number"
	case strings.Contains(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "text"
	}
	return goType
}

func plural(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "a "), "an ")
	switch s {
	case "whole number", "number":
		return s + "s"
	case "text":
		return "names"
	}
	return s
}

// Sorted returns m's keys sorted, for stable messages.
func Sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SplitSource splits a cell made of a YAML header, a line `---`, then source code (a kernel in CUDA
// C++ or WGSL), as `cuda` and `wgsl` cells are. what names the source in errors ("the kernel source",
// "the WGSL source"), kind the cell kind; a source over maxBytes is an error on its first line.
// sourceLine is the cell line the source starts on (1-based).
func SplitSource(cell, kind, what string, maxBytes int) (header, source string, sourceLine int, err error) {
	lines := strings.SplitAfter(cell, "\n")
	sep := -1
	for i, l := range lines {
		if strings.TrimRight(l, " \t\r\n") == "---" {
			sep = i
			break
		}
	}
	if sep < 0 {
		return "", "", 0, &SpecError{Msg: fmt.Sprintf("a %s cell is a YAML header, a line `---`, then %s; no `---` line found", kind, what)}
	}
	header, source, sourceLine = strings.Join(lines[:sep], ""), strings.Join(lines[sep+1:], ""), sep+2
	if len(source) > maxBytes {
		return "", "", 0, Errorf(sourceLine, "%s is %d bytes long; a %s cell's source is at most %d bytes", what, len(source), kind, maxBytes)
	}
	return header, source, sourceLine, nil
}
