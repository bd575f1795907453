package gpumodel

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuplayground/playground/vgpu"
)

// Launch floor of an H100 SXM under Nsight Compute, measured with bench/gpucheck/launch_floor.cu
// (2026-11-25, bench/vgpuvsncu/testdata/h100-ncu-launch.csv): gpu__time_duration.sum of an empty
// kernel in one block of one warp is 2.30–2.37 µs (in 256 blocks of 256 threads 2.37–2.56 µs, in
// 2048 blocks 3.42–3.65 µs), the front end taking the launch, the work distributor handing out the
// blocks and the grid's completion being flushed (NVIDIA's description: "How can I measure kernel
// launch overhead using ncu", NVIDIA Developer Forums, 2023). Other GPUs are assumed to take the
// same time: theirs was not measured.
const h100LaunchSeconds = 2.3e-6

// LaunchSeconds is the fixed time of a launch on g that Model adds to its largest term: the H100's
// measured floor (h100LaunchSeconds), assumed for every GPU.
func LaunchSeconds(g GPU) float64 { return h100LaunchSeconds }

// ptxRegister matches a PTX register operand: %r12, %rd4, %f3, %fd1, %p2, %rs7, %h1 (not the
// special registers %tid.x, %ctaid.y, which have no number).
var ptxRegister = regexp.MustCompile(`%[a-z]+[0-9]+`)

// ptxInstr is one executed PTX line as the latency term reads it: its opcode, the registers it
// writes and those it reads.
type ptxInstr struct {
	op         string
	dst, src   []string
	warps      int64
	sharedLoad bool
}

// parsePTX reads a PTX line of Counts.Lines ("@%p1 ld.global.f32 %f1, [%rd4];"): the guard
// predicate is read; the first operand is written unless the instruction is a store, a reduction,
// a branch, a barrier or a wmma.store (the braces of a vector or fragment operand stay one operand).
func parsePTX(text string) ptxInstr {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), ";"))
	var in ptxInstr
	if strings.HasPrefix(t, "@") {
		guard, rest, _ := strings.Cut(t, " ")
		in.src = append(in.src, ptxRegister.FindAllString(guard, -1)...)
		t = strings.TrimSpace(rest)
	}
	op, args, _ := strings.Cut(t, " ")
	in.op = op
	args = strings.TrimSpace(args)
	first, rest := args, ""
	if strings.HasPrefix(args, "{") {
		if i := strings.Index(args, "}"); i >= 0 {
			first, rest = args[:i+1], args[i+1:]
		}
	} else if i := strings.Index(args, ","); i >= 0 {
		first, rest = args[:i], args[i+1:]
	}
	writes := !(strings.HasPrefix(op, "st.") || strings.HasPrefix(op, "red.") || strings.HasPrefix(op, "bra") ||
		strings.HasPrefix(op, "bar.") || strings.HasPrefix(op, "barrier") || strings.HasPrefix(op, "wmma.store") ||
		strings.HasPrefix(op, "ret") || strings.HasPrefix(op, "exit") || strings.HasPrefix(op, "membar") || strings.HasPrefix(op, "fence"))
	if writes && !strings.HasPrefix(first, "[") {
		in.dst = ptxRegister.FindAllString(first, -1)
		in.src = append(in.src, ptxRegister.FindAllString(rest, -1)...)
	} else {
		in.src = append(in.src, ptxRegister.FindAllString(args, -1)...)
	}
	in.sharedLoad = strings.HasPrefix(op, "ld.shared") || strings.HasPrefix(op, "ldmatrix") || (strings.HasPrefix(op, "wmma.load") && strings.Contains(op, ".shared"))
	return in
}

