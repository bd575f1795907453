package inference

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Speculative is speculative decoding: a draft model proposes K tokens, each accepted with
// probability Alpha, and one draft step costs Cost target steps (Leviathan et al.'s c).
type Speculative struct {
	K           int
	Alpha, Cost float64
}

// Config is a server: an engine on a chip, Memory bytes for the weights and the KV cache, a
// scheduler (Batching "static": a batch runs until its every request is done before the next is
// admitted, a finished request leaving the steps but its place left empty; "continuous": requests
// join and leave at every step, Orca's iteration-level scheduling)
// and a KV pool (Reservation, one of Reservations; Block tokens per block when paged). MaxLen is the
// longest sequence, prompt and output, the server allows; MaxBatch the most requests running at once.
type Config struct {
	Engine      Engine
	Chip        Chip
	Memory      float64
	Batching    string
	Reservation string
	Block       int
	MaxLen      int
	MaxBatch    int
	// Speculative, when K > 0, decodes speculatively.
	Speculative Speculative
}

// KVMemory is the bytes left for the KV cache: Memory less the weights.
func (c Config) KVMemory() float64 { return c.Memory - c.Engine.WeightMemory() }

// Percentiles summarise a latency in seconds.
type Percentiles struct{ Mean, P50, P90, P99 float64 }

// Result is what a simulation reports; every time in it is modelled.
type Result struct {
	Requests, OutputTokens, Steps, Preemptions int
	// Seconds is from time 0 to the last request's finish; Throughput output tokens per second.
	Seconds, Throughput float64
	// TTFT is arrival to first token; TPOT the time per output token after the first, (finish −
	// first) / (output − 1), of requests of two tokens or more; Normalized vLLM's normalised
	// latency, (finish − arrival) / output tokens.
	TTFT, TPOT, Normalized Percentiles
	// MeanBatch is the requests running, averaged over time; MaxBatch the most at once.
	MeanBatch float64
	MaxBatch  int
	// KVCapacity is the pool's bytes and PoolTokens its tokens; MeanReserved and PeakReserved the
	// bytes allocated to requests, MeanHeld the bytes holding tokens (time averages). Held over
	// reserved is the share of the allocation in use; the rest is fragmentation and reservation.
	KVCapacity, MeanReserved, PeakReserved, MeanHeld float64
	PoolTokens                                       int
}

// ErrTooBig is returned when a request cannot fit in the KV pool even alone.
var ErrTooBig = errors.New("serving: a request does not fit in the KV cache even alone")

func (c Config) check() error {
	switch {
	case c.Batching != "static" && c.Batching != "continuous":
		return fmt.Errorf("serving: unknown batching %q; known: static, continuous", c.Batching)
	case c.MaxLen < 2 || c.MaxBatch < 1:
		return fmt.Errorf("serving: max length %d and max batch %d must be at least 2 and 1", c.MaxLen, c.MaxBatch)
	case !(c.Chip.FLOPs > 0 && c.Chip.Bandwidth > 0):
		return fmt.Errorf("serving: chip %q needs positive FLOP/s and bandwidth", c.Chip.Name)
	case c.KVMemory() <= 0:
		return fmt.Errorf("serving: %.3g GB of memory does not hold the %.3g GB of weights", c.Memory/1e9, c.Engine.WeightMemory()/1e9)
	case c.Speculative.K < 0 || c.Speculative.Alpha < 0 || c.Speculative.Alpha > 1 || c.Speculative.Cost < 0:
		return fmt.Errorf("serving: speculative k ≥ 0, 0 ≤ alpha ≤ 1 and cost ≥ 0, not %+v", c.Speculative)
	}
	return nil
}

// sim is one simulation's state.
type sim struct {
	c                  Config
	pool               *pool
	rng                *rand.Rand
	t                  float64
	waiting, running   []*request
	admissions         int
	preempted          bool // the last step preempted: admit nobody before the next
	res                Result
	batchTime, reserve float64
	held               float64
}

