package server

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/lessons"

	"github.com/gpuplayground/playground/store"
)

// The instructor's view: /class (a page that polls /api/class), cancel any run, pause the queue,
// and every student's results as CSV.

// online tracks the open connections and the lesson each was opened from.
type online struct {
	mu    sync.Mutex
	conns map[*conn]string
}

// add records c, on the lesson its page names (the websocket URL's ?lesson=, else the Referer).
// add counts c as online on lesson (from its ?lesson=, else its Referer) and returns that lesson.
func (o *online) add(c *conn, lesson, referer string) string {
	if u, err := url.Parse(referer); err == nil && lesson == "" {
		lesson, _ = strings.CutPrefix(u.Path, "/lessons/")
		if lesson == u.Path {
			lesson = ""
		}
	}
	if len(lesson) > maxIDLen {
		lesson = lesson[:maxIDLen]
	}
	o.mu.Lock()
	o.conns[c] = lesson
	o.mu.Unlock()
	return lesson
}

func (o *online) remove(c *conn) {
	o.mu.Lock()
	delete(o.conns, c)
	o.mu.Unlock()
}

// classStudent is one row of the class list.
type classStudent struct {
	ID          int64     `json:"id"` // what POST /api/class/remove takes
	Name        string    `json:"name"`
	Instructor  bool      `json:"instructor,omitempty"`
	Connections int       `json:"connections"`
	Lessons     []string  `json:"lessons"` // the lessons their open pages show
	LastLesson  string    `json:"last_lesson,omitempty"`
	LastSeen    time.Time `json:"last_seen"`
	// Address is the network address they joined from (an IPv4 address or an IPv6 /64; "" before
	// addresses were kept): what POST /api/class/block takes.
	Address string `json:"address,omitempty"`
}

// classAddress is one network address students joined from: how many (not removed, instructors
// not counted), and whether it is blocked.
type classAddress struct {
	Address  string `json:"address"`
	Students int    `json:"students"`
	Blocked  bool   `json:"blocked,omitempty"`
}

// classRun is one queued or running run.
type classRun struct {
	Run      int64     `json:"run"`
	Student  string    `json:"student"`
	Lesson   string    `json:"lesson"`
	Cell     string    `json:"cell"`
	Action   string    `json:"action,omitempty"`
	Measures bool      `json:"measures"` // exclusive: it has the machine to itself
	Estimate float64   `json:"estimate_s"`
	Started  time.Time `json:"started,omitzero"`
	// NoMachine, for a waiting run, says why no machine connected now can take it (Unplaced).
	NoMachine string `json:"no_machine,omitempty"`
}

// apiClass is GET /api/class: the students (not the local user, "(this computer)": the one user of
// a server without sign-in, nobody on one with it),
// who is connected on which lesson, the addresses they joined from (addresses: most students
// first, blocked ones too), and the queue.
func (s *Server) apiClass(w http.ResponseWriter, r *http.Request) {
	students, err := s.store.Students(r.Context())
	if err != nil {
		httpErr(w, err)
		return
	}
	blocked, err := s.store.BlockedAddresses(r.Context())
	if err != nil {
		httpErr(w, err)
		return
	}
	byID := map[int64]*classStudent{}
	list := make([]*classStudent, 0, len(students))
	for _, st := range students {
		if st.Removed || st.ID == s.local.ID {
			continue
		}
		cs := &classStudent{ID: st.ID, Name: st.Name, Instructor: st.Instructor, LastLesson: st.Lesson, LastSeen: st.LastSeen,
			Lessons: []string{}, Address: st.Address}
		byID[st.ID] = cs
		list = append(list, cs)
	}
	s.online.mu.Lock()
	for c, lesson := range s.online.conns {
		if cs := byID[c.student.ID]; cs != nil {
			cs.Connections++
			if lesson != "" {
				cs.Lessons = append(cs.Lessons, lesson)
			}
		}
	}
	s.online.mu.Unlock()
	for _, cs := range list {
		sort.Strings(cs.Lessons)
	}
	qs := s.queue.state()
	writeJSON(w, map[string]any{"paused": qs.Paused, "students": list, "addresses": classAddresses(list, blocked),
		"running": qs.Running, "waiting": qs.Waiting})
}

