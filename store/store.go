// Package store keeps a class's work in an embedded SQLite database (modernc.org/sqlite: pure Go, no
// cgo): students and their sessions, each student's edited cell sources, and every run with the
// messages it streamed, so that a refresh, a reconnect or a server restart loses nothing.
//
// One Store is one database file, playground.db, in a data directory. Its methods are safe for
// concurrent use; writes go through one connection, one at a time (SQLite has one writer).
package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite" // and the "sqlite" database/sql driver
)

// FileName is the database's file name inside the data directory.
const FileName = "playground.db"

// Run statuses. A run is queued, then running, then exactly one of the terminal ones. Interrupted
// means the server stopped (a crash, kill -9, power loss) while the run was running. A run still
// queued when the server stopped stays queued: the next server queues it again (Queued).
const (
	StatusQueued      = "queued"
	StatusRunning     = "running"
	StatusDone        = "done"
	StatusCancelled   = "cancelled"
	StatusError       = "error"
	StatusInterrupted = "interrupted"
)

// ErrNameTaken is returned by AddStudent when another student of the class has that display name.
var ErrNameTaken = errors.New("that name is taken in this class: pick another")

// Store is an open database.
type Store struct {
	db   *sql.DB
	path string
	// guard says when the disk is too full for new work (Room); set once, before use, by SetDiskGuard.
	guard DiskGuard
	// commits counts the transactions that wrote (Commits).
	commits atomic.Int64
}

// DefaultDir is the per-user data directory: $XDG_DATA_HOME/gpu-playground, else
// ~/.local/share/gpu-playground on Unix, else os.UserConfigDir()/gpu-playground.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "gpu-playground"), nil
	}
	if home, err := os.UserHomeDir(); err == nil && os.PathSeparator == '/' {
		return filepath.Join(home, ".local", "share", "gpu-playground"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no per-user data directory (%v): give one with -data DIR", err)
	}
	return filepath.Join(d, "gpu-playground"), nil
}

const schema = `
CREATE TABLE IF NOT EXISTS students (
	id         INTEGER PRIMARY KEY,
	name       TEXT NOT NULL UNIQUE COLLATE NOCASE,
	session    TEXT NOT NULL UNIQUE, -- sha256 of the session cookie, hex
	instructor INTEGER NOT NULL DEFAULT 0,
	created    INTEGER NOT NULL,     -- Unix milliseconds
	last_seen  INTEGER NOT NULL,
	lesson     TEXT NOT NULL DEFAULT '', -- the last lesson opened
	name_key   TEXT NOT NULL DEFAULT '', -- NameKey(name): what names are compared by
	removed    INTEGER NOT NULL DEFAULT 0, -- Unix milliseconds when the instructor removed them, else 0
	session_at INTEGER NOT NULL DEFAULT 0, -- Unix milliseconds when the session was issued
	address    TEXT NOT NULL DEFAULT ''    -- the network address they joined from (the instructor's view)
);
CREATE TABLE IF NOT EXISTS answers (
	student INTEGER NOT NULL REFERENCES students(id),
	lesson  TEXT NOT NULL,
	question TEXT NOT NULL,    -- the question's answer key (a lesson's Answers)
	correct INTEGER NOT NULL,  -- 1 when the student's page judged their latest answer right
	updated INTEGER NOT NULL,
	PRIMARY KEY (student, lesson, question)
);
CREATE TABLE IF NOT EXISTS blocked_addresses (
	address TEXT PRIMARY KEY, -- a network address the instructor blocked: no student joins from it
	at      INTEGER NOT NULL  -- Unix milliseconds
);
CREATE TABLE IF NOT EXISTS edits (
	student INTEGER NOT NULL REFERENCES students(id),
	lesson  TEXT NOT NULL,
	cell    TEXT NOT NULL,
	source  TEXT NOT NULL,
	updated INTEGER NOT NULL,
	PRIMARY KEY (student, lesson, cell)
);
CREATE TABLE IF NOT EXISTS runs (
	id       INTEGER PRIMARY KEY,
	student  INTEGER NOT NULL REFERENCES students(id),
	lesson   TEXT NOT NULL,
	cell     TEXT NOT NULL,
	action   TEXT NOT NULL DEFAULT '',
	source   TEXT NOT NULL,
	edited   INTEGER NOT NULL,  -- 1 when source differs from the lesson's
	status   TEXT NOT NULL,
	message  TEXT NOT NULL DEFAULT '',
	machine  TEXT NOT NULL,     -- where it ran: CPU, GPU
	created  INTEGER NOT NULL,
	started  INTEGER NOT NULL DEFAULT 0,
	ended    INTEGER NOT NULL DEFAULT 0,
	shared_from INTEGER NOT NULL DEFAULT 0, -- a copy of that run's results, not measured for this one
	browser  INTEGER NOT NULL DEFAULT 0, -- 1 once the run asked its student's page (results of that browser)
	owner    TEXT NOT NULL DEFAULT '', -- the key of the run's fair share in the server's queue
	class    TEXT NOT NULL DEFAULT '', -- the class of machine the student's page asked for ('' any)
	pruned   INTEGER NOT NULL DEFAULT 0 -- 1 once its messages were pruned for its student's quota (Prune)
);
CREATE INDEX IF NOT EXISTS runs_student ON runs(student, id);
CREATE INDEX IF NOT EXISTS runs_cell ON runs(lesson, cell, id);
CREATE TABLE IF NOT EXISTS messages (
	run  INTEGER NOT NULL REFERENCES runs(id),
	seq  INTEGER NOT NULL,
	type TEXT NOT NULL,
	body TEXT NOT NULL,   -- the message as JSON; for type 'ref', the id of the run whose messages go here
	PRIMARY KEY (run, seq)
);
CREATE TABLE IF NOT EXISTS run_bytes (
	student INTEGER PRIMARY KEY,
	bytes   INTEGER NOT NULL -- what the student's runs and messages take (Usage)
);
`

