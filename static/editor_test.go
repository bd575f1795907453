package static

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestEditorBundleFresh fails when editor.bundle.js was not rebuilt after a change to the editor's
// sources or locked packages: the bundle's first line records the sha256 that editor/build.sh computed
// over package-lock.json and editor/src/*.js, recomputed here the same way (no npm needed). Fix it
// with static/editor/build.sh.
func TestEditorBundleFresh(t *testing.T) {
	files := []string{filepath.Join("editor", "package-lock.json")}
	src, err := filepath.Glob(filepath.Join("editor", "src", "*.js"))
	if err != nil {
		t.Fatal(err)
	}
	if len(src) == 0 {
		t.Fatal("no editor sources in editor/src")
	}
	sort.Strings(src)
	files = append(files, src...)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%x\n", sha256.Sum256(b))
	}
	want := fmt.Sprintf("%x", h.Sum(nil))

	f, err := FS.Open("editor.bundle.js")
	if err != nil {
		t.Fatalf("the embedded files lack the editor bundle: %v", err)
	}
	defer f.Close()
	first, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the bundle's first line: %v", err)
	}
	const key = "sources-sha256: "
	i := strings.Index(first, key)
	if i < 0 {
		t.Fatalf("the bundle's first line records no %q: %q", key, first)
	}
	if got := strings.TrimSpace(first[i+len(key):]); got != want {
		t.Errorf("editor.bundle.js is stale: built from sources with sha256 %s, the sources now hash to %s; run static/editor/build.sh", got, want)
	}
}
