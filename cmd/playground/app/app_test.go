package app

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cluster"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// A front without a local worker does not calibrate its own CPU (workers report their rates), and
// needs a NATS server for workers; with a local worker, calibration is as asked.
func TestServeConfigChecked(t *testing.T) {
	for _, c := range []struct {
		name          string
		cfg           Config
		wantCalibrate bool
		wantErr       bool
	}{
		{"local worker", Config{Server: server.Config{Config: machine.Config{Calibrate: true}}, Cluster: cluster.Config{LocalWorker: true}}, true, false},
		{"no local worker", Config{Server: server.Config{Config: machine.Config{Calibrate: true}}, Cluster: cluster.Config{Listen: "127.0.0.1:0"}}, false, false},
		{"no local worker, external NATS", Config{Server: server.Config{Config: machine.Config{Calibrate: true}}, Cluster: cluster.Config{URL: "nats://127.0.0.1:4222"}}, false, false},
		{"no local worker, no NATS", Config{Server: server.Config{Config: machine.Config{Calibrate: true}}}, false, true},
	} {
		got, err := c.cfg.checked()
		if (err != nil) != c.wantErr {
			t.Errorf("%s: error %v, want error %v", c.name, err, c.wantErr)
			continue
		}
		if err == nil && got.Server.Calibrate != c.wantCalibrate {
			t.Errorf("%s: Calibrate %v, want %v", c.name, got.Server.Calibrate, c.wantCalibrate)
		}
	}
}

// imports lists the module's packages that pkg imports, itself and indirectly, outside tests.
func imports(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	const module = "github.com/gpuplayground/playground"
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		p, err := build.ImportDir(filepath.Join("../../..", filepath.FromSlash(strings.TrimPrefix(path, module))), 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") {
				walk(imp)
			}
		}
	}
	walk(module + "/" + pkg)
	return seen
}

// Layers point one way: the server takes a runner and knows no cluster; the cluster (NATS, its
// workers, placement) knows no server; only this package wires them.
func TestLayersPointOneWay(t *testing.T) {
	const module = "github.com/gpuplayground/playground/"
	for _, tt := range []struct{ pkg, not string }{{"server", "cluster"}, {"cluster", "server"}, {"machine", "server"}, {"machine", "cluster"}} {
		if imports(t, tt.pkg)[module+tt.not] {
			t.Errorf("%s imports %s", tt.pkg, tt.not)
		}
	}
}