// Open opens (creating if needed) the database in dir. dir is created if missing; a directory that
// cannot be written is an error that names it. Runs left queued or running by a server that stopped
// without ending them are marked interrupted; queued runs stay queued (Queued). An empty dir opens a private in-memory database that
// keeps nothing after Close.
func Open(dir string) (*Store, error) {
	dsn := "file::memory:"
	path := ":memory:"
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("data directory %s cannot be created (%w): give a writable one with -data DIR", dir, err)
		}
		probe, err := os.CreateTemp(dir, ".write-check-*")
		if err != nil {
			return nil, fmt.Errorf("data directory %s cannot be written (%w): give a writable one with -data DIR", dir, err)
		}
		probe.Close()
		os.Remove(probe.Name())
		path = filepath.Join(dir, FileName)
		dsn = "file:" + path
	}
	dsn += "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	// One connection: SQLite has one writer anyway, and an in-memory database is per connection.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: path}
	if err := s.countCommits(); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	if err := s.init(); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) init() error {
	var ok string
	if err := s.db.QueryRow("PRAGMA quick_check").Scan(&ok); err != nil {
		return err
	}
	if ok != "ok" {
		return fmt.Errorf("the database is damaged (%s): restore a backup or move it away", ok)
	}
	if _, err := s.db.Exec(schema); err != nil {
		return err
	}
	// A database made before runs had these columns gets them.
	for _, col := range []struct{ table, name, def string }{
		{"runs", "browser", "INTEGER NOT NULL DEFAULT 0"},
		{"runs", "owner", "TEXT NOT NULL DEFAULT ''"},
		{"runs", "class", "TEXT NOT NULL DEFAULT ''"},
		{"runs", "pruned", "INTEGER NOT NULL DEFAULT 0"},
		{"students", "name_key", "TEXT NOT NULL DEFAULT ''"},
		{"students", "removed", "INTEGER NOT NULL DEFAULT 0"},
		{"students", "session_at", "INTEGER NOT NULL DEFAULT 0"},
		{"students", "address", "TEXT NOT NULL DEFAULT ''"},
	} {
		var has int
		if err := s.db.QueryRow("SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", col.table, col.name).Scan(&has); err != nil {
			return err
		}
		if has == 0 {
			if _, err := s.db.Exec("ALTER TABLE " + col.table + " ADD COLUMN " + col.name + " " + col.def); err != nil {
				return err
			}
		}
	}
	if err := s.migrateStudents(); err != nil {
		return err
	}
	if err := s.countBytes(); err != nil {
		return err
	}
	_, err := s.db.Exec(`UPDATE runs SET status = ?, ended = ?, message = 'the server stopped while this run was running'
		WHERE status = ?`, StatusInterrupted, now(), StatusRunning)
	return err
}

