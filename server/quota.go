package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/machine"
)

// What one student may keep (Config.StudentQuota) and the disk guard (Config.MinFreeBytes): the
// server's side of store.Prune and store.Room.

// roomForJoin refuses a join (next) with 503 and the store's message while the disk is nearly full
// (store.Room), but for the instructor's, who may still sign in to see the class and cancel runs.
// The join's body must arrive within Config.PreAuthRequestTimeout, at most 16 KiB of it.
func (s *Server) roomForJoin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.PreAuthRequestTimeout))
		r.Body = http.MaxBytesReader(w, r.Body, maxJoinForm)
		err := s.store.Room()
		if err == nil {
			next(w, r)
			return
		}
		if r.ParseForm() == nil && s.tokenRole(r.PostForm.Get("token")) == "instructor" {
			next(w, r)
			return
		}
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
}

// prune brings student's kept runs within Config.StudentQuota (store.Prune) and returns what they
// take after, in bytes (0 without a quota). A new run is held to the quota where it is recorded
// (accept, store.Accept).
func (s *Server) prune(ctx context.Context, student int64) (int64, error) {
	if s.cfg.StudentQuota < 0 {
		return 0, nil
	}
	_, used, err := s.store.Prune(ctx, student, s.cfg.StudentQuota, s.prunedNote())
	return used, err
}

// prunedNote is the kept message that stands in a pruned run's place (store.Prune).
func (s *Server) prunedNote() string {
	b, _ := json.Marshal(Message{Type: TypeNote, Body: machine.Body{Note: &cells.Note{Level: "info", Message: fmt.Sprintf(
		"This run's results were removed to keep your stored runs within the %s each student may keep (the oldest finished runs go first). Run the cell again to see them.",
		bytesText(s.cfg.StudentQuota))}}})
	return string(b)
}

// bytesText writes n bytes in MiB, or KiB under 1 MiB.
func bytesText(n int64) string {
	if n >= 1<<20 {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MiB"
	}
	return fmt.Sprintf("%d KiB", (n+1023)>>10)
}
