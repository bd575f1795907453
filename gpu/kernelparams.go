package gpu

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/vgpu"
)

// argLayout is the size and alignment in bytes a launch argument takes in a kernel's parameter block
// (PTX ISA 8.x, section 5.1.6.1 "Kernel Function Parameters"), and what the worker calls it.
func argLayout(a any) (size, align int, what string) {
	switch a.(type) {
	case nvidia.DevicePtr:
		return 8, 8, "a device pointer"
	case int32:
		return 4, 4, "an int"
	case float32:
		return 4, 4, "a float"
	case float64:
		return 8, 8, "a double"
	case nvidia.TensorMap:
		return 128, 64, "a CUtensorMap"
	}
	return 0, 0, fmt.Sprintf("a %T", a)
}

// checkLaunchParams checks that the kernel entry of ptx declares exactly one parameter for each of
// args, in order, each of the argument's size and alignment (argLayout): cuLaunchKernel copies each
// argument's size from the Go value it points at as the kernel declares it, so a kernel that declares
// more, larger or reordered parameters would read past the worker's values. It reads only the
// entry's signature (entryParams), not the rest of the module, which the driver compiles: PTX the
// virtual GPU cannot run (.callprototype, .branchtargets, a module-level .alias, …) still launches.
// An error names the entry and the first parameter that does not match, or says why the signature
// could not be read.
func checkLaunchParams(ptx, entry string, args []any) error {
	params, err := entryParams(ptx, entry)
	if err != nil {
		return err
	}
	if len(params) != len(args) {
		return fmt.Errorf("the kernel %s takes %d parameters; the run passes %d (the problem's buffers and sizes, then its tensor maps)",
			entry, len(params), len(args))
	}
	for i, a := range args {
		size, align, what := argLayout(a)
		p := params[i]
		// A pointer's .ptr .align N (which newer NVRTCs emit) is its pointee's alignment, which the
		// parser records as the parameter's: a pointer's 8 bytes are always 8-aligned.
		_, ptr := a.(nvidia.DevicePtr)
		if p.Size != size || p.Align != align && !ptr {
			return fmt.Errorf("the kernel %s's parameter %d (%s) is %d bytes aligned %d; the run passes %s there (%d bytes aligned %d)",
				entry, i, p.Name, p.Size, p.Align, what, size, align)
		}
	}
	return nil
}

// Limits of the signature read (entryParams): the PTX text, as the virtual GPU's (a worker's
// request is smaller still), and an entry's parameter list, generous beside the 32,764 bytes of
// parameters a kernel may take (PTX ISA 8.x, "Kernel Function Parameters").
const (
	maxSignaturePTXBytes   = vgpu.MaxSourceBytes
	maxParamListBytes      = 64 << 10
	signatureCheckErrorPre = "cannot check the kernel's parameters: "
)

// entryParams reads the parameters of the kernel entry of ptx without parsing the module: one
// bounded pass (linear in the text) blanks comments and string literals, then finds each `.entry
// NAME (…)` outside every function body, and the entry's parameter list alone is parsed by the
// virtual GPU's parameter parser (on its own; an error names the line it had). Bodies, other
// functions and module-level directives are skipped unread. An error says the PTX is over the
// limit, malformed where the pass must read it (an unterminated comment or string, unbalanced
// braces, a parameter list over maxParamListBytes or not closed), defines no such entry or more than
// one, or names the parameter the parser refused.
func entryParams(ptx, entry string) ([]vgpu.Param, error) {
	if len(ptx) > maxSignaturePTXBytes {
		return nil, fmt.Errorf(signatureCheckErrorPre+"the PTX is %d bytes, over the %d-byte limit", len(ptx), maxSignaturePTXBytes)
	}
	clean, err := blankCommentsAndStrings(ptx)
	if err != nil {
		return nil, errors.New(signatureCheckErrorPre + err.Error())
	}
	found, err := findEntries(clean, entry)
	if err != nil {
		return nil, errors.New(signatureCheckErrorPre + err.Error())
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("the PTX has no kernel entry %s", entry)
	case len(found) > 1:
		return nil, fmt.Errorf("the PTX defines the kernel entry %s %d times (lines %d and %d)", entry, len(found), found[0].line, found[1].line)
	}
	e := found[0]
	// The list alone, as a module of one empty kernel, its .entry on line 4; lines are then moved to
	// where the list was.
	const head = ".version 8.4\n.target sm_90\n.address_size 64\n"
	shift := e.line - 4
	mod, err := vgpu.ParseModule(head + ".visible .entry k" + e.params + "\n{\n\tret;\n}\n")
	if err != nil {
		var pe *vgpu.ParseError
		if errors.As(err, &pe) {
			err = &vgpu.ParseError{Line: pe.Line + shift, Msg: pe.Msg}
		}
		return nil, errors.New(signatureCheckErrorPre + err.Error())
	}
	f := mod.Function("k")
	if f == nil || !f.Entry {
		return nil, fmt.Errorf(signatureCheckErrorPre+"the entry %s's parameter list did not parse", entry)
	}
	params := slices.Clone(f.Params)
	for i := range params {
		params[i].Line += shift
	}
	return params, nil
}

