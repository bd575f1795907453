package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/internal/fakecuda"
)

// The test binary is also the GPU worker that run starts (os.Executable with gpu.WorkerCommand).
func TestMain(m *testing.M) {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) {
		return
	}
	os.Exit(m.Run())
}

// The Hopper rungs are the table's own kernels that need sm_90; their entry points make ncu's -k
// expression, and none makes none (run.sh then skips the pass).
func TestHopperRungsAndEntries(t *testing.T) {
	table := []nvidia.Kernel{{Name: "cuda-mma", Entry: "cuda_mma", MinCC: 80}, {Name: "cublas"},
		{Name: "cuda-wgmma", Entry: "cuda_wgmma", MinCC: 90}, {Name: "cuda-tma.x", Entry: "cuda_tma.x", MinCC: 90}}
	got := hopperRungs(table)
	if len(got) != 2 || got[0].Name != "cuda-wgmma" || got[1].Name != "cuda-tma.x" {
		t.Errorf("got %v, want the two sm_90 rungs", got)
	}
	if got, want := entryRegex(got), `^(cuda_wgmma|cuda_tma\.x)$`; got != want {
		t.Errorf("entryRegex = %q, want %q", got, want)
	}
	if got := entryRegex(hopperRungs(table[:2])); got != "" {
		t.Errorf("no Hopper rung: got %q, want none", got)
	}
	if _, err := pickRungs([]string{"cuda-mma", "cublas"}); err == nil || !strings.Contains(err.Error(), `"cublas" is no own kernel`) {
		t.Errorf("cuBLAS as a rung: got %v", err)
	}
}

// Nothing is recorded without a GPU, or on one older than Hopper; on Hopper the provenance names
// the machine, the device, the driver and the command.
func TestProvenance(t *testing.T) {
	if _, err := provenance(nvidia.Report{Unavailable: "no CUDA device: test"}, "h", "c"); err == nil || err.Error() != "no CUDA device: test" {
		t.Errorf("no GPU: got %v", err)
	}
	a100 := nvidia.Report{Driver: "13.0", Devices: []nvidia.Device{{Name: "NVIDIA A100", ComputeCapability: 80}}}
	if _, err := provenance(a100, "h", "c"); err == nil || !strings.Contains(err.Error(), "NVIDIA A100 is sm_80; the Hopper rungs need sm_90") {
		t.Errorf("an A100: got %v", err)
	}
	h200 := nvidia.Report{Driver: "13.0", Compiler: "NVRTC 13.0", Devices: []nvidia.Device{{Name: "NVIDIA H200", ComputeCapability: 90}}}
	p, err := provenance(h200, "lent-1", "hopper -n 4096")
	if err != nil {
		t.Fatal(err)
	}
	if p.Machine != "lent-1" || p.Device != "NVIDIA H200" || p.ComputeCapability != 90 || p.Driver != "13.0" || p.Command != "hopper -n 4096" {
		t.Errorf("got %+v", p)
	}
	if _, err := time.Parse(time.RFC3339, p.Date); err != nil {
		t.Errorf("date %q: %v", p.Date, err)
	}
}

func TestHasTensorMaps(t *testing.T) {
	for src, want := range map[string]bool{
		"kernel: k\ntensor_maps: [{param: tm, of: A, box: [32, 32]}]\n---\nvoid k() {}": true,
		"kernel: k\n---\n// tensor_maps: in a comment\ntensor_maps:":                    false,
		"kernel: k\nsizes: [64]\n---\n":                                                 false,
	} {
		if got := hasTensorMaps(src); got != want {
			t.Errorf("hasTensorMaps(%q) = %v, want %v", src, got, want)
		}
	}
}

// hopperLesson has a cuda cell with a tensor map (a matmul whose kernel takes one of A) and one
// without, which the command leaves out.
const hopperLesson = "---\ntitle: Hopper test\nsummary: test\norder: 1\n---\n\n# Hopper test\n\n" +
	"```cuda\nkernel: mm\nblock: [16, 16]\ngrid: [\"ceil(n/16)\", \"ceil(n/16)\"]\nsizes: [32]\n" +
	"tensor_maps: [{param: tmA, of: A, box: [32, 32]}]\n---\n" +
	"#include <cuda.h>\nextern \"C\" __global__ void mm(const float* A, const float* B, float* C, int M, int N, int K, const __grid_constant__ CUtensorMap tmA) {\n" +
	"    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;\n" +
	"    if (r < M && c < N) { float s = 0; for (int p = 0; p < K; ++p) s += A[r * K + p] * B[p * N + c]; C[r * N + c] = s; }\n}\n```\n\n" +
	"```cuda\nkernel: plain\nblock: [16, 16]\ngrid: [\"ceil(n/16)\", \"ceil(n/16)\"]\nsizes: [32]\n---\n" +
	"extern \"C\" __global__ void plain(const float* A, const float* B, float* C, int M, int N, int K) {}\n```\n"

