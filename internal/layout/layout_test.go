package layout

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// imported is one import of one Go file of the module.
type imported struct {
	pkg  string // the importing package's path
	name string // the importing package's name, less a _test suffix
	path string // the imported package's path
	pos  string // file:line of the import
	test bool   // in a _test.go file
}

// moduleRoot is the folder of the module's go.mod and the module's path.
func moduleRoot(t *testing.T) (string, string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if mod, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return root, strings.TrimSpace(mod)
		}
	}
	t.Fatalf("no module line in %s/go.mod", root)
	return "", ""
}

// imports parses the imports of every Go file under root (testdata and hidden folders left out, as
// the go command leaves them out).
func imports(t *testing.T, root, module string) []imported {
	t.Helper()
	var out []imported
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := d.Name()
		if d.IsDir() {
			if p != root && (base == "testdata" || base == "node_modules" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(base, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := path.Join(module, filepath.ToSlash(rel))
		for _, s := range f.Imports {
			ip, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				return err
			}
			pos := fset.Position(s.Pos())
			relFile, _ := filepath.Rel(root, pos.Filename)
			out = append(out, imported{pkg: pkg, name: strings.TrimSuffix(f.Name.Name, "_test"), path: ip,
				pos: relFile + ":" + strconv.Itoa(pos.Line), test: strings.HasSuffix(base, "_test.go")})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no imports found under %s", root)
	}
	return out
}

// namesakes are the imports of a package of the name the imported path ends in: inside package
// tpu, "tpu.Matmul" would read as its own. A command (package main) has no qualifier to confuse.
func namesakes(all []imported) []imported {
	var bad []imported
	for _, im := range all {
		if im.name != "main" && im.path != im.pkg && path.Base(im.path) == im.name {
			bad = append(bad, im)
		}
	}
	return bad
}

// No package imports a package whose path ends in its own name.
func TestNoNamesakeImports(t *testing.T) {
	root, module := moduleRoot(t)
	for _, im := range namesakes(imports(t, root, module)) {
		t.Errorf("%s: package %s imports its namesake %s", im.pos, im.name, im.path)
	}
}

// The check finds a namesake, and leaves a command and an external test package alone.
func TestNamesakesFound(t *testing.T) {
	all := []imported{
		{pkg: "m/cells/tpu", name: "tpu", path: "m/sim/tpu"},
		{pkg: "m/bench/cluster", name: "main", path: "m/cluster"},
		{pkg: "m/chart", name: "chart", path: "m/chart", test: true}, // package chart_test
		{pkg: "m/cells/tpu", name: "tpu", path: "m/sim/tpucore"},
	}
	if got := namesakes(all); len(got) != 1 || got[0].path != "m/sim/tpu" {
		t.Errorf("namesakes %+v, want only cells/tpu → sim/tpu", got)
	}
}

// layers are packages and what they may not depend on, directly or through other module packages
// (a path and everything under it). chart draws: it knows no GPU binding or worker, no virtual GPU
// or its model, no timing harness or its results, and its callers convert their results to chart's
// own types. vgpu is the functional emulator only: the timing model (gpumodel) reads its counts,
// never the other way; and the model needs neither the runner of cells' launches nor the GPU binding
// (its tests may compile kernels with NVRTC: tests says whether the package's tests keep the rule too).
var layers = []struct {
	pkg       string
	forbidden []string
	tests     bool
}{
	{"chart", []string{"gpu", "vgpu", "vgpurun", "gpumodel", "harness", "measure"}, true},
	{"vgpu", []string{"gpumodel", "vgpurun"}, true},
	{"gpumodel", []string{"vgpurun", "gpu"}, false},
	// the run path (docs/run-path.md): the server takes a runner and knows no cluster, the cluster
	// knows no server, the machine neither; only cmd/playground/app wires them
	{"server", []string{"cluster"}, false},
	{"cluster", []string{"server"}, false},
	{"machine", []string{"server", "cluster"}, false},
}

// forbiddenFor is the first of forbidden that the module package p is or lies under ("" for none).
func forbiddenFor(module, p string, forbidden []string) string {
	for _, f := range forbidden {
		if q := module + "/" + f; p == q || strings.HasPrefix(p, q+"/") {
			return f
		}
	}
	return ""
}

// deps are the module packages that the module package from depends on through its non-test files,
// each with the import that first brought it in; and, with tests, from's test files' own imports.
func deps(all []imported, module, from string, tests bool) map[string]imported {
	byPkg := map[string][]imported{}
	for _, im := range all {
		if !im.test {
			byPkg[im.pkg] = append(byPkg[im.pkg], im)
		}
	}
	seen := map[string]imported{}
	queue := []string{module + "/" + from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, im := range byPkg[p] {
			if _, ok := seen[im.path]; !ok && strings.HasPrefix(im.path, module+"/") {
				seen[im.path] = im
				queue = append(queue, im.path)
			}
		}
	}
	for _, im := range all {
		if tests && im.test && im.pkg == module+"/"+from {
			seen[im.path] = im
		}
	}
	return seen
}

// Each layer keeps to its side: chart imports no GPU or harness package, vgpu no timing model,
// server no cluster and cluster no server.
func TestLayers(t *testing.T) {
	root, module := moduleRoot(t)
	all := imports(t, root, module)
	for _, l := range layers {
		for p, im := range deps(all, module, l.pkg, l.tests) {
			if f := forbiddenFor(module, p, l.forbidden); f != "" {
				t.Errorf("%s depends on %s (%s imports it at %s)", l.pkg, p, im.pkg, im.pos)
			}
		}
	}
}

// The dependency walk finds a forbidden package reached through another.
func TestDepsAreTransitive(t *testing.T) {
	all := []imported{
		{pkg: "m/chart", path: "m/style"},
		{pkg: "m/style", path: "m/harness"},
		{pkg: "m/harness", path: "m/gpu/nvidia"},
		{pkg: "m/other", path: "m/vgpu"},
		{pkg: "m/chart", path: "m/gpumodel", test: true},
	}
	got := deps(all, "m", "chart", false)
	forbidden := []string{"gpu", "gpumodel"}
	if _, ok := got["m/gpu/nvidia"]; !ok || forbiddenFor("m", "m/gpu/nvidia", forbidden) != "gpu" || forbiddenFor("m", "m/gpumodelx", forbidden) != "" {
		t.Errorf("deps %v: want m/gpu/nvidia reached through m/style and m/harness", got)
	}
	if _, ok := got["m/vgpu"]; ok {
		t.Errorf("deps %v: m/vgpu is another package's import", got)
	}
	if _, ok := got["m/gpumodel"]; ok {
		t.Errorf("deps %v without tests: m/gpumodel is a test's import", got)
	}
	if _, ok := deps(all, "m", "chart", true)["m/gpumodel"]; !ok {
		t.Errorf("deps with tests: want m/gpumodel, a test's import")
	}
}