// latencyOf is the cycles until in's result can be used (Latencies, with global the expected
// global load's): global and local loads and atomics that return a value wait for the memory
// hierarchy, shared loads for shared memory, the tensor cores' mma.sync and wmma.mma for lat.MMA
// (a wmma.mma m16n16k16 is two mma.sync of m16n8k16 in SASS, independent of each other), ld.param
// and everything else for the ALU's dependent latency (the FMA's 4 cycles: division, square root and
// the special functions, which the compiled SASS expands into several instructions, are charged the
// same, an underestimate).
func latencyOf(in ptxInstr, lat Latencies, global float64) float64 {
	switch {
	case in.sharedLoad:
		return lat.Shared
	case isTensorOp(in.op) && lat.MMA > 0:
		return lat.MMA
	case strings.HasPrefix(in.op, "ld.param"), strings.HasPrefix(in.op, "ld.const"):
		return lat.ALU
	case strings.HasPrefix(in.op, "ld."), strings.HasPrefix(in.op, "atom."), strings.HasPrefix(in.op, "wmma.load"):
		if strings.Contains(in.op, ".shared") {
			return lat.Shared
		}
		return global
	}
	return lat.ALU
}

// globalLoadLatency is the expected latency of a global load sector of c on lat: the cache model's
// share of load sectors served by the L1, by the L2 and by DRAM (the L2's load lookups are the
// sectors reaching it less the stores and atomics; its load misses the DRAM reads), each at its
// latency; every load a DRAM access without the cache model.
func globalLoadLatency(c vgpu.Counts, lat Latencies) float64 {
	if !c.Cached || c.LoadSectors == 0 {
		return lat.DRAM
	}
	loads := float64(c.LoadSectors)
	l2 := min(max(float64(c.L2Sectors-c.StoreSectors-c.AtomicSectors), 0), loads)
	dram := min(float64(c.DRAMReadBytes)/32, l2)
	return ((loads-l2)*lat.L1 + (l2-dram)*lat.L2 + dram*lat.DRAM) / loads
}

// warpCycles is the latency-bound work of c's warps on lat, in warp-cycles. The executed PTX lines
// (c.Lines) are cut into runs of lines executed equally often (a basic block, or blocks that always
// run together), and each run is timed for one warp alone: an instruction can start once the
// registers it reads are written (a load's or a tensor-core instruction's result after its latency,
// any other instruction's after the ALU's: latencyOf) and a barrier once everything before it has started, and nothing after a barrier starts
// before it; the run takes the longer of its dependence chain and its instruction count (one issue
// per clock), times the times a warp ran it, summed over the runs. Independent loads overlap however
// the PTX orders them, as ptxas hoists loads above the stores and arithmetic that do not need them:
// a warp's memory-level parallelism is the loads it can have in flight before it needs one. A
// register written in one run and read in another is taken as ready. It is a static, PTX-level
// approximation: the compiled SASS has other instructions and other chains.
//
// Warps that meet at barriers wait together: with group warps on each scheduler in step (the
// resident blocks' warps, when the kernel has barriers: inStep), each instruction is issued by all
// of them in turn, and the run takes its chain so issued, at least group × its instructions, for
// each of them; and p's pipes are shared by the warps in step (runClock.step).
func warpCycles(c vgpu.Counts, lat Latencies, group float64, p pipes) float64 {
	return warpCyclesByLine(c, lat, group, p, nil)
}

// pipes are the throughput limits that a kernel's warps in step meet within a run (warpCycles):
// MMAPerClock is the FLOPs a scheduler's tensor cores do a clock (TensorPeak over the schedulers and
// the clock; 0: no limit), SMWarps the warps in step on an SM, whose shared-memory loads pass its one
// wavefront a clock (SharedBytesPerClock) in turn (0: no limit). The zero value: every
// instruction issues a clock after the one before, its result after its latency.
type pipes struct {
	MMAPerClock, SMWarps float64
	// SASS is the issue slots of one execution of a PTX line (SASSPerLine); nil: one an instruction.
	SASS SASSPerLine
}

// slots is the issue slots of one execution of PTX line line: p.SASS's, or 1.
func (p pipes) slots(line int) float64 {
	if p.SASS == nil {
		return 1
	}
	return p.SASS(line)
}

