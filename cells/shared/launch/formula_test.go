package launch

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestFormulaEval(t *testing.T) {
	tests := []struct {
		formula  string
		n        int
		num, den int64
	}{
		{"1", 0, 1, 1},
		{"n", 37, 37, 1},
		{"  n  ", 5, 5, 1},
		// precedence and associativity
		{"1+2*3", 0, 7, 1},
		{"(1+2)*3", 0, 9, 1},
		{"10-4-3", 0, 3, 1},
		{"64/4/2", 0, 8, 1},
		{"2*n+1", 10, 21, 1},
		{"n-n*2", 3, -3, 1},
		{"7%4*2", 0, 6, 1},
		{"1+7%4", 0, 4, 1},
		{"-n+1", 3, -2, 1},
		{"-(n+1)", 3, -4, 1},
		{"--n", 3, 3, 1},
		{"2*-3", 0, -6, 1},
		// exact division
		{"n/16", 100, 25, 4},
		{"n/16", 256, 16, 1},
		{"(n+15)/16", 100, 115, 16},
		{"n/3*3", 10, 10, 1},
		{"1/3+1/6", 0, 1, 2},
		{"1/3-1/3", 0, 0, 1},
		{"-n/4", 6, -3, 2},
		{"n/-4", 6, -3, 2},
		{"(1/2)/(1/4)", 0, 2, 1},
		// ceil and floor, negatives included
		{"ceil(n/16)", 100, 7, 1},
		{"ceil(n/16)", 256, 16, 1},
		{"floor(n/16)", 100, 6, 1},
		{"ceil(-7/2)", 0, -3, 1},
		{"floor(-7/2)", 0, -4, 1},
		{"ceil(-4)", 0, -4, 1},
		{"floor(-4)", 0, -4, 1},
		{"ceil(1/1000)", 0, 1, 1},
		{"floor(-1/1000)", 0, -1, 1},
		{"ceil(0)", 0, 0, 1},
		// min and max
		{"min(n, 64)", 100, 64, 1},
		{"min(n, 64)", 10, 10, 1},
		{"max(1, n/32)", 16, 1, 1},
		{"max(1, n/32)", 64, 2, 1},
		{"min(3, 1, 2)", 0, 1, 1},
		{"max(3, 1, 2, -5)", 0, 3, 1},
		{"max(-1/2, -1/3)", 0, -1, 3},
		{"min(1/3, 1/4)", 0, 1, 4},
		{"max(ceil(n/16), min(4, n))", 8, 4, 1},
		// % is the remainder of truncating division
		{"7%3", 0, 1, 1},
		{"-7%3", 0, -1, 1},
		{"7%-3", 0, 1, 1},
		{"-7%-3", 0, -1, 1},
		{"n%16", 100, 4, 1},
		{"(7/2)%1", 0, 1, 2},
		{"(-7/2)%1", 0, -1, 2},
		{"(7/2)%(3/2)", 0, 1, 2},
		// large but in range
		{"9223372036854775807", 0, math.MaxInt64, 1},
		{"n*n*n", 1 << 20, 1 << 60, 1},
		{"n*n*n*n/n", 1 << 15, 1 << 45, 1},
		{"9223372036854775807/9223372036854775806*9223372036854775806", 0, math.MaxInt64, 1},
		{"max(9223372036854775807/2, 9223372036854775806/2)", 0, math.MaxInt64, 2},
	}
	for _, tt := range tests {
		f, err := ParseFormula(tt.formula)
		if err != nil {
			t.Errorf("ParseFormula(%q): %v", tt.formula, err)
			continue
		}
		num, den, err := f.Eval(tt.n)
		if err != nil || num != tt.num || den != tt.den {
			t.Errorf("%q at n=%d = %d/%d, %v; want %d/%d", tt.formula, tt.n, num, den, err, tt.num, tt.den)
		}
	}
}