// ctxEvery is how many of Simulate's iterations (engine steps or idle jumps) pass between checks of
// its context.
const ctxEvery = 4096

// Simulate serves w on c and reports what happened. It is deterministic: the same config and
// workload give the same result. It takes at most w.MaxSteps(c.MaxLen) engine steps, and returns
// ctx.Err() when ctx ends first (checked every few thousand steps).
func Simulate(ctx context.Context, c Config, w Workload) (Result, error) {
	if err := c.check(); err != nil {
		return Result{}, err
	}
	reqs, err := w.requests(c.MaxLen)
	if err != nil {
		return Result{}, err
	}
	p, err := newPool(c.Reservation, c.Block, c.MaxLen, c.KVMemory(), c.Engine.KVPerToken())
	if err != nil {
		return Result{}, err
	}
	s := &sim{c: c, pool: p, rng: rand.New(rand.NewPCG(w.Seed, 0x5bec))}
	s.res.KVCapacity, s.res.PoolTokens = c.KVMemory(), p.tokens()
	next := 0 // the next request to arrive
	for done, it := 0, 0; done < len(reqs); it++ {
		if it%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return Result{}, err
			}
		}
		for next < len(reqs) && reqs[next].arrival <= s.t {
			s.waiting = append(s.waiting, reqs[next])
			next++
		}
		if len(s.running) == 0 && len(s.waiting) == 0 {
			s.t = reqs[next].arrival
			continue
		}
		s.admit()
		if len(s.running) == 0 {
			return Result{}, fmt.Errorf("%w (%d tokens, pool of %d)", ErrTooBig, s.waiting[0].prompt+s.waiting[0].output, p.tokens())
		}
		done += s.step()
	}
	return s.summary(reqs), nil
}

// admit moves waiting requests, first come first served, into the running batch while they fit:
// at every step when batching continuously, only into an empty batch when batching statically. A
// paged pool keeps 1 % of its blocks free when admitting (the default watermark, 0.01, of vLLM's
// BlockSpaceManager) and admits nobody in the step after a preemption (this simulator's rule), so
// that running requests have room to grow instead of being preempted and recomputed in turn.
func (s *sim) admit() {
	if s.c.Batching == "static" && len(s.running) > 0 {
		return
	}
	if s.preempted && len(s.running) > 0 {
		s.preempted = false
		return
	}
	for len(s.waiting) > 0 && len(s.running) < s.c.MaxBatch {
		r := s.waiting[0]
		if s.pool.mode == "paged" && len(s.running) > 0 && s.pool.free()-s.pool.units(r, r.prompt+r.generated+1) < s.pool.capacity/100 {
			return
		}
		if !s.pool.hold(r, r.prompt+r.generated+1) {
			return
		}
		s.waiting = s.waiting[1:]
		s.admissions++
		r.admitted = s.admissions
		s.running = append(s.running, r)
	}
}

// preempt evicts the request admitted last (vLLM's choice), freeing its cache; it waits at the
// front of the queue and recomputes its cache (prompt and output so far) when readmitted.
func (s *sim) preempt() *request {
	i := 0
	for j, r := range s.running {
		if r.admitted > s.running[i].admitted {
			i = j
		}
	}
	v := s.running[i]
	s.running = slices.Delete(s.running, i, i+1)
	s.pool.release(v)
	v.prefilled = false
	s.waiting = append([]*request{v}, s.waiting...)
	s.res.Preemptions++
	s.preempted = true
	return v
}

// grow gives every running request room for the tokens this step adds, preempting when the pool is
// full, and returns each survivor's new tokens: a prefill's whole cache, a decode step's 1 (or k + 1
// verified when speculating).
func (s *sim) grow() []int {
	k := s.c.Speculative.K
	for i := 0; i < len(s.running); {
		r := s.running[i]
		n := r.prompt + r.generated + 1
		if r.prefilled {
			n = r.prompt + r.generated + min(k+1, r.output-r.generated)
		}
		if s.pool.hold(r, n) {
			i++
			continue
		}
		if v := s.preempt(); v == r {
			continue // r itself went; s.running[i] is the next one
		}
		i = 0 // someone after r went: recheck from the start (held allocations are kept)
	}
	news := make([]int, len(s.running))
	for i, r := range s.running {
		news[i] = 1 + k
		if !r.prefilled {
			news[i] = r.prompt + r.generated
		}
	}
	return news
}