// pipesFor are the pipes of c's warps on g with w warps resident on each SM: the tensor cores'
// rate where g has one, and the shared memory's where barriers keep the resident blocks' warps in
// step (inStep); without barriers the warps drift apart and the L1 term, not this one, prices their
// use of the pipe.
func pipesFor(c vgpu.Counts, g GPU, w float64) pipes {
	var p pipes
	if t := TensorPeakFor(g, c); t > 0 && g.Clock > 0 && g.SMs > 0 {
		p.MMAPerClock = t / (float64(g.SMs) * SchedulersPerSM * g.Clock)
	}
	if c.Barriers > 0 && c.Blocks > 0 {
		p.SMWarps = max(w, float64(c.Warps)/float64(c.Blocks)) // the resident blocks' warps
	}
	return p
}

// mmaShape matches the shape of a tensor-core instruction: ".m16n8k16".
var mmaShape = regexp.MustCompile(`\.m(\d+)n(\d+)k(\d+)`)

// mmaFLOPs is the FLOPs of one warp's tensor-core instruction op (2·m·n·k; 4,096 when op names no
// shape).
func mmaFLOPs(op string) float64 {
	m := mmaShape.FindStringSubmatch(op)
	if m == nil {
		return 4096
	}
	x, _ := strconv.Atoi(m[1])
	y, _ := strconv.Atoi(m[2])
	z, _ := strconv.Atoi(m[3])
	return float64(2 * x * y * z)
}

// runClock times one run of instructions for a representative warp (warpCycles): chain is when the
// group's last issued instruction is issued, fence where a barrier lets the next start, cursor where
// the next instruction that is neither a load nor a store may issue (in order), ready when each
// register's value can be read; tensor and shared are when the scheduler's tensor cores and the
// SM's shared-memory pipe are next free, and lastMMA when the last of the group's warps issues its
// latest tensor-core instruction.
type runClock struct {
	chain, fence, cursor, tensor, shared, lastMMA float64
	ready                                         map[string]float64
}

// step starts in (executed by the line l) as early as its operands, the order of issue and the
// pipes allow, and returns how much it lengthened the chain.
//
// The group's warps issue each instruction one after another: it holds the scheduler for group ×
// its issue slots (p.slots: the SASS instructions of one execution of the line), and the next
// instruction issues after it (in order). So an instruction that waits for a load's result holds up
// the ones after it, and the issue of the instructions after a wait adds to the wait, unless the
// stream puts independent work between the load and its use: issue and waits overlap only as far as
// the instruction stream lets them, as one scheduler's list schedule of the group's warps would
// have them (Nsight Compute's issue-active and L1-pipe percentages of the 2-D blocktiled rungs add
// up to their elapsed time: docs/benchmarks.md, "SASS instructions against Nsight Compute").
// Loads and stores are placed where their operands are ready, not in order: ptxas hoists loads above
// the work that does not need them and sinks stores below it, as the rungs' SASS shows (their global
// loads issued together, the shared stores after them). A line of no SASS instruction (ptxas folded
// it into others) takes no issue, and its result is ready with its operands.
//
// A tensor-core instruction holds the scheduler's tensor cores for the group's warps (group × its
// FLOPs / p.MMAPerClock), the representative warp's the first of them: the next one waits for them,
// and, as issue is in order, so does every instruction after it but a load or a store; a barrier
// waits for the group's last. A shared load's wavefronts (the line's, per warp) pass the SM's pipe
// for the p.SMWarps warps in step, and the representative warp's data comes back after half of them
// and the latency; a line that ptxas merged into a wider load of another line (less than one SASS
// instruction an execution: p.slots) passes it that part of the time, its wavefronts riding with
// the wide load's: a broadcast's count; where its lanes read distinct words this undercounts (the
// loads of cuda-smem and cuda-regblock so counted are 0.83× Nsight Compute's wavefronts on an H100,
// their PTX lines' 1.33×).
func (r *runClock) step(in ptxInstr, l vgpu.LineCount, lat Latencies, global, group float64, p pipes) float64 {
	issue := group * p.slots(l.Line) // the group's warps issue it one after another
	start := r.fence
	for _, reg := range in.src {
		start = max(start, r.ready[reg])
	}
	if strings.HasPrefix(in.op, "bar.") || strings.HasPrefix(in.op, "barrier") {
		start = max(start, r.chain, r.lastMMA+1)
		r.fence = start + 1
	}
	if !isLoad(in) && !isStore(in) {
		start = max(start, r.cursor)
	}
	if isTensorOp(in.op) && p.MMAPerClock > 0 {
		start = max(start, r.tensor)
		hold := mmaFLOPs(in.op) / p.MMAPerClock
		r.tensor = start + group*hold
		r.lastMMA = start + (group-1)*hold
	}
	if !isLoad(in) && !isStore(in) {
		r.cursor = start + issue
	}
	prev := r.chain
	r.chain = max(r.chain, start+issue)
	done := start + latencyOf(in, lat, global)
	if issue == 0 && !isLoad(in) && !isTensorOp(in.op) {
		done = start // folded by ptxas into other instructions: no result of its own to wait for
	}
	if in.sharedLoad && p.SMWarps > 0 && l.Warp > 0 {
		begin, busy := max(r.shared, start), p.SMWarps*float64(l.Wavefronts)/float64(l.Warp)*min(p.slots(l.Line), 1)
		r.shared = begin + busy
		done = max(done, begin+busy/2+lat.Shared)
	}
	for _, reg := range in.dst {
		r.ready[reg] = done
	}
	return r.chain - prev
}

