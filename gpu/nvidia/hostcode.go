package nvidia

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Host code: a .cu file as a repository ships it holds the host program too (main, the functions
// that allocate, copy and launch), which neither GPU compiler can take: NVRTC refuses every
// function, prototype and variable without __device__ or __global__ ("host functions are not
// allowed in JIT mode"), and clang's device-only compile checks host code against declarations the
// playground does not have (cudaMalloc, cublasSgemm, std::vector, …). DeviceOnly therefore leaves
// out of what they compile the namespace-scope declarations that serve only the host: each function
// (definition or prototype) and variable that has no execution or memory space annotation, is not
// constexpr, and whose name the code that is kept never uses (a name in a #define's replacement is
// used where the macro is, and one in another directive, as #pragma unroll N, is used). Types,
// templates of types, typedefs, using-declarations, namespaces' and extern "C" blocks' contents
// (looked into), and every directive are kept. What is left out becomes blanks, line ends kept, so that every message and the PTX's
// line information name the learner's own lines.
//
// Known limits: an unannotated member function of a class is kept (NVRTC refuses it), and so is an
// unannotated function that the kept code calls (both compilers then say that a kernel calls a host
// function, as nvcc would); a source whose braces do not balance outside directives (a body split
// by #if) is compiled as it is.

// HostPart is one declaration DeviceOnly left out: its name and its first and last source lines.
type HostPart struct {
	Name        string
	First, Last int
}

// isAnnotation says whether w keeps a declaration in the device compile: an execution or memory
// space, constexpr (clang makes constexpr functions host and device; NVRTC's relaxed-constexpr
// rules call them from device code), or a word of what declares no object or function.
func isAnnotation(w string) bool {
	switch w {
	case "__global__", "__device__", "__constant__", "__shared__", "__managed__", "constexpr", "consteval",
		"typedef", "using", "static_assert", "namespace", "struct", "class", "union", "enum", "asm", "__asm__":
		return true
	}
	return false
}

// hostToken is a token of the host-code scan: an identifier, or one punctuator character.
type hostToken struct {
	text  string
	start int // byte offset in the source
	end   int
}

// DeviceOnly returns src with its host-only declarations (see above) blanked out, and which they
// were, in source order. A source it cannot read (unbalanced braces) comes back as it is.
func DeviceOnly(src string) (string, []HostPart) {
	toks, dirs := hostTokens(src)
	decls, ok := declarations(toks)
	if !ok {
		return src, nil
	}
	var candidates []decl
	for _, d := range decls {
		if d.hostOnly(toks, dirs.annotated) {
			candidates = append(candidates, d)
		}
	}
	left := keepReferenced(toks, candidates, dirs)
	if len(left) == 0 {
		return src, nil
	}
	out := []byte(src)
	var parts []HostPart
	for _, d := range left {
		blank(out, toks[d.first].start, toks[d.last].end)
		parts = append(parts, HostPart{Name: d.name(toks), First: lineOf(src, toks[d.first].start), Last: lineOf(src, toks[d.last].end-1)})
	}
	return string(out), parts
}

// decl is a namespace-scope declaration: tokens first to last (the closing ; or }), whether it
// has a function body, and body, the index of its body's {.
type decl struct {
	first, last, body int
	defines           bool
}

// declarations splits toks into namespace-scope declarations, looking into namespaces and extern
// "C" blocks; ok is false where braces or parentheses do not balance.
func declarations(toks []hostToken) (out []decl, ok bool) {
	depth, scopes := 0, 0 // parentheses and brackets; open namespaces and extern "C" blocks
	start := 0
	for i := 0; i < len(toks); i++ {
		switch toks[i].text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ";":
			if depth == 0 {
				out = append(out, decl{first: start, last: i})
				start = i + 1
			}
		case "}":
			if scopes--; depth != 0 || scopes < 0 {
				return nil, false
			}
			start = i + 1 // the end of a namespace or extern "C" block
		case "{":
			if depth != 0 {
				continue // a lambda or a braced initializer in an argument: skipped with the parentheses' contents
			}
			head := toks[start:i]
			if opensScope(head) {
				scopes++
				start = i + 1
				continue
			}
			end := matching(toks, i)
			if end < 0 {
				return nil, false
			}
			if isFunctionHead(head) {
				out = append(out, decl{first: start, last: end, body: i, defines: true})
				i, start = end, end+1
				continue
			}
			i = end // a class body or a braced initializer: the declaration goes on to its ;
		}
		if depth < 0 {
			return nil, false
		}
	}
	return out, depth == 0 && scopes == 0
}

