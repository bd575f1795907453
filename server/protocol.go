package server

import (
	"encoding/json"
	"time"

	"github.com/gpuplayground/playground/machine"
)

// Message is the one wire type of the /ws websocket: every frame in either direction is one Message as
// a JSON text frame. docs/protocol.md describes it for client authors; the server knows no cell kind
// by name, so every kind's output travels in the generic event fields below.
//
// Client → server:
//
//	{"type":"run","id":"<client run id>","lesson":"<slug>","cell":"<cell id>","source":"<cell text>","action":"<optional>","machine":"<optional class>"}
//	{"type":"cancel","id":"<client run id>"}
//	{"type":"result","id":"<client run id>","result":<JSON>}   the answer to that run's task
//	{"type":"replay","id":"<client run id>","run":<stored run id>}   a run of yours, kept: its messages so far, then live
//	{"type":"save","lesson":"<slug>","cell":"<cell id>","source":"<cell text>"}   keep an edit (the lesson's text forgets it)
//
// Server → client, each carrying the run's id:
//
//	queued   {position, wait_s}         1 = next to start; wait_s: estimated seconds until it starts; re-sent when the line moves
//	shared   {shared: {run, measured, machine}}   instead of started: an unedited cell's results
//	                                    measured recently for someone's run; a note says when and
//	                                    on what; the same run with "fresh": true measures anew
//	started  {estimate}                 the run's estimated duration in seconds (a guess, for a progress bar)
//	progress {done, total}
//	note     {note: {level, message}, ran_on}   ran_on: on "Ran on …", the machine's name
//	table    {table: {id, caption, columns: [{label, unit}]}}
//	row      {row: {table, values, bad}}
//	chart    {svg}                      at most every 250 ms, and once at the end
//	frames   {frames: […]}              animation frames for the kind's browser module, ≤ 20 a message
//	text     {text: {title, body}}
//	task     {task: <JSON>}             work for the kind's browser module; the run waits for a result
//	done | cancelled {message} | error {message, fit}   exactly one of these ends every run; fit:
//	                                    on a refusal over the run time limit, the largest of the
//	                                    cell's sizes that fit {sizes, source, estimate}
//
// A replayed run's started carries started_at (and elapsed_s while it runs), its terminal message
// started_at and ended_at: the stored times, so that the page states when it ran and how long it took.
//
// An error about a frame that names no run (malformed JSON, a frame over 64 KiB) has an empty id.
type Message struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`

	*RunRequest // run

	// Body is a run's event (progress, note, table, row, chart, frames, text): the one event type
	// every machine streams (machine.Event), with this message's Type.
	machine.Body

	// Run is the stored run's id: in replay, the run to replay.
	Run      int64 `json:"run,omitempty"`
	Position int   `json:"position,omitempty"` // queued
	// Wait is the estimated time until a queued run starts, in seconds, from the runs' estimates.
	Wait     float64 `json:"wait_s,omitempty"`
	Estimate float64 `json:"estimate,omitempty"` // started: cells.Run.Estimate in seconds
	Shared   *Shared `json:"shared,omitempty"`   // shared
	// Task is a run's work for the page (cells.Asker), its shape the kind's; Result is the page's
	// answer to it. Both are kept as raw JSON: the server only routes them.
	Task   json.RawMessage `json:"task,omitempty"`   // task
	Result json.RawMessage `json:"result,omitempty"` // result
	// Message explains an error (what to fix) or why a run was cancelled.
	Message string `json:"message,omitempty"`
	// Fit, on the error of a run refused as estimated over the run time limit, is the largest of
	// the cell's own sizes that fit it (absent where none does, or the cell has no `sizes:` list).
	Fit *Fit `json:"fit,omitempty"`

	// StartedAt and EndedAt are a replayed run's stored start and end (replay, stampReplayed):
	// StartedAt on its `started` and its terminal message, EndedAt on its terminal message (absent
	// for a run the server's stop interrupted: its end is not known). Elapsed, on the replayed
	// `started` of a run still running, is the seconds from its start to the replay by the server's
	// clock, so that the page's clock goes on from the run's start, whatever the page's clock says.
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	Elapsed   float64   `json:"elapsed_s,omitempty"`
}

// RunRequest is the body of a client's run message.
type RunRequest struct {
	Lesson string `json:"lesson"`
	Cell   string `json:"cell"`
	// Source is the cell's text as the learner edited it.
	Source string `json:"source"`
	// Action, if set, is one of the cell kind's actions (such as "ptx") instead of its run.
	Action string `json:"action,omitempty"`
	// Fresh asks for a new measurement even where shared results of the unedited cell exist.
	Fresh bool `json:"fresh,omitempty"`
	// Machine, if set, is the class of machine the learner picked for the whole page (GET
	// /api/machines lists them): the run goes only to machines of that class, unless the cell's own
	// `machine:` key names another.
	Machine string `json:"machine,omitempty"`
}

// Shared is the body of a shared message: which earlier run the results shown are from, when it
// ended and on what machine (its tables say what was measured, emulated or modelled).
type Shared struct {
	Run int64 `json:"run"`
	// Measured is when that run ended (the wire name predates emulated and modelled results).
	Measured time.Time `json:"measured"`
	Machine  string    `json:"machine"`
}

// Fit is the body of a refusal's fit: the sizes that fit the run time limit, the cell's source
// asking for them (its `sizes:` line rewritten, every other line as sent), and their estimate in
// seconds.
type Fit struct {
	Sizes    []int   `json:"sizes"`
	Source   string  `json:"source"`
	Estimate float64 `json:"estimate"`
}

// Progress is the body of a progress message.
type Progress = machine.Progress

// eventMessage is a run's event as its message (without the run's id).
func eventMessage(ev machine.Event) Message {
	return Message{Type: ev.Type, Body: ev.Body}
}

// Message types.
const (
	TypeRun       = "run"
	TypeCancel    = "cancel"
	TypeReplay    = "replay"
	TypeSave      = "save"
	TypeResult    = "result"
	TypeTask      = "task"
	TypeQueued    = "queued"
	TypeStarted   = "started"
	TypeShared    = "shared"
	TypeProgress  = machine.TypeProgress
	TypeNote      = machine.TypeNote
	TypeTable     = machine.TypeTable
	TypeRow       = machine.TypeRow
	TypeChart     = machine.TypeChart
	TypeFrames    = machine.TypeFrames
	TypeText      = machine.TypeText
	TypeDone      = "done"
	TypeCancelled = "cancelled"
	TypeError     = "error"
)

// Terminal reports whether a message type ends a run.
func Terminal(typ string) bool {
	return typ == TypeDone || typ == TypeCancelled || typ == TypeError
}
