package cells

import (
	"fmt"

	"github.com/gpuplayground/playground/internal/untrusted"
)

// Event types: one per kind of event a run emits. The websocket's messages (server.Message) and
// the NATS wire (package cluster) carry them under these names.
const (
	TypeProgress = "progress"
	TypeNote     = "note"
	TypeTable    = "table"
	TypeRow      = "row"
	TypeChart    = "chart"
	TypeFrames   = "frames"
	TypeText     = "text"
)

// Event is one event of a run, the one type every emitter, runner and transport streams: a run
// emits it (Emitter.Emit, or a shorthand such as Emitter.Note), the server turns it into a
// websocket message by adding the run's id (server.Message embeds Body), and a worker publishes it
// on NATS as it is. A new event is a Type and its field in Body, its case in Clean, the code that
// emits it (Emitter.Emit) and the page's code for it (static/app.js): this file, its producer and
// the page.
type Event struct {
	Type string `json:"type"`
	Body
}

// Body is an event's content: the one field of its Type is set.
type Body struct {
	*Progress       // progress
	Note      *Note `json:"note,omitempty"` // note
	// RanOn, on the note "Ran on …", is the name of the machine that runs the run (Placer).
	RanOn  string `json:"ran_on,omitempty"`
	Table  *Table `json:"table,omitempty"`  // table
	Row    *Row   `json:"row,omitempty"`    // row
	SVG    string `json:"svg,omitempty"`    // chart: a complete SVG document
	Frames []any  `json:"frames,omitempty"` // frames: animation frames for the kind's module
	Text   *Text  `json:"text,omitempty"`   // text
}

// Progress is the body of a progress event: done of total units of work finished.
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// Events is an Emitter that hands each event, as it comes, to the func. Put a Paced in front of it
// to pace a run's events; charts are drawn when offered.
type Events func(Event)

func (f Events) Emit(ev Event) { f(ev) }

func (f Events) Progress(done, total int) {
	f(Event{Type: TypeProgress, Body: Body{Progress: &Progress{Done: done, Total: total}}})
}

func (f Events) Note(level, text string) {
	f(Event{Type: TypeNote, Body: Body{Note: &Note{Level: level, Message: text}}})
}

func (f Events) Table(t Table) { f(Event{Type: TypeTable, Body: Body{Table: &t}}) }

func (f Events) Row(r Row) { f(Event{Type: TypeRow, Body: Body{Row: &r}}) }

func (f Events) Chart(draw func() (string, error)) {
	if svg, err := draw(); err == nil {
		f(Event{Type: TypeChart, Body: Body{SVG: svg}})
	}
}

func (f Events) Frames(frames ...any) { f(Event{Type: TypeFrames, Body: Body{Frames: frames}}) }

func (f Events) Text(title, body string) {
	f(Event{Type: TypeText, Body: Body{Text: &Text{Title: title, Body: body}}})
}

// PlacedEvent is the note "Ran on SUMMARY." with the machine's name (Placer).
func PlacedEvent(name, summary string) Event {
	return Event{Type: TypeNote, Body: Body{Note: &Note{Level: "info", Message: "Ran on " + summary + "."}, RanOn: name}}
}

// Clean is ev, an event from the machine named machine that is not trusted (a worker of the
// cluster), as a page may get it, and false when it is to be dropped (no field of its type, or a
// type this version does not know). Only the field of the event's type is kept; every string is
// cleaned and bounded (package untrusted), a note's level is one the page knows, captions, notes
// and titles that say "this server" say "the machine NAME" instead, numbers of progress are not
// negative, lists are cut to untrusted.MaxList, and a chart is written again through the SVG
// allow-list or replaced by a note saying it was left out. A field Clean does not handle fails
// TestCleanHandlesEveryField.
func (ev Event) Clean(machine string) (Event, bool) {
	b, out := ev.Body, Event{Type: ev.Type}
	line := func(s string) string { return untrusted.Line(s, untrusted.MaxLine) }
	said := func(s string) string { return untrusted.Attributed(s, machine) }
	switch ev.Type {
	case TypeProgress:
		p := Progress{}
		if b.Progress != nil {
			p = Progress{Done: max(b.Done, 0), Total: max(b.Total, 0)}
		}
		out.Progress = &p
	case TypeNote:
		if b.Note == nil {
			return out, false
		}
		out.Note = &Note{Level: untrusted.Level(b.Note.Level), Message: said(untrusted.Text(b.Note.Message, untrusted.MaxMessage))}
		if b.RanOn != "" { // a machine names no machine but itself
			out.RanOn = machine
		}
	case TypeTable:
		if b.Table == nil {
			return out, false
		}
		t := Table{ID: line(b.Table.ID), Caption: said(line(b.Table.Caption))}
		for _, c := range b.Table.Columns[:min(len(b.Table.Columns), untrusted.MaxList)] {
			t.Columns = append(t.Columns, Column{Label: line(c.Label), Unit: line(c.Unit), Primary: c.Primary, Key: c.Key})
		}
		out.Table = &t
	case TypeRow:
		if b.Row == nil {
			return out, false
		}
		r := Row{Table: line(b.Row.Table), Bad: b.Row.Bad, Values: b.Row.Values[:min(len(b.Row.Values), untrusted.MaxList)]}
		for i, v := range r.Values {
			r.Values[i] = untrusted.Value(v)
		}
		out.Row = &r
	case TypeChart:
		svg, err := untrusted.SVG(b.SVG)
		if err != nil {
			msg := fmt.Sprintf("a chart from %s was left out: it is not an SVG chart (%s)", machine, line(err.Error()))
			return Event{Type: TypeNote, Body: Body{Note: &Note{Level: "warning", Message: msg}}}, true
		}
		out.SVG = svg
	case TypeFrames:
		for i, f := range b.Frames {
			b.Frames[i] = untrusted.Value(f)
		}
		out.Frames = b.Frames
	case TypeText:
		if b.Text == nil {
			return out, false
		}
		out.Text = &Text{Title: said(line(b.Text.Title)), Body: untrusted.Text(b.Text.Body, untrusted.MaxText)}
	default:
		return out, false
	}
	return out, true
}
