package lessons

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"

	"github.com/gpuplayground/playground/experiment"
)

// Recording is a real run of one cell on a GPU machine (made by cmd/record), kept in
// recorded/<cell id>.json beside the lessons so learners without a GPU see measured numbers, always
// labelled with where, when and how they were measured.
type Recording struct {
	Cell    string              `json:"cell"`
	Device  string              `json:"device"`
	Driver  string              `json:"driver"`
	Date    string              `json:"date"`
	Command string              `json:"command"`
	Results []experiment.Result `json:"results"`
}

// Label is the provenance line shown with recorded numbers.
func (r Recording) Label() string {
	return fmt.Sprintf("recorded on %s (driver CUDA %s) at %s with `%s`, not measured now", r.Device, r.Driver, r.Date, r.Command)
}

// loadRecordings reads recorded/*.json from fsys and attaches each to its cell's lesson. A file that
// does not parse, lacks provenance or names no cell of ls is an error naming the file.
func loadRecordings(fsys fs.FS, ls []*Lesson) error {
	names, _ := fs.Glob(fsys, "recorded/*.json")
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		var r Recording
		if err := json.Unmarshal(b, &r); err != nil {
			return &Error{File: name, Line: 1, Msg: "recording: " + err.Error()}
		}
		if r.Device == "" || r.Driver == "" || r.Date == "" || r.Command == "" || len(r.Results) == 0 {
			return &Error{File: name, Line: 1, Msg: "recording needs device, driver, date, command and results"}
		}
		if want := path.Base(name); want != r.Cell+".json" {
			return &Error{File: name, Line: 1, Msg: fmt.Sprintf("recording of cell %q must be named %s.json", r.Cell, r.Cell)}
		}
		found := false
		for _, l := range ls {
			if _, ok := l.Cell(r.Cell); ok {
				if l.Recordings == nil {
					l.Recordings = map[string]Recording{}
				}
				l.Recordings[r.Cell] = r
				found = true
			}
		}
		if !found {
			return &Error{File: name, Line: 1, Msg: fmt.Sprintf("recording of cell %q, which no lesson has", r.Cell)}
		}
	}
	return nil
}