// classAddresses counts the students (not instructors) by the address they joined from, most first
// (then by address), and adds the blocked addresses.
func classAddresses(list []*classStudent, blocked []string) []classAddress {
	byAddr := map[string]*classAddress{}
	for _, cs := range list {
		if cs.Instructor || cs.Address == "" {
			continue
		}
		if byAddr[cs.Address] == nil {
			byAddr[cs.Address] = &classAddress{Address: cs.Address}
		}
		byAddr[cs.Address].Students++
	}
	for _, a := range blocked {
		if byAddr[a] == nil {
			byAddr[a] = &classAddress{Address: a}
		}
		byAddr[a].Blocked = true
	}
	out := make([]classAddress, 0, len(byAddr))
	for _, a := range byAddr {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Students != out[j].Students {
			return out[i].Students > out[j].Students
		}
		return out[i].Address < out[j].Address
	})
	return out
}

var errByInstructor = errors.New("cancelled by the instructor")

// classCancel is POST /api/class/cancel with form field run: cancels that queued or running run.
func (s *Server) classCancel(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.FormValue("run"), 10, 64)
	j := s.liveJob(id)
	if err != nil || j == nil {
		http.Error(w, "no such queued or running run", http.StatusNotFound)
		return
	}
	s.stopJob(j, errByInstructor)
	w.WriteHeader(http.StatusNoContent)
}

var errRemoved = errors.New("you were removed from the class by the instructor")

// classRemove is POST /api/class/remove with form field student (an id from /api/class): the
// student's session is revoked (their cookie signs nobody in), their queued and running runs are
// cancelled, their pages disconnected, and their name, marked removed, is free for someone else.
// Their edits and runs stay (the class's results). An instructor cannot be removed.
func (s *Server) classRemove(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.FormValue("student"), 10, 64)
	st, ok, lookErr := s.store.StudentByID(r.Context(), id)
	switch {
	case err != nil || lookErr != nil || !ok || st.Removed:
		http.Error(w, "no such student (removed already?)", http.StatusNotFound)
		return
	case st.Instructor:
		http.Error(w, "an instructor cannot be removed", http.StatusForbidden)
		return
	}
	if _, ok, err := s.store.RemoveStudent(r.Context(), id); err != nil || !ok {
		if err != nil {
			log.Printf("removing student %d: %v", id, err)
		}
		http.Error(w, "could not remove the student (removed already?)", http.StatusConflict)
		return
	}
	s.dropStudent(id)
	w.WriteHeader(http.StatusNoContent)
}

// dropStudent ends what a student the store just removed still has: their cached sessions, their
// open pages' requests, their runs and, then, their pages (disconnectRemoved).
func (s *Server) dropStudent(id int64) {
	s.forgetSessions(id)
	s.removed.Store(id, true)
	go s.disconnectRemoved(id)
}

// classBlock is POST /api/class/block with form fields address (as /api/class lists it) and
// blocked (true or false). Blocking removes every student who joined from the address, as
// classRemove does (instructors stay), and refuses new students from it (store.Block) until it is
// unblocked; unblocking lets them join again (those removed stay removed). The answer is JSON:
// {"removed": N}.
func (s *Server) classBlock(w http.ResponseWriter, r *http.Request) {
	addr := r.FormValue("address")
	block, err := strconv.ParseBool(r.FormValue("blocked"))
	if err != nil || addr == "" || len(addr) > maxIDLen {
		http.Error(w, "address (as /api/class lists it) and blocked (true or false) are needed", http.StatusBadRequest)
		return
	}
	if !block {
		if _, err := s.store.Unblock(r.Context(), addr); err != nil {
			httpErr(w, err)
			return
		}
		writeJSON(w, map[string]int{"removed": 0})
		return
	}
	ids, err := s.store.Block(r.Context(), addr)
	if err != nil {
		httpErr(w, err)
		return
	}
	for _, id := range ids {
		s.dropStudent(id)
	}
	log.Printf("the instructor blocked joins from %s and removed the %d student(s) who joined from it", addr, len(ids))
	writeJSON(w, map[string]int{"removed": len(ids)})
}

// disconnectRemoved cancels a removed student's runs, waits (at most 10 s) for them to end so that
// their pages hear of it, then closes those pages' websockets.
func (s *Server) disconnectRemoved(id int64) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		live := false
		s.live.Range(func(_, v any) bool {
			if j := v.(*job); j.student.ID == id {
				live = true
				if j.ctx.Err() == nil {
					s.stopJob(j, errRemoved)
				}
			}
			return true
		})
		if !live {
			break
		}
	}
	s.online.mu.Lock()
	for c := range s.online.conns {
		if c.student.ID == id {
			c.cancel(errRemoved) // the writer flushes what is queued, closes, and the reader ends
		}
	}
	s.online.mu.Unlock()
}

