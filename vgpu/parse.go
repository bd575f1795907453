package vgpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
)

// The PTX parser. It reads the module text that NVRTC (CUDA 11.8–13) and clang emit (PTX ISA 8.x,
// section 4 "Syntax" and section 11 "Directives"): module directives, functions with their .param
// lists, declarations, labels and instructions. It builds a syntax tree only; decode.go turns each
// function's instructions into the pre-decoded form the interpreter runs.

// ParseError is a syntax error at a line of the PTX text (1-based).
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("PTX line %d: %s", e.Line, e.Msg) }

// Limits on what ParseModule accepts, so that a hostile or broken module cannot make the parser or a
// launch allocate without bound.
const (
	// MaxSourceBytes is the largest PTX text ParseModule reads.
	MaxSourceBytes = 16 << 20
	// MaxRegisters is the most registers (of all types, predicates included) one function may declare.
	MaxRegisters = 1 << 16
	// MaxVarBytes is the largest single .shared, .local, .global or .const variable.
	MaxVarBytes = 1 << 26
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tNum
	tString
	tPunct
)

type token struct {
	kind tokKind
	text string
	line int
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c == '%' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func lex(src string) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			start := line
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, &ParseError{start, "unterminated /* comment"}
			}
			line += strings.Count(src[i:i+2+j], "\n")
			i += j + 4
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				if j < len(src) && src[j] == '\n' {
					return nil, &ParseError{line, "unterminated string"}
				}
				j++
			}
			if j >= len(src) {
				return nil, &ParseError{line, "unterminated string"}
			}
			toks = append(toks, token{tString, src[i+1 : j], line})
			i = j + 1
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (isIdentChar(src[j]) ||
				((src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E') && isDecimalSoFar(src[i:j]))) {
				j++
			}
			toks = append(toks, token{tNum, src[i:j], line})
			i = j
		case isIdentStart(c):
			j := i
			for j < len(src) {
				if isIdentChar(src[j]) {
					j++
					continue
				}
				// a qualifier with a sub-qualifier, .shared::cta, .L2::cache_hint: one token
				if src[j] == ':' && j+2 < len(src) && src[j+1] == ':' && isIdentChar(src[j+2]) {
					j += 2
					continue
				}
				break
			}
			toks = append(toks, token{tIdent, src[i:j], line})
			i = j
		case strings.IndexByte(",;:{}[]()<>+-!|@=", c) >= 0:
			toks = append(toks, token{tPunct, src[i : i+1], line})
			i++
		default:
			return nil, &ParseError{line, fmt.Sprintf("unexpected character %q", c)}
		}
	}
	toks = append(toks, token{tEOF, "", line})
	return toks, nil
}

// isDecimalSoFar reports whether s (a number being lexed, ending in e or E) is a decimal float
// mantissa, so that "1e-5" lexes as one number but "0f3F80000E" followed by "-" does not.
func isDecimalSoFar(s string) bool {
	if len(s) > 1 && s[0] == '0' && strings.ContainsRune("xXfFdD", rune(s[1])) {
		return false
	}
	for _, c := range s[:len(s)-1] {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

// numKind is the kind of a numeric literal (PTX ISA 8.x, section 4.5 "Constants").
type numKind uint8

const (
	numInt   numKind = iota // decimal, hex (0x), octal or binary integer
	numF32                  // 0fXXXXXXXX: the bits of an IEEE single
	numF64                  // 0dXXXXXXXXXXXXXXXX: the bits of an IEEE double
	numFloat                // a decimal floating-point literal (1.5, 2e3): a double
)

// parseNumber reads a PTX numeric literal (PTX ISA 8.x, section 4.5.1 "Integer Constants" and 4.5.2
// "Floating-Point Constants"). Integers are 64-bit; a value above MaxInt64 keeps its bits.
func parseNumber(s string) (numKind, uint64, error) {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F') {
		if len(s) != 10 {
			return 0, 0, fmt.Errorf("0f constant %q needs 8 hex digits", s)
		}
		v, err := strconv.ParseUint(s[2:], 16, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("bad 0f constant %q", s)
		}
		return numF32, v, nil
	}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D') {
		if len(s) != 18 {
			return 0, 0, fmt.Errorf("0d constant %q needs 16 hex digits", s)
		}
		v, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("bad 0d constant %q", s)
		}
		return numF64, v, nil
	}
	t := strings.TrimSuffix(strings.TrimSuffix(s, "U"), "u")
	if strings.ContainsAny(t, ".eE") && !strings.HasPrefix(t, "0x") && !strings.HasPrefix(t, "0X") {
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("bad floating-point constant %q", s)
		}
		return numFloat, math.Float64bits(f), nil
	}
	base, digits := 10, t
	switch {
	case strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X"):
		base, digits = 16, t[2:]
	case strings.HasPrefix(t, "0b") || strings.HasPrefix(t, "0B"):
		base, digits = 2, t[2:]
	case len(t) > 1 && t[0] == '0':
		base, digits = 8, t[1:]
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("bad integer constant %q", s)
	}
	return numInt, v, nil
}

