package lessons_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/lessons"
)

// Each challenge is honest: the lesson's starting kernel does not meet it, and a solution kept in
// testdata/challenges (solutionFile: a learner's possible answer, the kernel under the cell's YAML, or
// a whole cell with its own launch shape) does, judged as static/goal.js judges it: the row of the
// challenge's table picked by its row: values, then each check. A `solution` block after the cell
// (the answer the lesson reveals) must be that kept solution. A cell as given is judged on the run
// TestEveryCellRuns made of the same source where it did (cudaRuns: at its one size, as written).
func TestChallengesFailAsGivenAndCanBeMet(t *testing.T) {
	kinds, all := lessonsWithoutGPU(t, needNVRTC(t))
	fence := challengeFence
	found := 0
	for _, l := range all {
		src, err := fs.ReadFile(lessons.Embedded, l.File)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fence.FindAllStringSubmatch(string(src), -1) {
			found++
			g, err := lessons.ParseGoal("challenge", m[1])
			if err != nil {
				t.Fatal(err)
			}
			header, _, _ := strings.Cut(m[2], "---\n")
			solution, err := os.ReadFile(solutionFile(t, l.Slug, m[2]))
			if err != nil {
				t.Fatalf("%s: a challenge needs a kept solution: %v", l.Slug, err)
			}
			if m[3] != "" && m[3] != string(solution) {
				t.Errorf("%s: the solution the lesson reveals is not the kept one, %s", l.Slug, solutionFile(t, l.Slug, m[2]))
			}
			solved := header + "---\n" + string(solution)
			if strings.Contains(string(solution), "\n---\n") { // a whole cell: its own launch shape
				solved = string(solution)
			}
			k, _ := cells.Lookup(kinds, "cuda")
			for _, tc := range []struct {
				name, source string
				want         bool
			}{{"as given", m[2], false}, {"solved", solved, true}} {
				run, err := k.Parse(cells.Cell{ID: "challenge", Source: tc.source})
				if err != nil {
					t.Fatalf("%s %s: %v", l.Slug, tc.name, err)
				}
				rec, err := cudaRuns.run(context.Background(), tc.source, run)
				if err != nil {
					t.Fatalf("%s %s: %v", l.Slug, tc.name, err)
				}
				met, why := judge(t, g, rec)
				if met != tc.want {
					t.Errorf("%s, %s: challenge met = %v (%s), want %v", l.Slug, tc.name, met, why, tc.want)
				}
				t.Logf("%s, %s: %s", l.Slug, tc.name, why)
			}
		}
	}
	if found < 2 {
		t.Errorf("found %d challenges, want at least those of Your first CUDA kernel and Shared-memory tiling", found)
	}
}

// needNVRTC loads NVRTC, and skips t where it is missing (fails it in CI, which must have it).
func needNVRTC(t *testing.T) *nvidia.NVRTC {
	t.Helper()
	nv, err := nvidia.LoadNVRTC()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NVRTC is required in CI: %v", err)
		}
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	return nv
}

// judge applies g to the recorded run the way static/goal.js does.
func judge(t *testing.T, g lessons.Goal, rec *cellstest.Recorder) (bool, string) {
	t.Helper()
	var cols []string
	for _, tb := range rec.Tables {
		if tb.ID == g.Table {
			for _, c := range tb.Columns {
				cols = append(cols, c.Label)
			}
		}
	}
	idx := func(label string) int {
		for i, c := range cols { // by label, or by the label before its bracketed metric (static/goal.js)
			if c == label || strings.HasPrefix(c, label+" [") {
				return i
			}
		}
		t.Fatalf("table %s has no column %q (has %v)", g.Table, label, cols)
		return -1
	}
	for _, r := range rec.RowsOf(g.Table) {
		match := true
		for k, v := range g.Row {
			if fmt.Sprint(r.Values[idx(k)]) != fmt.Sprint(v) {
				match = false
			}
		}
		if !match {
			continue
		}
		var why []string
		met := true
		for _, c := range g.Checks {
			v := r.Values[idx(c.Column)]
			ok := false
			switch {
			case c.Equals != nil:
				ok = fmt.Sprint(v) == fmt.Sprint(c.Equals)
			case c.AtMost != nil:
				f, isNum := number(v)
				ok = isNum && f <= *c.AtMost
			case c.AtLeast != nil:
				f, isNum := number(v)
				ok = isNum && f >= *c.AtLeast
			}
			met = met && ok
			why = append(why, fmt.Sprintf("%s=%v ok=%v", c.Column, v, ok))
		}
		return met, strings.Join(why, ", ")
	}
	return false, "no matching row"
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// challengeFence is a challenge, the cuda cell it is about (the next fence of the lesson) and, if the
// fence after that is a `solution`, the solution the lesson reveals.
var challengeFence = regexp.MustCompile("(?s)```challenge\n(.*?)```\\s*```cuda\n(.*?)```(?:\\s*```solution\n(.*?)```)?")

// solutionFile is where the kept solution of a challenge's cell is: testdata/challenges/<lesson>.cu
// for a lesson's one challenge, testdata/challenges/<lesson>/<cell id>.cu for a cell with an id:
// (a lesson with several challenges).
func solutionFile(t *testing.T, slug, cell string) string {
	t.Helper()
	id, err := cells.ExplicitID(cell)
	if err != nil {
		t.Fatal(err)
	}
	if id != "" {
		return "testdata/challenges/" + slug + "/" + id + ".cu"
	}
	return "testdata/challenges/" + slug + ".cu"
}

// challengeSubjects are the sources of the cuda cells that challenges are about.
func challengeSubjects(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	files, err := fs.Glob(lessons.Embedded, "*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src, err := fs.ReadFile(lessons.Embedded, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range challengeFence.FindAllStringSubmatch(string(src), -1) {
			out[m[2]] = true
		}
	}
	return out
}