// warpCyclesByLine is warpCycles, which it returns, and where perLine is not nil adds to it each PTX
// line's part of the warp-cycles (LatencyByLine): in a run that its issue takes (group × its
// instructions no shorter than its chain) each instruction gets its issue slots, group per warp;
// in a run that its chain takes, each instruction gets the cycles by which it lengthened the chain,
// so that the wait for a load's result is charged to the instruction that waits for it, as Nsight
// Compute's warp-state sampling charges a stall to the stalled instruction. The parts of a run sum
// to its time, and the parts of all the lines to warpCycles.
func warpCyclesByLine(c vgpu.Counts, lat Latencies, group float64, p pipes, perLine map[int]float64) float64 {
	global := globalLoadLatency(c, lat)
	var total float64
	var n float64 // the run's issue slots
	var runWarps int64 = -1
	r := runClock{ready: map[string]float64{}}
	type step struct {
		line  int
		grew  float64 // how much the instruction lengthened the run's chain
		slots float64 // its issue slots (pipes.slots)
	}
	var steps []step
	flush := func() {
		if runWarps > 0 {
			total += float64(runWarps) * max(group*n, r.chain)
			if perLine != nil {
				issue := group*n >= r.chain
				for _, s := range steps {
					if issue {
						perLine[s.line] += float64(runWarps) * group * s.slots
					} else {
						perLine[s.line] += float64(runWarps) * s.grew
					}
				}
			}
		}
		n = 0
		steps = steps[:0]
		clear(r.ready)
		r = runClock{ready: r.ready}
	}
	for _, l := range c.Lines {
		if l.Warp != runWarps {
			flush()
			runWarps = l.Warp
		}
		in := parsePTX(l.Text)
		if in.op == "" || strings.HasSuffix(in.op, ":") {
			continue
		}
		slots := p.slots(l.Line)
		n += slots
		steps = append(steps, step{l.Line, r.step(in, l, lat, global, group, p), slots})
	}
	flush()
	return total
}

