package numeric

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestRelFrobenius(t *testing.T) {
	tests := []struct {
		got  []float64
		want []float64
		rel  float64
	}{
		{[]float64{1, 2}, []float64{1, 2}, 0},
		{[]float64{0, 0}, []float64{3, 4}, 1},
		{[]float64{3, 5}, []float64{3, 4}, 0.2},
		{[]float64{0}, []float64{0}, 0},
	}
	for _, tt := range tests {
		if got := RelFrobenius(tt.got, tt.want); got != tt.rel {
			t.Errorf("RelFrobenius(%v, %v) = %v, want %v", tt.got, tt.want, got, tt.rel)
		}
	}
	nan := []float32{float32(nanF())}
	if got := RelFrobenius(nan, []float64{1}); got <= 1 {
		t.Errorf("NaN result: got %v, want +Inf", got)
	}
}

func nanF() float64 { var z float64; return z / z }

func TestMeasure(t *testing.T) {
	calls := 0
	var dones []int
	tm, err := Measure(context.Background(), 4, func(context.Context) error {
		calls++
		time.Sleep(time.Duration(calls) * time.Millisecond)
		return nil
	}, func(d int) { dones = append(dones, d) })
	if err != nil {
		t.Fatal(err)
	}
	if calls != 5 {
		t.Errorf("got %d calls, want 5 (1 warm-up + 4 timed)", calls)
	}
	if got, want := fmt.Sprint(dones), "[1 2 3 4 5]"; got != want {
		t.Errorf("progress calls %s, want %s", got, want)
	}
	if len(tm.Samples) != 4 || !(tm.Min <= tm.Median && tm.Median <= tm.Max) || tm.Min < 0.002 {
		t.Errorf("timing %+v: want 4 samples ≥ 2ms with min ≤ median ≤ max", tm)
	}
	boom := errors.New("boom")
	if _, err := Measure(context.Background(), 3, func(context.Context) error { return boom }, nil); !errors.Is(err, boom) {
		t.Errorf("got %v, want boom", err)
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tt.in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