func TestFormulaEvalErrors(t *testing.T) {
	tests := []struct {
		formula string
		n       int
		want    error
	}{
		{"1/0", 0, errDivZero},
		{"n/(n-16)", 16, errDivZero},
		{"1/(1/2-1/2)", 0, errDivZero},
		{"n%0", 5, errDivZero},
		{"(1/2)%(n-n)", 5, errDivZero},
		{"n*n*n*n*n", 1 << 13, errOverflow},
		{"9223372036854775807+1", 0, errOverflow},
		{"-9223372036854775807-1", 0, errOverflow},
		{"-9223372036854775807-2", 0, errOverflow},
		{"9223372036854775807*2", 0, errOverflow},
		{"-9223372036854775807*2", 0, errOverflow},
		{"1/9223372036854775807+1/9223372036854775806", 0, errOverflow},
		{"(1/3037000499)*(1/3037000498)*(1/5)", 0, errOverflow},
		{"ceil(n*n*n*n)", 1 << 16, errOverflow},
		{"min(1, n*n*n*n)", 1 << 16, errOverflow},
	}
	for _, tt := range tests {
		f, err := ParseFormula(tt.formula)
		if err != nil {
			t.Errorf("ParseFormula(%q): %v", tt.formula, err)
			continue
		}
		if num, den, err := f.Eval(tt.n); !errors.Is(err, tt.want) {
			t.Errorf("%q at n=%d = %d/%d, %v; want %v", tt.formula, tt.n, num, den, err, tt.want)
		}
	}
	f, _ := ParseFormula("n")
	if _, _, err := f.Eval(math.MinInt64); !errors.Is(err, errOverflow) {
		t.Errorf("n = MinInt64: got %v, want an overflow", err)
	}
}

func TestFormulaSyntaxErrors(t *testing.T) {
	tests := []struct{ formula, want string }{
		{"", "at column 1: unexpected end of formula"},
		{"   ", "unexpected end of formula"},
		{"n +", "at column 4: unexpected end of formula"},
		{"(n", "expected )"},
		{"n)", `at column 2: unexpected ")": expected an operator`},
		{"n n", `unexpected "n": expected an operator`},
		{"2n", `"2n" is not a number (write 16*n for a product)`},
		{"n/16.0", "16.0 is not a whole number"},
		{"1.5", "1.5 is not a whole number"},
		{"1e3", `"1e3" is not a number`},
		{"N", `unknown name "N": formulas use n, ceil, floor, min and max`},
		{`repeat("x", 9)`, `unknown name "repeat"`},
		{"replace(n)", `unknown name "replace"`},
		{"len(n)", `unknown name "len"`},
		{"n ** 2", `at column 4: unexpected "*": expected a number`},
		{"n ^ 2", `at column 3: unexpected "^": formulas use whole numbers`},
		{"n && 1", `unexpected "&"`},
		{`"n"`, `unexpected "\""`},
		{"ceil", "expected ( after ceil"},
		{"ceil n", "expected ( after ceil"},
		{"ceil()", "unexpected \")\": expected a number"},
		{"ceil(n, 2)", "ceil takes one number, not 2"},
		{"floor(1, 2, 3)", "floor takes one number, not 3"},
		{"min(n)", "min takes two or more numbers"},
		{"max(n,)", `unexpected ")": expected a number`},
		{"max(n 2)", "expected , or ) in max(…)"},
		{"n(2)", `unexpected "(": expected an operator`},
		{"99999999999999999999", "99999999999999999999 does not fit in 64 bits"},
		{"9223372036854775808", "does not fit in 64 bits"},
		{"n\n", `unexpected "\n"`},
		{"n·2", `unexpected "\xc2"`},
	}
	for _, tt := range tests {
		_, err := ParseFormula(tt.formula)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseFormula(%q) = %v; want an error with %q", tt.formula, err, tt.want)
		}
	}
}

