package server

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpuplayground/playground/store"
)

// A student's own work over HTTP: /api/state (a lesson's edits and latest runs, for the page),
// /api/runs (every run with its messages, JSON) and /api/runs.csv (every result row, CSV). Each
// answers for the signed-in student only.

// cellState is what a lesson page restores of one cell.
type cellState struct {
	// Source is the student's edited source, if the cell is edited.
	Source *string `json:"source,omitempty"`
	// Run is the cell's latest run, if any: the page replays it.
	Run *store.Run `json:"run,omitempty"`
	// Live is true while that run is queued or running.
	Live bool `json:"live,omitempty"`
}

// apiState is GET /api/state?lesson=SLUG: {cells: {cell id: cellState}}.
func (s *Server) apiState(w http.ResponseWriter, r *http.Request) {
	st := studentOf(r.Context())
	slug := r.URL.Query().Get("lesson")
	if s.lesson(slug) == nil {
		http.Error(w, fmt.Sprintf("unknown lesson %q", slug), http.StatusNotFound)
		return
	}
	edits, err := s.store.Edits(r.Context(), st.ID, slug)
	if err != nil {
		httpErr(w, err)
		return
	}
	runs, err := s.store.LatestRuns(r.Context(), st.ID, slug)
	if err != nil {
		httpErr(w, err)
		return
	}
	out := map[string]*cellState{}
	get := func(cell string) *cellState {
		if out[cell] == nil {
			out[cell] = &cellState{}
		}
		return out[cell]
	}
	for cell, src := range edits {
		get(cell).Source = &src
	}
	for i := range runs { // oldest first: the last one wins
		cs := get(runs[i].Cell)
		cs.Run = &runs[i]
		cs.Live = s.liveJob(runs[i].ID) != nil
	}
	writeJSON(w, map[string]any{"student": st.Name, "cells": out})
}

// apiMachines is GET /api/machines: {machines: [MachineInfo…]}, the machines that run runs now (this
// server alone unless its executor lists others), for the page's machine menu, /class and
// scripts. Only an instructor gets the runs on each machine (their students and cells); a learner
// gets how busy each is, never whose runs they are.
func (s *Server) apiMachines(w http.ResponseWriter, r *http.Request) {
	ms := []MachineInfo{s.ownMachine()}
	if l, ok := s.queue.exec.(MachineLister); ok {
		ms = append([]MachineInfo{}, l.ListMachines()...)
	}
	if !studentOf(r.Context()).Instructor {
		for i := range ms {
			ms[i].Runs = nil
		}
	}
	writeJSON(w, map[string]any{"machines": ms})
}

// ownMachine is this server's machine, running every run in process (no MachineLister), as
// /api/machines lists it: its runs are those the queue runs now.
func (s *Server) ownMachine() MachineInfo {
	m := MachineInfo{Name: "this server", Summary: s.where(), GPU: s.gpu.Unavailable() == "", Here: true,
		Slots: s.mach.Gate.Slots(), Runs: []MachineRun{}}
	st := s.queue.state()
	for _, r := range st.Running {
		m.Runs = append(m.Runs, MachineRun{Run: r.Run, Student: r.Student, Lesson: r.Lesson, Cell: r.Cell, Started: r.Started})
		m.Measuring = m.Measuring || r.Measures
	}
	m.Busy = len(m.Runs)
	m.Done, m.Errors = s.queue.counts()
	return m
}

// writeRunWithMessages writes one run of /api/runs: the run's fields and "messages", the JSON of
// each of msgs as kept (job.keep stores each as json.Marshal wrote it), not decoded, checked nor
// copied again (a run's messages may hold megabytes of text).
func writeRunWithMessages(w io.Writer, run store.Run, msgs []store.Message) error {
	b, err := json.Marshal(run)
	if err != nil {
		return err
	}
	b = append(b[:len(b)-1], `,"messages":[`...) // the run's object, open
	if _, err := w.Write(b); err != nil {
		return err
	}
	for i, m := range msgs {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, m.Body); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, "]}")
	return err
}

// Pages of /api/runs, in runs: the default and largest ?limit=, and how many runs are read from the
// store at a time (what a request holds in memory is one batch of runs and one run's messages).
const (
	runsPageDefault = 200
	runsPageMax     = 1000
	runsBatch       = 50
)

