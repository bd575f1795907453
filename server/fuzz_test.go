package server

import (
	"context"
	"sync"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
)

var (
	fuzzServerOnce sync.Once
	fuzzServer     *Server
	fuzzServerErr  error
)

// FuzzHandleFrame feeds whole websocket frames to the frame handler of a server (its run queue not
// running, so nothing is measured): whatever a frame holds, handling it must not panic, every reply
// has a known type and an id no longer than the limit, errors say something, and closing the
// connection frees every run it queued.
func FuzzHandleFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"run","id":"a","lesson":"counting-flops","cell":"counting-flops-0","source":"kernels: [ikj]\nsizes: [8]"}`,
		`{"type":"run","id":"b","lesson":"first-cuda-kernel","cell":"first-cuda-kernel-0","source":"kernel: k\nsizes: [8]\n---\nk(","action":"ptx"}`,
		`{"type":"run","id":"c","lesson":"tpus-and-systolic-arrays","cell":"tpus-and-systolic-arrays-0","source":"array: 4\nm: 4\nn: 4\nk: 4"}`,
		`{"type":"cancel","id":"a"}`,
		`{"type":"replay","id":"r","run":1}`,
		`{"type":"replay","id":"r","run":-5}`,
		`{"type":"save","lesson":"counting-flops","cell":"counting-flops-0","source":"kernels: [naive]"}`,
		`{"type":"result","id":"a","result":{"adapter":{}}}`,
		`{"type":"result","id":"zz","result":null}`,
		`{"type":"result","result":"x"}`,
		`{"type":"run","id":"","source":""}`,
		`{"type":"run"`,
		`[1,2,3]`,
		`{"type":"run","id":"d","lesson":"many-gpus","cell":"many-gpus-0","source":"gradient_mb: 1\ngpus: [2]\nlinks: {a: 1}","action":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		fuzzServerOnce.Do(func() {
			fuzzServer, fuzzServerErr = New(Config{Config: machine.Config{Devices: func(context.Context) nvidia.Report {
				return nvidia.Report{Unavailable: "no CUDA device: fuzzing"}
			}}})
		})
		if fuzzServerErr != nil {
			t.Fatal(fuzzServerErr)
		}
		s := fuzzServer
		ctx, cancel := context.WithCancelCause(context.Background())
		c := &conn{s: s, student: s.local, client: "fuzz", out: make(chan Message, sendBuffer), ctx: ctx, cancel: cancel, jobs: map[string]*job{}}
		c.handleSafely(frame)
		c.close(errDisconnect)
		s.cancelRunsOf(c.client, errDisconnect) // its owner gone past the grace period
		close(c.out)
		for m := range c.out {
			switch m.Type {
			case TypeQueued, TypeError, TypeCancelled:
			default:
				t.Fatalf("reply of type %q to a frame with no run started", m.Type)
			}
			if m.Type == TypeError && m.Message == "" || len(m.ID) > maxIDLen {
				t.Fatalf("reply %+v", m)
			}
			if m.Type == TypeError && len(m.Message) > 2000 && m.ID == "" {
				t.Fatalf("an error about a frame of %d bytes", len(m.Message))
			}
		}
		s.shares.mu.Lock()
		left := s.shares.byClient["fuzz"]
		s.shares.mu.Unlock()
		// The rate bucket may stay until it has refilled (so that reconnecting does not reset it);
		// connections and runs may not.
		if left != nil && (left.conns != 0 || left.runs != 0) {
			t.Fatalf("closing the connection left %+v of its share", *left)
		}
		s.queue.mu.Lock()
		waiting := s.queue.exclusive.len() + s.queue.shared.len()
		s.queue.mu.Unlock()
		if waiting != 0 {
			t.Fatalf("closing the connection left %d runs in the line", waiting)
		}
	})
}