// countCommits counts, in s.commits, every transaction that commits on the store's one connection
// (SQLite's commit hook: a statement that writes outside a transaction is one; reads are none).
func (s *Store) countCommits() error {
	c, err := s.db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		h, ok := dc.(sqlite.HookRegisterer)
		if !ok {
			return fmt.Errorf("the sqlite driver's connection (%T) takes no commit hook", dc)
		}
		h.RegisterCommitHook(func() int32 { s.commits.Add(1); return 0 })
		return nil
	})
}

// Commits is how many transactions that wrote the database committed since Open (opening counted)
// on the store's one connection: what a step such as Accept costs in writes.
func (s *Store) Commits() int64 { return s.commits.Load() }

// Path is the database file ("" for an in-memory one).
func (s *Store) Path() string {
	if s.path == ":memory:" {
		return ""
	}
	return s.path
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Check runs SQLite's full integrity check and returns an error unless it answers "ok".
func (s *Store) Check(ctx context.Context) error {
	var ok string
	if err := s.db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&ok); err != nil {
		return err
	}
	if ok != "ok" {
		return fmt.Errorf("integrity check: %s", ok)
	}
	return nil
}

func now() int64 { return time.Now().UnixMilli() }

// SessionHash is what the database keeps of a session token: its SHA-256, so that a copy of the
// database does not sign anyone in.
func SessionHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Student is one member of the class (or, on a loopback server without sign-in, the one local user).
type Student struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	Instructor bool   `json:"instructor,omitempty"`
	// Lesson is the slug of the lesson the student opened last ("" before any).
	Lesson   string    `json:"lesson,omitempty"`
	LastSeen time.Time `json:"last_seen"`
	// Removed is set once the instructor removed the student (RemoveStudent): their session signs
	// nobody in, and their name, with " (removed N)" added, is free for someone else.
	Removed bool `json:"removed,omitempty"`
	// SessionAt is when the student's session was issued (the server's session lifetime counts
	// from it).
	SessionAt time.Time `json:"-"`
	// Address is the network address the student joined from ("" unknown, or the local user): for
	// the instructor's view only, never sent to students.
	Address string `json:"-"`
}

// ErrClassFull is returned by Join when the class already has its most students.
var ErrClassFull = errors.New("the class is full")

// AddStudent adds a student with a unique display name (compared by NameKey) and the session
// token that signs them in; ErrNameTaken if the name is in use. It is Join without a class size or an
// address.
func (s *Store) AddStudent(ctx context.Context, name, session string, instructor bool) (Student, error) {
	return s.Join(ctx, name, session, "", instructor, 0)
}

// Join adds a student as AddStudent does, joining from address (kept as Student.Address), unless
// the class already has maxStudents students who are not instructors and not removed
// (ErrClassFull; maxStudents 0: no limit, and instructors are never refused for it) or the address
// is blocked (ErrBlocked; not for an instructor). A name whose NameKey equals that of a student not
// removed is ErrNameTaken.
func (s *Store) Join(ctx context.Context, name, session, address string, instructor bool, maxStudents int) (Student, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Student{}, err
	}
	defer tx.Rollback()
	if !instructor && address != "" {
		var blocked int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM blocked_addresses WHERE address = ?", address).Scan(&blocked); err != nil {
			return Student{}, err
		}
		if blocked > 0 {
			return Student{}, ErrBlocked
		}
	}
	if maxStudents > 0 && !instructor {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM students WHERE instructor = 0 AND removed = 0").Scan(&n); err != nil {
			return Student{}, err
		}
		if n >= maxStudents {
			return Student{}, ErrClassFull
		}
	}
	key := NameKey(name)
	var taken int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM students WHERE name_key = ? AND removed = 0", key).Scan(&taken); err != nil {
		return Student{}, err
	}
	if taken > 0 {
		return Student{}, ErrNameTaken
	}
	t := now()
	res, err := tx.ExecContext(ctx, `INSERT INTO students(name, name_key, session, session_at, instructor, created, last_seen, address) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(name) DO NOTHING`, name, key, SessionHash(session), t, instructor, t, t, address)
	if err != nil {
		return Student{}, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Student{}, ErrNameTaken
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Student{}, err
	}
	return Student{ID: id, Name: name, Instructor: instructor, LastSeen: time.UnixMilli(t), SessionAt: time.UnixMilli(t), Address: address}, tx.Commit()
}