// step runs one engine step over the running batch and returns how many requests it finished.
func (s *sim) step() int {
	news := s.grow()
	if len(s.running) == 0 {
		return 0
	}
	seqs := make([]Seq, len(s.running))
	var decode []Seq
	for i, r := range s.running {
		if r.prefilled {
			seqs[i] = Seq{New: news[i], Past: r.prompt + r.generated}
			decode = append(decode, Seq{New: 1, Past: r.prompt + r.generated})
		} else {
			seqs[i] = Seq{New: news[i]}
		}
	}
	dt := StepTime(s.c.Engine.Work(seqs), s.c.Chip)
	if sp := s.c.Speculative; sp.K > 0 && len(decode) > 0 {
		dt += float64(sp.K) * sp.Cost * StepTime(s.c.Engine.Work(decode), s.c.Chip)
	}
	s.account(dt)
	s.t += dt
	s.res.Steps++
	done := 0
	kept := s.running[:0]
	for _, r := range s.running {
		s.advance(r)
		if r.generated < r.output {
			kept = append(kept, r)
			continue
		}
		r.finish = s.t
		s.pool.release(r)
		done++
	}
	s.running = kept
	return done
}

// advance adds the tokens one step yields to r: a prefill yields one token (the first, or the next
// after a preemption), a decode step one, or when speculating the accepted drafts and one more.
func (s *sim) advance(r *request) {
	n := 1
	if r.prefilled && s.c.Speculative.K > 0 {
		for range s.c.Speculative.K {
			if s.rng.Float64() >= s.c.Speculative.Alpha {
				break
			}
			n++
		}
	}
	if r.generated == 0 {
		r.first = s.t
	}
	r.prefilled = true
	r.generated = min(r.generated+n, r.output)
}

// account adds a step of dt seconds to the time averages of batch and memory.
func (s *sim) account(dt float64) {
	per := s.c.Engine.KVPerToken()
	reserved := float64(s.pool.used*s.pool.block) * per
	var held float64
	for _, r := range s.running {
		held += float64(r.prompt+r.generated) * per
	}
	s.batchTime += dt * float64(len(s.running))
	s.reserve += dt * reserved
	s.held += dt * held
	s.res.PeakReserved = max(s.res.PeakReserved, reserved)
	s.res.MaxBatch = max(s.res.MaxBatch, len(s.running))
}

// summary turns the finished requests into a Result.
func (s *sim) summary(reqs []*request) Result {
	res := s.res
	res.Requests, res.Seconds = len(reqs), s.t
	var ttft, tpot, norm []float64
	for _, r := range reqs {
		res.OutputTokens += r.output
		ttft = append(ttft, r.first-r.arrival)
		norm = append(norm, (r.finish-r.arrival)/float64(r.output))
		if r.output > 1 {
			tpot = append(tpot, (r.finish-r.first)/float64(r.output-1))
		}
	}
	if s.t > 0 {
		res.Throughput = float64(res.OutputTokens) / s.t
		res.MeanBatch, res.MeanReserved, res.MeanHeld = s.batchTime/s.t, s.reserve/s.t, s.held/s.t
	}
	res.TTFT, res.TPOT, res.Normalized = percentiles(ttft), percentiles(tpot), percentiles(norm)
	return res
}

// percentiles of xs by the nearest-rank method; the zero value for none.
func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	slices.Sort(xs)
	rank := func(p float64) float64 {
		i := int(p*float64(len(xs))+0.999999) - 1
		return xs[min(max(i, 0), len(xs)-1)]
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return Percentiles{Mean: sum / float64(len(xs)), P50: rank(0.5), P90: rank(0.9), P99: rank(0.99)}
}
