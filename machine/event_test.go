package machine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/gpuplayground/playground/cells"
)

// calls records an emitter's calls as text.
type calls []string

func (c *calls) add(s string, args ...any) { *c = append(*c, fmt.Sprintf(s, args...)) }

func (c *calls) Progress(done, total int) { c.add("progress %d/%d", done, total) }
func (c *calls) Note(level, text string)  { c.add("note %s %s", level, text) }
func (c *calls) Table(t cells.Table)      { c.add("table %+v", t) }
func (c *calls) Row(r cells.Row)          { c.add("row %+v", r) }
func (c *calls) Frames(frames ...any)     { c.add("frames %v", frames) }
func (c *calls) Text(title, body string)  { c.add("text %s %s", title, body) }
func (c *calls) Chart(draw func() (string, error)) {
	svg, err := draw()
	c.add("chart %s %v", svg, err)
}

// Every event a run emits becomes one Event (Events) that goes through JSON, as on the NATS wire,
// and back into the same emitter call (Emit).
func TestEventsRoundTrip(t *testing.T) {
	emit := func(e cells.Emitter) {
		e.Progress(3, 7)
		e.Note("warning", "noisy")
		e.Table(cells.Table{ID: "t", Caption: "c", Columns: []cells.Column{{Label: "n"}, {Label: "time", Unit: "s"}}})
		e.Row(cells.Row{Table: "t", Values: []any{"a", 1.5}, Bad: true})
		e.Chart(func() (string, error) { return "<svg/>", nil })
		e.Frames(map[string]any{"k": 1.0}, "f")
		e.Text("PTX", "body\nline")
	}
	var want, got calls
	emit(&want)
	var evs []Event
	emit(Events(func(ev Event) { evs = append(evs, ev) }))
	if len(evs) != len(want) {
		t.Fatalf("%d events for %d emitter calls", len(evs), len(want))
	}
	for _, ev := range evs {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var back Event
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		Emit(back, &got)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replayed\n%q\nwant\n%q", got, want)
	}
}

// An event without its field, or of a type this version does not know, is dropped; a progress
// without numbers is 0 of 0.
func TestEmitDropsEmptyEvents(t *testing.T) {
	var got calls
	for _, ev := range []Event{{Type: TypeNote}, {Type: TypeTable}, {Type: TypeRow}, {Type: TypeText}, {Type: "nonsense"}, {Type: TypeProgress}} {
		Emit(ev, &got)
	}
	if want := (calls{"progress 0/0"}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
