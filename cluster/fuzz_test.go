package cluster

import (
	"encoding/json"
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/internal/untrusted"
	"github.com/gpuplayground/playground/machine"
)

// FuzzEvent feeds arbitrary event messages to the server's relay: none may panic, a valid one
// reaches the emitter, and every string that reaches it is printable (newlines and tabs only in a
// note's message and a text's body) with a level the page knows.
func FuzzEvent(f *testing.F) {
	for _, seed := range []string{
		`{"type":"progress","done":1,"total":2}`,
		`{"type":"note","note":{"level":"info","message":"hi"}}`,
		`{"type":"table","table":{"id":"t","caption":"c","columns":[{"label":"n"}]}}`,
		`{"type":"row","row":{"table":"t","values":[1,"a",null]}}`,
		`{"type":"chart","svg":"<svg/>"}`,
		`{"type":"frames","frames":[{"a":1},2]}`,
		`{"type":"text","text":{"title":"PTX","body":"..."}}`,
		`{"type":"note","note":{"level":"modal","message":"\u001b[2J on this server\u202e"}}`,
		`{"type":"row","row":{"table":"t\n","values":["\u001b[31m",{"a\u2028":["\u0000"]}]}}`,
		`{"type":"note"}`, `{"type":"row"}`, `{"type":"end","error":"x"}`, `[]`, `{"type":7}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev event
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		rec := &recorder{}
		relay(ev.Event, rec, "w")
		if ev.Type == machine.TypeProgress && len(rec.events) != 1 {
			t.Errorf("a progress event became %q", rec.events)
		}
		var got cellstest.Recorder
		if json.Unmarshal(data, &ev) == nil {
			relay(ev.Event, &got, "w")
		}
		lines := []string{fmt.Sprint(got.Rows), fmt.Sprint(got.Animation)}
		for _, tb := range got.Tables {
			lines = append(lines, tb.ID, tb.Caption, fmt.Sprint(tb.Columns))
		}
		texts := []string{}
		for _, n := range got.Notes {
			lines = append(lines, n.Level)
			texts = append(texts, n.Message)
			if n.Level != "info" && n.Level != "warning" && n.Level != "error" {
				t.Errorf("note level %q", n.Level)
			}
		}
		for _, x := range got.Texts {
			lines = append(lines, x.Title)
			texts = append(texts, x.Body)
		}
		for _, s := range lines {
			if !printable(s, false) {
				t.Errorf("%q reached the page from %q", s, data)
			}
		}
		for _, s := range texts {
			if !printable(s, true) {
				t.Errorf("%q reached the page from %q", s, data)
			}
		}
	})
}

// FuzzHello feeds arbitrary announcements to the server, on the subject of the id they name: none
// may panic, one without an id is ignored, a worker's slots are 1 to MaxSlots whatever it
// announced, and every string of it the server shows is printable, on one line, and bounded.
func FuzzHello(f *testing.F) {
	f.Add([]byte(`{"id":"a","name":"a","cpu":"x","cores":2,"gpus":["g"],"class":"lab"}`))
	f.Add([]byte(`{"id":""}`))
	f.Add([]byte(`{"gpus":null,"id":"b","cores":-1}`))
	f.Add([]byte(`{"id":"c","slots":-7}`))
	f.Add([]byte(`{"id":"d","slots":99999999999}`))
	f.Add([]byte(`{"id":"e","name":"\u001b[2J\u001b[Hmachine joined: x\nfake","gpus":["H100\u202e"],"kinds":["a\r"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Cluster{names: dn, workers: map[string]*worker{}, changed: make(chan struct{})}
		var m Machine
		_ = json.Unmarshal(data, &m)
		c.hello(&nats.Msg{Subject: dn.Hello() + m.ID, Data: data})
		if json.Unmarshal(data, &m) != nil || m.ID == "" {
			if len(c.workers) != 0 {
				t.Errorf("%q was taken as a worker", data)
			}
			return
		}
		w := c.workers[m.ID]
		if w.gate.Slots() < 1 || w.gate.Slots() > MaxSlots {
			t.Errorf("%q: %d slots", data, w.gate.Slots())
		}
		strs := append([]string{w.m.Name, w.m.Class, w.m.CPU, w.m.OS, w.m.Arch, w.m.Compiler, w.m.GPUUnavailable, w.m.Summary()}, w.m.GPUs...)
		for _, s := range append(strs, w.m.Kinds...) {
			if !printable(s, false) || utf8.RuneCountInString(s) > 2*untrusted.MaxLine+maxList*(maxFieldLen+3) {
				t.Errorf("%q: the server shows %q", data, s)
			}
		}
		if len(w.m.GPUs) > maxList || len(w.m.Kinds) > maxList || w.m.Cores < 0 {
			t.Errorf("%q: %d GPUs, %d kinds, %d cores", data, len(w.m.GPUs), len(w.m.Kinds), w.m.Cores)
		}
	})
}
