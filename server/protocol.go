package server

import (
	"encoding/json"

	"github.com/gpuplayground/playground/cells"
)

// Message is the one wire type of the /ws websocket: every frame in either direction is one Message as
// a JSON text frame. docs/protocol.md describes it for client authors; the server knows no cell kind
// by name, so every kind's output travels in the generic event fields below.
//
// Client → server:
//
//	{"type":"run","id":"<client run id>","lesson":"<slug>","cell":"<cell id>","source":"<cell text>","action":"<optional>"}
//	{"type":"cancel","id":"<client run id>"}
//	{"type":"result","id":"<client run id>","result":<JSON>}   the answer to that run's task
//
// Server → client, each carrying the run's id:
//
//	queued   {position}                 1 = next to start; re-sent when the line moves
//	started  {estimate}                 the run's estimated duration in seconds (a guess, for a progress bar)
//	progress {done, total}
//	note     {note: {level, message}}
//	table    {table: {id, caption, columns: [{label, unit}]}}
//	row      {row: {table, values, bad}}
//	chart    {svg}                      at most every 250 ms, and once at the end
//	frames   {frames: […]}              animation frames for the kind's browser module, ≤ 20 a message
//	text     {text: {title, body}}
//	task     {task: <JSON>}             work for the kind's browser module; the run waits for a result
//	done | cancelled {message} | error {message}   exactly one of these ends every run
//
// An error about a frame that names no run (malformed JSON, a frame over 64 KiB) has an empty id.
type Message struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`

	*RunRequest // run
	*Progress   // progress

	Position int          `json:"position,omitempty"` // queued
	Estimate float64      `json:"estimate,omitempty"` // started: cells.Run.Estimate in seconds
	Note     *cells.Note  `json:"note,omitempty"`     // note
	Table    *cells.Table `json:"table,omitempty"`    // table
	Row      *cells.Row   `json:"row,omitempty"`      // row
	SVG      string       `json:"svg,omitempty"`      // chart
	Frames   []any        `json:"frames,omitempty"`   // frames
	Text     *cells.Text  `json:"text,omitempty"`     // text
	// Task is a run's work for the page (cells.Asker), its shape the kind's; Result is the page's
	// answer to it. Both are kept as raw JSON: the server only routes them.
	Task   json.RawMessage `json:"task,omitempty"`   // task
	Result json.RawMessage `json:"result,omitempty"` // result
	// Message explains an error (what to fix) or why a run was cancelled.
	Message string `json:"message,omitempty"`
}

// RunRequest is the body of a client's run message.
type RunRequest struct {
	Lesson string `json:"lesson"`
	Cell   string `json:"cell"`
	// Source is the cell's text as the learner edited it.
	Source string `json:"source"`
	// Action, if set, is one of the cell kind's actions (such as "ptx") instead of its run.
	Action string `json:"action,omitempty"`
}

// Progress is the body of a progress message.
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// Message types.
const (
	TypeRun       = "run"
	TypeCancel    = "cancel"
	TypeResult    = "result"
	TypeTask      = "task"
	TypeQueued    = "queued"
	TypeStarted   = "started"
	TypeProgress  = "progress"
	TypeNote      = "note"
	TypeTable     = "table"
	TypeRow       = "row"
	TypeChart     = "chart"
	TypeFrames    = "frames"
	TypeText      = "text"
	TypeDone      = "done"
	TypeCancelled = "cancelled"
	TypeError     = "error"
)

// Terminal reports whether a message type ends a run.
func Terminal(typ string) bool {
	return typ == TypeDone || typ == TypeCancelled || typ == TypeError
}