// revokedSession is what replaces a revoked session's hash: never the hex SHA-256 of any token,
// and unique per student and time.
const revokedSession = "'revoked:' || id || ':' || ?"

// RevokeSession makes the student's session sign nobody in; ok is false for an unknown student.
func (s *Store) RevokeSession(ctx context.Context, student int64) (ok bool, err error) {
	res, err := s.db.ExecContext(ctx, "UPDATE students SET session = "+revokedSession+" WHERE id = ?", now(), student)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// RemoveStudent removes a student from the class: their session is revoked, they are marked
// Removed and their name gets " (removed ID)" (freeing it for someone else). Their edits and runs
// stay. ok is false when there is no such student or they were already removed.
func (s *Store) RemoveStudent(ctx context.Context, student int64) (st Student, ok bool, err error) {
	t := now()
	res, err := s.db.ExecContext(ctx, "UPDATE students SET session = "+revokedSession+`, removed = ?,
		name = name || ' (removed ' || id || ')' WHERE id = ? AND removed = 0`, t, t, student)
	if err != nil {
		return Student{}, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return Student{}, false, err
	}
	return s.StudentByID(ctx, student)
}

// migrateStudents fills what a database made before these columns lacks: each student's name key
// (names that collide under it stay, both; only new joins are compared) and, for the session's
// issue time, when the student joined.
func (s *Store) migrateStudents() error {
	if _, err := s.db.Exec("CREATE INDEX IF NOT EXISTS students_name_key ON students(name_key)"); err != nil {
		return err
	}
	if _, err := s.db.Exec("UPDATE students SET session_at = created WHERE session_at = 0"); err != nil {
		return err
	}
	rows, err := s.db.Query("SELECT id, name FROM students WHERE name_key = ''")
	if err != nil {
		return err
	}
	keys := map[int64]string{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return err
		}
		keys[id] = NameKey(name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for id, key := range keys {
		if _, err := s.db.Exec("UPDATE students SET name_key = ? WHERE id = ?", key, id); err != nil {
			return err
		}
	}
	return nil
}

// StudentBySession finds the student a session token signs in; ok is false for an unknown or
// revoked token (the caller checks SessionAt against its session lifetime).
func (s *Store) StudentBySession(ctx context.Context, session string) (st Student, ok bool, err error) {
	return s.student(ctx, "session = ? AND removed = 0", SessionHash(session))
}

// StudentByName finds a student by display name (without case).
func (s *Store) StudentByName(ctx context.Context, name string) (st Student, ok bool, err error) {
	return s.student(ctx, "name = ?", name)
}

// StudentByID finds a student by id.
func (s *Store) StudentByID(ctx context.Context, id int64) (st Student, ok bool, err error) {
	return s.student(ctx, "id = ?", id)
}

const studentColumns = "id, name, instructor, lesson, last_seen, removed, session_at, address"

func scanStudent(sc interface{ Scan(...any) error }) (Student, error) {
	var st Student
	var seen, removed, at int64
	err := sc.Scan(&st.ID, &st.Name, &st.Instructor, &st.Lesson, &seen, &removed, &at, &st.Address)
	st.LastSeen, st.Removed, st.SessionAt = time.UnixMilli(seen), removed != 0, time.UnixMilli(at)
	return st, err
}

func (s *Store) student(ctx context.Context, where string, arg any) (Student, bool, error) {
	st, err := scanStudent(s.db.QueryRowContext(ctx, "SELECT "+studentColumns+" FROM students WHERE "+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return Student{}, false, nil
	}
	return st, err == nil, err
}

// Students lists every student, removed ones too (Student.Removed), by name.
func (s *Store) Students(ctx context.Context) ([]Student, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+studentColumns+" FROM students ORDER BY name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Student
	for rows.Next() {
		st, err := scanStudent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// Seen records that a student opened lesson (or, with lesson "", was just active).
func (s *Store) Seen(ctx context.Context, student int64, lesson string) error {
	if lesson == "" {
		_, err := s.db.ExecContext(ctx, "UPDATE students SET last_seen = ? WHERE id = ?", now(), student)
		return err
	}
	_, err := s.db.ExecContext(ctx, "UPDATE students SET last_seen = ?, lesson = ? WHERE id = ?", now(), lesson, student)
	return err
}

// SaveEdit keeps a student's edited source of a cell; it is refused while the disk is nearly full
// (Room).
func (s *Store) SaveEdit(ctx context.Context, student int64, lesson, cell, source string) error {
	if err := s.Room(); err != nil {
		return err
	}
	return saveEdit(ctx, s.db, student, lesson, cell, source)
}

// DeleteEdit forgets a student's edit of a cell (its Reset: the lesson's source is back).
func (s *Store) DeleteEdit(ctx context.Context, student int64, lesson, cell string) error {
	return deleteEdit(ctx, s.db, student, lesson, cell)
}

func saveEdit(ctx context.Context, db execer, student int64, lesson, cell, source string) error {
	_, err := db.ExecContext(ctx, `INSERT INTO edits(student, lesson, cell, source, updated) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(student, lesson, cell) DO UPDATE SET source = excluded.source, updated = excluded.updated`,
		student, lesson, cell, source, now())
	return err
}

func deleteEdit(ctx context.Context, db execer, student int64, lesson, cell string) error {
	_, err := db.ExecContext(ctx, "DELETE FROM edits WHERE student = ? AND lesson = ? AND cell = ?", student, lesson, cell)
	return err
}

// Edits returns a student's edited sources in a lesson, by cell id.
func (s *Store) Edits(ctx context.Context, student int64, lesson string) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT cell, source FROM edits WHERE student = ? AND lesson = ?", student, lesson)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var c, src string
		if err := rows.Scan(&c, &src); err != nil {
			return nil, err
		}
		out[c] = src
	}
	return out, rows.Err()
}

// Run is one run as the database keeps it. Times are zero until they happen.
type Run struct {
	ID      int64  `json:"id"`
	Student int64  `json:"student"`
	Lesson  string `json:"lesson"`
	Cell    string `json:"cell"`
	Action  string `json:"action,omitempty"`
	Source  string `json:"source"`
	// Edited is true when Source differs from the lesson's source of the cell.
	Edited  bool   `json:"edited"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	// Machine describes where the run ran (CPU and GPU as the server saw them; for a run sent to a
	// worker of a cluster, the worker's one-line summary).
	Machine string    `json:"machine"`
	Created time.Time `json:"created"`
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	// SharedFrom, if not zero, is the run whose results this run showed instead of measuring.
	SharedFrom int64 `json:"shared_from,omitempty"`
	// Browser is true once the run asked its student's page for work (a WebGPU measurement in
	// that browser): its results describe that student's browser and GPU, so they are never shared.
	Browser bool `json:"browser,omitempty"`
	// Owner is the key of the run's fair share in the server's queue (a student, or on a server
	// without sign-in the address the run came from), so that a run queued again after a restart
	// keeps its place in the round-robin and its student's grace period.
	Owner string `json:"-"`
	// Class is the class of machine the student picked for the page when asking for the run, where
	// it applies ("": any machine, or a cell whose own `machine:` key, in Source, names one): a run
	// queued again after a restart asks for it again, and only runs of the same class share results
	// (LatestUnedited).
	Class string `json:"class,omitempty"`
	// Pruned is true once the run's messages were removed because its student's kept runs were
	// over their quota (Prune): its messages are then a note that says so, and its end.
	Pruned bool `json:"pruned,omitempty"`
}

// AddRun records a new queued run and returns it with its id; its bytes (runBytes) count against
// its student's quota (Usage). It is refused while the disk is nearly full (Room).
func (s *Store) AddRun(ctx context.Context, r Run) (Run, error) {
	if err := s.Room(); err != nil {
		return Run{}, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Run{}, err
	}
	defer tx.Rollback()
	if r, err = addRun(ctx, tx, r); err != nil {
		return Run{}, err
	}
	return r, tx.Commit()
}

// addRun is AddRun's work on tx: the run's row, queued now, and its bytes.
func addRun(ctx context.Context, tx execer, r Run) (Run, error) {
	r.Status, r.Created = StatusQueued, time.UnixMilli(now())
	res, err := tx.ExecContext(ctx, `INSERT INTO runs(student, lesson, cell, action, source, edited, status, machine, created, shared_from, owner, class)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.Student, r.Lesson, r.Cell, r.Action, r.Source, r.Edited, r.Status, r.Machine, r.Created.UnixMilli(), r.SharedFrom, r.Owner, r.Class)
	if err != nil {
		return Run{}, err
	}
	if r.ID, err = res.LastInsertId(); err != nil {
		return Run{}, err
	}
	return r, addBytes(ctx, tx, r.Student, runBytes(r))
}

// Started marks a run running.
func (s *Store) Started(ctx context.Context, run int64) error {
	_, err := s.db.ExecContext(ctx, "UPDATE runs SET status = ?, started = ? WHERE id = ?", StatusRunning, now(), run)
	return err
}

// RanOn records the machine a run was sent to, when it is not the one AddRun recorded (another
// machine of a cluster).
func (s *Store) RanOn(ctx context.Context, run int64, machine string) error {
	_, err := s.db.ExecContext(ctx, "UPDATE runs SET machine = ? WHERE id = ?", machine, run)
	return err
}

// AskedBrowser records that run asked its student's page for work (Run.Browser).
func (s *Store) AskedBrowser(ctx context.Context, run int64) error {
	_, err := s.db.ExecContext(ctx, "UPDATE runs SET browser = 1 WHERE id = ?", run)
	return err
}

// Ended records a run's terminal status and its message.
func (s *Store) Ended(ctx context.Context, run int64, status, message string) error {
	_, err := s.db.ExecContext(ctx, "UPDATE runs SET status = ?, message = ?, ended = ? WHERE id = ?", status, message, now(), run)
	return err
}

const runColumns = "id, student, lesson, cell, action, source, edited, status, message, machine, created, started, ended, shared_from, browser, owner, class, pruned"

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var c, st, e int64
	err := sc.Scan(&r.ID, &r.Student, &r.Lesson, &r.Cell, &r.Action, &r.Source, &r.Edited, &r.Status, &r.Message, &r.Machine, &c, &st, &e, &r.SharedFrom, &r.Browser, &r.Owner, &r.Class, &r.Pruned)
	r.Created = time.UnixMilli(c)
	if st != 0 {
		r.Started = time.UnixMilli(st)
	}
	if e != 0 {
		r.Ended = time.UnixMilli(e)
	}
	return r, err
}

// GetRun returns run id; ok is false if there is none.
func (s *Store) GetRun(ctx context.Context, id int64) (Run, bool, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, false, nil
	}
	return r, err == nil, err
}

