package server

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/machine"
)

// A row with a NaN (JSON has none) is sent as a warning note of the same run, not a write error
// that would drop the learner's connection.
func TestEncodeReplacesWhatJSONCannotHold(t *testing.T) {
	bad := Message{Type: cells.TypeRow, ID: "r1", Body: machine.Body{Row: &cells.Row{Table: "runs", Values: []any{math.NaN()}}}}
	var got Message
	if err := json.Unmarshal(encode(bad), &got); err != nil {
		t.Fatal(err)
	}
	if got.Type != TypeNote || got.ID != "r1" || got.Note == nil || got.Note.Level != "warning" || !strings.Contains(got.Note.Message, "row message") {
		t.Errorf("encode of a NaN row: %+v (note %+v), want a warning note of run r1", got, got.Note)
	}
	good := Message{Type: cells.TypeRow, ID: "r2", Body: machine.Body{Row: &cells.Row{Table: "runs", Values: []any{1.5}}}}
	if want, _ := json.Marshal(good); string(encode(good)) != string(want) {
		t.Errorf("encode of a plain row: %s, want %s", encode(good), want)
	}
}
