package machine

import (
	"context"
	"errors"
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
	var got calls
	if err := m.Run(context.Background(), r, &got); err != nil || len(got) != 1 || got[0] != "note info the machine box" {
		t.Errorf("a light run: %v, %q", err, got)
	}
	r, _ = m.Parse("boom", "", cells.Cell{Source: "heavy"})
	if err := m.Run(context.Background(), r, &got); err == nil || err.Error() != "internal error on box: kaboom" {
		t.Errorf("a panic: %v", err)
	}
	if ok, _ := m.Gate.TryEnter(true); !ok {
		t.Error("the gate was not left after the runs")
	}
}