// opensScope says whether a { after head opens a namespace or an extern "C" block, whose
// declarations are looked into.
func opensScope(head []hostToken) bool {
	words := texts(head)
	switch {
	case len(words) >= 1 && words[0] == "namespace", len(words) >= 2 && words[0] == "inline" && words[1] == "namespace":
		return !slices.Contains(words, "=")
	case len(words) == 2 && words[0] == "extern" && strings.HasPrefix(words[1], "\""):
		return true
	}
	return false
}

// isFunctionHead says whether head, before a {, is a function's: a parameter list at the top level
// and no = or class key before it.
func isFunctionHead(head []hostToken) bool {
	for _, t := range head[afterTemplate(head, 0, len(head)):] {
		switch t.text {
		case "(":
			return true
		case "=", "struct", "class", "union", "enum":
			return false
		}
	}
	return false
}

// afterTemplate is the index in toks[from:to] after the template parameter lists that start it
// (template <…>, nested <> and parentheses counted), from when there are none.
func afterTemplate(toks []hostToken, from, to int) int {
	for from+1 < to && toks[from].text == "template" && toks[from+1].text == "<" {
		angles, parens := 0, 0
		i := from + 1
		for ; i < to; i++ {
			switch toks[i].text {
			case "(":
				parens++
			case ")":
				parens--
			case "<":
				if parens == 0 {
					angles++
				}
			case ">":
				if parens == 0 {
					angles--
				}
			}
			if angles == 0 {
				break
			}
		}
		from = i + 1
	}
	return from
}

