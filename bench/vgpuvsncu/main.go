// Command vgpuvsncu sets the virtual GPU's counts and modelled time for each of the project's own GPU
// kernels (gpu/nvidia/ladder.go) beside what Nsight Compute read from the same kernels' hardware
// counters on a real GPU, for docs/benchmarks.md. The Nsight Compute side is the raw CSV that
// bench/gpucheck/run.sh's ncu step writes (`ncu --set full --page raw --csv`, one row per launch; the
// last launch of each kernel is used); the virtual GPU side is computed here, at the same n, with the
// datasheet GPU named by -gpu. It prints a markdown table.
//
// Usage:
//
//	vgpuvsncu -ncu ncu-512.csv -n 512 [-gpu "H100 SXM"] [-hw "H100 SXM"]
//	vgpuvsncu -published    # the ladder against a published one measured on another GPU (published.go),
//	                        # and learners' transposes against a published H100 table (published_transpose.go)
//
// The virtual GPU counts PTX instructions and the hardware SASS instructions, so instruction counts
// differ by design; requests, sectors, shared wavefronts, bank conflicts and branch efficiency mean
// the same on both (the metric names are Nsight Compute's; docs/vgpu-metrics.md says where the
// PTX-level counts must differ).
package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpurun"
)

// metrics are the Nsight Compute metrics read from the CSV, in the table's order.
var metrics = []string{
	"gpu__time_duration.sum",
	"smsp__inst_executed.sum",
	"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
	"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
	"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
	"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
	"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
	"dram__bytes_read.sum",
	"l1tex__t_sector_hit_rate.pct",
	"lts__t_sector_hit_rate.pct",
	"launch__registers_per_thread",
	"sm__warps_active.avg.pct_of_peak_sustained_active",
	"smsp__sass_average_branch_targets_threads_uniform.pct",
}

func main() {
	file := flag.String("ncu", "", "Nsight Compute raw CSV (ncu --page raw --csv)")
	n := flag.Int("n", 512, "the matrices' size the CSV was made at")
	gpuName := flag.String("gpu", "H100 SXM", "datasheet GPU for the modelled time")
	model := flag.Bool("model", false, "print the modelled time, hit rates and DRAM bytes against the measured ones instead, for every kernel of the CSV")
	sample := flag.Int("sample", 0, "with -model, run this many blocks of the lesson kernels (0: all)")
	hwName := flag.String("hw", "", "the hardware's name in the table (default: each row's device__attribute_display_name from the CSV)")
	published := flag.Bool("published", false, "print the modelled GFLOP/s of the project's ladder against Simon Boehm's published A6000 ladder, and the modelled GB/s of the transpose steps against Yen Cal's published H100 table, instead (no CSV; -gpu and -n are ignored)")
	flag.Parse()
	if *published {
		printPublished()
		return
	}
	g, err := gpumodel.LookupGPU(*gpuName)
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Open(*file)
	if err != nil {
		log.Fatal(err)
	}
	rows, err := readNCU(f)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("n = %d; virtual GPU: PTX compute_%d, modelled on the %s datasheet; hardware: %s\n\n", *n, vgpurun.Arch, g.Name, *file)
	if *model {
		cs, err := compareAll(context.Background(), vgpurun.Run, rows, *n, *sample, g)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(modelTable(cs))
		return
	}
	fmt.Println("| kernel | | time µs | warp instructions | global load requests | load sectors | store sectors | shared wavefronts | bank conflicts | DRAM read MB | L1 hit % | L2 hit % | registers | achieved occupancy % | branch efficiency % |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, k := range nvidia.Kernels() {
		if k.Entry == "" {
			continue
		}
		l := k.LaunchFor(*n, vgpurun.Arch, "float32")
		hw, ok := rows[l.Entry]
		if !ok {
			continue
		}
		res, err := vgpurun.Run(context.Background(), vgpurun.Request{Kernel: k.Name, N: *n, DType: "float32", GPU: g, Seed: 1})
		if err != nil {
			log.Fatalf("%s: %v", k.Name, err)
		}
		c := res.Counts
		v := []string{f1(res.Model.Seconds * 1e6), d(c.WarpInstructions), d(c.GlobalLoadRequests), d(c.LoadSectors), d(c.StoreSectors),
			d(c.SharedWavefronts), d(c.BankConflicts()),
			f1(float64(c.DRAMReadBytes) / 1e6), f1(c.L1HitRate()), f1(c.L2HitRate()), "–", "–", f1(c.BranchEfficiency())}
		fmt.Printf("| %s | virtual GPU (modelled, %s-bound) | %s |\n", k.Name, res.Model.Bound, strings.Join(v, " | "))
		h := []string{f1(num(hw[metrics[0]]) / 1e3)}
		for _, m := range metrics[1:] {
			x := num(hw[m])
			if m == "dram__bytes_read.sum" {
				h = append(h, f1(x/1e6))
			} else if strings.HasSuffix(m, ".pct") || strings.Contains(m, "pct_of") {
				h = append(h, f1(x))
			} else {
				h = append(h, d(int64(x)))
			}
		}
		fmt.Printf("| %s | %s | %s |\n", k.Name, hardwareLabel(hw, *hwName), strings.Join(h, " | "))
	}
}

// hardwareLabel names the GPU of one Nsight Compute row in the table: name if not empty (the -hw
// flag), else the row's device__attribute_display_name (Nsight Compute's device attribute, such as
// "NVIDIA H200"), else "GPU"; followed by " (Nsight Compute)".
func hardwareLabel(row map[string]string, name string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		name = strings.TrimSpace(row["device__attribute_display_name"])
	}
	if name == "" {
		name = "GPU"
	}
	return name + " (Nsight Compute)"
}

// readNCU returns, per kernel name, the last launch's metric values (in the CSV's units, which for
// the metrics above are nanoseconds, counts, bytes and percentages after unit scaling).
func readNCU(r io.Reader) (map[string]map[string]string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	all, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	h := -1
	for i, row := range all {
		for _, c := range row {
			if c == "Kernel Name" {
				h = i
			}
		}
		if h >= 0 {
			break
		}
	}
	if h < 0 || len(all) < h+2 {
		return nil, fmt.Errorf("no Nsight Compute header in the CSV")
	}
	hdr, units := all[h], all[h+1]
	out := map[string]map[string]string{}
	for _, row := range all[h+2:] {
		m := map[string]string{}
		for i, c := range row {
			if i < len(hdr) {
				m[hdr[i]] = scale(c, units[i])
			}
		}
		out[strings.SplitN(m["Kernel Name"], "(", 2)[0]] = m
	}
	return out, nil
}

// scale turns a value in Nsight Compute's unit into the base unit (ns, byte, count).
func scale(v, unit string) string {
	mult := map[string]float64{"usecond": 1e3, "msecond": 1e6, "second": 1e9, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "K": 1e3, "M": 1e6, "G": 1e9}[unit]
	if mult == 0 {
		return v
	}
	return strconv.FormatFloat(num(v)*mult, 'f', -1, 64)
}

func num(s string) float64 {
	x, _ := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	return x
}

func d(x int64) string    { return strconv.FormatInt(x, 10) }
func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