// Runs returns a student's runs, oldest first; with lesson set, only that lesson's.
func (s *Store) Runs(ctx context.Context, student int64, lesson string) ([]Run, error) {
	q, args := "SELECT "+runColumns+" FROM runs WHERE student = ?", []any{student}
	if lesson != "" {
		q, args = q+" AND lesson = ?", append(args, lesson)
	}
	return s.runs(ctx, q+" ORDER BY id", args...)
}

// Queued returns every run still queued, oldest first: after a restart, the runs the server
// stopped before it could start them, for it to queue again (or end).
func (s *Store) Queued(ctx context.Context) ([]Run, error) {
	return s.runs(ctx, "SELECT "+runColumns+" FROM runs WHERE status = ? ORDER BY id", StatusQueued)
}

// LatestUnedited returns the newest run of a cell with the lesson's own source that asked for the
// same class of machine (Run.Class, "" for any), was measured (not itself shared), did not ask its
// student's browser for work (Run.Browser: those results are that student's browser's) and ended
// done after since, by anyone (shared results); ok is false if there is none.
func (s *Store) LatestUnedited(ctx context.Context, lesson, cell, action, source, class string, since time.Time) (Run, bool, error) {
	rs, err := s.runs(ctx, "SELECT "+runColumns+` FROM runs WHERE lesson = ? AND cell = ? AND action = ? AND source = ? AND class = ? AND edited = 0
		AND shared_from = 0 AND browser = 0 AND pruned = 0 AND status = ? AND ended >= ? ORDER BY id DESC LIMIT 1`, lesson, cell, action, source, class, StatusDone, since.UnixMilli())
	if err != nil || len(rs) == 0 {
		return Run{}, false, err
	}
	return rs[0], true, nil
}