// classPause is POST /api/class/pause with form field paused (true or false): paused, running
// runs go on and no new run starts.
func (s *Server) classPause(w http.ResponseWriter, r *http.Request) {
	p, err := strconv.ParseBool(r.FormValue("paused"))
	if err != nil {
		http.Error(w, "paused is true or false", http.StatusBadRequest)
		return
	}
	s.queue.setPaused(p)
	w.WriteHeader(http.StatusNoContent)
}

// classCSV is GET /api/class/results.csv[?lesson=SLUG[&cell=ID]]: every student's result rows,
// written run by run as the runs are read, a page at a time (pageRuns), so that a class's history
// is never held in memory whole. A download cut short by an error ends without its last line's
// newline (the connection is closed), not as a shorter whole.
func (s *Server) classCSV(w http.ResponseWriter, r *http.Request) {
	names, err := s.studentNames(r.Context())
	if err != nil {
		httpErr(w, err)
		return
	}
	lesson, cell := r.URL.Query().Get("lesson"), r.URL.Query().Get("cell")
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="class-results.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write(csvHeader)
	err = s.pageRuns(w, 0, -1, func(run store.Run) error {
		if err := s.writeResultsCSV(r, cw, names, []store.Run{run}); err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	}, func(after int64, n int) ([]store.Run, error) {
		return s.store.ClassRunsPage(r.Context(), lesson, cell, after, n)
	})
	if err != nil {
		log.Printf("class CSV: %v", err)
		panic(http.ErrAbortHandler)
	}
	cw.Flush()
}

// studentNames maps every student's id to their name.
func (s *Server) studentNames(ctx context.Context) (map[int64]string, error) {
	students, err := s.store.Students(ctx)
	if err != nil {
		return nil, err
	}
	names := map[int64]string{}
	for _, st := range students {
		names[st.ID] = st.Name
	}
	return names, nil
}

// cellBoard is the class's results of one cell: per student, the rows of one table (the one asked
// for, else the first) of their latest run that ended done (their own or shared), side by side, and
// a chart of them where the table has kernel, n and GFLOP/s columns.
type cellBoard struct {
	Caption string       `json:"caption"`
	Columns []any        `json:"columns"`
	Rows    []boardEntry `json:"rows"`
	// Tables are the ids of the tables the runs sent (a WebGPU cell's `browser` table among them).
	Tables []string `json:"tables"`
	// SVG is the class chart: throughput against n, a series per student and kernel ("" when the
	// table has no such columns).
	SVG string `json:"svg,omitempty"`
}

type boardEntry struct {
	Student string    `json:"student"`
	Run     int64     `json:"run"`
	Ended   time.Time `json:"ended"`
	Edited  bool      `json:"edited"`
	Shared  bool      `json:"shared,omitempty"` // results shared from another run, not measured for this one
	Values  []any     `json:"values"`
	Bad     bool      `json:"bad"`
	// On is the run's own caption of the table: for a browser table, the student's adapter.
	On string `json:"on,omitempty"`
}

// MaxBoardSeries caps the class chart's series: the best ones by their best GFLOP/s.
const MaxBoardSeries = 12

// boardChart draws b's rows as throughput against n, one series per student and kernel (rows
// shared from another run left out, they repeat it), at most MaxBoardSeries of them, the fastest,
// titled by the cell's id. It returns "" when the table lacks kernel, n or a GFLOP/s column.
func boardChart(cell string, b cellBoard) (string, error) {
	col := func(match func(cells.Column) bool) int {
		for i, c := range b.Columns {
			if cc, ok := c.(cells.Column); ok && match(cc) {
				return i
			}
		}
		return -1
	}
	ki := col(func(c cells.Column) bool { return c.Label == "kernel" })
	ni := col(func(c cells.Column) bool { return c.Label == "n" })
	gi := col(func(c cells.Column) bool { return c.Unit == "GFLOP/s" })
	if ki < 0 || ni < 0 || gi < 0 {
		return "", nil
	}
	best := map[string]float64{}
	var results []chart.RatePoint
	for _, r := range b.Rows {
		if r.Shared || len(r.Values) <= max(ki, ni, gi) {
			continue
		}
		kernel, _ := r.Values[ki].(string)
		n, _ := toFloat(r.Values[ni])
		g, _ := toFloat(r.Values[gi])
		if kernel == "" || n < 1 || !(g > 0) {
			continue
		}
		name := r.Student + ": " + kernel
		results = append(results, chart.RatePoint{Kernel: name, N: int(n), Rate: g, DType: "each student's latest run"})
		best[name] = math.Max(best[name], g)
	}
	if len(results) == 0 {
		return "", nil
	}
	if len(best) > MaxBoardSeries {
		names := make([]string, 0, len(best))
		for name := range best {
			names = append(names, name)
		}
		sort.Slice(names, func(i, j int) bool { return best[names[i]] > best[names[j]] })
		keep := map[string]bool{}
		for _, name := range names[:MaxBoardSeries] {
			keep[name] = true
		}
		results = slices.DeleteFunc(results, func(r chart.RatePoint) bool { return !keep[r.Kernel] })
		for i := range results {
			results[i].DType = fmt.Sprintf("each student's latest run; the %d fastest series of %d", MaxBoardSeries, len(best))
		}
	}
	// The title's parenthesis is the results' DType (rateChart): what the series are.
	return chart.Rate(results, chart.RateAxes{Title: "Class results of " + cell, Size: "matrix size n (n×n×n, log2 scale)",
		Unit: "GFLOP/s", What: "throughput"})
}

