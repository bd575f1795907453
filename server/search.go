package server

import (
	"encoding/json"
	"net/http"

	"github.com/gpuplayground/playground/lessons"
)

// searchEntry is one lesson in the index page's search (GET /api/search): its title, summary and
// prose by heading (lessons.Section).
type searchEntry struct {
	Slug     string            `json:"slug"`
	Title    string            `json:"title"`
	Summary  string            `json:"summary"`
	Sections []lessons.Section `json:"sections"`
}

// searchIndex is the JSON of ls's search entries (broken lessons left out).
func searchIndex(ls []*lessons.Lesson) []byte {
	entries := []searchEntry{}
	for _, l := range ls {
		if l.Err == nil {
			entries = append(entries, searchEntry{l.Slug, l.Title, l.Summary, l.Sections})
		}
	}
	b, _ := json.Marshal(entries) // strings and slices of them always marshal
	return b
}

// apiSearch serves the search index: built once at start for the embedded lessons, at each request
// for a lesson directory (its lessons change as authors edit them).
func (s *Server) apiSearch(w http.ResponseWriter, _ *http.Request) {
	b := s.search
	if b == nil {
		b = searchIndex(s.library.Lessons())
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
