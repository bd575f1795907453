package golden

import (
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that keeps whether it failed.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(r) }
func (r *recorder) Logf(string, ...any)   {}
func (r *recorder) Helper()               {}

// check runs Check on a recorder and reports whether it failed.
func check(t *testing.T, file string, lines []string) (failed bool) {
	t.Helper()
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		failed = r.failed
	}()
	Check(r, file, lines)
	return r.failed
}

// The first Check records; later ones pass on the same lines and fail on a changed or missing one.
func TestCheckRecordsThenCompares(t *testing.T) {
	file := filepath.Join(t.TempDir(), "golden.txt")
	lines := []string{"a 1", "b 2"}
	for _, tt := range []struct {
		lines []string
		fail  bool
	}{{lines, false}, {lines, false}, {[]string{"a 1", "b 3"}, true}, {[]string{"a 1"}, true}} {
		if got := check(t, file, tt.lines); got != tt.fail {
			t.Errorf("Check(%q): failed %v, want %v", tt.lines, got, tt.fail)
		}
	}
}