// blankCommentsAndStrings returns ptx with each comment's and string literal's bytes (its quotes
// kept) replaced by spaces, newlines kept, so that byte offsets and lines are unchanged. An
// unterminated block comment or string is an error naming its line.
func blankCommentsAndStrings(ptx string) ([]byte, error) {
	b := []byte(ptx)
	line := 1
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\n':
			line++
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
			i-- // the newline, if any, is counted by the loop
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			start := line
			b[i], b[i+1] = ' ', ' '
			for i += 2; i+1 < len(b) && !(b[i] == '*' && b[i+1] == '/'); i++ {
				if b[i] == '\n' {
					line++
				} else {
					b[i] = ' '
				}
			}
			if i+1 >= len(b) {
				return nil, fmt.Errorf("line %d: the comment is not closed", start)
			}
			b[i], b[i+1] = ' ', ' '
			i++
		case b[i] == '"':
			j := i + 1
			for ; j < len(b) && b[j] != '"' && b[j] != '\n'; j++ {
				if b[j] == '\\' && j+1 < len(b) && b[j+1] != '\n' {
					b[j] = ' '
					j++
				}
				b[j] = ' '
			}
			if j >= len(b) || b[j] != '"' {
				return nil, fmt.Errorf("line %d: the string is not closed on its line", line)
			}
			i = j
		}
	}
	return b, nil
}

// entrySig is one definition of the kernel entry sought: the line of its parameter list's '(' (of
// its .entry where it has none) and the list with the parentheses ("" where it has none).
type entrySig struct {
	line   int
	params string
}

// findEntries lists the definitions (with a body) of the kernel entry name in clean (PTX with its
// comments and strings blanked): the `.entry` directives outside every brace whose next '{' at that
// level comes before any ';' (but an entry-scope `.pragma "…";`, which PTX ISA 8.x, ".pragma",
// allows between an entry's directives and its body), .entry or .func there. One pass, linear in
// the text. An error names the line of a brace that does not balance or of a parameter list that is
// too long or not closed.
func findEntries(clean []byte, name string) ([]entrySig, error) {
	var out []entrySig
	var pending *entrySig // the entry sought, read up to its parameter list, its body not yet seen
	pragma := false       // the statement at depth 0 that the next ';' ends is a .pragma
	depth, line := 0, 1
	for i := 0; i < len(clean); {
		c := clean[i]
		switch {
		case c == '\n':
			line++
		case c == '{':
			if depth == 0 && pending != nil {
				out, pending = append(out, *pending), nil
			}
			depth++
		case c == '}':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("line %d: a '}' closes no '{'", line)
			}
		case c == ';' && depth == 0:
			if !pragma {
				pending = nil // a declaration
			}
			pragma = false
		case isPTXWordByte(c):
			j := i
			for j < len(clean) && isPTXWordByte(clean[j]) {
				j++
			}
			word := string(clean[i:j])
			if depth == 0 && (word == ".entry" || word == ".func") {
				pending = nil
			}
			pragma = pragma || depth == 0 && word == ".pragma"
			if depth == 0 && word == ".entry" {
				e, next, err := readEntry(clean, j, line)
				if err != nil {
					return nil, err
				}
				if e.name == name {
					pending = &e.entrySig
				}
				line += countNewlines(clean[j:next])
				j = next
			}
			i = j
			continue
		}
		i++
	}
	if depth != 0 {
		return nil, fmt.Errorf("%d '{' not closed at the end of the PTX", depth)
	}
	return out, nil
}

// namedEntry is an entry's name with its signature.
type namedEntry struct {
	name string
	entrySig
}

// readEntry reads what follows an `.entry` directive (on line line) ending at clean[from]: the name
// and the parameter list, if any. It returns where the caller goes on: after the list, or the name.
func readEntry(clean []byte, from, line int) (e namedEntry, next int, err error) {
	e.line = line
	i := skipSpace(clean, from)
	j := i
	for j < len(clean) && isPTXWordByte(clean[j]) {
		j++
	}
	e.name = string(clean[i:j])
	i = skipSpace(clean, j)
	if i >= len(clean) || clean[i] != '(' {
		return e, j, nil
	}
	e.line += countNewlines(clean[from:i])
	end := i + 1
	for end < len(clean) && clean[end] != ')' {
		if strings.IndexByte("({};", clean[end]) >= 0 || end-i > maxParamListBytes {
			return e, 0, fmt.Errorf("line %d: the parameter list of .entry %s is not closed within %d bytes", line, e.name, maxParamListBytes)
		}
		end++
	}
	if end >= len(clean) {
		return e, 0, fmt.Errorf("line %d: the parameter list of .entry %s is not closed", line, e.name)
	}
	e.params = string(clean[i : end+1])
	return e, end + 1, nil
}

// isPTXWordByte says whether c may be part of a PTX identifier or directive (letters, digits, _, $,
// % and the directive's leading dot).
func isPTXWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c == '%' || c == '.'
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func countNewlines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}
