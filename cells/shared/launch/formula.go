package launch

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// A grid formula is integer arithmetic in the matrix size n, nothing else:
//
//	formula := term   { ("+" | "-") term }
//	term    := unary  { ("*" | "/" | "%") unary }
//	unary   := "-" unary | primary
//	primary := INTEGER | "n" | "(" formula ")" | ("ceil" | "floor") "(" formula ")"
//	         | ("min" | "max") "(" formula "," formula { "," formula } ")"
//
// It is parsed once, into a tree of at most a few dozen nodes (the source is at most
// MaxFormulaBytes long and nests at most MaxFormulaDepth deep), and evaluated per size exactly, in
// 64-bit rationals: `/` divides exactly (7/2 is 7/2, not 3; round with ceil or floor), `%` is the
// remainder of truncating division (a − b·trunc(a/b), as in C and Go: -7 % 3 is -1), ceil and floor
// round towards +∞ and −∞. A value that does not fit in 64 bits and a division (or %) by zero are
// errors; nothing can allocate or loop beyond the formula's size.
const (
	MaxFormulaBytes = 200
	MaxFormulaDepth = 16
)

// Formula is a parsed grid formula.
type Formula struct {
	src  string
	root *node
}

// ParseFormula parses a grid formula. Its errors say where (1-based byte column) and what was
// expected.
func ParseFormula(src string) (*Formula, error) {
	if len(src) > MaxFormulaBytes {
		return nil, fmt.Errorf("the formula is %d bytes long; a formula is at most %d bytes", len(src), MaxFormulaBytes)
	}
	p := &parser{src: src}
	p.next()
	root, err := p.formula(0)
	if err == nil && p.tok.kind != tokEOF {
		err = p.errorf("unexpected %s: expected an operator (+ - * / %%) or the end", p.tok)
	}
	if err != nil {
		return nil, err
	}
	return &Formula{src: src, root: root}, nil
}

func (f *Formula) String() string { return f.src }

// Eval evaluates the formula for size n: an exact fraction num/den with den > 0 in lowest terms.
// Overflow and division by zero are errors.
func (f *Formula) Eval(n int) (num, den int64, err error) {
	if int64(n) == math.MinInt64 {
		return 0, 0, errOverflow
	}
	r, err := f.root.eval(int64(n))
	return r.p, r.q, err
}

// node is one operation of a parsed formula.
type node struct {
	op   string // "int", "n", "+", "-", "*", "/", "%", "neg", "ceil", "floor", "min", "max"
	val  int64  // for "int"
	args []*node
}

var (
	errOverflow = errors.New("a value overflows 64-bit integers")
	errDivZero  = errors.New("division by zero")
)

func (x *node) eval(n int64) (rat, error) {
	switch x.op {
	case "int":
		return rat{x.val, 1}, nil
	case "n":
		return rat{n, 1}, nil
	}
	args := make([]rat, 0, 4)
	for _, a := range x.args {
		v, err := a.eval(n)
		if err != nil {
			return rat{}, err
		}
		args = append(args, v)
	}
	switch x.op {
	case "+":
		return args[0].add(args[1])
	case "-":
		return args[0].add(args[1].neg())
	case "*":
		return args[0].mul(args[1])
	case "/":
		return args[0].div(args[1])
	case "%":
		return args[0].rem(args[1])
	case "neg":
		return args[0].neg(), nil
	case "ceil":
		return rat{args[0].ceil(), 1}, nil
	case "floor":
		return rat{args[0].floor(), 1}, nil
	case "min", "max":
		best := args[0]
		for _, a := range args[1:] {
			if c := a.cmp(best); (x.op == "min" && c < 0) || (x.op == "max" && c > 0) {
				best = a
			}
		}
		return best, nil
	}
	panic("formula: unknown op " + x.op)
}

// rat is an exact fraction p/q: q > 0, in lowest terms, and neither p nor q is math.MinInt64 (so
// negating and taking absolute values never overflow).
type rat struct{ p, q int64 }

func newRat(p, q int64) (rat, error) {
	if q == 0 {
		return rat{}, errDivZero
	}
	if p == math.MinInt64 || q == math.MinInt64 {
		return rat{}, errOverflow
	}
	if q < 0 {
		p, q = -p, -q
	}
	g := int64(gcd(abs(p), uint64(q)))
	return rat{p / g, q / g}, nil
}

func (x rat) neg() rat { return rat{-x.p, x.q} }