func (s *Store) runs(ctx context.Context, q string, args ...any) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Message is one streamed message of a run: its type and its JSON.
type Message struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	Body string `json:"body"`
}

// AddMessage appends a message to run. With replace, earlier messages of the same type of the run
// are deleted first, so that the run keeps only the latest (a redrawn chart, a progress count).
// The bytes of body count against the run's student's quota (Usage).
func (s *Store) AddMessage(ctx context.Context, run, seq int64, typ, body string, replace bool) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	delta := int64(len(body))
	if replace {
		var old int64
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(sum(length(body)), 0) FROM messages WHERE run = ? AND type = ?", run, typ).Scan(&old); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE run = ? AND type = ?", run, typ); err != nil {
			return err
		}
		delta -= old
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO messages(run, seq, type, body) VALUES (?, ?, ?, ?)", run, seq, typ, body); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE run_bytes SET bytes = bytes + ? WHERE student = (SELECT student FROM runs WHERE id = ?)", delta, run); err != nil {
		return err
	}
	return tx.Commit()
}

// Messages returns a run's kept messages in the order they were sent. A reference (AddRef) is
// replaced by the referenced run's messages, but for its start and its end (types started, done,
// cancelled, error), so that a run that shows another's results keeps none of them itself.
func (s *Store) Messages(ctx context.Context, run int64) ([]Message, error) {
	own, err := s.ownMessages(ctx, run)
	if err != nil {
		return nil, err
	}
	var out []Message
	for _, m := range own {
		if m.Type != typeRef {
			out = append(out, m)
			continue
		}
		from, err := strconv.ParseInt(m.Body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("run %d: a reference to %q: %w", run, m.Body, err)
		}
		theirs, err := s.ownMessages(ctx, from)
		if err != nil {
			return nil, err
		}
		for _, t := range theirs {
			if !refSkips(t.Type) {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// ownMessages returns the messages kept for run itself, references unresolved.
func (s *Store) ownMessages(ctx context.Context, run int64) ([]Message, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT seq, type, body FROM messages WHERE run = ? ORDER BY seq", run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		if err := rows.Scan(&m.Seq, &m.Type, &m.Body); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ClassRunsPage returns up to limit of every student's runs with ids after after, oldest first;
// lesson and cell, when set, narrow them. Paging by after bounds what one call holds in memory.
func (s *Store) ClassRunsPage(ctx context.Context, lesson, cell string, after int64, limit int) ([]Run, error) {
	q, args := "SELECT "+runColumns+" FROM runs WHERE id > ?", []any{after}
	if lesson != "" {
		q, args = q+" AND lesson = ?", append(args, lesson)
	}
	if cell != "" {
		q, args = q+" AND cell = ?", append(args, cell)
	}
	return s.runs(ctx, q+" ORDER BY id LIMIT ?", append(args, limit)...)
}

// LatestDone returns, for each student, their latest run of the cell of lesson that ended done and
// was not a cell action (at most one run per student), oldest first.
func (s *Store) LatestDone(ctx context.Context, lesson, cell string) ([]Run, error) {
	return s.runs(ctx, "SELECT "+runColumns+` FROM runs WHERE id IN
		(SELECT max(id) FROM runs WHERE lesson = ? AND cell = ? AND status = ? AND action = '' GROUP BY student) ORDER BY id`,
		lesson, cell, StatusDone)
}
