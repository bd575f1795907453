package cluster

import (
	"encoding/json"

	"github.com/nats-io/nats.go"
	"testing"
)

// FuzzEvent feeds arbitrary event messages to the server's relay: none may panic, and a valid one
// reaches the emitter.
func FuzzEvent(f *testing.F) {
	for _, seed := range []string{
		`{"type":"progress","done":1,"total":2}`,
		`{"type":"note","note":{"level":"info","message":"hi"}}`,
		`{"type":"table","table":{"id":"t","caption":"c","columns":[{"label":"n"}]}}`,
		`{"type":"row","row":{"table":"t","values":[1,"a",null]}}`,
		`{"type":"chart","svg":"<svg/>"}`,
		`{"type":"frames","frames":[{"a":1},2]}`,
		`{"type":"text","text":{"title":"PTX","body":"..."}}`,
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
		relay(ev, rec, "w")
		if ev.Type == evProgress && len(rec.events) != 1 {
			t.Errorf("a progress event became %q", rec.events)
		}
	})
}

// FuzzHello feeds arbitrary announcements to the server, on the subject of the id they name: none
// may panic, one without an id is ignored, and a worker's slots are 1 to MaxSlots whatever it
// announced.
func FuzzHello(f *testing.F) {
	f.Add([]byte(`{"id":"a","name":"a","cpu":"x","cores":2,"gpus":["g"],"class":"lab"}`))
	f.Add([]byte(`{"id":""}`))
	f.Add([]byte(`{"gpus":null,"id":"b","cores":-1}`))
	f.Add([]byte(`{"id":"c","slots":-7}`))
	f.Add([]byte(`{"id":"d","slots":99999999999}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Cluster{workers: map[string]*worker{}, changed: make(chan struct{})}
		var m Machine
		_ = json.Unmarshal(data, &m)
		c.hello(&nats.Msg{Subject: SubjectHello + m.ID, Data: data})
		if json.Unmarshal(data, &m) != nil || m.ID == "" {
			if len(c.workers) != 0 {
				t.Errorf("%q was taken as a worker", data)
			}
			return
		}
		w := c.workers[m.ID]
		_ = w.m.Summary()
		if w.slots < 1 || w.slots > MaxSlots {
			t.Errorf("%q: %d slots", data, w.slots)
		}
	})
}