func (x rat) add(y rat) (rat, error) {
	g := int64(gcd(uint64(x.q), uint64(y.q)))
	a, ok1 := mul64(x.p, y.q/g)
	b, ok2 := mul64(y.p, x.q/g)
	s, ok3 := add64(a, b)
	d, ok4 := mul64(x.q/g, y.q)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return rat{}, errOverflow
	}
	return newRat(s, d)
}

func (x rat) mul(y rat) (rat, error) {
	g1 := int64(gcd(abs(x.p), uint64(y.q)))
	g2 := int64(gcd(abs(y.p), uint64(x.q)))
	p, ok1 := mul64(x.p/g1, y.p/g2)
	q, ok2 := mul64(x.q/g2, y.q/g1)
	if !ok1 || !ok2 {
		return rat{}, errOverflow
	}
	return newRat(p, q)
}

func (x rat) div(y rat) (rat, error) {
	if y.p == 0 {
		return rat{}, errDivZero
	}
	inv, err := newRat(y.q, y.p)
	if err != nil {
		return rat{}, err
	}
	return x.mul(inv)
}

// rem is x − y·trunc(x/y), the remainder of truncating division (Go's and C's % on integers).
func (x rat) rem(y rat) (rat, error) {
	if y.p == 0 {
		return rat{}, errDivZero
	}
	if x.q == 1 && y.q == 1 {
		return rat{x.p % y.p, 1}, nil
	}
	quo, err := x.div(y)
	if err != nil {
		return rat{}, err
	}
	t, err := y.mul(rat{quo.p / quo.q, 1})
	if err != nil {
		return rat{}, err
	}
	return x.add(t.neg())
}

func (x rat) floor() int64 {
	t := x.p / x.q
	if x.p%x.q != 0 && x.p < 0 {
		t--
	}
	return t
}

func (x rat) ceil() int64 {
	t := x.p / x.q
	if x.p%x.q != 0 && x.p > 0 {
		t++
	}
	return t
}

// cmp returns -1, 0 or +1 as x is less than, equal to or greater than y, comparing x.p·y.q with
// y.p·x.q in 128 bits.
func (x rat) cmp(y rat) int {
	sx, sy := sign(x.p), sign(y.p)
	if sx != sy || sx == 0 {
		return cmpInt(sx, sy)
	}
	h1, l1 := bits.Mul64(abs(x.p), uint64(y.q))
	h2, l2 := bits.Mul64(abs(y.p), uint64(x.q))
	c := 0
	switch {
	case h1 != h2:
		c = cmpU(h1, h2)
	default:
		c = cmpU(l1, l2)
	}
	return c * sx
}

func sign(v int64) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

func cmpInt(a, b int) int { return sign(int64(a - b)) }

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// abs is |v| for v ≠ math.MinInt64.
func abs(v int64) uint64 {
	if v < 0 {
		return uint64(-v)
	}
	return uint64(v)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	if a == 0 {
		return 1
	}
	return a
}

// mul64 is a·b, ok false when it does not fit in [-MaxInt64, MaxInt64].
func mul64(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(abs(a), abs(b))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	if (a < 0) != (b < 0) {
		return -int64(lo), true
	}
	return int64(lo), true
}

// add64 is a+b, ok false when it does not fit in [-MaxInt64, MaxInt64].
func add64(a, b int64) (int64, bool) {
	s := a + b
	if (a^s)&(b^s) < 0 || s == math.MinInt64 {
		return 0, false
	}
	return s, true
}

// The tokens of a formula.
type tokKind int

const (
	tokEOF tokKind = iota
	tokInt
	tokName
	tokOp // one of + - * / % ( ) ,
)

type token struct {
	kind tokKind
	text string
	pos  int // byte offset
}

func (t token) String() string {
	if t.kind == tokEOF {
		return "end of formula"
	}
	return strconv.Quote(t.text)
}

type parser struct {
	src string
	pos int
	tok token
	err error // a lexical error, reported when the token is used
}

// errorf reports a parse error at the current token, or the lexical error that stopped the parse.
func (p *parser) errorf(format string, args ...any) error {
	if p.err != nil {
		return p.err
	}
	return fmt.Errorf("at column %d: %s", p.tok.pos+1, fmt.Sprintf(format, args...))
}

