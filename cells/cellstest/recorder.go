// Package cellstest helps test cell kinds: Recorder is an Emitter that keeps everything a run emits.
package cellstest

import (
	"sync"

	"github.com/gpuplayground/playground/cells"
)

// Recorder is a cells.Emitter that keeps everything a run emits, for tests and tools. Chart draws each
// offered chart at once and keeps the last SVG (or the first drawing error).
type Recorder struct {
	mu        sync.Mutex
	Notes     []cells.Note
	Tables    []cells.Table
	Rows      []cells.Row
	Texts     []cells.Text
	Animation []any
	Done      [2]int
	Charts    int
	SVG       string
	ChartErr  error
	// Events are the events emitted by Emit (the shorthands' events are in the fields above).
	Events []cells.Event
}

// Emit records ev in Events, and an event of a shorthand as that shorthand does.
func (r *Recorder) Emit(ev cells.Event) {
	r.mu.Lock()
	r.Events = append(r.Events, ev)
	r.mu.Unlock()
	switch b := ev.Body; ev.Type {
	case cells.TypeProgress:
		if b.Progress != nil {
			r.Progress(b.Done, b.Total)
		}
	case cells.TypeNote:
		if b.Note != nil {
			r.Note(b.Note.Level, b.Note.Message)
		}
	case cells.TypeTable:
		if b.Table != nil {
			r.Table(*b.Table)
		}
	case cells.TypeRow:
		if b.Row != nil {
			r.Row(*b.Row)
		}
	case cells.TypeChart:
		r.Chart(func() (string, error) { return b.SVG, nil })
	case cells.TypeFrames:
		r.Frames(b.Frames...)
	case cells.TypeText:
		if b.Text != nil {
			r.Text(b.Text.Title, b.Text.Body)
		}
	}
}

func (r *Recorder) Progress(done, total int) {
	r.mu.Lock()
	r.Done = [2]int{done, total}
	r.mu.Unlock()
}
func (r *Recorder) Note(level, text string) {
	r.mu.Lock()
	r.Notes = append(r.Notes, cells.Note{Level: level, Message: text})
	r.mu.Unlock()
}
func (r *Recorder) Table(t cells.Table) { r.mu.Lock(); r.Tables = append(r.Tables, t); r.mu.Unlock() }
func (r *Recorder) Row(row cells.Row)   { r.mu.Lock(); r.Rows = append(r.Rows, row); r.mu.Unlock() }
func (r *Recorder) Text(title, body string) {
	r.mu.Lock()
	r.Texts = append(r.Texts, cells.Text{Title: title, Body: body})
	r.mu.Unlock()
}
func (r *Recorder) Frames(frames ...any) {
	r.mu.Lock()
	r.Animation = append(r.Animation, frames...)
	r.mu.Unlock()
}
func (r *Recorder) Chart(draw func() (string, error)) {
	svg, err := draw()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Charts++
	if err != nil && r.ChartErr == nil {
		r.ChartErr = err
	}
	r.SVG = svg
}

// RowsOf returns the rows of table id.
func (r *Recorder) RowsOf(id string) []cells.Row {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []cells.Row
	for _, row := range r.Rows {
		if row.Table == id {
			out = append(out, row)
		}
	}
	return out
}
