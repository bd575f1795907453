package cells_test

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gpuplayground/playground"

// deps lists the module's packages that pkg (a path below the module) imports, itself and
// indirectly, outside tests, reading the sources from the module root "..".
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		p, err := build.ImportDir(filepath.Join("..", filepath.FromSlash(strings.TrimPrefix(path, module))), 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				walk(imp)
			}
		}
	}
	walk(pkg)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
	}
	slices.Sort(out)
	return out
}

// Package cells is an interface package: of this module it imports only plain values, never the
// timing harness, the GPU worker, the kernels or the roofline measurement (the runner fills Env).
func TestCellsImportsOnlyPlainValues(t *testing.T) {
	got := deps(t, module+"/cells")
	want := []string{"cells", "estimate", "internal/untrusted", "measure", "numeric"}
	if !slices.Equal(got, want) {
		t.Errorf("cells depends on %v of this module, want only %v", got, want)
	}
}

// cells/cellstest is a helper for tests and tools; the server never links it.
func TestServerDoesNotLinkCellstest(t *testing.T) {
	if got := deps(t, module+"/cmd/playground"); slices.Contains(got, "cells/cellstest") {
		t.Errorf("cmd/playground depends on cells/cellstest: %v", got)
	}
}
