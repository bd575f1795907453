package lessons

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"

	"github.com/gpuplayground/playground/cells"
)

// loadRecordings reads recorded/*.json from fsys (cells.Recording, made by cmd/record) and attaches
// each to its cell. A file that does not parse, lacks provenance or names no cell of ls is an error
// naming the file; a recording made from another version of its cell's source is an error naming the
// cell's file:line (re-record it, or delete it).
func loadRecordings(fsys fs.FS, ls []*Lesson) error {
	names, _ := fs.Glob(fsys, "recorded/*.json")
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		var r cells.Recording
		if err := json.Unmarshal(b, &r); err != nil {
			return &Error{File: name, Line: 1, Msg: "recording: " + err.Error()}
		}
		if r.Device == "" || r.Driver == "" || r.Date == "" || r.Command == "" || r.SourceSHA256 == "" || len(r.Results) == 0 {
			return &Error{File: name, Line: 1, Msg: "recording needs device, driver, date, command, source_sha256 and results"}
		}
		if want := path.Base(name); want != r.Cell+".json" {
			return &Error{File: name, Line: 1, Msg: fmt.Sprintf("recording of cell %q must be named %s.json", r.Cell, r.Cell)}
		}
		found := false
		for _, l := range ls {
			for i := range l.Cells {
				c := &l.Cells[i]
				if c.ID != r.Cell {
					continue
				}
				if got := cells.SourceHash(c.Source); got != r.SourceSHA256 {
					return &Error{File: l.File, Line: c.Line, Msg: fmt.Sprintf("cell %s has changed since %s was recorded (source_sha256 %.12s…, the cell now hashes to %.12s…): record it again on a GPU machine (cmd/record) or delete the recording", c.ID, name, r.SourceSHA256, got)}
				}
				rec := r
				c.Recording = &rec
				found = true
			}
		}
		if !found {
			return &Error{File: name, Line: 1, Msg: fmt.Sprintf("recording of cell %q, which no lesson has", r.Cell)}
		}
	}
	return nil
}
