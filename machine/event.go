package machine

import (
	"github.com/gpuplayground/playground/cells"
)

// Event types: one per cells.Emitter event. The websocket's messages (server.Message) and the NATS
// wire (package cluster) carry them under these names.
const (
	TypeProgress = "progress"
	TypeNote     = "note"
	TypeTable    = "table"
	TypeRow      = "row"
	TypeChart    = "chart"
	TypeFrames   = "frames"
	TypeText     = "text"
)

// Event is one event of a run, the one type every transport streams: the server turns it into a
// websocket message by adding the run's id (server.Message embeds Body), and a worker publishes it
// on NATS as it is. A new event is a new Type, its field in Body, its case in Events and Emit, and
// the page's code for it.
type Event struct {
	Type string `json:"type"`
	Body
}

// Body is an event's content: the one field of its Type is set.
type Body struct {
	*Progress             // progress
	Note      *cells.Note `json:"note,omitempty"` // note
	// RanOn, on the note "Ran on …", is the name of the machine that runs the run (cells.Placer).
	RanOn  string       `json:"ran_on,omitempty"`
	Table  *cells.Table `json:"table,omitempty"`  // table
	Row    *cells.Row   `json:"row,omitempty"`    // row
	SVG    string       `json:"svg,omitempty"`    // chart: a complete SVG document
	Frames []any        `json:"frames,omitempty"` // frames: animation frames for the kind's module
	Text   *cells.Text  `json:"text,omitempty"`   // text
}

// Progress is the body of a progress event: done of total units of work finished.
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// Events is a cells.Emitter that hands each event, as it comes, to the func as an Event. Put a
// cells.Paced in front of it to pace a run's events; charts are drawn when offered.
type Events func(Event)

func (f Events) Progress(done, total int) {
	f(Event{Type: TypeProgress, Body: Body{Progress: &Progress{Done: done, Total: total}}})
}

func (f Events) Note(level, text string) {
	f(Event{Type: TypeNote, Body: Body{Note: &cells.Note{Level: level, Message: text}}})
}

func (f Events) Table(t cells.Table) { f(Event{Type: TypeTable, Body: Body{Table: &t}}) }

func (f Events) Row(r cells.Row) { f(Event{Type: TypeRow, Body: Body{Row: &r}}) }

func (f Events) Chart(draw func() (string, error)) {
	if svg, err := draw(); err == nil {
		f(Event{Type: TypeChart, Body: Body{SVG: svg}})
	}
}

func (f Events) Frames(frames ...any) { f(Event{Type: TypeFrames, Body: Body{Frames: frames}}) }

func (f Events) Text(title, body string) {
	f(Event{Type: TypeText, Body: Body{Text: &cells.Text{Title: title, Body: body}}})
}

// Placed is the note "Ran on SUMMARY." with the machine's name (cells.Placer).
func Placed(name, summary string) Event {
	return Event{Type: TypeNote, Body: Body{Note: &cells.Note{Level: "info", Message: "Ran on " + summary + "."}, RanOn: name}}
}

// Emit replays ev into e, the reverse of Events: a run's events streamed from another process go on
// into the emitter of the run they belong to. An event without its field, or of a type this
// version does not know, is dropped.
func Emit(ev Event, e cells.Emitter) {
	switch b := ev.Body; ev.Type {
	case TypeProgress:
		var p Progress
		if b.Progress != nil {
			p = *b.Progress
		}
		e.Progress(p.Done, p.Total)
	case TypeNote:
		if b.Note != nil {
			e.Note(b.Note.Level, b.Note.Message)
		}
	case TypeTable:
		if b.Table != nil {
			e.Table(*b.Table)
		}
	case TypeRow:
		if b.Row != nil {
			e.Row(*b.Row)
		}
	case TypeChart:
		e.Chart(func() (string, error) { return b.SVG, nil })
	case TypeFrames:
		e.Frames(b.Frames...)
	case TypeText:
		if b.Text != nil {
			e.Text(b.Text.Title, b.Text.Body)
		}
	}
}