// The whole command on the strict fake libcuda (an sm_90 device computing on the host): a rung
// measured through the worker and modelled by the virtual GPU, the lesson's tensor-map cell run on
// the "GPU" (its tensor map made by cuTensorMapEncodeTiled), all in the JSON with the provenance.
// The fake's times are not measurements; this checks the plumbing only.
func TestRecordOnFakeCUDA(t *testing.T) {
	fakecuda.Setup(t)
	if _, err := nvidia.LoadNVRTCFrom([]string{"libnvrtc.so.12"}); err != nil {
		t.Skipf("skipping: the cell needs NVRTC 12 for sm_90 (%v)", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hopper-test.md"), []byte(hopperLesson), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hopper.json")
	o := options{n: 64, repeats: 1, gpu: "H100 SXM", lessons: dir, kernels: []string{"cuda-mma"}, out: out}
	if err := run(context.Background(), o, "hopper (test)"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if p := rec.Provenance; p.Device != fakecuda.DeviceName || p.ComputeCapability != 90 || p.Driver != "13.0" || p.Machine != host || p.Command != "hopper (test)" {
		t.Errorf("provenance %+v", p)
	}
	if len(rec.Rungs) != 1 {
		t.Fatalf("rungs %+v, want cuda-mma", rec.Rungs)
	}
	g := rec.Rungs[0]
	if g.Kernel != "cuda-mma" || g.Measured == nil || !g.Measured.OK || g.Modelled == nil || !(g.Modelled.Seconds > 0) || g.Modelled.SASSInstructions <= 0 {
		t.Errorf("rung %+v (measured %+v, modelled %+v), want it measured ok and modelled", g, g.Measured, g.Modelled)
	}
	if len(rec.Cells) != 1 || rec.Cells[0].Cell != "hopper-test-0" || rec.Cells[0].Error != "" || len(rec.Cells[0].Rows) == 0 {
		t.Fatalf("cells %+v, want hopper-test-0 run with rows", rec.Cells)
	}
	tables := map[string]bool{}
	for _, r := range rec.Cells[0].Rows {
		tables[r.Table] = true
	}
	if len(tables) < 2 {
		t.Errorf("the cell's rows fill tables %v, want the measured one and the emulated one", tables)
	}
}

// Nsight Compute's CSV of a lease (the H200's tensor-core rungs, 2026-11-26) joins the record by
// entry point, each metric in the CSV's own units; a CSV of another device, or not a raw CSV, is
// refused.
func TestMergeNsight(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "hopper.json")
	rec := Record{Provenance: Provenance{Device: "NVIDIA H200", ComputeCapability: 90}, N: 4096,
		Rungs: []Rung{{Kernel: "cuda-mma", Entry: "cuda_mma", N: 4096}, {Kernel: "cuda-x", Entry: "cuda_x", N: 4096}}}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	csvPath := "../../vgpuvsncu/testdata/h200-ncu-tensor-4096.csv"
	got, err := mergeNsight(out, csvPath)
	if err != nil {
		t.Fatal(err)
	}
	ns := got.Rungs[0].Nsight
	if ns["launch__registers_per_thread"] != "121 register/thread" || ns["gpu__time_duration.sum"] != "2,040,288 ns" ||
		ns["smsp__sass_inst_executed_op_shared_gmma.sum"] != "0 inst" || got.Rungs[1].Nsight != nil || got.NsightCSV != "h200-ncu-tensor-4096.csv" {
		t.Errorf("merged %+v (CSV %q)", got.Rungs, got.NsightCSV)
	}
	var back Record
	if b, err := os.ReadFile(out); err != nil || json.Unmarshal(b, &back) != nil || back.Rungs[0].Nsight["launch__registers_per_thread"] == "" {
		t.Errorf("the merged record was not written back: %v", err)
	}
	if md := got.Markdown(); !strings.Contains(md, "| 121 | ") {
		t.Errorf("markdown lacks Nsight's registers:\n%s", md)
	}
	rec.Provenance.Device = "NVIDIA H100 80GB HBM3"
	b, _ = json.Marshal(rec)
	os.WriteFile(out, b, 0o644)
	if _, err := mergeNsight(out, csvPath); err == nil || !strings.Contains(err.Error(), "cuda_mma ran on NVIDIA H200, the record's device is NVIDIA H100 80GB HBM3") {
		t.Errorf("another device's CSV: got %v", err)
	}
	if _, err := readNsight(strings.NewReader("a,b\n1,2\n")); err == nil {
		t.Error("a CSV without Nsight's header was read")
	}
}