// A formula is at most MaxFormulaBytes long and nests at most MaxFormulaDepth deep.
func TestFormulaCaps(t *testing.T) {
	long := "n" + strings.Repeat("+1", (MaxFormulaBytes-1)/2)
	if len(long) > MaxFormulaBytes {
		t.Fatal("bad test")
	}
	f, err := ParseFormula(long)
	if err != nil {
		t.Fatalf("a formula of %d bytes: %v", len(long), err)
	}
	if num, _, err := f.Eval(1); err != nil || num != int64(1+(MaxFormulaBytes-1)/2) {
		t.Errorf("%q = %d, %v", long, num, err)
	}
	for _, src := range []string{long + "+1", strings.Repeat("n", MaxFormulaBytes+1), strings.Repeat("(", 1<<20)} {
		if _, err := ParseFormula(src); err == nil || !strings.Contains(err.Error(), "a formula is at most "+strconv.Itoa(MaxFormulaBytes)) {
			t.Errorf("a formula of %d bytes: got %v, want the %d-byte cap", len(src), err, MaxFormulaBytes)
		}
	}

	nest := func(open, close string, depth int) string {
		return strings.Repeat(open, depth) + "n" + strings.Repeat(close, depth)
	}
	for _, shape := range []struct{ open, close string }{{"(", ")"}, {"ceil(", ")"}, {"-", ""}, {"min(1,", ")"}, {"-(", ")"}} {
		deep := nest(shape.open, shape.close, MaxFormulaDepth)
		if shape.open == "-(" {
			deep = nest(shape.open, shape.close, MaxFormulaDepth/2)
		}
		if _, err := ParseFormula(deep); err != nil {
			t.Errorf("%q (depth %d): %v", deep, MaxFormulaDepth, err)
		}
		deeper := nest(shape.open, shape.close, MaxFormulaDepth+1)
		if shape.open == "-(" {
			deeper = nest(shape.open, shape.close, MaxFormulaDepth/2+1)
		}
		if _, err := ParseFormula(deeper); err == nil || !strings.Contains(err.Error(), "nested more than "+strconv.Itoa(MaxFormulaDepth)+" deep") {
			t.Errorf("%q: got %v, want the depth cap", deeper, err)
		}
	}
}

// What broke the server before: formulas in a richer language that build huge strings or loop.
// Each is refused at parse time, without evaluating anything.
func TestFormulaMaliciousInputs(t *testing.T) {
	for _, src := range []string{
		`replace(replace(repeat("x", 1000000), "x", repeat("y", 1000)), "y", repeat("z", 1000))`,
		`len(repeat("ab", 100000000))`,
		`reduce(1..1000000, # + 1)`,
		`n ** n ** n`,
		`map(1..n, {n})`,
		strings.Repeat("(", MaxFormulaBytes),
		strings.Repeat("-", MaxFormulaBytes),
		strings.Repeat("ceil(", MaxFormulaBytes/5),
		strings.Repeat("n*", MaxFormulaBytes/2),
		strings.Repeat("9", MaxFormulaBytes),
		strings.Repeat("min(", 1<<16) + "n",
	} {
		if f, err := ParseFormula(src); err == nil {
			t.Errorf("ParseFormula(%.40q…) accepted %v", src, f)
		}
	}
	// The largest accepted formulas evaluate in a bounded number of steps, with an error at worst.
	for _, src := range []string{
		"n" + strings.Repeat("*n", (MaxFormulaBytes-1)/2),
		"n" + strings.Repeat("/n", (MaxFormulaBytes-1)/2),
		"1" + strings.Repeat("/3", (MaxFormulaBytes-1)/2),
		"max(" + strings.Repeat("n,", (MaxFormulaBytes-6)/2) + "n)",
	} {
		f, err := ParseFormula(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		for _, n := range []int{1, 2, 4096, math.MaxInt64} {
			f.Eval(n) // a value or an error, never a panic
		}
	}
}

func FuzzFormula(f *testing.F) {
	for _, s := range []string{"ceil(n/16)", "(n+15)/16", "max(1, min(n, 64))", "-7%3", "floor(-n/3)", "n*n*n*n", "1/(n-n)", "((n))", "2n", "n/16.0"} {
		f.Add(s, 256)
	}
	f.Fuzz(func(t *testing.T, src string, n int) {
		p, err := ParseFormula(src)
		if err != nil {
			if len(src) <= MaxFormulaBytes && !strings.Contains(err.Error(), "column") {
				t.Fatalf("%q: an error without a column: %v", src, err)
			}
			return
		}
		if len(src) > MaxFormulaBytes {
			t.Fatalf("accepted a formula of %d bytes", len(src))
		}
		num, den, err := p.Eval(n)
		if err != nil {
			if !errors.Is(err, errOverflow) && !errors.Is(err, errDivZero) {
				t.Fatalf("%q at n=%d: unexpected error %v", src, n, err)
			}
			return
		}
		if den < 1 || num == math.MinInt64 || gcd(abs(num), uint64(den)) != 1 {
			t.Fatalf("%q at n=%d = %d/%d: not in lowest terms with a positive denominator", src, n, num, den)
		}
		// The same formula evaluates the same way every time (it holds no state).
		if num2, den2, err := p.Eval(n); err != nil || num2 != num || den2 != den {
			t.Fatalf("%q at n=%d: %d/%d then %d/%d, %v", src, n, num, den, num2, den2, err)
		}
	})
}