// matching is the index of the } that closes the { at open, or -1.
func matching(toks []hostToken, open int) int {
	depth := 0
	for i := open; i < len(toks); i++ {
		switch toks[i].text {
		case "{":
			depth++
		case "}":
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// hostOnly says whether d serves only the host: no annotation, no macro of the source that could
// hold one (macros), and at least one name declared.
func (d decl) hostOnly(toks []hostToken, macros map[string]bool) bool {
	end := d.last
	if d.defines {
		end = d.body
	}
	for _, t := range toks[d.first:end] {
		if isAnnotation(t.text) || macros[t.text] {
			return false
		}
	}
	return len(d.names(toks)) > 0
}

// names are the names d declares: identifiers followed, outside parentheses and brackets, by (, =,
// ;, ,, [ or {, before d's body.
func (d decl) names(toks []hostToken) []string {
	end := d.last
	if d.defines {
		end = d.body
	}
	var names []string
	depth := 0
	first := afterTemplate(toks, d.first, end)
	for i := first; i < end; i++ {
		switch t := toks[i].text; t {
		case "(", "[":
			if depth == 0 && i > first && isName(toks[i-1].text) {
				names = append(names, toks[i-1].text)
			}
			depth++
		case ")", "]":
			depth--
		case "=", ";", ",", "{":
			if depth == 0 && i > first && isName(toks[i-1].text) {
				names = append(names, toks[i-1].text)
			}
		}
	}
	return names
}

// name is d's first declared name, for a note.
func (d decl) name(toks []hostToken) string {
	if n := d.names(toks); len(n) > 0 {
		return n[0]
	}
	return "?"
}

// isName says whether t is an identifier (not a keyword that ends a declarator, like const).
func isName(t string) bool {
	if t == "" || !isIdent0(t[0]) {
		return false
	}
	switch t {
	case "const", "volatile", "noexcept", "override", "final", "operator", "throw", "sizeof", "decltype":
		return false
	}
	return true
}

// keepReferenced returns the candidates to leave out: those none of whose names the rest of the
// code uses, the rest growing by each candidate kept (a walk over what uses what, linear in the
// tokens). A name used in a directive (#pragma unroll N) is used; a macro's name used where it
// counts uses the names in the macro's replacement (#define M (N*2)), once per macro.
func keepReferenced(toks []hostToken, candidates []decl, dirs directives) []decl {
	owner := make([]int, len(toks)) // 1 + the index of the candidate a token is in, 0 for none
	byName := map[string][]int{}
	for c, d := range candidates {
		for i := d.first; i <= d.last; i++ {
			owner[i] = c + 1
		}
		for _, n := range d.names(toks) {
			byName[n] = append(byName[n], c)
		}
	}
	kept := make([]bool, len(candidates))
	expanded := map[string]bool{}
	var queue []int
	var use func(name string)
	use = func(name string) {
		for _, c := range byName[name] {
			if !kept[c] {
				kept[c] = true
				queue = append(queue, c)
			}
		}
		if body, ok := dirs.bodies[name]; ok && !expanded[name] {
			expanded[name] = true
			for _, w := range body {
				use(w)
			}
		}
	}
	for _, w := range dirs.uses {
		use(w)
	}
	for i, t := range toks {
		if owner[i] == 0 {
			use(t.text)
		}
	}
	for len(queue) > 0 {
		d := candidates[queue[0]]
		queue = queue[1:]
		for i := d.first; i <= d.last; i++ {
			use(toks[i].text)
		}
	}
	var left []decl
	for c, d := range candidates {
		if !kept[c] {
			left = append(left, d)
		}
	}
	return left
}

func texts(toks []hostToken) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.text
	}
	return out
}

// blank replaces b[from:to] (from a token's start) with spaces but for line ends and whole
// directive lines other than #pragma (which would stand before no statement).
func blank(b []byte, from, to int) {
	lineStart := false
	for i := from; i < to; i++ {
		switch {
		case b[i] == '\n' || b[i] == '\r':
			lineStart = true // line ends stay (lineBreak)
			continue
		case lineStart && (b[i] == ' ' || b[i] == '\t'):
			continue
		case lineStart && (b[i] == '#' || b[i] == '%' && i+1 < len(b) && b[i+1] == ':'):
			end := lineEnd(b, i)
			if f := strings.Fields(strings.NewReplacer("#", " ", "%:", " ").Replace(string(b[i:end]))); len(f) == 0 || f[0] != "pragma" {
				i = end - 1 // a directive stays
				continue
			}
		}
		lineStart = false
		b[i] = ' '
	}
}

// lineOf is the 1-based line of offset i in src.
func lineOf(src string, i int) int { return strings.Count(src[:i], "\n") + 1 }

// directives is what the host-code scan reads from the source's directives: the macros whose
// replacement names an annotation or a double-underscore word (such a macro could make a
// declaration a device one), each #defined macro's replacement's identifiers (bodies), and the
// identifiers of the other directives (uses).
type directives struct {
	annotated map[string]bool
	bodies    map[string][]string
	uses      []string
}

// hostTokens reads src's tokens outside comments and directives (string and character literals
// are one token each, numbers are left out), and what its directives define and use. Line ends and
// splices are read as the compilers read them (lineBreak, lineSplice).
func hostTokens(src string) ([]hostToken, directives) {
	var toks []hostToken
	dirs := directives{annotated: map[string]bool{}, bodies: map[string][]string{}}
	lineStart := true
	for i := 0; i < len(src); {
		b := src[i]
		if n, _ := lineSplice(src, i); n > 0 {
			i += n
			continue
		}
		switch {
		case lineBreak(src, i) > 0:
			lineStart = true
			i += lineBreak(src, i)
			continue
		case isSpace(b):
			i++
			continue
		case lineStart && (b == '#' || b == '%' && i+1 < len(src) && src[i+1] == ':'):
			end := lineEnd(src, i)
			dirs.note(src[i:end])
			i = end
			continue
		case strings.HasPrefix(src[i:], "//"):
			i = lineEnd(src, i)
			continue
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return toks, dirs
			}
			i += end + 4
			continue
		}
		lineStart = false
		start := i
		switch {
		case isIdent0(b):
			for i < len(src) && isIdent(src[i]) {
				i++
			}
			if i < len(src) && (src[i] == '"' || src[i] == '\'') && slices.Contains([]string{"L", "u", "U", "u8"}, src[start:i]) {
				i = skipQuoted(src, i)
			}
		case isDigit(b) || b == '.' && i+1 < len(src) && isDigit(src[i+1]):
			for i < len(src) && (isIdent(src[i]) || src[i] == '.' || src[i] == '\'' && i+1 < len(src) && isIdent(src[i+1])) {
				i++
			}
			continue // numbers name nothing
		case b == '"' || b == '\'':
			i = skipQuoted(src, i)
		default:
			i++
		}
		toks = append(toks, hostToken{text: src[start:i], start: start, end: i})
	}
	return toks, dirs
}

