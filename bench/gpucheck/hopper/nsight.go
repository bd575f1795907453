package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// nsightMetrics are the Nsight Compute metrics the record keeps of each rung (all in `ncu --set
// full`): time, registers, instructions, occupancy, DRAM and shared-memory traffic, the tensor pipe,
// and what is Hopper's own: wgmma (HGMMA) operations and instructions, and TMA instructions and bytes.
var nsightMetrics = []string{
	"gpu__time_duration.sum",
	"launch__registers_per_thread",
	"smsp__inst_executed.sum",
	"sm__warps_active.avg.pct_of_peak_sustained_active",
	"dram__bytes_read.sum",
	"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
	"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
	"sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum",
	"sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum",
	"smsp__sass_inst_executed_op_shared_gmma.sum",
	"smsp__inst_executed_op_tma_ld.sum",
	"smsp__inst_executed_op_tma_st.sum",
	"l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
}

// nsightLaunch is one kernel's last launch in an Nsight Compute CSV: the device it ran on and the
// kept metrics, each "value unit" as the CSV gives it ("121 register/thread", "2,040,288 ns").
type nsightLaunch struct {
	device  string
	metrics map[string]string
}

// readNsight reads `ncu --page raw --csv` output (a header row naming "Kernel Name", a row of units,
// then a row per launch) into each kernel's last launch, by entry point (the name before any "(").
func readNsight(r io.Reader) (map[string]nsightLaunch, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	head := slices.IndexFunc(rows, func(row []string) bool { return slices.Contains(row, "Kernel Name") })
	if head < 0 || head+1 >= len(rows) {
		return nil, errors.New("not an Nsight Compute raw CSV: no \"Kernel Name\" header with units under it")
	}
	col := map[string]int{}
	for i, name := range rows[head] {
		col[name] = i
	}
	units := rows[head+1]
	at := func(row []string, name string) (string, bool) {
		i, ok := col[name]
		if !ok || i >= len(row) {
			return "", false
		}
		return row[i], true
	}
	out := map[string]nsightLaunch{}
	for _, row := range rows[head+2:] {
		name, _ := at(row, "Kernel Name")
		entry, _, _ := strings.Cut(name, "(")
		device, _ := at(row, "device__attribute_display_name")
		l := nsightLaunch{device: device, metrics: map[string]string{}}
		for _, m := range nsightMetrics {
			if v, ok := at(row, m); ok && v != "" {
				l.metrics[m] = strings.TrimSpace(v + " " + units[col[m]])
			}
		}
		out[entry] = l
	}
	return out, nil
}

// addNsight puts the CSV's last launch of each rung's entry point into rec (Rung.Nsight), refusing a
// CSV made on another device than the record's.
func addNsight(rec *Record, launches map[string]nsightLaunch, csvName string) error {
	for i := range rec.Rungs {
		l, ok := launches[rec.Rungs[i].Entry]
		if !ok {
			continue
		}
		if l.device != "" && l.device != rec.Provenance.Device {
			return fmt.Errorf("%s: %s ran on %s, the record's device is %s", csvName, rec.Rungs[i].Entry, l.device, rec.Provenance.Device)
		}
		rec.Rungs[i].Nsight = l.metrics
	}
	rec.NsightCSV = csvName
	return nil
}

// mergeNsight adds the Nsight Compute CSV csvPath to the record in jsonPath (written by an earlier
// run on the same machine) and writes it back; it needs no GPU.
func mergeNsight(jsonPath, csvPath string) (Record, error) {
	var rec Record
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", jsonPath, err)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		return rec, err
	}
	defer f.Close()
	launches, err := readNsight(f)
	if err != nil {
		return rec, fmt.Errorf("%s: %w", csvPath, err)
	}
	if err := addNsight(&rec, launches, filepath.Base(csvPath)); err != nil {
		return rec, err
	}
	b, err = json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return rec, err
	}
	return rec, os.WriteFile(jsonPath, append(b, '\n'), 0o644)
}
