package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
)

func env() cells.Env {
	return cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...), Limits: harness.DefaultLimits()}
}

// validCell is kind's small valid cell, cells/<kind>/testdata/valid.cell, split into its YAML
// (header) and, for a kind whose cells go on after a line "---" (cuda, wgsl), that line and the rest.
func validCell(t *testing.T, kind string) (header, body string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", kind, "testdata", "valid.cell"))
	if err != nil {
		t.Fatalf("kind %s: a kind's folder cells/%s/ holds a small valid cell in testdata/valid.cell: %v", kind, kind, err)
	}
	if h, rest, ok := strings.Cut(string(b), "\n---\n"); ok {
		return h + "\n", "---\n" + rest
	}
	return string(b), ""
}

// wholeNumber finds a whole number in YAML: a key's value or a flow list's first item.
var wholeNumber = regexp.MustCompile(`^([a-z_]+: \[?)([0-9]+)(\]|,|$)`)

// fractions are header with one whole number made a fraction (8 → 8.5), for each line with one
// (checkFraction), and that line (1-based).
func fractions(header string) (srcs []string, lines []int) {
	ls := strings.Split(header, "\n")
	for i, l := range ls {
		if wholeNumber.MatchString(l) {
			f := slices.Clone(ls)
			f[i] = wholeNumber.ReplaceAllString(l, "${1}${2}.5${3}")
			srcs, lines = append(srcs, strings.Join(f, "\n")), append(lines, i+1)
		}
	}
	return srcs, lines
}

// checkFraction checks that k refuses a fraction for a key that takes whole numbers, with a
// line-numbered error, trying each whole number of its valid cell (a key that takes any number, such
// as allreduce's gradient_mb, accepts it) until one is refused; one must be.
func checkFraction(t *testing.T, k cells.Kind, header, body string) {
	t.Helper()
	srcs, lines := fractions(header)
	for i, src := range srcs {
		_, err := k.Parse(cells.Cell{Source: src + body})
		if err == nil {
			continue
		}
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "is not a whole number") || se.Line != lines[i] {
			t.Errorf("%s, fraction: got %v, want a *cells.SpecError at line %d saying it is not a whole number", k.Name(), err, lines[i])
		}
		return
	}
	t.Errorf("%s, fraction: none of testdata/valid.cell's %d whole numbers refused a fraction; give it a key that takes whole numbers (such as `n: 8` or `sizes: [8]`)", k.Name(), len(srcs))
}

// Every kind decodes its spec the same strict way: a key written twice, an unknown key, a second
// YAML document, a fraction where a whole number is wanted, an alias, an over-long value, an invalid
// id, a spec over the size cap and an empty cell are line-numbered errors; every kind accepts an
// `id:` key; every kind has a browser module. Each kind's own valid cell (validCell) is the start, so
// that a new kind is checked from its folder alone.
func TestEveryKindIsStrict(t *testing.T) {
	for _, k := range Kinds(env()) {
		header, body := validCell(t, k.Name())
		second := "---\n" + header
		if body != "" { // a YAML header, a line ---, then the code: a second document starts "--- …"
			second = "--- {id: x}\n"
		}
		lines := strings.Count(header, "\n")
		if _, err := k.Parse(cells.Cell{Source: header + body}); err != nil {
			t.Errorf("%s: testdata/valid.cell refused: %v", k.Name(), err)
		}
		if _, err := k.Parse(cells.Cell{Source: header + "id: my-cell\n" + body}); err != nil {
			t.Errorf("%s: id key refused: %v", k.Name(), err)
		}
		if k.Script() == "" {
			t.Errorf("%s: no browser module", k.Name())
		}
		first, _, _ := strings.Cut(header, "\n")
		for name, tt := range map[string]struct {
			src, want string
			line      int
		}{
			"twice":    {header + first + "\n" + body, "appears twice", lines + 1},
			"unknown":  {header + "speed: 3\n" + body, `unknown key "speed"; known keys: id, `, lines + 1},
			"document": {header + second + body, "a cell holds one YAML document", lines + 1},
			"alias":    {header + "x: &a 1\ny: *a\n" + body, "YAML aliases (*a) are not allowed", lines + 2},
			"long":     {header + "id: " + strings.Repeat("x", 300) + "\n" + body, "a key or value of 300 bytes is too long; a cell's keys and values are at most 256 bytes", lines + 1},
			"bad id":   {header + "id: Not_OK\n" + body, `id "Not_OK": use 1 to 64 lower-case letters`, lines + 1},
			"big":      {header + strings.Repeat("# a comment\n", 1500) + body, "a cell's YAML is at most 16384 bytes", 0},
		} {
			_, err := k.Parse(cells.Cell{Source: tt.src})
			var se *cells.SpecError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) || se.Line != tt.line {
				t.Errorf("%s, %s: got %v, want a *cells.SpecError at line %d with %q", k.Name(), name, err, tt.line, tt.want)
			}
		}
		checkFraction(t, k, header, body)
		want := "empty"
		if body != "" {
			want = "no `---` line"
		}
		if _, err := k.Parse(cells.Cell{Source: ""}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s, empty: got %v, want %q", k.Name(), err, want)
		}
	}
}

