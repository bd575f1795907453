package machine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// boom is a kind whose runs panic, or, with the source "light", time nothing and note the limits.
type boom struct{ env cells.Env }

func (boom) Name() string   { return "boom" }
func (boom) Script() string { return "" }
func (k boom) Parse(c cells.Cell) (cells.Run, error) {
	if c.Source == "bad" {
		return nil, errors.New("bad source")
	}
	return boomRun{k.env, c.Source == "light"}, nil
}

type boomRun struct {
	env   cells.Env
	light bool
}

func (boomRun) Estimate() time.Duration { return time.Millisecond }
func (r boomRun) Exclusive() bool       { return !r.light }
func (r boomRun) Run(ctx context.Context, e cells.Emitter) error {
	if !r.light {
		panic("kaboom")
	}
	e.Note("info", r.env.Here())
	return nil
}

// A machine builds its kinds once with its environment; it parses by kind name, says which kinds
// it lacks, runs a run through its gate, and turns a panic into the run's error naming it.
func TestMachineParsesAndRuns(t *testing.T) {
	built := 0
	m := New(context.Background(), Config{Name: "box", Slots: 1,
		Kinds:   func(env cells.Env) []cells.Kind { built++; return []cells.Kind{boom{env}} },
		Devices: func(context.Context) nvidia.Report { return nvidia.Report{Unavailable: "none (test)"} }})
	defer m.Close()
	if built != 1 || m.Env.Limits != harness.DefaultLimits() || m.Env.Machine != "box" || m.Gate.Slots() != 1 {
		t.Fatalf("built %d times, env %+v, %d slots", built, m.Env, m.Gate.Slots())
	}
	if _, err := m.Parse("matmul", "", cells.Cell{}); err == nil || !strings.Contains(err.Error(), "the machine box cannot run matmul cells") {
		t.Errorf("an unknown kind: %v", err)
	}
	if _, err := m.Parse("boom", "", cells.Cell{Source: "bad"}); err == nil || err.Error() != "on box: bad source" {
		t.Errorf("a bad source: %v", err)
	}
	r, err := m.Parse("boom", "", cells.Cell{Source: "light"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := m.Run(context.Background(), r, notes(&got)); err != nil || len(got) != 1 || got[0] != "note info the machine box" {
		t.Errorf("a light run: %v, %q", err, got)
	}
	r, _ = m.Parse("boom", "", cells.Cell{Source: "heavy"})
	if err := m.Run(context.Background(), r, notes(&got)); err == nil || err.Error() != "internal error on box: kaboom" {
		t.Errorf("a panic: %v", err)
	}
	if ok, _ := m.Gate.TryEnter(true); !ok {
		t.Error("the gate was not left after the runs")
	}
}

// notes is an emitter that keeps each note as "note LEVEL MESSAGE" in got.
func notes(got *[]string) cells.Emitter {
	return cells.Events(func(ev cells.Event) {
		if ev.Note != nil {
			*got = append(*got, "note "+ev.Note.Level+" "+ev.Note.Message)
		}
	})
}

// slowKind prices every run at the source's duration and refuses one over its environment's run
// time limit, as the built-in kinds refuse a run estimated over it.
type slowKind struct{ env cells.Env }

func (slowKind) Name() string   { return "slow" }
func (slowKind) Script() string { return "" }
func (k slowKind) Parse(c cells.Cell) (cells.Run, error) {
	d, err := time.ParseDuration(c.Source)
	if err != nil {
		return nil, err
	}
	if d > k.env.Limits.RunTimeout {
		return nil, fmt.Errorf("estimated at %s, over the %s run time limit", d, k.env.Limits.RunTimeout)
	}
	return boomRun{k.env, true}, nil
}

// ParseWithin parses under the time limit it is given, not the machine's own, and keeps the
// machine's other limits; no limit is the machine's own.
func TestParseWithinTakesTheGivenTimeLimit(t *testing.T) {
	var envs []cells.Env
	m := New(context.Background(), Config{Name: "box", Limits: harness.Limits{MemoryBytes: 1 << 20},
		Kinds:   func(env cells.Env) []cells.Kind { envs = append(envs, env); return []cells.Kind{slowKind{env}} },
		Devices: func(context.Context) nvidia.Report { return nvidia.Report{Unavailable: "none (test)"} }})
	defer m.Close()
	if _, err := m.Parse("slow", "", cells.Cell{Source: "3m"}); err == nil || !strings.Contains(err.Error(), "over the 2m0s run time limit") {
		t.Errorf("3m under the machine's own limit: %v, want refused over 2m0s", err)
	}
	if _, err := m.ParseWithin("slow", "", cells.Cell{Source: "3m"}, 5*time.Minute); err != nil {
		t.Errorf("3m within 5m: %v", err)
	}
	if got, want := envs[len(envs)-1].Limits.MemoryBytes, int64(1<<20); got != want {
		t.Errorf("memory limit within 5m: %d, want the machine's own %d", got, want)
	}
	if _, err := m.ParseWithin("slow", "", cells.Cell{Source: "6m"}, 5*time.Minute); err == nil || !strings.Contains(err.Error(), "over the 5m0s run time limit") {
		t.Errorf("6m within 5m: %v, want refused over 5m0s", err)
	}
	if _, err := m.ParseWithin("slow", "", cells.Cell{Source: "3m"}, 0); err == nil {
		t.Error("3m with no limit given ran, want the machine's own 2m0s")
	}
}

// framesRun emits n frames and a progress event at once, as a run that animates does.
type framesRun struct{ n int }

func (framesRun) Estimate() time.Duration { return time.Millisecond }
func (framesRun) Exclusive() bool         { return false }
func (r framesRun) Run(_ context.Context, e cells.Emitter) error {
	for i := range r.n {
		e.Progress(i, r.n)
		e.Frames(i)
	}
	e.Progress(r.n, r.n)
	return nil
}

// The one in-process runner (Local) holds its machine's gate for the slot it gives, runs the run as
// it was parsed with its events paced (frames in batches, progress thinned, the last always), and
// with Reparse parses the job again under the machine's own limits first, as a worker does.
func TestLocalRunsPacedAndReparses(t *testing.T) {
	m := New(context.Background(), Config{Name: "box", Slots: 1,
		Kinds:   func(env cells.Env) []cells.Kind { return []cells.Kind{slowKind{env}} },
		Devices: func(context.Context) nvidia.Report { return nvidia.Report{Unavailable: "none (test)"} }})
	defer m.Close()
	l := NewLocal(m)
	s, ok, _, err := l.TryAcquire(framesRun{})
	if !ok || err != nil {
		t.Fatalf("TryAcquire on a free machine: %v, %v", ok, err)
	}
	if ok, _ := m.Gate.TryEnter(false); ok {
		t.Error("the gate let a second run in beside the slot of its one")
	}
	var evs []cells.Event
	n := 2 * cells.FramesPerBatch
	if err := s.Execute(context.Background(), Job{}, framesRun{n}, cells.Events(func(ev cells.Event) { evs = append(evs, ev) })); err != nil {
		t.Fatal(err)
	}
	s.Release()
	frames, progress := 0, 0
	for _, ev := range evs {
		switch ev.Type {
		case cells.TypeFrames:
			frames++
		case cells.TypeProgress:
			progress++
		}
	}
	if last := evs[len(evs)-1]; frames != 2 || progress >= n || last.Progress == nil || last.Done != n {
		t.Errorf("%d frame batches, %d progress events, last %+v; want 2 batches, progress thinned, the last done", frames, progress, last)
	}
	j := Job{Kind: "slow", Cell: cells.Cell{Source: "3m"}}
	lifted, err := m.KindsWithRates(nil)[0].Parse(j.Cell) // priced without the time limit, as a front of several machines parses
	if err != nil {
		t.Fatal(err)
	}
	l.Reparse = true
	if err := l.Execute(context.Background(), j, lifted, cells.Events(func(cells.Event) {})); err == nil || !strings.Contains(err.Error(), "over the 2m0s run time limit") {
		t.Errorf("a 3m run parsed again under this machine's 2m limit: %v, want refused", err)
	}
}

// The Hopper rungs are sent to the worker only on an sm_90 server; on another GPU cells emulate
// them (their Unavailable names the GPU), while the other GPU kernels are remote on both.
func TestMachineOffersHopperRungsOnSM90(t *testing.T) {
	for _, cc := range []int{90, 80} {
		m := New(context.Background(), Config{Name: "box", Slots: 1, Kinds: func(cells.Env) []cells.Kind { return nil },
			Devices: func(context.Context) nvidia.Report {
				return nvidia.Report{Devices: []nvidia.Device{{Name: "GPU (test)", ComputeCapability: cc}}}
			}})
		m.Close()
		remote := map[string]bool{}
		for _, k := range m.Env.Kernels {
			remote[k.Name] = k.Remote
		}
		if got, want := remote["cuda-wgmma-tma"], cc == 90; got != want || !remote["cuda-mma"] {
			t.Errorf("sm_%d: cuda-wgmma-tma remote %v, want %v; cuda-mma remote %v", cc, got, want, remote["cuda-mma"])
		}
	}
}
