package machine

import (
	"github.com/gpuplayground/playground/cells"
)

// The one event type of a run is cells.Event (kinds emit it, so it lives beside cells.Emitter);
// these names let the runner's users (the server, the cluster) speak of it as the machine's.
type (
	// Event is cells.Event: one event of a run, with its Clean for events from untrusted machines.
	Event = cells.Event
	// Body is cells.Body, an event's content.
	Body = cells.Body
	// Progress is cells.Progress, the body of a progress event.
	Progress = cells.Progress
	// Events is cells.Events, an Emitter that hands each event to a func.
	Events = cells.Events
)

// Event types (cells.TypeProgress, …).
const (
	TypeProgress = cells.TypeProgress
	TypeNote     = cells.TypeNote
	TypeTable    = cells.TypeTable
	TypeRow      = cells.TypeRow
	TypeChart    = cells.TypeChart
	TypeFrames   = cells.TypeFrames
	TypeText     = cells.TypeText
)

// Placed is the note "Ran on SUMMARY." with the machine's name (cells.PlacedEvent).
func Placed(name, summary string) Event { return cells.PlacedEvent(name, summary) }