// A kind whose runs stream animation frames plays them through the shared player module
// (static/player.js's playerModule), not a FramePlayer set up again in its own render.js.
func TestPlayersAreShared(t *testing.T) {
	players := 0
	for _, k := range Kinds(env()) {
		js := k.Script()
		if strings.Contains(js, "new FramePlayer(") {
			t.Errorf("%s: its render.js makes its own FramePlayer; export default playerModule({…}) instead", k.Name())
		}
		if strings.Contains(js, "playerModule(") {
			players++
		}
	}
	if players < 3 {
		t.Errorf("%d kinds play frames with playerModule, want at least systolic, tpu and simt", players)
	}
}

// A second YAML document is an error, not silently ignored.
func TestOneDocument(t *testing.T) {
	var v struct {
		A int `yaml:"a"`
	}
	err := cells.Decode("a: 1\n---\na: 2\n", &v)
	var se *cells.SpecError
	if !errors.As(err, &se) || se.Line != 2 || !strings.Contains(err.Error(), "one YAML document") {
		t.Errorf("got %v, want an error at line 2 (the ---) about one document", err)
	}
}

// Every kind takes a `machine:` key (a class of machine, same characters as an id), and cells.Parse
// adds it to the run's Needs beside what the kind needs.
func TestMachineKey(t *testing.T) {
	kinds := Kinds(env())
	matmul, _ := cells.Lookup(kinds, "matmul")
	r, err := cells.Parse(matmul, "", cells.Cell{Source: "kernels: [ikj, cublas]\nsizes: [8]\nmachine: lab-a\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cells.NeedsOf(r), (cells.Needs{GPU: true, Machine: "lab-a"}); got != want {
		t.Errorf("needs %+v, want %+v", got, want)
	}
	r, err = cells.Parse(matmul, "", cells.Cell{Source: "kernels: [ikj]\nsizes: [8]\n"})
	if err != nil || cells.NeedsOf(r) != (cells.Needs{}) {
		t.Errorf("a CPU cell without machine: needs %+v, %v", cells.NeedsOf(r), err)
	}
	if _, err := cells.Parse(matmul, "", cells.Cell{Source: "kernels: [ikj]\nsizes: [8]\nmachine: Lab_A\n"}); err == nil || !strings.Contains(err.Error(), `machine "Lab_A": use 1 to 64 lower-case letters`) {
		t.Errorf("a bad machine class: %v", err)
	}
	// The class picked for the whole page applies where the cell names none; the cell's key wins.
	for _, tt := range []struct{ src, page, want string }{
		{"kernels: [ikj]\nsizes: [8]\n", "lab-b", "lab-b"},
		{"kernels: [ikj]\nsizes: [8]\nmachine: lab-a\n", "lab-b", "lab-a"},
		{"kernels: [ikj]\nsizes: [8]\nmachine: lab-a\n", "", "lab-a"},
	} {
		r, err := cells.Parse(matmul, "", cells.Cell{Source: tt.src, Machine: tt.page})
		if err != nil {
			t.Fatal(err)
		}
		if got := cells.NeedsOf(r).Machine; got != tt.want {
			t.Errorf("%q with the page's class %q: needs class %q, want %q", tt.src, tt.page, got, tt.want)
		}
	}
	if got := (cells.Cell{Source: "kernels: [ikj]\nmachine: lab-a\n", Machine: "lab-b"}).PageClass(); got != "" {
		t.Errorf("the page's class of a cell that names its own: %q, want none", got)
	}
	if got := (cells.Cell{Source: "kernels: [ikj]\n", Machine: "lab-b"}).PageClass(); got != "lab-b" {
		t.Errorf("the page's class of a cell that names none: %q, want lab-b", got)
	}
	if _, err := cells.Parse(matmul, "", cells.Cell{Source: "kernels: [ikj]\nsizes: [8]\n", Machine: "Lab A"}); err == nil || !strings.Contains(err.Error(), `the page's machine class "Lab A": use 1 to 64 lower-case letters`) {
		t.Errorf("a bad class for the page: %v", err)
	}
	for _, k := range kinds {
		header, body := validCell(t, k.Name())
		if _, err := k.Parse(cells.Cell{Source: header + "machine: lab-a\n" + body}); err != nil {
			t.Errorf("%s: machine key refused: %v", k.Name(), err)
		}
	}
}