// opKind is the syntactic kind of an instruction operand.
type opKind uint8

const (
	oReg  opKind = iota // a register, special register, symbol or label name
	oImm                // a numeric constant
	oAddr               // [base+offset] or [offset]
	oVec                // {a, b, …}
	oPair               // p|q: setp's two destinations
	oSink               // _ : a discarded result
)

type operand struct {
	kind  opKind
	name  string // oReg: the name; oAddr: the base register or symbol ("" for an absolute address)
	not   bool   // oReg: !p, a negated predicate
	num   numKind
	bits  uint64 // oImm: the value's bits (negated for a leading '-')
	off   int64  // oAddr: the byte offset; oReg: a symbol's offset (sym+4)
	elems []operand
}

// pinst is one parsed instruction.
type pinst struct {
	line     int
	guard    string // "" when unguarded
	guardNot bool
	op       string // the full dotted opcode: "ld.global.nc.v4.f32"
	args     []operand
	loc      int // index into Module.Locs of the .loc in force (-1: none)
	// call: the callee, its return and argument operands (call (r), f, (a, b);)
	callee     string
	callRets   []operand
	callArgs   []operand
	scopeDelta int // +1 opens a { } scope before this statement, -1 closes one (pseudo statements)
	label      string
	decl       *regDecl
	pvar       *Var // a .param declaration in a body (call-sequence parameter)
	opaque     bool // an instruction of an unsupported feature, its operands not parsed (parser.opaque)
}

type regDecl struct {
	typ   string
	names []string
}

// Var is a variable of a state space: module-level .global/.const/.shared, or a function's .shared,
// .local or call-sequence .param declarations.
type Var struct {
	Name   string
	Space  string // "global", "const", "shared", "local", "param"
	Align  int
	Size   int // bytes; 0 for an extern (dynamic) .shared array
	Extern bool
	Init   []byte
	Line   int
}

// Param is one .param of a function's parameter or return list (PTX ISA 8.x, section 5.1.6
// "Parameter State Space").
type Param struct {
	Name   string
	Type   string // "u64", "b8", …
	Size   int    // bytes
	Align  int
	Offset int // byte offset in the function's parameter block
	Line   int
}

// Function is an .entry (a kernel) or a .func (a device function).
type Function struct {
	Name    string
	Entry   bool
	Line    int
	Params  []Param
	Returns []Param
	// ParamBytes is the size of the parameter block.
	ParamBytes int
	// MaxNTID and ReqNTID are the .maxntid and .reqntid directives (zero when absent).
	MaxNTID, ReqNTID [3]int
	// ClusterDims is the .reqnctapercluster directive (__cluster_dims__; zero when absent).
	ClusterDims [3]int
	body        []pinst
	vars        []Var // .shared/.local/.param declared in the body
	decl        bool  // a prototype only (no body)

	mod    *Module   // the module it is in, for decoding
	decode sync.Once // decodes an entry on first use (decoded)
	prog   *program  // decoded code; nil until decoded
	err    error     // the decode error, reported when launched

	// MaxNReg and MinNCTAPerSM are the .maxnreg and .minnctapersm directives (zero when absent):
	// bounds ptxas keeps the kernel's registers within (PTX ISA 8.x, section 11.4 "Performance-Tuning
	// Directives"); __launch_bounds__(threads, minBlocks) becomes .maxntid and .minnctapersm.
	MaxNReg, MinNCTAPerSM int
}

// Loc is a .loc directive: a line of a source file (PTX ISA 8.x, section 11.5.3 ".loc").
type Loc struct {
	File   int
	Line   int
	Column int
}

// Module is a parsed PTX module.
type Module struct {
	Version     string
	Targets     []string
	AddressSize int
	// Files are the .file directives: number → file name.
	Files map[int]string
	// Locs are the distinct .loc positions seen, indexed by instructions.
	Locs      []Loc
	Functions []*Function
	Vars      []Var // module-level variables
	funcs     map[string]*Function
	lines     []string
}

// Function returns the function named name, or nil.
func (m *Module) Function(name string) *Function { return m.funcs[name] }

// Line returns the text of PTX line n (1-based), trimmed, or "".
func (m *Module) Line(n int) string {
	if n < 1 || n > len(m.lines) {
		return ""
	}
	return strings.TrimSpace(m.lines[n-1])
}

// source is "file:line" of the .loc at index loc of m.Locs ("" for none, as for an instruction
// without a .loc), as launch.source writes it.
func (m *Module) source(loc int) string {
	if loc < 0 || loc >= len(m.Locs) {
		return ""
	}
	lc := m.Locs[loc]
	f := m.Files[lc.File]
	if f == "" {
		f = fmt.Sprintf("file %d", lc.File)
	}
	return fmt.Sprintf("%s:%d", f, lc.Line)
}

type parser struct {
	toks   []token
	pos    int
	mod    *Module
	locIdx map[Loc]int
	curLoc int
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &ParseError{line, fmt.Sprintf(format, args...)}
}

func (p *parser) is(text string) bool {
	t := p.peek()
	return (t.kind == tPunct || t.kind == tIdent) && t.text == text
}

