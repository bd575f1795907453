package app

import (
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
