// Package golden records and checks digests of results that a change must leave as they are (a
// speed-up of the virtual GPU): a test computes one line per case, Check writes the lines to a
// file the first time and compares them with it afterwards.
package golden

import (
	"os"
	"strings"
	"testing"
)

// Check writes lines to file when it does not exist yet, and otherwise fails t for every line that
// differs from the file's (or when their numbers differ). Errors reading or writing the file fail t.
func Check(t testing.TB, file string, lines []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %d cases in %s", len(lines), file)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d cases, %s has %d", len(lines), file, len(want))
	}
	for i := range lines {
		if lines[i] != want[i] {
			t.Errorf("got %s, want %s", lines[i], want[i])
		}
	}
}