// LatencySeconds is the latency term of c on g with o resident: by Little's law, an SM with W
// warps resident, each taking its warp-cycles (warpCycles), gets through W of them at a time, so
// the launch takes warpCycles / (SMs × W) clocks. A kernel with barriers is timed with all the
// resident blocks' warps in step (warpCycles' group: inStep), whose waits nothing else on the SM
// hides; one without, with every warp on its own. W is o's theoretical warps per SM, capped by
// the grid's warps per SM it runs on (a grid of fewer blocks than g has SMs runs one block per SM).
// 0 where g has no latencies, o no warps, or c no executed lines.
func LatencySeconds(c vgpu.Counts, g GPU, o Occupancy) float64 {
	return latencySeconds(c, g, o, nil)
}

// latencySeconds is LatencySeconds with each run's issue in sass's slots (nil: PTX instructions).
func latencySeconds(c vgpu.Counts, g GPU, o Occupancy, sass SASSPerLine) float64 {
	if g.Latency.ALU <= 0 || g.Clock <= 0 || o.Result.WarpsPerSM <= 0 || len(c.Lines) == 0 || c.Warps == 0 {
		return 0
	}
	sms, w := residentWarps(c, g, o)
	p := pipesFor(c, g, w)
	p.SASS = sass
	return warpCycles(c, g.Latency, inStep(c, w), p) / (sms * w) / g.Clock
}

// residentWarps are the SMs c's grid keeps busy on g (all of them, or one per block of a smaller
// grid) and the warps resident on each with o (its theoretical warps, capped by the grid's).
func residentWarps(c vgpu.Counts, g GPU, o Occupancy) (sms, w float64) {
	n := int64(max(g.SMs, 1))
	if c.GridBlocks > 0 && c.GridBlocks < n {
		n = c.GridBlocks
	}
	return float64(n), min(float64(o.Result.WarpsPerSM), float64(c.Warps)/float64(n))
}

// inStep is the warps of c in step on one scheduler (warpCycles' group) with w warps resident on
// each SM: one, unless barriers keep a block's together, and then all the resident blocks' (at least
// one block's): a wave's blocks start together and run the same instructions, so the blocks resident
// on an SM reach their barriers, their loads and their arithmetic together and do not fill each
// other's waits. Nsight Compute says so for the 2-D blocktiled rungs on an H100 (two blocks an SM):
// the schedulers idle in 40% of the cycles while their warps wait on the tiles' global loads (long
// scoreboard, 1.26 warps an issue for cuda-warptile) and at the barriers (docs/benchmarks.md).
func inStep(c vgpu.Counts, w float64) float64 {
	if c.Barriers > 0 && c.Blocks > 0 {
		return math.Ceil(max(w, float64(c.Warps)/float64(c.Blocks)) / SchedulersPerSM)
	}
	return 1
}

// LatencyByLine is each executed PTX line's part (PTX line → fraction, summing to 1) of c's latency
// term on g with o resident (LatencySeconds, which is proportional to warpCycles): its part of the
// warp-cycles (warpCyclesByLine). Nil where the term is 0.
func LatencyByLine(c vgpu.Counts, g GPU, o Occupancy) map[int]float64 {
	if LatencySeconds(c, g, o) <= 0 {
		return nil
	}
	perLine := map[int]float64{}
	_, w := residentWarps(c, g, o)
	total := warpCyclesByLine(c, g.Latency, inStep(c, w), pipesFor(c, g, w), perLine)
	if total <= 0 {
		return nil
	}
	for l := range perLine {
		perLine[l] /= total
	}
	return perLine
}

// isLoad reports whether in is a load from memory (global, local, shared, an ldmatrix, or a wmma
// fragment).
func isLoad(in ptxInstr) bool {
	return (strings.HasPrefix(in.op, "ld.") && !strings.HasPrefix(in.op, "ld.param")) || strings.HasPrefix(in.op, "wmma.load") ||
		strings.HasPrefix(in.op, "ldmatrix")
}

// isStore reports whether in stores to memory (st., including st.shared, red., cp.async's copies not).
func isStore(in ptxInstr) bool {
	return strings.HasPrefix(in.op, "st.") && !strings.HasPrefix(in.op, "st.param")
}
