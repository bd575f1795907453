package lessons_test

import (
	"context"
	"io/fs"
	"os"
	"regexp"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/cells/tpu"
	"github.com/gpuplayground/playground/lessons"
)

// tpuChallengeFence is a challenge about a tpu cell, the cell, and the solution the lesson reveals.
var tpuChallengeFence = regexp.MustCompile("(?s)```challenge\n(.*?)```\\s*```tpu\n(.*?)```\\s*```solution\n(.*?)```")

// A challenge on a tpu cell is honest as the cuda ones are (TestChallengesFailAsGivenAndCanBeMet): the
// cell as given does not meet it, and the solution the lesson reveals, kept in
// testdata/challenges/{slug}/{id}.yaml, does, judged as static/goal.js judges it.
func TestTPUChallengesFailAsGivenAndCanBeMet(t *testing.T) {
	files, err := fs.Glob(lessons.Embedded, "*.md")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range files {
		src, err := fs.ReadFile(lessons.Embedded, f)
		if err != nil {
			t.Fatal(err)
		}
		slug := f[:len(f)-len(".md")]
		for _, m := range tpuChallengeFence.FindAllStringSubmatch(string(src), -1) {
			found++
			g, err := lessons.ParseGoal("challenge", m[1])
			if err != nil {
				t.Fatal(err)
			}
			id, err := cells.ExplicitID(m[2])
			if err != nil || id == "" {
				t.Fatalf("%s: a tpu challenge's cell needs an id: (%v)", slug, err)
			}
			kept, err := os.ReadFile("testdata/challenges/" + slug + "/" + id + ".yaml")
			if err != nil {
				t.Fatalf("%s: a challenge needs a kept solution: %v", slug, err)
			}
			if string(kept) != m[3] {
				t.Errorf("%s: the solution the lesson reveals is not the kept one", slug)
			}
			for _, tc := range []struct {
				name, source string
				want         bool
			}{{"as given", m[2], false}, {"solved", string(kept), true}} {
				run, err := tpu.New(cells.Env{}).Parse(cells.Cell{ID: id, Source: tc.source})
				if err != nil {
					t.Fatalf("%s %s: %v", slug, tc.name, err)
				}
				var rec cellstest.Recorder
				if err := run.Run(context.Background(), &rec); err != nil {
					t.Fatalf("%s %s: %v", slug, tc.name, err)
				}
				if met, why := judge(t, g, &rec); met != tc.want {
					t.Errorf("%s, %s: challenge met = %v (%s), want %v", slug, tc.name, met, why, tc.want)
				}
			}
		}
	}
	if found == 0 {
		t.Error("found no tpu challenge, want lesson 20's")
	}
}