func (p *parser) expect(text string) (token, error) {
	t := p.next()
	if (t.kind != tPunct && t.kind != tIdent) || t.text != text {
		return t, p.errf(t.line, "expected %q, found %s", text, describe(t))
	}
	return t, nil
}

func describe(t token) string {
	if t.kind == tEOF {
		return "end of file"
	}
	return fmt.Sprintf("%q", t.text)
}

func (p *parser) ident() (token, error) {
	t := p.next()
	if t.kind != tIdent {
		return t, p.errf(t.line, "expected a name, found %s", describe(t))
	}
	return t, nil
}

func (p *parser) intLit() (int64, token, error) {
	neg := false
	if p.is("-") {
		p.next()
		neg = true
	}
	t := p.next()
	if t.kind != tNum {
		return 0, t, p.errf(t.line, "expected a number, found %s", describe(t))
	}
	k, v, err := parseNumber(t.text)
	if err != nil || k != numInt {
		return 0, t, p.errf(t.line, "expected an integer, found %q", t.text)
	}
	if neg {
		return -int64(v), t, nil
	}
	return int64(v), t, nil
}

// skipStatement skips to the next ';' at this nesting level, or over a balanced { } block.
// opaque is the opcode of the instruction on PTX line n when it belongs to a CUDA feature the
// virtual GPU does not run (Feature) and its operands are beyond the parser (a texture's
// [tex, {x}]): it then becomes an *UnsupportedError naming the feature, not a parse error.
func (p *parser) opaque(n int) string {
	f := strings.Fields(p.mod.Line(n))
	if len(f) > 1 && strings.HasPrefix(f[0], "@") {
		f = f[1:]
	}
	if len(f) == 0 || Feature(f[0]) == "" {
		return ""
	}
	return strings.TrimSuffix(f[0], ";")
}

// skipInstruction skips the tokens up to and including the instruction's semicolon.
func (p *parser) skipInstruction() error {
	for {
		switch t := p.next(); {
		case t.kind == tEOF:
			return p.errf(t.line, "unexpected end of file")
		case t.kind == tPunct && t.text == ";":
			return nil
		}
	}
}

func (p *parser) skipStatement() error {
	depth := 0
	for {
		t := p.next()
		switch {
		case t.kind == tEOF:
			return p.errf(t.line, "unexpected end of file")
		case t.text == "{" && t.kind == tPunct:
			depth++
		case t.text == "}" && t.kind == tPunct:
			depth--
			if depth <= 0 {
				if p.is(";") {
					p.next()
				}
				return nil
			}
		case t.text == ";" && t.kind == tPunct && depth == 0:
			return nil
		}
	}
}

// ParseModule parses PTX text. Errors are *ParseError naming the line. A kernel's instructions are
// decoded when it is first launched or asked for its resources (a .func is decoded into each
// kernel that calls it, so decoding every kernel of a module of many kernels calling one large
// function up front would cost their product); a kernel with an instruction the interpreter does
// not support still parses (its error is returned by Launch), so that the module's other kernels
// can run.
func ParseModule(src string) (*Module, error) {
	if len(src) > MaxSourceBytes {
		return nil, fmt.Errorf("PTX module of %d bytes is over the %d-byte limit", len(src), MaxSourceBytes)
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, mod: &Module{Files: map[int]string{}, funcs: map[string]*Function{},
		lines: strings.Split(src, "\n")}, locIdx: map[Loc]int{}, curLoc: -1}
	if err := p.module(); err != nil {
		return nil, err
	}
	for _, f := range p.mod.Functions {
		f.mod = p.mod
	}
	return p.mod, nil
}

// decoded is f's decoded program (f an entry with a body), decoded on the first call: safe for
// concurrent launches of one module.
func (f *Function) decoded() (*program, error) {
	f.decode.Do(func() { f.prog, f.err = decodeFunction(f.mod, f) })
	return f.prog, f.err
}

func (p *parser) module() error {
	for {
		t := p.peek()
		if t.kind == tEOF {
			return nil
		}
		if t.kind != tIdent {
			return p.errf(t.line, "unexpected %s at module level", describe(t))
		}
		switch t.text {
		case ".version", ".target", ".address_size", ".file":
			if err := p.header(); err != nil {
				return err
			}
			if p.is(";") {
				p.next()
			}
		case ".section", ".pragma":
			p.next()
			if err := p.skipStatement(); err != nil {
				return err
			}
		case ".loc":
			if err := p.loc(); err != nil {
				return err
			}
		default:
			if err := p.moduleDecl(); err != nil {
				return err
			}
		}
	}
}