// skipQuoted is the offset just past the literal whose quote is at i (or of its line's end).
func skipQuoted(src string, i int) int {
	q := src[i]
	for i++; i < len(src); i++ {
		if n, _ := lineSplice(src, i); n > 0 {
			i += n - 1
			continue
		}
		switch {
		case src[i] == '\\':
			i++
		case src[i] == q:
			return i + 1
		case lineBreak(src, i) > 0:
			return i
		}
	}
	return i
}

// note reads one directive (a whole logical line, from its # or %:): a #define's name, whether its
// replacement holds a word that starts with two underscores or is an annotation, and the
// replacement's identifiers; any other directive's identifiers are uses.
func (d *directives) note(directive string) {
	words := directiveWords(directive)
	if len(words) < 2 || words[0] != "define" {
		if len(words) > 0 {
			d.uses = append(d.uses, words[1:]...)
		}
		return
	}
	name, body := words[1], words[2:]
	d.bodies[name] = append(d.bodies[name], body...)
	for _, w := range body {
		if strings.HasPrefix(w, "__") || isAnnotation(w) {
			d.annotated[name] = true
		}
	}
}

// directiveWords are the identifiers of a directive's line, in order, outside comments, literals
// and numbers, with its splices joined.
func directiveWords(line string) []string {
	line = joinSplices(line)
	var words []string
	for i := 0; i < len(line); {
		switch b := line[i]; {
		case strings.HasPrefix(line[i:], "//"):
			return words
		case strings.HasPrefix(line[i:], "/*"):
			end := strings.Index(line[i+2:], "*/")
			if end < 0 {
				return words
			}
			i += end + 4
		case isIdent0(b):
			start := i
			for i < len(line) && isIdent(line[i]) {
				i++
			}
			words = append(words, line[start:i])
		case isDigit(b) || b == '.' && i+1 < len(line) && isDigit(line[i+1]):
			for i < len(line) && (isIdent(line[i]) || line[i] == '.') {
				i++
			}
		case b == '"' || b == '\'':
			i = skipQuoted(line, i)
		default:
			i++
		}
	}
	return words
}

// hostNote is the note a failed compile's log gets when DeviceOnly left parts out: a line for each,
// on its first line of the source called name.
func hostNote(name string, parts []HostPart) string {
	var b strings.Builder
	for i, p := range parts {
		why := ""
		if i == 0 {
			why = " (the GPU compilers take __global__ and __device__ functions; mark a function __device__ to call it from a kernel)"
		}
		fmt.Fprintf(&b, "%s(%d): note: host code left out of the GPU compile%s: %s\n", name, p.First, why, p.Name)
	}
	return b.String()
}

// NameEntry gives the kernel called kernel its plain name in ptx where the source declared it
// without extern "C": when ptx has no entry of that name but exactly one whose C++ (Itanium)
// mangled name is the function's (_Z, the name's length, the name, its parameters), that name is
// replaced by kernel throughout. A kernel copied from a repository then launches by the name the
// learner wrote. Otherwise ptx comes back as it is.
func NameEntry(ptx, kernel string) string {
	if kernel == "" || regexp.MustCompile(`\.entry\s+`+regexp.QuoteMeta(kernel)+`\s*\(`).MatchString(ptx) {
		return ptx
	}
	prefix := fmt.Sprintf("_Z%d%s", len(kernel), kernel)
	var found string
	for _, m := range regexp.MustCompile(`\.entry\s+([A-Za-z_$][\w$]*)`).FindAllStringSubmatch(ptx, -1) {
		if strings.HasPrefix(m[1], prefix) && len(m[1]) > len(prefix) && !isDigit(m[1][len(prefix)]) {
			if found != "" {
				return ptx // overloads or instantiations: which one is not the name's to say
			}
			found = m[1]
		}
	}
	if found == "" {
		return ptx
	}
	return regexp.MustCompile(`(^|[^\w$])`+regexp.QuoteMeta(found)+`($|[^\w$])`).ReplaceAllString(ptx, "${1}"+kernel+"${2}")
}
