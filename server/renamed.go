package server

import (
	"context"
	"log"
	"strings"

	"github.com/gpuplayground/playground/store"
)

// moveRenamed moves what st keeps under the lessons' and cells' former names (lessons.Renamed) to
// their current names, so that a learner's edits, runs and shared results follow a renamed or
// merged lesson. It runs once at start, before anything reads the store; with nothing to move it
// changes nothing.
func (s *Server) moveRenamed(st *store.Store) error {
	if len(s.renamed.Lessons) == 0 && len(s.renamed.Cells) == 0 {
		return nil
	}
	slugs := map[string]string{}
	for old, now := range s.renamed.Lessons {
		slugs[old], _, _ = strings.Cut(now, "#")
	}
	holder := map[string]string{} // cell id → the slug of the lesson that has it
	for _, l := range s.library.Lessons() {
		for _, c := range l.Cells {
			holder[c.ID] = l.Slug
		}
	}
	var moves []store.CellMove
	for old, now := range s.renamed.Cells {
		if slug, ok := holder[now]; ok { // lessons.LoadRenamed checked it; a lesson broken since is skipped
			moves = append(moves, store.CellMove{From: old, Lesson: slug, Cell: now})
		}
	}
	n, err := st.Rename(context.Background(), slugs, moves)
	if n > 0 {
		log.Printf("moved %d kept edits, runs and last-opened lessons to renamed lessons and cells (lessons/renamed.yaml)", n)
	}
	return err
}
