package server

import (
	"fmt"
	"net/http"
)

// deviceRow is one GPU of the report as the /devices page shows it: units in words.
type deviceRow struct {
	Ordinal                                          int
	Name, CC, Memory, Clock, MemClock, Bus, L2, Peak string
	SMs                                              int
}

// devicesPage is GET /devices: the machine's report (CPU, GPUs, driver, compiler, libraries, notes)
// as a readable page; GET /api/devices is the same report as JSON for scripts.
func (s *Server) devicesPage(w http.ResponseWriter, _ *http.Request) {
	r := s.gpu.Report
	var rows []deviceRow
	for _, d := range r.Devices {
		row := deviceRow{Ordinal: d.Ordinal, Name: d.Name, SMs: d.SMs,
			CC:       fmt.Sprintf("%d.%d (sm_%d)", d.ComputeCapability/10, d.ComputeCapability%10, d.ComputeCapability),
			Memory:   fmt.Sprintf("%.1f GiB", float64(d.MemoryBytes)/(1<<30)),
			Clock:    mhz(d.ClockKHz),
			MemClock: mhz(d.MemoryClockKHz),
			Bus:      fmt.Sprintf("%d bit", d.MemoryBusBits),
			L2:       fmt.Sprintf("%.1f MiB", float64(d.L2Bytes)/(1<<20)),
			Peak:     "—",
		}
		if f, ok := d.PeakFP32(); ok {
			row.Peak = fmt.Sprintf("%.1f TFLOP/s", f/1e12)
		}
		rows = append(rows, row)
	}
	s.page(w, http.StatusOK, "devices", map[string]any{"Report": r, "Devices": rows})
}

// mhz formats a clock given in kHz.
func mhz(khz int) string { return fmt.Sprintf("%d MHz", khz/1000) }
