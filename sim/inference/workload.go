package inference

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Lengths is a distribution of token counts: Dist "fixed" (always Mean), "uniform" (1 to 2·Mean − 1)
// or "exponential" (a rounded exponential of mean Mean, at least 1: many short, a long tail, as chat
// prompts and replies are).
type Lengths struct {
	Mean int
	Dist string
}

// Dists are the distributions Lengths may name.
var Dists = []string{"fixed", "uniform", "exponential"}

func (l Lengths) draw(r *rand.Rand) int {
	switch l.Dist {
	case "uniform":
		return 1 + r.IntN(max(2*l.Mean-1, 1))
	case "exponential":
		return max(1, int(math.Round(r.ExpFloat64()*float64(l.Mean))))
	default:
		return l.Mean
	}
}

func (l Lengths) check(what string) error {
	if l.Mean < 1 {
		return fmt.Errorf("serving: %s lengths need a mean of at least 1 token, not %d", what, l.Mean)
	}
	switch l.Dist {
	case "fixed", "uniform", "exponential":
		return nil
	}
	return fmt.Errorf("serving: unknown %s length distribution %q; known: fixed, uniform, exponential", what, l.Dist)
}

// Workload is the requests a simulation serves: Requests of them, arriving as a Poisson process of
// Rate requests per second (Rate 0: all at time 0), with prompt and output lengths drawn from Prompt
// and Output, the whole drawn from Seed (the same seed, the same requests).
type Workload struct {
	Requests       int
	Rate           float64
	Prompt, Output Lengths
	Seed           uint64
}

// request is one request and what has happened to it.
type request struct {
	id                     int
	arrival, first, finish float64
	prompt, output         int
	generated              int  // output tokens so far
	prefilled              bool // its cache holds prompt + generated tokens
	units                  int  // pool units allocated
	admitted               int  // admission order, for preemption
}

// requests draws w's requests, each prompt at most maxLen − 1 tokens and each prompt and output
// together at most maxLen (an output drawn longer is cut, as a server's length limit cuts it).
func (w Workload) requests(maxLen int) ([]*request, error) {
	if err := w.Prompt.check("prompt"); err != nil {
		return nil, err
	}
	if err := w.Output.check("output"); err != nil {
		return nil, err
	}
	if w.Requests < 1 || w.Rate < 0 || math.IsInf(w.Rate, 0) || math.IsNaN(w.Rate) {
		return nil, fmt.Errorf("serving: a workload needs at least 1 request and a rate ≥ 0, not %d and %g", w.Requests, w.Rate)
	}
	r := rand.New(rand.NewPCG(w.Seed, 0x5e7e))
	var rs []*request
	t := 0.0
	for i := range w.Requests {
		if w.Rate > 0 && i > 0 {
			if t += r.ExpFloat64() / w.Rate; math.IsInf(t, 0) {
				return nil, fmt.Errorf("serving: a rate of %g requests/s puts arrivals past the largest time", w.Rate)
			}
		}
		p := min(w.Prompt.draw(r), maxLen-1)
		o := min(w.Output.draw(r), maxLen-p)
		rs = append(rs, &request{id: i, arrival: t, prompt: p, output: o})
	}
	return rs, nil
}

// MaxSteps is an upper bound on the engine steps Simulate takes to serve w on a server whose longest
// sequence is maxLen tokens: the output tokens of w's requests, since every step yields at least one
// token of some request and a preempted request keeps the tokens it has. (A step of a batch of one
// costs the simulator as much as a step of many, so this, not the tokens over the batch, bounds its
// time when memory holds one request at a time.) The error is the workload's, as Simulate's.
func (w Workload) MaxSteps(maxLen int) (int, error) {
	rs, err := w.requests(maxLen)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rs {
		n += r.output
	}
	return n, nil
}
