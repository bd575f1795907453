package experiment

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseSIMT(t *testing.T) {
	s, err := ParseSIMT("kernels: [naive, smem]\nn: 64\ngpu: t4\nblock: [16, 16]\ntile: 16\n")
	if err != nil || s.N != 64 || s.GPU.Name != "T4" || strings.Join(s.Kernels, ",") != "naive,smem" || s.Shape.Block.X != 16 || s.Shape.Tile != 16 {
		t.Fatalf("got %+v, %v", s, err)
	}
	for src, want := range map[string]string{
		"kernels: [naive]\nn: 1024":         "line 2: n is 1024",
		"kernels: [fast]\nn: 8":             `line 1: unknown emulated kernel "fast"`,
		"kernels: [naive]\nn: 8\ngpu: V100": `line 3: unknown GPU "V100"`,
		"kernels: [naive]\nsize: 8":         `unknown key "size"`,
		"kernels: [naive]":                  "needs `kernels: [...]` and `n: N`",
	} {
		_, err := ParseSIMT(src)
		var se *SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}

func TestRunSIMT(t *testing.T) {
	s, _ := ParseSIMT("kernels: [naive, coalesced, smem, regblock]\nn: 48\ngpu: A100 SXM")
	var got []SIMTResult
	if err := RunSIMT(context.Background(), s, func(r SIMTResult) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("got %d results", len(got))
	}
	for _, r := range got {
		if !r.Correct || r.FLOPs < 2*48*48*48 || // tiled kernels also multiply their zero padding
			r.GPU != "A100 SXM" || !(r.ModelledSeconds > 0) || r.Bound == "" {
			t.Errorf("result %+v", r)
		}
	}
	if !(got[0].BytesMoved > got[1].BytesMoved && got[1].BytesMoved > got[2].BytesMoved) {
		t.Errorf("bytes moved naive %d, coalesced %d, smem %d: want each rung to move less", got[0].BytesMoved, got[1].BytesMoved, got[2].BytesMoved)
	}
}