// next reads the next token into p.tok.
func (p *parser) next() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
	start := p.pos
	if p.pos == len(p.src) {
		p.tok = token{kind: tokEOF, pos: start}
		return
	}
	c := p.src[p.pos]
	switch {
	case isDigit(c):
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
		}
		kind := tokInt
		if p.pos < len(p.src) && (p.src[p.pos] == '.' || isLetter(p.src[p.pos])) {
			for p.pos < len(p.src) && (p.src[p.pos] == '.' || isLetter(p.src[p.pos]) || isDigit(p.src[p.pos])) {
				p.pos++
			}
			kind = tokName // reported as not a whole number below
		}
		p.tok = token{kind: kind, text: p.src[start:p.pos], pos: start}
	case isLetter(c):
		for p.pos < len(p.src) && (isLetter(p.src[p.pos]) || isDigit(p.src[p.pos])) {
			p.pos++
		}
		p.tok = token{kind: tokName, text: p.src[start:p.pos], pos: start}
	case strings.IndexByte("+-*/%(),", c) >= 0:
		p.pos++
		p.tok = token{kind: tokOp, text: p.src[start:p.pos], pos: start}
	default:
		p.tok = token{kind: tokOp, text: "", pos: start}
		p.err = fmt.Errorf("at column %d: unexpected %q: formulas use whole numbers, n, + - * / %%, parentheses, ceil, floor, min and max", start+1, p.src[start:start+1])
	}
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }

func (p *parser) is(op string) bool { return p.tok.kind == tokOp && p.tok.text == op && p.err == nil }

func (p *parser) formula(depth int) (*node, error) {
	if depth > MaxFormulaDepth {
		return nil, p.errorf("nested more than %d deep", MaxFormulaDepth)
	}
	left, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	for p.is("+") || p.is("-") {
		op := p.tok.text
		p.next()
		right, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		left = &node{op: op, args: []*node{left, right}}
	}
	return left, nil
}

func (p *parser) term(depth int) (*node, error) {
	left, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for p.is("*") || p.is("/") || p.is("%") {
		op := p.tok.text
		p.next()
		right, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		left = &node{op: op, args: []*node{left, right}}
	}
	return left, nil
}

func (p *parser) unary(depth int) (*node, error) {
	if p.is("-") {
		if depth+1 > MaxFormulaDepth {
			return nil, p.errorf("nested more than %d deep", MaxFormulaDepth)
		}
		p.next()
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &node{op: "neg", args: []*node{x}}, nil
	}
	return p.primary(depth)
}

func (p *parser) primary(depth int) (*node, error) {
	if p.err != nil {
		return nil, p.err
	}
	t := p.tok
	switch {
	case t.kind == tokInt:
		v, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil || v == math.MinInt64 {
			return nil, p.errorf("%s does not fit in 64 bits", t.text)
		}
		p.next()
		return &node{op: "int", val: v}, nil
	case t.kind == tokName && t.text == "n":
		p.next()
		return &node{op: "n"}, nil
	case t.kind == tokName && (t.text == "ceil" || t.text == "floor" || t.text == "min" || t.text == "max"):
		p.next()
		if !p.is("(") {
			return nil, p.errorf("expected ( after %s", t.text)
		}
		p.next()
		var args []*node
		for {
			a, err := p.formula(depth + 1)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if !p.is(",") {
				break
			}
			p.next()
		}
		if !p.is(")") {
			return nil, p.errorf("unexpected %s: expected , or ) in %s(…)", p.tok, t.text)
		}
		unaryFn := t.text == "ceil" || t.text == "floor"
		switch {
		case unaryFn && len(args) != 1:
			return nil, p.errorf("%s takes one number, not %d", t.text, len(args))
		case !unaryFn && len(args) < 2:
			return nil, p.errorf("%s takes two or more numbers", t.text)
		}
		p.next()
		return &node{op: t.text, args: args}, nil
	case t.kind == tokName && isDigit(t.text[0]) && strings.Contains(t.text, "."):
		return nil, p.errorf("%s is not a whole number: formulas use whole numbers (write n/16, then ceil(…) to round)", t.text)
	case t.kind == tokName && isDigit(t.text[0]):
		return nil, p.errorf("%q is not a number (write 16*n for a product)", t.text)
	case t.kind == tokName:
		return nil, p.errorf("unknown name %q: formulas use n, ceil, floor, min and max", t.text)
	case p.is("("):
		p.next()
		x, err := p.formula(depth + 1)
		if err != nil {
			return nil, err
		}
		if !p.is(")") {
			return nil, p.errorf("unexpected %s: expected )", p.tok)
		}
		p.next()
		return x, nil
	}
	return nil, p.errorf("unexpected %s: expected a number, n, ( or a function", p.tok)
}
