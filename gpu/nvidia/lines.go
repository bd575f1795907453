package nvidia

import (
	"path/filepath"
	"regexp"
	"strings"
)

// Learners see their own lines only: the line information of a kernel's PTX and the compiler's
// messages name lines of the learner's source, never of the clang prelude (which the learner never
// wrote) and, in the PTX, never of CUDA's headers.

// locDirective matches a PTX .loc directive line: file, line, column, and what follows (newer
// compilers' ", function_name …, inlined_at FILE LINE COL").
var locDirective = regexp.MustCompile(`^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$`)

// inlinedAt matches the call site of an inlined .loc (PTX ISA 7.2+).
var inlinedAt = regexp.MustCompile(`inlined_at\s+(\d+)\s+(\d+)\s+(\d+)`)

// fileNumbers matches a PTX .file directive: number and file name.
var fileNumbers = regexp.MustCompile(`(?m)^\s*\.file\s+(\d+)\s+"([^"\n]*)"`)

// learnerLocs keeps, of the PTX's .loc directives, those of the source called name (the .file
// whose base name is name). One of another file (a function of CUDA's headers or of the clang
// prelude, inlined into the kernel) becomes its call site's when it says it (inlined_at in name's
// file); else, where the learner's line in force is the function's opening one (column 0, as clang
// writes it, or none yet), the learner's next line in the function; else it is dropped, so that its
// instructions stay on the learner's line in force before them (clang 14 writes no inlined_at). PTX
// that names no such file comes back as it is.
func learnerLocs(ptx, name string) string {
	mine := map[string]bool{}
	for _, m := range fileNumbers.FindAllStringSubmatch(ptx, -1) {
		if filepath.Base(m[2]) == name {
			mine[m[1]] = true
		}
	}
	if len(mine) == 0 {
		return ptx
	}
	lines := strings.SplitAfter(ptx, "\n")
	var b strings.Builder
	opening := true // no learner line in force but the function's opening one
	for i, l := range lines {
		m := locDirective.FindStringSubmatch(strings.TrimRight(l, "\n"))
		switch {
		case m == nil:
			if strings.TrimSpace(l) == "}" {
				opening = true
			}
			b.WriteString(l)
		case mine[m[1]]:
			opening = m[3] == "0"
			b.WriteString(l)
		case inlinedAt.MatchString(m[4]) && mine[inlinedAt.FindStringSubmatch(m[4])[1]]:
			at := inlinedAt.FindStringSubmatch(m[4])
			b.WriteString("\t.loc\t" + at[1] + " " + at[2] + " " + at[3] + "\n")
			opening = false
		case opening:
			b.WriteString(nextLearnerLoc(lines[i+1:], mine))
		}
	}
	return b.String()
}

// nextLearnerLoc is the first .loc line of lines in a file of mine, before the function's end, or "".
func nextLearnerLoc(lines []string, mine map[string]bool) string {
	for _, l := range lines {
		if strings.TrimSpace(l) == "}" {
			return ""
		}
		if m := locDirective.FindStringSubmatch(strings.TrimRight(l, "\n")); m != nil && mine[m[1]] {
			return l
		}
	}
	return ""
}

// nvrtcDiag is one line of a compiler's log in NVRTC's form: file, line, kind and message.
var nvrtcDiag = regexp.MustCompile(`^(\S[^\n]*?)\((\d+)\): (error|warning|note|remark|fatal error|catastrophic error): (.*)$`)

// learnerLog rewrites clang's log (in NVRTC's form) for the source called name, compiled with CUDA's
// headers from headers (may be ""): a diagnostic located in the clang prelude is put on the
// learner's line of its group (the error or warning and the notes after it; the first line of name
// among them), or on no line when the group has none; "In file included from" lines that lead to
// the prelude go; the headers' folder is cut from their file names; and repeated lines are said
// once.
func learnerLog(log, name, headers string) string {
	if log == "" {
		return log
	}
	lines := strings.Split(log, "\n")
	groupLine := make([]string, len(lines)) // the learner's line of each line's group
	for start := 0; start < len(lines); {
		end := start + 1
		for end < len(lines) && (isNote(lines[end]) || !nvrtcDiag.MatchString(lines[end])) && !strings.HasPrefix(lines[end], "In file included from") {
			end++
		}
		learner := ""
		for _, l := range lines[start:end] {
			if m := nvrtcDiag.FindStringSubmatch(l); m != nil && m[1] == name {
				learner = m[2]
				break
			}
		}
		for i := start; i < end; i++ {
			groupLine[i] = learner
		}
		start = end
	}
	var out []string
	for i, l := range lines {
		if strings.HasPrefix(l, "In file included from") && (strings.Contains(l, "<built-in>") || strings.Contains(l, "clang_prelude.h")) {
			continue
		}
		if m := nvrtcDiag.FindStringSubmatch(l); m != nil && filepath.Base(m[1]) == "clang_prelude.h" {
			if groupLine[i] != "" {
				l = name + "(" + groupLine[i] + "): " + m[3] + ": " + m[4]
			} else {
				l = name + ": " + m[3] + ": " + m[4]
			}
		}
		if headers != "" {
			l = strings.ReplaceAll(l, strings.TrimSuffix(headers, "/")+"/", "")
		}
		if len(out) > 0 && out[len(out)-1] == l {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// isNote says whether a log line is a note (which belongs to the diagnostic before it).
func isNote(l string) bool {
	m := nvrtcDiag.FindStringSubmatch(l)
	return m != nil && m[3] == "note"
}
