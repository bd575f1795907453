package server

import (
	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/kernels/simt"
	"github.com/gpuplayground/playground/kernels/systolic"
	"github.com/gpuplayground/playground/roofline"
)

// Message is the one wire type of the /ws websocket: every frame in either direction is one Message as
// a JSON text frame. docs/protocol.md describes the same thing for client authors.
//
// Client → server:
//
//	{"type":"run","id":"<client run id>","lesson":"<slug>","cell":"<cell id>","source":"<spec text>"}
//	{"type":"ptx","id":"<client run id>","lesson":"<slug>","cell":"<cell id>","source":"<cuda cell text>"}
//	{"type":"cancel","id":"<client run id>"}
//
// Server → client, each carrying the run's id:
//
//	queued   {position}                      1 = next to start; re-sent when the line moves
//	started
//	progress {done, total}                   kernel calls finished, warm-ups included
//	result   {kernel, n, dtype, seconds, min_seconds, max_seconds, gflops, rel_error, ok}
//	chart    {svg}                           complete <svg> document, re-sent after every result
//	note     {note: {kernel, level, message}} about a kernel, not a measurement (why a GPU kernel did not run)
//	ptx      {ptx}                           the answer to a ptx request (then done)
//	warps    {warps: [{kernel, warp, kind, matrix, lanes: [[lane, row, col, sector]…], sectors}, …]}
//	         up to 20 global warp instructions of a watched simt kernel (block (0,0), first 300)
//	allreduce {allreduce: {link, gpus, seconds, bus_gbs}} one modelled all-reduce (never measured)
//	roofline {roofline: {ceilings, byte_model, predict, gpu}} this machine's measured roofs for a roofline
//	         cell, before its results; its charts are rooflines
//	frames   {frames: [{tile, k0, n0, cycle, a, p, w, out}, …]} up to 20 cycles of a simulated systolic
//	         array (≤ 16×16, the first 300 cycles; w only on a tile's first cycle, values to 3 decimals)
//	systolic {systolic: {array, m, n, k, cycles, weight_cycles, tiles, macs, utilisation, clock_mhz,
//	         tflops, correct, simulation_seconds}} the simulated product; a utilisation chart follows
//	simt     {simt: {kernel, n, flops, global_requests, sectors, bytes_moved, coalescing, shared_requests,
//	         bank_conflicts, barriers, correct, gpu, modelled_seconds, bound, emulation_seconds}} one emulated kernel
//	recorded {recorded: {label, device, driver, date, command, results}} a real earlier GPU run of this
//	         cell, for the GPU kernels that cannot run here; never a measurement of this run
//	done | cancelled {message} | error {message}   exactly one of these ends every run
//
// An error about a frame that names no run (malformed JSON, a frame over 64 KiB) has an empty id.
type Message struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`

	*RunRequest // run
	*Progress   // progress
	*experiment.Result

	Note      *Note                      `json:"note,omitempty"`      // note
	Recorded  *Recorded                  `json:"recorded,omitempty"`  // recorded
	SIMT      *experiment.SIMTResult     `json:"simt,omitempty"`      // simt
	Warps     []experiment.WarpFrame     `json:"warps,omitempty"`     // warps
	AllReduce *experiment.AllReducePoint `json:"allreduce,omitempty"` // allreduce
	Roofline  *RooflineInfo              `json:"roofline,omitempty"`  // roofline
	Systolic  *experiment.SystolicResult `json:"systolic,omitempty"`  // systolic
	Frames    []systolic.Frame           `json:"frames,omitempty"`    // frames
	Position  int                        `json:"position,omitempty"`  // queued
	SVG       string                     `json:"svg,omitempty"`       // chart
	PTX       string                     `json:"ptx,omitempty"`       // ptx
	// Message explains an error (what to fix) or why a run was cancelled.
	Message string `json:"message,omitempty"`
}

// RunRequest is the body of a client's run message.
type RunRequest struct {
	Lesson string `json:"lesson"`
	Cell   string `json:"cell"`
	// Source is the cell's spec as the learner edited it.
	Source string `json:"source"`
}

// Note is the body of a note message: something about one kernel of the run that is not a
// measurement.
type Note struct {
	Kernel string `json:"kernel"`
	// Level is "error" (the kernel did not run) or "info".
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Recorded is the body of a recorded message: results of this cell measured earlier on a GPU
// machine (lessons/recorded), for the GPU kernels that cannot run on this server.
type Recorded struct {
	// Label says where, when and how they were measured, e.g. "recorded on NVIDIA H100 80GB HBM3
	// (driver CUDA 13.0) at 2026-11-21T12:00:00Z with `record …`, not measured now".
	Label   string              `json:"label"`
	Device  string              `json:"device"`
	Driver  string              `json:"driver"`
	Date    string              `json:"date"`
	Command string              `json:"command"`
	Results []experiment.Result `json:"results"`
}

// RooflineInfo is the body of a roofline message.
type RooflineInfo struct {
	// Ceilings are this machine's roofs, measured once at the first roofline cell after start-up.
	Ceilings roofline.Ceilings `json:"ceilings"`
	// ByteModel states how arithmetic intensity is computed.
	ByteModel string `json:"byte_model"`
	// Predict echoes the learner's predictions (GFLOP/s by kernel).
	Predict map[string]float64 `json:"predict,omitempty"`
	// GPU, if the cell names one, is drawn from its datasheet.
	GPU *simt.GPU `json:"gpu,omitempty"`
}

// Progress is the body of a progress message.
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// Message types.
const (
	TypeRun       = "run"
	TypeCancel    = "cancel"
	TypePTX       = "ptx"
	TypeQueued    = "queued"
	TypeStarted   = "started"
	TypeProgress  = "progress"
	TypeResult    = "result"
	TypeChart     = "chart"
	TypeNote      = "note"
	TypeWarps     = "warps"
	TypeAllReduce = "allreduce"
	TypeRoofline  = "roofline"
	TypeFrames    = "frames"
	TypeSystolic  = "systolic"
	TypeSIMT      = "simt"
	TypeRecorded  = "recorded"
	TypeDone      = "done"
	TypeCancelled = "cancelled"
	TypeError     = "error"
)

// Terminal reports whether a message type ends a run.
func Terminal(typ string) bool {
	return typ == TypeDone || typ == TypeCancelled || typ == TypeError
}