// apiRuns is GET /api/runs[?lesson=SLUG][&after=ID][&limit=N]: the student's runs after run ID,
// oldest first, at most N (default runsPageDefault, at most runsPageMax), each with the messages it
// streamed (as docs/protocol.md describes them; only the latest chart and progress are kept), and
// next, the after of the next page, when there are more. It is written run by run as it is read.
func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	st := studentOf(r.Context())
	after, limit, err := pageOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	lesson := r.URL.Query().Get("lesson")
	name, _ := json.Marshal(st.Name)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"student":%s,"runs":[`, name)
	n := 0
	err = s.eachRun(w, r, st.ID, lesson, after, limit, func(run store.Run) error {
		msgs, err := s.store.Messages(r.Context(), run.ID)
		if err != nil {
			return err
		}
		if n > 0 {
			_, _ = io.WriteString(w, ",")
		}
		n++
		after = run.ID
		return writeRunWithMessages(w, run, msgs)
	})
	if err != nil { // the answer has begun: cut it short, so that it is not taken for a whole one
		log.Printf("api: /api/runs: %v", err)
		panic(http.ErrAbortHandler)
	}
	more := false
	if n == limit {
		next, err := s.store.RunsPage(r.Context(), st.ID, lesson, after, 1)
		more = err == nil && len(next) > 0
	}
	if more {
		fmt.Fprintf(w, "],\"next\":%d}\n", after)
		return
	}
	_, _ = io.WriteString(w, "]}\n")
}

// pageOf reads ?after= (a run id, default 0) and ?limit= (default runsPageDefault, at most
// runsPageMax) of a paged request.
func pageOf(r *http.Request) (after int64, limit int, err error) {
	q := r.URL.Query()
	limit = runsPageDefault
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			return 0, 0, fmt.Errorf("after=%q: give the id of a run (the last page's next)", v)
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > runsPageMax {
			return 0, 0, fmt.Errorf("limit=%q: give a number of runs from 1 to %d", v, runsPageMax)
		}
	}
	return after, limit, nil
}

// eachRun calls fn on student's runs (of lesson, if set) after run id after, oldest first, at most
// limit of them (limit < 0: all), reading them from the store runsBatch at a time. Before each, the
// answer's write deadline moves Config.WriteTimeout ahead (streaming).
func (s *Server) eachRun(w http.ResponseWriter, r *http.Request, student int64, lesson string, after int64, limit int, fn func(store.Run) error) error {
	return s.pageRuns(w, after, limit, fn, func(after int64, n int) ([]store.Run, error) {
		return s.store.RunsPage(r.Context(), student, lesson, after, n)
	})
}

// pageRuns calls fn on the runs that page returns (after run id after, at most n of them), page
// after page, at most limit of them (limit < 0: all). Before each, w's write deadline moves
// Config.WriteTimeout ahead: a long download that keeps being read is not cut by the timeout
// meant for one answer.
func (s *Server) pageRuns(w http.ResponseWriter, after int64, limit int, fn func(store.Run) error, page func(after int64, n int) ([]store.Run, error)) error {
	rc := http.NewResponseController(w)
	for n := 0; limit < 0 || n < limit; {
		batch := runsBatch
		if limit >= 0 {
			batch = min(batch, limit-n)
		}
		runs, err := page(after, batch)
		if err != nil || len(runs) == 0 {
			return err
		}
		for _, run := range runs {
			_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			if err := fn(run); err != nil {
				return err
			}
			after = run.ID
			n++
		}
	}
	return nil
}

// csvHeader is the long format of every results CSV: one line per table cell of every row.
var csvHeader = []string{"student", "run", "lesson", "cell", "action", "edited", "status", "ended", "machine", "table", "caption", "row", "column", "unit", "value", "bad"}

// csvText neutralises a text field of a results CSV against formula injection in spreadsheets
// (OWASP, "CSV Injection"): text that starts with =, +, -, @, a tab or a carriage return gets a
// leading single quote, so that a spreadsheet shows it as text instead of evaluating it. Numbers
// are not passed through it: a negative number stays a number.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// writeResultsCSV writes the rows of runs' tables in the long format; text fields go through csvText.
func (s *Server) writeResultsCSV(r *http.Request, cw *csv.Writer, names map[int64]string, runs []store.Run) error {
	for _, run := range runs {
		msgs, err := s.store.Messages(r.Context(), run.ID)
		if err != nil {
			return err
		}
		tables := map[string]*Message{}
		rowN := map[string]int{}
		for _, km := range msgs {
			var m Message
			if json.Unmarshal([]byte(km.Body), &m) != nil {
				continue
			}
			switch {
			case m.Type == TypeTable && m.Table != nil:
				tables[m.Table.ID] = &m
			case m.Type == TypeRow && m.Row != nil && tables[m.Row.Table] != nil:
				t := tables[m.Row.Table].Table
				rowN[t.ID]++
				for i, v := range m.Row.Values {
					label, unit := fmt.Sprint(i), ""
					if i < len(t.Columns) {
						label, unit = t.Columns[i].Label, t.Columns[i].Unit
					}
					ended := ""
					if !run.Ended.IsZero() {
						ended = run.Ended.UTC().Format(time.RFC3339)
					}
					value := fmt.Sprint(v) // a number (negative ones too) stays a number
					if str, ok := v.(string); ok {
						value = csvText(str)
					}
					if err := cw.Write([]string{csvText(names[run.Student]), strconv.FormatInt(run.ID, 10), csvText(run.Lesson), csvText(run.Cell), csvText(run.Action),
						strconv.FormatBool(run.Edited), run.Status, ended, csvText(run.Machine), csvText(t.ID), csvText(t.Caption), strconv.Itoa(rowN[t.ID]),
						csvText(label), csvText(unit), value, strconv.FormatBool(m.Row.Bad)}); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// apiRunsCSV is GET /api/runs.csv: every result row of the student's runs, one line per value,
// written run by run as it is read (eachRun).
func (s *Server) apiRunsCSV(w http.ResponseWriter, r *http.Request) {
	st := studentOf(r.Context())
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="my-results.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write(csvHeader)
	names := map[int64]string{st.ID: st.Name}
	err := s.eachRun(w, r, st.ID, r.URL.Query().Get("lesson"), 0, -1, func(run store.Run) error {
		if err := s.writeResultsCSV(r, cw, names, []store.Run{run}); err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		log.Printf("results CSV: %v", err)
	}
	cw.Flush()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func httpErr(w http.ResponseWriter, err error) {
	log.Printf("api: %v", err)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