// header parses a module header directive: .version, .target, .address_size or .file.
func (p *parser) header() error {
	m := p.mod
	switch p.next().text {
	case ".version":
		v := p.next()
		if v.kind != tNum {
			return p.errf(v.line, ".version needs a number")
		}
		m.Version = v.text
	case ".target":
		for {
			id, err := p.ident()
			if err != nil {
				return err
			}
			m.Targets = append(m.Targets, id.text)
			if !p.is(",") {
				break
			}
			p.next()
		}
	case ".address_size":
		v, tok, err := p.intLit()
		if err != nil {
			return err
		}
		if v != 64 && v != 32 {
			return p.errf(tok.line, ".address_size %d: only 64 (or 32) exist", v)
		}
		if v != 64 {
			return p.errf(tok.line, ".address_size 32 is not supported; compile for 64-bit addresses")
		}
		m.AddressSize = int(v)
	case ".file":
		n, _, err := p.intLit()
		if err != nil {
			return err
		}
		s := p.next()
		if s.kind != tString {
			return p.errf(s.line, ".file needs a file name string")
		}
		m.Files[int(n)] = s.text
		for p.is(",") { // optional timestamp, size
			p.next()
			if _, _, err := p.intLit(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *parser) moduleDecl() error {
	start := p.peek()
	extern := false
	for p.is(".visible") || p.is(".extern") || p.is(".weak") || p.is(".common") {
		if p.next().text == ".extern" {
			extern = true
		}
	}
	t := p.peek()
	switch t.text {
	case ".entry", ".func":
		return p.function(extern)
	case ".global", ".const", ".shared":
		v, err := p.varDecl()
		if err != nil {
			return err
		}
		v.Extern = v.Extern || extern
		if v.Space == "global" && extern {
			return p.errf(v.Line, "extern .global variable %s is not defined in this module", v.Name)
		}
		for _, o := range p.mod.Vars {
			if o.Name == v.Name {
				return p.errf(v.Line, "variable %s declared twice", v.Name)
			}
		}
		p.mod.Vars = append(p.mod.Vars, v)
		return nil
	}
	return p.errf(start.line, "unexpected %s at module level", describe(t))
}

func (p *parser) loc() error {
	t := p.next() // .loc
	f, _, err := p.intLit()
	if err != nil {
		return err
	}
	l, _, err := p.intLit()
	if err != nil {
		return err
	}
	c := int64(0)
	if p.peek().kind == tNum {
		if c, _, err = p.intLit(); err != nil {
			return err
		}
	}
	// clang and newer NVRTC append ", function_name …, inlined_at …": skip to the end of the line.
	for p.peek().kind != tEOF && p.peek().line == t.line {
		p.next()
	}
	loc := Loc{int(f), int(l), int(c)}
	i, ok := p.locIdx[loc]
	if !ok {
		i = len(p.mod.Locs)
		p.mod.Locs = append(p.mod.Locs, loc)
		p.locIdx[loc] = i
	}
	p.curLoc = i
	return nil
}

var typeSizes = map[string]int{
	"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "f16x2": 4, "bf16x2": 4,
	"b32": 4, "u32": 4, "s32": 4, "f32": 4, "tf32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "pred": 1,
	"b128": 16,
}

// varDecl parses a state-space variable: .shared .align 4 .b8 name[4096] (= {…});
func (p *parser) varDecl() (Var, error) {
	sp := p.next()
	v := Var{Space: sp.text[1:], Line: sp.line}
	elem, vec, err := p.varType(&v)
	if err != nil {
		return v, err
	}
	name, err := p.ident()
	if err != nil {
		return v, err
	}
	v.Name = name.text
	if p.is("<") { // .reg-style ranges do not apply to variables
		return v, p.errf(name.line, "unexpected '<' in a %s variable", sp.text)
	}
	count, err := p.varDims(&v, name)
	if err != nil {
		return v, err
	}
	v.Size = count * elem * vec
	if v.Size > MaxVarBytes {
		return v, p.errf(name.line, "%s is %d bytes, over the %d-byte limit", v.Name, v.Size, MaxVarBytes)
	}
	if v.Align == 0 {
		v.Align = elem * vec
	}
	if p.is("=") {
		p.next()
		init, err := p.initializer(elem*vec, elem)
		if err != nil {
			return v, err
		}
		if v.Extern && count == 0 {
			v.Size = len(init)
			v.Extern = false
		}
		if len(init) > v.Size {
			return v, p.errf(name.line, "initializer of %s longer than the variable", v.Name)
		}
		v.Init = init
	}
	_, err = p.expect(";")
	return v, err
}

// varType parses a variable's qualifiers after its state space: .align (into v), a vector width
// and the element type; it returns the element's size and the vector width (1 for a scalar).
func (p *parser) varType(v *Var) (elem, vec int, err error) {
	vec = 1
	for p.peek().kind == tIdent && strings.HasPrefix(p.peek().text, ".") {
		t := p.next()
		switch {
		case t.text == ".align":
			a, tok, err := p.intLit()
			if err != nil {
				return 0, 0, err
			}
			if a <= 0 || a > 4096 || a&(a-1) != 0 {
				return 0, 0, p.errf(tok.line, ".align %d is not a power of two up to 4096", a)
			}
			v.Align = int(a)
		case t.text == ".v2" || t.text == ".v4":
			vec = int(t.text[2] - '0')
		case t.text == ".ptr" || t.text == ".global" || t.text == ".shared" || t.text == ".const" || t.text == ".local":
			// .ptr.space.align N qualifiers of kernel pointer parameters: ignored (PTX ISA 8.x, 5.1.6.1)
		default:
			sz, ok := typeSizes[t.text[1:]]
			if !ok {
				return 0, 0, p.errf(t.line, "unknown type %s", t.text)
			}
			elem = sz
		}
	}
	if elem == 0 {
		return 0, 0, p.errf(v.Line, "variable declaration without a type")
	}
	return elem, vec, nil
}

// varDims parses a variable's array dimensions ([4][8], or an unsized first one, [], which makes
// v extern) and returns its element count (0 when unsized).
func (p *parser) varDims(v *Var, name token) (int, error) {
	count := 1
	dims := 0
	for p.is("[") {
		p.next()
		dims++
		if p.is("]") {
			p.next()
			if dims != 1 {
				return 0, p.errf(name.line, "only the first dimension of %s may be unsized", v.Name)
			}
			v.Extern = true
			count = 0
			continue
		}
		n, tok, err := p.intLit()
		if err != nil {
			return 0, err
		}
		if n < 0 || n > MaxVarBytes {
			return 0, p.errf(tok.line, "array size %d out of range", n)
		}
		count *= int(n)
		if _, err := p.expect("]"); err != nil {
			return 0, err
		}
	}
	return count, nil
}

// initializer parses = {1, 2, 3} or = 5 (integers, or float constants stored with their bits).
func (p *parser) initializer(_ int, elem int) ([]byte, error) {
	var out []byte
	put := func() error {
		neg := false
		if p.is("-") {
			p.next()
			neg = true
		}
		t := p.next()
		if t.kind != tNum {
			return p.errf(t.line, "initializers must be numbers, found %s", describe(t))
		}
		k, v, err := parseNumber(t.text)
		if err != nil {
			return p.errf(t.line, "%v", err)
		}
		if k == numFloat && elem == 4 {
			v = uint64(math.Float32bits(float32(math.Float64frombits(v))))
		}
		if neg {
			v = -v
		}
		for i := range elem {
			out = append(out, byte(v>>(8*i)))
		}
		if len(out) > MaxVarBytes {
			return p.errf(t.line, "initializer too long")
		}
		return nil
	}
	var list func() error
	list = func() error {
		if _, err := p.expect("{"); err != nil {
			return err
		}
		for !p.is("}") {
			if p.is("{") {
				if err := list(); err != nil {
					return err
				}
			} else if err := put(); err != nil {
				return err
			}
			if p.is(",") {
				p.next()
			} else if !p.is("}") {
				return p.errf(p.peek().line, "expected ',' or '}' in an initializer")
			}
		}
		p.next()
		return nil
	}
	if p.is("{") {
		return out, list()
	}
	return out, put()
}

func (p *parser) paramList(line int) ([]Param, int, error) {
	if _, err := p.expect("("); err != nil {
		return nil, 0, err
	}
	var ps []Param
	off := 0
	for !p.is(")") {
		t := p.next()
		if t.text != ".param" && t.text != ".reg" {
			return nil, 0, p.errf(t.line, "expected .param, found %s", describe(t))
		}
		p.pos-- // varDecl reads the space itself
		v, err := p.paramDecl()
		if err != nil {
			return nil, 0, err
		}
		a := max(v.Align, 1)
		off = (off + a - 1) / a * a
		v.Offset = off
		off += v.Size
		ps = append(ps, v)
		if p.is(",") {
			p.next()
		} else if !p.is(")") {
			return nil, 0, p.errf(p.peek().line, "expected ',' or ')' in a parameter list")
		}
	}
	p.next()
	_ = line
	return ps, off, nil
}

func (p *parser) paramDecl() (Param, error) {
	sp := p.next()
	pr := Param{Line: sp.line}
	elem, vec := 0, 1
	for p.peek().kind == tIdent && strings.HasPrefix(p.peek().text, ".") {
		t := p.next()
		switch t.text {
		case ".align":
			a, tok, err := p.intLit()
			if err != nil {
				return pr, err
			}
			if a <= 0 || a > 4096 || a&(a-1) != 0 {
				return pr, p.errf(tok.line, ".align %d is not a power of two", a)
			}
			pr.Align = int(a)
		case ".ptr", ".global", ".shared", ".const", ".local":
		case ".v2", ".v4":
			vec = int(t.text[2] - '0')
		default:
			if strings.HasPrefix(t.text, ".align") {
				continue
			}
			sz, ok := typeSizes[t.text[1:]]
			if !ok {
				return pr, p.errf(t.line, "unknown parameter type %s", t.text)
			}
			elem = sz
			pr.Type = t.text[1:]
		}
	}
	if elem == 0 {
		return pr, p.errf(sp.line, "parameter without a type")
	}
	name, err := p.ident()
	if err != nil {
		return pr, err
	}
	pr.Name = name.text
	count := 1
	if p.is("[") {
		p.next()
		n, tok, err := p.intLit()
		if err != nil {
			return pr, err
		}
		if n <= 0 || n > 1<<16 {
			return pr, p.errf(tok.line, "parameter array size %d out of range", n)
		}
		count = int(n)
		if _, err := p.expect("]"); err != nil {
			return pr, err
		}
	}
	pr.Size = elem * vec * count
	if pr.Align == 0 {
		pr.Align = elem * vec
	}
	return pr, nil
}

func (p *parser) function(extern bool) error {
	kw := p.next()
	f := &Function{Entry: kw.text == ".entry", Line: kw.line}
	if !f.Entry && p.is("(") {
		rets, _, err := p.paramList(kw.line)
		if err != nil {
			return err
		}
		f.Returns = rets
	}
	name, err := p.ident()
	if err != nil {
		return err
	}
	f.Name = name.text
	if p.is("(") {
		ps, n, err := p.paramList(kw.line)
		if err != nil {
			return err
		}
		f.Params, f.ParamBytes = ps, n
	}
	if err := p.funcDirectives(f); err != nil {
		return err
	}
	if old := p.mod.funcs[f.Name]; old != nil {
		if !old.decl {
			if p.is(";") {
				p.next()
				return nil // a prototype after the definition
			}
			return p.errf(f.Line, "function %s defined twice (first at line %d)", f.Name, old.Line)
		}
		// a definition replacing an earlier prototype
		for i, g := range p.mod.Functions {
			if g == old {
				p.mod.Functions = append(p.mod.Functions[:i], p.mod.Functions[i+1:]...)
				break
			}
		}
	}
	if p.is(";") {
		p.next()
		f.decl = true
		_ = extern
		p.mod.Functions = append(p.mod.Functions, f)
		p.mod.funcs[f.Name] = f
		return nil
	}
	if err := p.body(f); err != nil {
		return err
	}
	p.mod.Functions = append(p.mod.Functions, f)
	p.mod.funcs[f.Name] = f
	return nil
}

// funcDirectives parses the performance-tuning directives after a function's parameters
// (.maxntid, .reqntid, .maxnreg, .minnctapersm; the cluster ones are skipped) into f.
func (p *parser) funcDirectives(f *Function) error {
	for p.peek().kind == tIdent && strings.HasPrefix(p.peek().text, ".") {
		d := p.next()
		switch d.text {
		case ".maxntid", ".reqntid", ".reqnctapercluster":
			var dims [3]int
			for i := 0; i < 3; i++ {
				n, tok, err := p.intLit()
				if err != nil {
					return err
				}
				if n < 1 || n > 1024 {
					return p.errf(tok.line, "%s %d out of range", d.text, n)
				}
				dims[i] = int(n)
				if !p.is(",") {
					break
				}
				p.next()
			}
			for i := range dims {
				if dims[i] == 0 {
					dims[i] = 1
				}
			}
			if d.text == ".maxntid" {
				f.MaxNTID = dims
			} else if d.text == ".reqnctapercluster" {
				f.ClusterDims = dims
			} else {
				f.ReqNTID = dims
			}
		case ".maxnreg", ".minnctapersm":
			n, tok, err := p.intLit()
			if err != nil {
				return err
			}
			if n < 1 || n > 1<<16 {
				return p.errf(tok.line, "%s %d out of range", d.text, n)
			}
			if d.text == ".maxnreg" {
				f.MaxNReg = int(n)
			} else {
				f.MinNCTAPerSM = int(n)
			}
		case ".maxnctapersm", ".maxclusterrank", ".explicitcluster":
			for p.peek().kind == tNum || p.is(",") {
				p.next()
			}
		case ".noreturn":
		case ".pragma":
			if err := p.skipStatement(); err != nil {
				return err
			}
		default:
			return p.errf(d.line, "unknown function directive %s", d.text)
		}
	}
	return nil
}

func (p *parser) body(f *Function) error {
	open, err := p.expect("{")
	if err != nil {
		return err
	}
	depth := 1
	for {
		t := p.peek()
		switch {
		case t.kind == tEOF:
			return p.errf(open.line, "function %s: missing '}'", f.Name)
		case t.kind == tPunct && t.text == "{":
			p.next()
			depth++
			f.body = append(f.body, pinst{line: t.line, scopeDelta: 1, loc: p.curLoc})
		case t.kind == tPunct && t.text == "}":
			p.next()
			depth--
			if depth == 0 {
				return nil
			}
			f.body = append(f.body, pinst{line: t.line, scopeDelta: -1, loc: p.curLoc})
		case t.kind == tPunct && t.text == ";":
			p.next()
		case t.kind == tIdent && (t.text == ".reg" || strings.HasPrefix(t.text, ".reg.")):
			d, err := p.regDecl()
			if err != nil {
				return err
			}
			f.body = append(f.body, pinst{line: t.line, decl: d, loc: p.curLoc})
		case t.kind == tIdent && (t.text == ".shared" || t.text == ".local" || t.text == ".param" || t.text == ".const" || t.text == ".global"):
			if err := p.bodyVar(f, t); err != nil {
				return err
			}
		case t.kind == tIdent && t.text == ".loc":
			if err := p.loc(); err != nil {
				return err
			}
		case t.kind == tIdent && (t.text == ".pragma" || t.text == ".section"):
			p.next()
			if err := p.skipStatement(); err != nil {
				return err
			}
		case t.kind == tIdent && t.text == ".extern":
			p.next()
			if !p.is(".shared") {
				return p.errf(t.line, ".extern inside a function: only .extern .shared is supported")
			}
			v, err := p.varDecl()
			if err != nil {
				return err
			}
			v.Extern = true
			f.vars = append(f.vars, v)
		case t.kind == tIdent && p.toks[p.pos+1].kind == tPunct && p.toks[p.pos+1].text == ":" && !strings.HasPrefix(t.text, "%"):
			p.next()
			p.next()
			f.body = append(f.body, pinst{line: t.line, label: t.text, loc: p.curLoc})
		case t.kind == tIdent && strings.HasPrefix(t.text, ".") && t.text != ".":
			return p.errf(t.line, "unsupported directive %s inside a function", t.text)
		default:
			if err := p.bodyInstruction(f, t); err != nil {
				return err
			}
		}
	}
}

// bodyVar parses a variable declared in a function body (t: its state space): a call-sequence
// .param stays in the body, scoped like a register; .shared and .local ones are the function's.
func (p *parser) bodyVar(f *Function, t token) error {
	if t.text == ".param" {
		pr, err := p.paramDecl()
		if err != nil {
			return err
		}
		if _, err := p.expect(";"); err != nil {
			return err
		}
		f.body = append(f.body, pinst{line: t.line, loc: p.curLoc,
			pvar: &Var{Name: pr.Name, Space: "param", Align: pr.Align, Size: pr.Size, Line: pr.Line}})
		return nil
	}
	v, err := p.varDecl()
	if err != nil {
		return err
	}
	if v.Space == "global" || v.Space == "const" {
		return p.errf(v.Line, "function-scope .%s variables are not supported; declare %s at module level", v.Space, v.Name)
	}
	f.vars = append(f.vars, v)
	return nil
}

// bodyInstruction parses the instruction starting at t into f's body; one the parser cannot read
// that belongs to a feature the virtual GPU does not run (opaque) is kept unparsed, to become an
// *UnsupportedError.
func (p *parser) bodyInstruction(f *Function, t token) error {
	start := p.pos
	in, err := p.instruction()
	if err != nil {
		if op := p.opaque(t.line); op != "" {
			p.pos = start
			in, err = pinst{line: t.line, op: op, loc: p.curLoc, opaque: true}, p.skipInstruction()
		}
	}
	if err != nil {
		return err
	}
	f.body = append(f.body, in)
	return nil
}

func (p *parser) regDecl() (*regDecl, error) {
	d := &regDecl{}
	if rest := strings.TrimPrefix(p.next().text, ".reg"); rest != "" { // ".reg.f32 f", as in CUDA's headers' inline asm
		if _, ok := typeSizes[rest[1:]]; !ok {
			return nil, p.errf(p.peek().line, "unknown register type %s", rest)
		}
		d.typ = rest[1:]
	}
	for p.peek().kind == tIdent && strings.HasPrefix(p.peek().text, ".") {
		t := p.next()
		switch {
		case t.text == ".v2" || t.text == ".v4":
			return nil, p.errf(t.line, "vector registers (.reg %s) are not supported", t.text)
		default:
			if _, ok := typeSizes[t.text[1:]]; !ok {
				return nil, p.errf(t.line, "unknown register type %s", t.text)
			}
			d.typ = t.text[1:]
		}
	}
	if d.typ == "" {
		return nil, p.errf(p.peek().line, ".reg without a type")
	}
	for {
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		if p.is("<") {
			p.next()
			n, tok, err := p.intLit()
			if err != nil {
				return nil, err
			}
			if n < 0 || n > MaxRegisters {
				return nil, p.errf(tok.line, "register range %s<%d> out of range", name.text, n)
			}
			if _, err := p.expect(">"); err != nil {
				return nil, err
			}
			for i := range n {
				d.names = append(d.names, fmt.Sprintf("%s%d", name.text, i))
			}
			if len(d.names) > MaxRegisters {
				return nil, p.errf(tok.line, "too many registers")
			}
		} else {
			d.names = append(d.names, name.text)
		}
		if !p.is(",") {
			break
		}
		p.next()
	}
	_, err := p.expect(";")
	return d, err
}

func (p *parser) instruction() (pinst, error) {
	in := pinst{line: p.peek().line, loc: p.curLoc}
	if p.is("@") {
		p.next()
		if p.is("!") {
			p.next()
			in.guardNot = true
		}
		g, err := p.ident()
		if err != nil {
			return in, err
		}
		in.guard = g.text
	}
	op, err := p.ident()
	if err != nil {
		return in, err
	}
	in.op = op.text
	if strings.HasPrefix(in.op, "call") {
		return in, p.call(&in)
	}
	for !p.is(";") {
		o, err := p.operand()
		if err != nil {
			return in, err
		}
		in.args = append(in.args, o)
		if p.is(",") {
			p.next()
		} else if !p.is(";") {
			return in, p.errf(p.peek().line, "%s: expected ',' or ';', found %s", in.op, describe(p.peek()))
		}
	}
	p.next()
	return in, nil
}

// call parses call{.uni} (rets), f, (args) {, prototype}; (PTX ISA 8.x, section 9.7.12.6 "call").
func (p *parser) call(in *pinst) error {
	list := func() ([]operand, error) {
		p.next() // (
		var out []operand
		for !p.is(")") {
			o, err := p.operand()
			if err != nil {
				return nil, err
			}
			out = append(out, o)
			if p.is(",") {
				p.next()
			} else if !p.is(")") {
				return nil, p.errf(p.peek().line, "call: expected ',' or ')'")
			}
		}
		p.next()
		return out, nil
	}
	var err error
	if p.is("(") {
		if in.callRets, err = list(); err != nil {
			return err
		}
		if _, err := p.expect(","); err != nil {
			return err
		}
	}
	f, err := p.ident()
	if err != nil {
		return err
	}
	in.callee = f.text
	if p.is(",") {
		p.next()
		if p.is("(") {
			if in.callArgs, err = list(); err != nil {
				return err
			}
		}
		if p.is(",") { // a prototype or a jump table: indirect calls
			return p.errf(in.line, "indirect calls (call through a register with a prototype) are not supported")
		}
	}
	_, err = p.expect(";")
	return err
}

func (p *parser) operand() (operand, error) {
	t := p.peek()
	switch {
	case t.kind == tPunct && t.text == "[":
		return p.addrOperand()
	case t.kind == tPunct && t.text == "{":
		return p.vecOperand(t)
	case t.kind == tPunct && t.text == "!":
		p.next()
		id, err := p.ident()
		if err != nil {
			return operand{}, err
		}
		return operand{kind: oReg, name: id.text, not: true}, nil
	case t.kind == tPunct && t.text == "-" || t.kind == tNum:
		return p.immOperand(t)
	case t.kind == tIdent:
		p.next()
		o := operand{kind: oReg, name: t.text}
		if t.text == "_" {
			o = operand{kind: oSink}
			if !p.is("|") {
				return o, nil
			}
		}
		if p.is("|") {
			p.next()
			q, err := p.ident()
			if err != nil {
				return o, err
			}
			return operand{kind: oPair, elems: []operand{o, {kind: oReg, name: q.text}}}, nil
		}
		if p.is("+") {
			p.next()
			n, _, err := p.intLit()
			if err != nil {
				return o, err
			}
			o.off = n
		}
		return o, nil
	}
	return operand{}, p.errf(t.line, "unexpected %s in an operand", describe(t))
}

// addrOperand parses an address operand: [name], [name+n], [name-n], [n] or [name, {a, b, …}].
func (p *parser) addrOperand() (operand, error) {
	p.next() // [
	o := operand{kind: oAddr}
	if p.peek().kind == tIdent {
		o.name = p.next().text
		if p.is("+") {
			p.next()
			n, _, err := p.intLit()
			if err != nil {
				return o, err
			}
			o.off = n
		} else if p.is("-") {
			n, _, err := p.intLit()
			if err != nil {
				return o, err
			}
			o.off = n
		}
		if p.is(",") { // a tensor map and its coordinates: [tmap, {x, y}] (cp.async.bulk.tensor)
			p.next()
			if !p.is("{") {
				return o, p.errf(p.peek().line, "expected '{' after the ',' in an address")
			}
			v, err := p.vecOperand(p.peek())
			if err != nil {
				return o, err
			}
			o.elems = v.elems
		}
	} else {
		n, _, err := p.intLit()
		if err != nil {
			return o, err
		}
		o.off = n
	}
	_, err := p.expect("]")
	return o, err
}

// vecOperand parses a vector operand, {a, b, …} (t: the '{'), of at most 64 plain operands.
func (p *parser) vecOperand(t token) (operand, error) {
	p.next() // {
	o := operand{kind: oVec}
	for !p.is("}") {
		e, err := p.operand()
		if err != nil {
			return o, err
		}
		if e.kind == oVec || e.kind == oAddr {
			return o, p.errf(t.line, "nested vector or address in a vector operand")
		}
		o.elems = append(o.elems, e)
		if len(o.elems) > 128 { // wgmma.m64n256k16: 128 f32 accumulators
			return o, p.errf(t.line, "vector operand too long")
		}
		if p.is(",") {
			p.next()
		} else if !p.is("}") {
			return o, p.errf(p.peek().line, "expected ',' or '}' in a vector operand")
		}
	}
	p.next()
	return o, nil
}

// immOperand parses a number, with an optional '-' (t: the number or the '-'): an integer is
// negated, a float's sign bit flipped.
func (p *parser) immOperand(t token) (operand, error) {
	neg := false
	if t.text == "-" {
		p.next()
		neg = true
	}
	n := p.next()
	if n.kind != tNum {
		return operand{}, p.errf(n.line, "expected a number after '-', found %s", describe(n))
	}
	k, v, err := parseNumber(n.text)
	if err != nil {
		return operand{}, p.errf(n.line, "%v", err)
	}
	if neg {
		switch k {
		case numInt:
			v = -v
		case numF32:
			v ^= 1 << 31
		default:
			v ^= 1 << 63
		}
	}
	return operand{kind: oImm, num: k, bits: v}, nil
}
