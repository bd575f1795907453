package cells

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// Every shorthand of Events emits one Event, which goes through JSON (as on the websocket and the
// NATS wire) and back unchanged.
func TestEventsRoundTrip(t *testing.T) {
	var evs []Event
	e := Events(func(ev Event) { evs = append(evs, ev) })
	e.Progress(3, 7)
	e.Note("warning", "noisy")
	e.Table(Table{ID: "t", Caption: "c", Columns: []Column{{Label: "n", Key: true}, {Label: "time", Unit: "s", Primary: true}}})
	e.Row(Row{Table: "t", Values: []any{"a", 1.5}, Bad: true})
	e.Chart(func() (string, error) { return "<svg/>", nil })
	e.Frames(map[string]any{"k": 1.0}, "f")
	e.Text("PTX", "body\nline")
	e.Emit(PlacedEvent("lab-1", "lab-1, 4 cores"))
	types := []string{TypeProgress, TypeNote, TypeTable, TypeRow, TypeChart, TypeFrames, TypeText, TypeNote}
	if len(evs) != len(types) {
		t.Fatalf("%d events for %d emitter calls", len(evs), len(types))
	}
	for i, ev := range evs {
		if ev.Type != types[i] {
			t.Errorf("event %d is a %q, want %q", i, ev.Type, types[i])
		}
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var back Event
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, ev) {
			t.Errorf("%s came back as %+v, want %+v", data, back, ev)
		}
	}
}

// dirty is what fill puts in every string: a chart that passes the SVG allow-list, with what no
// page may show (a bidi override, a zero-width space, a line separator: characters XML allows) and a
// "this server" in it.
const dirty = `<svg xmlns="http://www.w3.org/2000/svg"><text>on this server` + "\u202e\u200b\u2028" + `</text></svg>`

// fill sets every field of v, through pointers, slices, interfaces and structs, to a value Clean has
// to keep or bound: strings dirty, numbers not zero, bools true, lists of two.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(dirty)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(3)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i))
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf(dirty))
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	}
}

// leaves calls f with each field below v that fill would set, by its path, and its value.
func leaves(path string, v reflect.Value, f func(path string, v reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			f(path, v)
			return
		}
		leaves(path, v.Elem(), f)
	case reflect.Slice:
		if v.Len() == 0 {
			f(path+"[]", reflect.Value{})
		}
		for i := range v.Len() {
			leaves(path+"[]", v.Index(i), f)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			leaves(path+"."+v.Type().Field(i).Name, v.Field(i), f)
		}
	default:
		f(path, v)
	}
}

// eventTypes are the types a test tries: the constants, and the JSON name of every field of Body
// (so that a new field's type is tried before Clean knows it).
func eventTypes() []string {
	types := []string{TypeProgress, TypeNote, TypeTable, TypeRow, TypeChart, TypeFrames, TypeText}
	b := reflect.TypeFor[Body]()
	for i := range b.NumField() {
		name, _, _ := strings.Cut(b.Field(i).Tag.Get("json"), ",")
		if name == "" {
			name = strings.ToLower(b.Field(i).Name)
		}
		types = append(types, name)
	}
	return types
}

// Clean handles every field of Event: with every field of an event set to what a worker must not
// send (fill), each field comes out of Clean set, for the type it belongs to, and bounded: its
// strings printable. A field Clean drops for every type fails here.
func TestCleanHandlesEveryField(t *testing.T) {
	kept := map[string]bool{}
	var all Body
	fill(reflect.ValueOf(&all).Elem())
	leaves("", reflect.ValueOf(all), func(path string, _ reflect.Value) { kept[path] = false })
	for _, typ := range eventTypes() {
		ev := Event{Type: typ}
		fill(reflect.ValueOf(&ev.Body).Elem())
		out, ok := ev.Clean("gpu-box")
		if !ok {
			continue
		}
		if out.Type != typ {
			t.Errorf("a %s event came out a %s: %+v", typ, out.Type, out)
		}
		leaves("", reflect.ValueOf(out.Body), func(path string, v reflect.Value) {
			if !v.IsValid() || v.IsZero() {
				return
			}
			kept[path] = true
			switch v.Kind() {
			case reflect.String:
				for _, r := range v.String() {
					if !unicode.IsGraphic(r) && r != '\n' && r != '\t' {
						t.Errorf("%s of a %s event: %q reached the page", path, typ, v.String())
						break
					}
				}
			}
		})
	}
	for path, ok := range kept {
		if !ok {
			t.Errorf("Event.Clean drops the field %s for every type: handle it (keep it bounded, or clean it)", path)
		}
	}
}

// An event without its field, or of a type this version does not know, is dropped; a progress
// without numbers, or with negative ones, is 0 of 0; what a worker says of "this server" is said of it; a chart that is not
// SVG becomes a note saying it was left out.
func TestCleanDropsAndAttributes(t *testing.T) {
	for _, ev := range []Event{{Type: TypeNote}, {Type: TypeTable}, {Type: TypeRow}, {Type: TypeText}, {Type: "nonsense", Body: Body{SVG: "<svg/>"}}} {
		if out, ok := ev.Clean("w"); ok {
			t.Errorf("%+v came out as %+v, want it dropped", ev, out)
		}
	}
	for _, p := range []*Progress{nil, {Done: -1, Total: -5}} {
		if out, ok := (Event{Type: TypeProgress, Body: Body{Progress: p}}).Clean("w"); !ok || out.Progress == nil || *out.Progress != (Progress{}) {
			t.Errorf("the progress %+v came out %+v, %v; want 0 of 0", p, out, ok)
		}
	}
	note := Event{Type: TypeNote, Body: Body{Note: &Note{Level: "modal", Message: "Measured on This Server"}}}
	if out, _ := note.Clean("gpu-box"); *out.Note != (Note{Level: "info", Message: "Measured on the machine gpu-box"}) {
		t.Errorf("note came out %+v", *out.Note)
	}
	out, ok := Event{Type: TypeChart, Body: Body{SVG: "<html><script>x</script></html>"}}.Clean("gpu-box")
	if !ok || out.Type != TypeNote || out.Note.Level != "warning" || !strings.Contains(out.Note.Message, "a chart from gpu-box was left out") {
		t.Errorf("a chart that is not SVG came out %+v", out)
	}
}