// toFloat reads a JSON number (float64 after decoding; an int before).
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// maxBoardRows bounds the rows one student's run puts on a cell's board (the rest are left out), so
// that the board a class makes stays small whatever its runs kept.
const maxBoardRows = 1000

// apiClassCell is GET /api/class/cell?lesson=SLUG&cell=ID: the cell's board (cellBoard), made of
// each student's latest run of the cell that ended done (store.LatestDone: one run per student is
// read, one at a time), at most maxBoardRows rows of each.
func (s *Server) apiClassCell(w http.ResponseWriter, r *http.Request) {
	lesson, cell := r.URL.Query().Get("lesson"), r.URL.Query().Get("cell")
	names, err := s.studentNames(r.Context())
	if err != nil {
		httpErr(w, err)
		return
	}
	latest, err := s.store.LatestDone(r.Context(), lesson, cell) // one run per student
	if err != nil {
		httpErr(w, err)
		return
	}
	want := r.URL.Query().Get("table")
	board := cellBoard{Columns: []any{}, Rows: []boardEntry{}, Tables: []string{}}
	for _, run := range latest {
		msgs, err := s.store.Messages(r.Context(), run.ID)
		if err != nil {
			httpErr(w, err)
			return
		}
		table, on, rows := "", "", 0
		for _, km := range msgs {
			var m Message
			if json.Unmarshal([]byte(km.Body), &m) != nil {
				continue
			}
			switch {
			case m.Type == TypeTable && m.Table != nil:
				if !slices.Contains(board.Tables, m.Table.ID) {
					board.Tables = append(board.Tables, m.Table.ID)
				}
				if table != "" || (want != "" && m.Table.ID != want) {
					continue
				}
				table, on = m.Table.ID, m.Table.Caption
				if len(board.Columns) == 0 {
					board.Caption = m.Table.Caption
					for _, c := range m.Table.Columns {
						board.Columns = append(board.Columns, c)
					}
				}
			case m.Type == TypeRow && m.Row != nil && m.Row.Table == table && rows < maxBoardRows:
				rows++
				board.Rows = append(board.Rows, boardEntry{Student: names[run.Student], Run: run.ID, Ended: run.Ended,
					Edited: run.Edited, Shared: run.SharedFrom != 0, Values: m.Row.Values, Bad: m.Row.Bad, On: on})
			}
		}
	}
	sort.SliceStable(board.Rows, func(i, j int) bool { return board.Rows[i].Student < board.Rows[j].Student })
	svg, err := boardChart(cell, board)
	if err != nil {
		httpErr(w, err)
		return
	}
	board.SVG = svg
	writeJSON(w, board)
}

// pickCell is one choice of the page's cell picker.
type pickCell struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
}

// classPage is GET /class: the lessons that loaded, and (LessonCells) each one's cells for the
// cell picker.
func (s *Server) classPage(w http.ResponseWriter, r *http.Request) {
	var ls []*lessons.Lesson
	cellsOf := map[string][]pickCell{}
	for _, l := range s.library.Lessons() {
		if l.Err != nil {
			continue
		}
		ls = append(ls, l)
		cellsOf[l.Slug] = []pickCell{}
		for _, c := range l.Cells {
			cellsOf[l.Slug] = append(cellsOf[l.Slug], pickCell{ID: c.ID, Kind: c.Kind})
		}
	}
	s.page(w, http.StatusOK, "class", map[string]any{"Lessons": ls, "LessonCells": cellsOf})
}
