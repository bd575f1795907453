package lessons

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpuplayground/playground/cells"
)

var update = flag.Bool("update", false, "rewrite the golden HTML files in testdata/golden")

// kinds accepts any cell of the playground's kinds that does not contain "bad"; that error is on the
// cell's line 2. The cuda kind has a Show PTX action.
var kinds = Kinds{fakeKind{"matmul"}, fakeKind{"wgsl"}, fakeCUDA{fakeKind{"cuda"}}, fakeKind{"simt"}, fakeKind{"systolic"}, fakeKind{"roofline"}, fakeKind{"allreduce"}, fakeKind{"budget"}, fakeKind{"tpu"}, fakeKind{"precision"}, fakeKind{"serving"}}

type fakeKind struct{ name string }

func (k fakeKind) Name() string   { return k.name }
func (k fakeKind) Script() string { return "" }
func (k fakeKind) Parse(c cells.Cell) (cells.Run, error) {
	if strings.Contains(c.Source, "bad") {
		return nil, lineErr{2}
	}
	return nil, nil
}

type fakeCUDA struct{ fakeKind }

func (k fakeCUDA) Actions() []cells.Action {
	return []cells.Action{{Name: "ptx", Label: "Show PTX", Parse: k.Parse}}
}

type lineErr struct{ line int }

func (e lineErr) Error() string   { return fmt.Sprintf("line %d: bad spec", e.line) }
func (e lineErr) SourceLine() int { return e.line }

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".html")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./lessons -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: rendered HTML differs from %s (go test ./lessons -update, then review the diff)", name, path)
	}
}

func TestGoldenHTML(t *testing.T) {
	src, err := os.ReadFile("testdata/fixture.md")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Parse("fixture.md", src, kinds)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "fixture", string(l.HTML))
	all, err := Load(Embedded, kinds)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		golden(t, l.Slug, string(l.HTML))
	}
}

func TestFixtureParts(t *testing.T) {
	src, _ := os.ReadFile("testdata/fixture.md")
	l, err := Parse("fixture.md", src, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if l.Slug != "fixture" || l.Title != "Fixture" || l.Order != 7 || !strings.HasPrefix(l.Summary, "A lesson") {
		t.Errorf("front matter: got %+v", l)
	}
	if got, want := len(l.Cells), 2; got != want {
		t.Fatalf("got %d cells, want %d", got, want)
	}
	c := l.Cells[1]
	if c.ID != "fixture-1" || c.Kind != "matmul" || c.Line != 29 || c.Source != "kernels: [ikj]\nsizes: [4]\ndtype: float64\n" {
		t.Errorf("cell 1: got %+v", c)
	}
	h := string(l.HTML)
	for _, want := range []string{"<table>", `id="fixture-0"`, "<textarea", "cell-run", "cell-stop", "cell-progress", "cell-output", `data-kind="matmul"`} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if strings.Contains(h, "<script>") || !strings.Contains(h, "raw HTML omitted") {
		t.Errorf("raw HTML was rendered")
	}
	if strings.Contains(h, `<pre><code class="language-matmul"`) {
		t.Errorf("matmul fence rendered as code, not as a cell")
	}
	if _, ok := l.Cell("fixture-0"); !ok {
		t.Errorf("Cell(fixture-0) not found")
	}
}

func TestErrorsNameFileAndLine(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"bad front matter", "---\ntitle: x\nsummary: [unclosed\norder: 1\n---\nbody\n", "f.md:"},
		{"no title", "---\nsummary: s\norder: 1\n---\n", "f.md:1: front matter needs `title"},
		{"no front matter", "# Just text\n", "f.md:1: front matter needs `title"},
		{"order not a number", "---\ntitle: t\nsummary: s\norder: first\n---\n", "f.md:1: front matter needs `order: N` (a number)"},
		{"bad cell", "---\ntitle: t\nsummary: s\norder: 1\n---\n\ntext\n\n```matmul\nkernels: [x]\nsizes: bad\n```\n", "f.md:11: matmul cell f-0: line 2: bad spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("f.md", []byte(tt.src), kinds)
			var le *Error
			if !errors.As(err, &le) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %v, want an *Error starting %q", err, tt.want)
			}
		})
	}
}

func TestLoadSortsByOrder(t *testing.T) {
	fsys := fstest.MapFS{
		"b.md":  {Data: []byte("---\ntitle: B\nsummary: s\norder: 1\n---\n")},
		"a.md":  {Data: []byte("---\ntitle: A\nsummary: s\norder: 2\n---\n")},
		"c.md":  {Data: []byte("---\ntitle: C\nsummary: s\norder: 1\n---\n")},
		"e.md":  {Data: []byte("---\ntitle: E\nsummary: s\norder: 1.5\n---\n")},
		"x.txt": {Data: []byte("ignored")},
	}
	ls, err := Load(fsys, kinds)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		got = append(got, l.Slug)
	}
	if g, w := strings.Join(got, ","), "b,c,e,a"; g != w {
		t.Errorf("got order %s, want %s", g, w)
	}
	fsys["d.md"] = &fstest.MapFile{Data: []byte("---\ntitle: D\nsummary: s\norder: 3\n---\n```matmul\nbad\n```\n")}
	if _, err := Load(fsys, kinds); err == nil || !strings.HasPrefix(err.Error(), "d.md:8:") {
		t.Errorf("got %v, want the first error, at d.md:8", err)
	}
}

func TestEmbeddedLessonsHaveSources(t *testing.T) {
	all, err := Load(Embedded, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 3 {
		t.Fatalf("got %d lessons, want at least 3", len(all))
	}
	for _, l := range all {
		if !strings.Contains(string(l.HTML), "Sources") || len(l.Cells) == 0 {
			t.Errorf("%s: every lesson needs a Sources section and at least one experiment", l.Slug)
		}
	}
}

// A cell's `id:` key names it instead of its position; ids are checked and unique across lessons.
func TestExplicitCellIDs(t *testing.T) {
	lesson := func(title, id string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("---\ntitle: " + title + "\nsummary: s\norder: 1\n---\n\n```matmul\nkernels: [ikj]\n```\n\n```cuda\n" + id + "kernel: k\n---\nk(\n```\n")}
	}
	ls, err := Load(fstest.MapFS{"a.md": lesson("A", "id: my-kernel\n")}, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{ls[0].Cells[0].ID, ls[0].Cells[1].ID}; got[0] != "a-0" || got[1] != "my-kernel" {
		t.Errorf("got ids %v, want a-0 and my-kernel", got)
	}
	if h := string(ls[0].HTML); !strings.Contains(h, `id="my-kernel"`) || !strings.Contains(h, `data-action="ptx">Show PTX</button>`) {
		t.Errorf("HTML lacks the explicit id or the kind's action button")
	}
	_, err = Load(fstest.MapFS{"a.md": lesson("A", "id: same\n"), "b.md": lesson("B", "id: same\n")}, kinds)
	if err == nil || !strings.Contains(err.Error(), `b.md:12: cell id "same" is already used at a.md:12`) {
		t.Errorf("duplicate id: got %v", err)
	}
	_, err = Load(fstest.MapFS{"a.md": lesson("A", "id: Not OK\n")}, kinds)
	if err == nil || !strings.Contains(err.Error(), "a.md:12:") || !strings.Contains(err.Error(), "lower-case") {
		t.Errorf("bad id: got %v", err)
	}
}
